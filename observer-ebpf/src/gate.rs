//! The sample gate: at most one full sample per flow, hook kind and CPU in
//! each jiffy.
//!
//! A bulk flow on a fast path hands `tcp_probe` tens of thousands of
//! segments a second, and its owner calls send or receive as often. Every
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
//! them around the gate): any SYN, FIN or RST and a segment that closes the
//! receive window are always sampled; a segment that acknowledges
//! everything sent (the end of a burst) or a read that drains the socket is
//! sampled when the stored sample runs a clock it stops; and the owner hook
//! samples again whenever another process uses the socket.
//!
//! The gate is a direct-mapped cache: slot `cookie % GATE_SLOTS` of this
//! CPU's half for the hook kind. Two flows sharing a slot both pass more
//! often; they are never both held back wrongly, because a slot only holds
//! back the cookie it names.

use aya_ebpf::{helpers::bpf_jiffies64, macros::map, maps::PerCpuArray};

/// Slots per hook kind and CPU (a power of two). Memory: 2 x 1024 x 16
/// bytes = 32 KiB per possible CPU.
pub const GATE_SLOTS: u32 = 1024;

/// One gate slot: the flow last sampled through it, when, and by whom.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct GateSlot {
    /// Socket cookie of the flow (0: empty).
    pub cookie: u64,
    /// Low 32 bits of `jiffies` at that sample.
    pub jiffies: u32,
    /// Owner hooks: the tgid that made the call; 0 for the packet hook.
    pub tag: u32,
}

/// Per-CPU gate slots: `[0, GATE_SLOTS)` for the packet hook,
/// `[GATE_SLOTS, 2 * GATE_SLOTS)` for the owner hooks.
#[map(name = "GATE")]
pub static GATE: PerCpuArray<GateSlot> = PerCpuArray::with_max_entries(2 * GATE_SLOTS, 0);

/// Which hook asks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `tcp_probe`.
    Packet = 0,
    /// `sock_send_length` / `sock_recv_length` / `tcp_rcv_space_adjust`.
    Owner = 1,
}

/// Whether the flow `cookie` was already sampled by a `kind` hook with the
/// same `tag` on this CPU in this jiffy (then the caller skips it). When
/// not, records this sample and returns false.
#[inline(always)]
pub fn held(cookie: u64, kind: Kind, tag: u32) -> bool {
    let idx = (cookie as u32 & (GATE_SLOTS - 1)) + kind as u32 * GATE_SLOTS;
    let Some(g) = GATE.get_ptr_mut(idx) else {
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
