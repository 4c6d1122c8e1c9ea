//! Types shared by observer's kernel programs (`observer-ebpf`) and its user
//! space (`observer`).
//!
//! Everything here is plain data: `#[repr(C)]`, integers and fixed arrays,
//! fields ordered by size with explicit padding, and a compile-time size
//! assert for each type. `tests` pins the byte layout. User-only
//! conversions live behind the `user` feature.
#![no_std]

pub mod counters;
pub mod journal;
pub mod layout;
pub mod offsets;
pub mod sample;

pub use counters::Counter;
pub use layout::FLOW_LAYOUT;
pub use offsets::{OFFSET_NONE, Offsets};
pub use sample::FlowSample;

/// Default maximum number of flows the kernel flow map holds
/// (`BPF_MAP_TYPE_LRU_HASH` max_entries); overridable at load time.
pub const DEFAULT_MAX_FLOWS: u32 = 131_072;

/// Default ring-buffer size for closed-flow records, in bytes (a power of two
/// and a multiple of the page size, as `BPF_MAP_TYPE_RINGBUF` requires).
pub const DEFAULT_RINGBUF_BYTES: u32 = 4 << 20;

/// Name of the flow map in the eBPF object.
pub const MAP_FLOWS: &str = "FLOWS";
/// Name of the closed-flow ring buffer in the eBPF object.
pub const MAP_CLOSED: &str = "CLOSED";
/// Name of the per-CPU self-counter array in the eBPF object.
pub const MAP_COUNTERS: &str = "COUNTERS";
/// Name of the map the tick program (`observer_tick`) writes: slot
/// [`TICK_JIFFIES`] `bpf_jiffies64()`, slot [`TICK_NS`]
/// `bpf_ktime_get_ns()`, read at the same run.
pub const MAP_TICK: &str = "TICK";
/// The slot of [`MAP_TICK`] that holds `bpf_jiffies64()`.
pub const TICK_JIFFIES: u32 = 0;
/// The slot of [`MAP_TICK`] that holds `bpf_ktime_get_ns()` (ns).
pub const TICK_NS: u32 = 1;
/// Name of the two-slot array behind the live flow-entry count: slot
/// [`LIVE_PROGRAMS_ADDED`], entries the programs inserted minus those
/// they removed; slot [`LIVE_AGENT_REMOVED`], parked closes the agent
/// removed.
pub const MAP_LIVE: &str = "LIVE";
/// The slot of [`MAP_LIVE`] that only the programs write: flow entries
/// they inserted less those they removed (atomic adds from every CPU).
pub const LIVE_PROGRAMS_ADDED: u32 = 0;
/// The slot of [`MAP_LIVE`] that only user space writes: flow entries it
/// removed (parked closes it has read).
pub const LIVE_AGENT_REMOVED: u32 = 1;
/// Name of the socket-storage map whose marks the poll-time read walks
/// (one per tracked flow's socket; observer-ebpf/src/poll.rs).
pub const MAP_ACTIVE: &str = "ACTIVE";
/// Name of the poll-time read's iterator program over [`MAP_ACTIVE`].
pub const PROG_POLL: &str = "observer_poll";
/// Name of the poll-time read's iterator program over the TCP sockets of
/// one network namespace, where the kernel refuses the storage iterator.
pub const PROG_POLL_TCP: &str = "observer_poll_tcp";
/// Name of the owner walk's iterator program (`iter/task_file`), which
/// gives flows still without an owner the process that holds their socket
/// (observer-ebpf/src/owner.rs).
pub const PROG_OWNERS: &str = "observer_owners";
/// Name of the two-slot array that tells the hooks which flows a
/// poll-time walk reaches: slot [`SCOPE_REACH`] a [`poll_scope`] value,
/// slot [`SCOPE_NETNS`] the network namespace of
/// [`poll_scope::ONE_NETNS`].
pub const MAP_POLL_SCOPE: &str = "POLL_SCOPE";
/// The slot of [`MAP_POLL_SCOPE`] that holds a [`poll_scope`] value.
pub const SCOPE_REACH: u32 = 0;
/// The slot of [`MAP_POLL_SCOPE`] that holds the network namespace
/// (inode number) a walk over one namespace reaches.
pub const SCOPE_NETNS: u32 = 1;

/// Name of the change journal: the cookies of the flows the programs
/// sampled since the agent's last read ([`journal`]).
pub const MAP_JOURNAL: &str = "JOURNAL";

