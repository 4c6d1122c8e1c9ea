//! Types shared by observer's kernel programs (`observer-ebpf`) and its user
//! space (`observer`).
//!
//! Everything here is plain data: `#[repr(C)]`, integers and fixed arrays,
//! fields ordered by size with explicit padding, and a compile-time size
//! assert for each type. `tests` pins the byte layout. User-only
//! conversions live behind the `user` feature.
#![no_std]

pub mod counters;
pub mod offsets;
pub mod sample;

pub use counters::Counter;
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
/// Name of the single-slot array holding the number of live flow entries.
pub const MAP_LIVE: &str = "LIVE";
/// Name of the read-only global that carries the BTF-resolved offsets.
pub const GLOBAL_OFFSETS: &str = "OFFSETS";
/// Name of the read-only global (u8) that selects direct BTF-checked loads
/// (1) or `bpf_probe_read_kernel` (0) for socket fields.
pub const GLOBAL_DIRECT: &str = "DIRECT";

/// Name of the kernel global that cuts the per-packet program short, for
/// the benchmark's cost breakdown (see [`packet_stages`]).
pub const GLOBAL_PACKET_STAGES: &str = "PACKET_STAGES";

/// How much of the per-packet program (`observer_tcp_probe`) runs. The
/// value is a frozen read-only global, so the verifier prunes the checks:
/// the agent's programs (`ALL`) pay nothing for them.
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
    /// Also the socket cookie, the segment's flags and the per-CPU sample
    /// gate (observer-ebpf's `gate` module), nothing after it.
    pub const GATE: u32 = 4;
}
/// Name of the read-only global that carries the flow map's max_entries.
pub const GLOBAL_MAX_FLOWS: &str = "MAX_FLOWS";

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
/// `AF_INET6` as the kernel numbers it.
pub const AF_INET6: u16 = 10;

#[cfg(test)]
extern crate std;
