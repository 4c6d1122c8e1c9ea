//! The sample gate: at most one full sample per flow, hook kind and CPU in
//! each jiffy.
//!
//! A bulk flow on a fast path hands `tcp_probe` tens of thousands of
//! segments a second, and its reader calls receive as often. Every
//! full sample costs a flow-map lookup (hashing the cookie, walking a
//! bucket) and the copy of about 35 `tcp_sock` members, on cache lines the
//! other CPU of the flow keeps writing. The kernel's own clocks for what
//! observer reports are coarser than that: `chrono_stat[]` (busy,
//! rwnd-limited, sndbuf-limited time) ticks in jiffies, and a user-space
//! poll reads the figures once a second. So a hook first asks the gate,
//! which costs a per-CPU array access (no hashing, no shared cache line):
//! a flow already sampled by the same kind of hook on this CPU in this
//! jiffy is skipped.
//!
//! What makes the figures exact when a flow goes quiet is the poll-time
//! read ([`poll`](crate::poll)): it re-samples every flow that moved since
//! the last poll. So the gate may hold back the last segment or read before
//! a flow goes quiet, with three exceptions ([`flow`](crate::flow) decides
//! them around the gate): any SYN, FIN or RST is always sampled, and a
//! segment that closes the receive window unless this CPU's last sample of
//! the flow left it closed; a segment that acknowledges
//! everything sent with nothing left to send (the end of a burst) or a
//! read that drains the socket is sampled when the stored sample runs a
//! clock it stops; and the read hook
//! samples again whenever another process uses the socket.
//!
//! The gate is a direct-mapped cache per CPU: for the packet hook, the
//! flow's slot of [`crate::packet_slot`], which also keeps what the hook
//! notes of every segment; for the read hooks, slot `cookie % GATE_SLOTS`
//! of [`GATE`]. Two flows sharing a slot both pass more often; they are
//! never both held back wrongly, because a slot only holds back the
//! cookie it names.

use aya_ebpf::{helpers::bpf_jiffies64, macros::map, maps::PerCpuArray};

use crate::packet_slot::PacketSlot;

/// Read-hook slots per CPU (a power of two). Memory: 1024 x 16 bytes =
/// 16 KiB per possible CPU.
pub const GATE_SLOTS: u32 = 1024;

/// One read-gate slot: the flow last sampled through it, when, and by
/// whom.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct GateSlot {
    /// Socket cookie of the flow (0: empty).
    pub cookie: u64,
    /// Low 32 bits of `jiffies` at that sample.
    pub jiffies: u32,
    /// The tgid that made the call (0 for `tcp_rcv_space_adjust`).
    pub tag: u32,
}

/// Per-CPU slots of the read hooks (`sock_recv_length`,
/// `tcp_rcv_space_adjust`).
#[map(name = "GATE")]
pub static GATE: PerCpuArray<GateSlot> = PerCpuArray::with_max_entries(GATE_SLOTS, 0);

/// Whether the flow `cookie` was already sampled by a read hook with
/// the same `tag` on this CPU in this jiffy (then the caller skips it).
/// When not, records this sample and returns false.
#[inline(always)]
pub fn held(cookie: u64, tag: u32) -> bool {
    let Some(g) = GATE.get_ptr_mut(cookie as u32 & (GATE_SLOTS - 1)) else {
        return false;
    };
    // SAFETY: a helper without arguments.
    let now = unsafe { bpf_jiffies64() } as u32;
    // SAFETY: this CPU's slot; a program nesting on this CPU (softirq over
    // process context) can at worst make one hook sample twice or read a
    // slot half-written for another flow, whose cookie then does not match.
    unsafe {
        if (*g).cookie == cookie && (*g).jiffies == now && (*g).tag == tag {
            return true;
        }
        (*g).cookie = cookie;
        (*g).jiffies = now;
        (*g).tag = tag;
    }
    false
}

/// Whether the flow of `slot` was already sampled by the packet hook on
/// this CPU in this jiffy (then the caller skips it). When not, records
/// this sample and returns false. None (no slot) passes.
#[inline(always)]
pub fn packet_held(slot: Option<*mut PacketSlot>) -> bool {
    let Some(p) = slot else {
        return false;
    };
    // SAFETY: a helper without arguments.
    let now = unsafe { bpf_jiffies64() } as u32;
    // SAFETY: this CPU's slot of the flow (see `packet_slot`).
    unsafe {
        if (*p).jiffies == now {
            return true;
        }
        (*p).jiffies = now;
    }
    false
}