/// Which flows the poll-time read reaches ([`MAP_POLL_SCOPE`] slot 0).
pub mod poll_scope {
    /// None: no walk is attached (the hooks sample as without it).
    pub const NONE: u64 = 0;
    /// Every flow, in every network namespace (the storage iterator).
    pub const ALL: u64 = 1;
    /// The flows of one network namespace (the TCP iterator), whose inode
    /// number is in slot 1.
    pub const ONE_NETNS: u64 = 2;
}
/// Name of the read-only global (u8) that turns the poll-time read on (1)
/// or compiles it out (0: kernels that refuse socket-local storage in
/// tracing programs, before Linux 5.11).
pub const GLOBAL_POLL_ITER: &str = "POLL_ITER";
/// Name of the read-only global that carries the BTF-resolved offsets.
pub const GLOBAL_OFFSETS: &str = "OFFSETS";
/// Name of the read-only global (u8) that selects direct BTF-checked loads
/// (1) or `bpf_probe_read_kernel` (0) for socket fields.
pub const GLOBAL_DIRECT: &str = "DIRECT";

/// Name of the kernel global that cuts the per-packet program short, for
/// the benchmark's cost breakdown (see [`packet_stages`]).
pub const GLOBAL_PACKET_STAGES: &str = "PACKET_STAGES";

/// How much of the per-packet program (`observer_tcp_probe`) runs. The
/// agent's object passes the constant `ALL` (the checks compile away);
/// the benchmark's object reads a frozen read-only global
/// ([`GLOBAL_PACKET_STAGES`]), which only it has.
pub mod packet_stages {
    /// Everything (the agent's setting).
    pub const ALL: u32 = 0;
    /// The self-counter and the socket cast (`bpf_skc_to_tcp_sock`) only.
    pub const CAST: u32 = 1;
    /// Also the socket cookie and the flow-map lookup (for the hits the
    /// sample gate lets through).
    pub const LOOKUP: u32 = 2;
    /// Also the refresh of the flow's figures from `tcp_sock`.
    pub const REFRESH: u32 = 3;
    /// Also the reader and end-of-burst checks, the per-CPU sample gate
    /// (observer-ebpf's `gate` module) and the stored sample's clocks,
    /// nothing after them.
    pub const GATE: u32 = 4;
    /// Also the socket cookie and the segment's flags, ACK and length
    /// (from `TCP_SKB_CB`), nothing after them.
    pub const COOKIE: u32 = 5;
    /// Also this CPU's per-packet slot of the flow (a per-CPU array
    /// access).
    pub const SLOT: u32 = 6;
    /// Also the arrival spacing (`bpf_ktime_get_ns`) and the delivery-rate
    /// note.
    pub const NOTES: u32 = 7;
    /// Also the arrival spacing (`bpf_ktime_get_ns`), not yet the
    /// delivery-rate note.
    pub const ARRIVAL: u32 = 8;
}
/// Name of the read-only global that carries the flow map's max_entries.
pub const GLOBAL_MAX_FLOWS: &str = "MAX_FLOWS";

/// The kernel's chrono types, `enum tcp_chrono` in include/linux/tcp.h:
/// which clock of `tcp_sock.chrono_stat[]` runs (net/ipv4/tcp_output.c
/// `tcp_chrono_start()`). `chrono_stat[t - 1]` accumulates type `t`.
pub mod chrono {
    /// `TCP_CHRONO_UNSPEC`: no clock runs (the sender is idle).
    pub const UNSPEC: u8 = 0;
    /// `TCP_CHRONO_BUSY`: busy sending, limited by none of the below
    /// (the congestion window, pacing, or the path).
    pub const BUSY: u8 = 1;
    /// `TCP_CHRONO_RWND_LIMITED`: stalled on the peer's receive window.
    pub const RWND_LIMITED: u8 = 2;
    /// `TCP_CHRONO_SNDBUF_LIMITED`: stalled on the send buffer.
    pub const SNDBUF_LIMITED: u8 = 3;
}

/// TCP states as `include/net/tcp_states.h` numbers them.
pub mod tcp_state {
    /// `TCP_ESTABLISHED`
    pub const ESTABLISHED: u8 = 1;
    /// `TCP_SYN_SENT`
    pub const SYN_SENT: u8 = 2;
    /// `TCP_SYN_RECV`
    pub const SYN_RECV: u8 = 3;
    /// `TCP_FIN_WAIT1`
    pub const FIN_WAIT1: u8 = 4;
    /// `TCP_FIN_WAIT2`
    pub const FIN_WAIT2: u8 = 5;
    /// `TCP_TIME_WAIT`
    pub const TIME_WAIT: u8 = 6;
    /// `TCP_CLOSE`
    pub const CLOSE: u8 = 7;
    /// `TCP_CLOSE_WAIT`
    pub const CLOSE_WAIT: u8 = 8;
    /// `TCP_LAST_ACK`
    pub const LAST_ACK: u8 = 9;
    /// `TCP_LISTEN`
    pub const LISTEN: u8 = 10;
    /// `TCP_CLOSING`
    pub const CLOSING: u8 = 11;
    /// `TCP_NEW_SYN_RECV`: a request socket, not yet a full one.
    pub const NEW_SYN_RECV: u8 = 12;

    /// Whether a socket in `state` carries (or carried) a connection: the
    /// states between ESTABLISHED and the final CLOSE.
    pub const fn is_connected(state: u8) -> bool {
        matches!(
            state,
            ESTABLISHED | FIN_WAIT1 | FIN_WAIT2 | CLOSE_WAIT | LAST_ACK | CLOSING
        )
    }

    /// The name `ss` uses for `state`, or `"unknown"`.
    pub const fn name(state: u8) -> &'static str {
        match state {
            ESTABLISHED => "established",
            SYN_SENT => "syn-sent",
            SYN_RECV => "syn-recv",
            FIN_WAIT1 => "fin-wait-1",
            FIN_WAIT2 => "fin-wait-2",
            TIME_WAIT => "time-wait",
            CLOSE => "close",
            CLOSE_WAIT => "close-wait",
            LAST_ACK => "last-ack",
            LISTEN => "listen",
            CLOSING => "closing",
            _ => "unknown",
        }
    }
}

/// `AF_INET` as the kernel numbers it.
pub const AF_INET: u16 = 2;

/// A gap between data segments arriving longer than this (ns) counts as
/// time the sender sent nothing ([`FlowSample::rx_gap_ns`]), on kernels
/// with HZ of 250 or more: more than two jiffies there, and more than a
/// segment's time at 1.2 Mbit/s. See [`rx_gap_ns`] for other HZ.
pub const RX_GAP_NS: u64 = 10_000_000;

/// The pause threshold for a kernel ticking `hz` times a second (ns): at
/// least [`RX_GAP_NS`] and two and a half jiffies, because the sample gate
/// lets through at least one data segment per jiffy while data flows, and
/// pauses are measured between those.
pub const fn rx_gap_ns(hz: u32) -> u64 {
    let hz = if hz == 0 { 100 } else { hz as u64 };
    let jiffies = 2_500_000_000 / hz;
    if jiffies > RX_GAP_NS {
        jiffies
    } else {
        RX_GAP_NS
    }
}

/// Length of a delivery-rate epoch (ns): the kernel keeps the fastest
/// delivery-rate sample of the current epoch and of the one before, and
/// user space ages them at the read, so their maximum covers the last two
/// seconds at most, as a verdict window does ([`FlowSample::delivery_best`]).
pub const DELIVERY_EPOCH_NS: u64 = 1_000_000_000;

/// Name of the load-time global holding the pause threshold (ns, u64).
pub const GLOBAL_RX_GAP_NS: &str = "RX_GAP";

/// The window a receiver puts on the wire for the `rcv_wnd` it keeps:
/// at most `65535 << rcv_wscale`, in units of `1 << rcv_wscale` (bytes), as
/// `tcp_select_window()` (net/ipv4/tcp_output.c) scales it. The kernel keeps
/// the unclamped value in `tcp_sock.rcv_wnd`: without window scaling it
/// can grow far past the 65,535 bytes the peer is ever told.
pub const fn advertised_window(rcv_wnd: u32, rcv_wscale: u8) -> u32 {
    let shift = if rcv_wscale > 14 { 14 } else { rcv_wscale };
    let max = 65_535u32 << shift;
    let w = if rcv_wnd < max { rcv_wnd } else { max };
    (w >> shift) << shift
}

/// `sock.sk_userlocks` bit: SO_SNDBUF was set by the application
/// (`SOCK_SNDBUF_LOCK`, include/net/sock.h).
pub const SOCK_SNDBUF_LOCK: u8 = 1;
/// `sock.sk_userlocks` bit: SO_RCVBUF was set by the application
/// (`SOCK_RCVBUF_LOCK`, include/net/sock.h).
pub const SOCK_RCVBUF_LOCK: u8 = 2;
/// `AF_INET6` as the kernel numbers it.
pub const AF_INET6: u16 = 10;

#[cfg(test)]
extern crate std;

#[cfg(test)]
mod tests {
    use super::advertised_window;

    #[test]
    fn pause_threshold_covers_two_and_a_half_jiffies() {
        assert_eq!(super::rx_gap_ns(100), 25_000_000);
        assert_eq!(super::rx_gap_ns(250), 10_000_000);
        assert_eq!(super::rx_gap_ns(1000), 10_000_000);
        assert_eq!(super::rx_gap_ns(0), 25_000_000);
    }

    #[test]
    fn advertised_window_is_clamped_and_scaled_like_tcp_select_window() {
        // No scaling: the kernel may keep 400 KB, the wire carries 65,535.
        assert_eq!(advertised_window(414_000, 0), 65_535);
        assert_eq!(advertised_window(60_000, 0), 60_000);
        // Shift 7: units of 128 bytes, at most 65,535 x 128.
        assert_eq!(advertised_window(80_500, 7), 80_384);
        assert_eq!(advertised_window(u32::MAX, 7), 65_535 << 7);
        // Shift 14 is the most RFC 7323 allows.
        assert_eq!(advertised_window(u32::MAX, 15), 65_535 << 14);
    }
}
