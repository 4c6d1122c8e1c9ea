//! The per-packet program's per-flow state on each CPU: one slot that
//! holds the packet kind of the sample gate ([`crate::gate`]), the arrival
//! spacing of data segments ([`crate::arrivals`]), the fastest
//! delivery-rate sample since the flow's last full sample, and what the
//! reader did since then ([`note_moved`]). Everything the
//! program does for every segment, before the gate, reads and writes this
//! one slot: a per-CPU array access (no hashing, no cache line another CPU
//! writes), not the flow map.
//!
//! A direct-mapped cache: slot `cookie % PACKET_SLOTS` of this CPU. A flow
//! that finds another flow's cookie there takes the slot over, starting
//! afresh (its next segment passes the gate; one arrival spacing is lost,
//! and the other flow's sums and reader's move not yet collected). A
//! flow's segments normally arrive on one CPU (RSS/RPS steer a flow to one
//! queue); the sums move into the flow's entry at its next full sample on
//! the same CPU ([`collect`]).

use aya_ebpf::{helpers::bpf_jiffies64, macros::map, maps::PerCpuArray};
use observer_common::FlowSample;

use crate::{
    read::{Sk, off},
    receive::{self, Moved},
};

/// Slots per CPU (a power of two). Memory: 1024 x 80 bytes = 80 KiB per
/// possible CPU.
pub const PACKET_SLOTS: u32 = 1024;

/// One flow's per-packet state on one CPU.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct PacketSlot {
    /// Socket cookie of the flow (0: empty).
    pub cookie: u64,
    /// When the flow's previous data segment arrived (monotonic ns; 0:
    /// none yet on this CPU).
    pub last_ns: u64,
    /// Low 32 bits of `jiffies` at the flow's last full sample from this
    /// hook on this CPU (the gate).
    pub jiffies: u32,
    /// Bytes of burst segments not yet moved into the flow's entry.
    pub burst_bytes: u32,
    /// Their spacing (ns), likewise.
    pub burst_ns: u32,
    /// Running mean spacing over active periods (ps per byte; EWMA 1/8).
    pub mean_ps_per_byte: u32,
    /// The fastest delivery-rate sample seen since the last full sample:
    /// `rate_delivered` (segments) and `rate_interval_us` (µs); 0 0: none.
    pub best: [u32; 2],
    /// `tcp_sock.delivered` (segments) at the last segment: a change means
    /// the kernel took a new delivery-rate sample since.
    pub delivered: u32,
    /// What the flow's last full sample on this CPU found of its reader
    /// ([`LAGGING`], [`CLOSED`]): the next data segment notes when the
    /// reader has since caught up or the window was closed and is open
    /// again ([`reader_moved`], [`note_moved`]).
    pub reader: u32,
    /// What the reader did, noted at the first data segment after it and
    /// kept for the flow's next full sample on this CPU ([`note_moved`],
    /// [`take_moved`]).
    pub moved: Moved,
}

/// [`PacketSlot::reader`]: data waited unread when the segment of the last
/// full sample arrived.
pub const LAGGING: u32 = 1;
/// [`PacketSlot::reader`]: the last full sample left the receive window
/// closed by unread data (`receive::closed`).
pub const CLOSED: u32 = 2;

const _: () = assert!(core::mem::size_of::<PacketSlot>() == 80);

#[map(name = "PACKET_SLOTS")]
static SLOTS: PerCpuArray<PacketSlot> = PerCpuArray::with_max_entries(PACKET_SLOTS, 0);

/// This CPU's slot for the flow `cookie`, taken over (reset) if another
/// flow held it. None only if the map lookup fails.
#[inline(always)]
pub fn of(cookie: u64) -> Option<*mut PacketSlot> {
    let p = SLOTS.get_ptr_mut(cookie as u32 & (PACKET_SLOTS - 1))?;
    // SAFETY: this CPU's slot; a program nesting on this CPU (softirq over
    // process context) can at worst disturb one spacing or one gate
    // decision.
    unsafe {
        if (*p).cookie != cookie {
            // A helper without arguments (inlined by the verifier).
            let now = bpf_jiffies64() as u32;
            *p = PacketSlot {
                cookie,
                last_ns: 0,
                // Not this jiffy: the flow's next segment passes the gate.
                jiffies: now.wrapping_sub(1),
                burst_bytes: 0,
                burst_ns: 0,
                mean_ps_per_byte: 0,
                best: [0, 0],
                delivered: 0,
                reader: 0,
                moved: Moved::NONE,
            };
        }
    }
    Some(p)
}

/// Notes the delivery-rate sample the kernel took at the flow's previous
/// ACK, if it took one (`tcp_sock.delivered` moved): `tcp_rate_gen()`
/// (net/ipv4/tcp_rate.c) stores it in `rate_delivered` and
/// `rate_interval_us` as `tcp_ack()` ends. The fastest since the last full
/// sample is kept (compared by cross-multiplying: no division), so the
/// flow's recent best ([`crate::delivery`]) sees every sample, not only
/// those of the segments the gate lets through.
///
/// # Safety
/// `slot` must be this CPU's slot of the flow of `sk`.
#[inline(always)]
pub unsafe fn note_rate(slot: *mut PacketSlot, sk: Sk) {
    let delivered: u32 = sk.get(off!(delivered));
    // SAFETY: caller guarantees `slot`.
    unsafe {
        if delivered == (*slot).delivered {
            return;
        }
        (*slot).delivered = delivered;
        let d: u32 = sk.get(off!(rate_delivered));
        let i: u32 = sk.get(off!(rate_interval_us));
        let [bd, bi] = (*slot).best;
        if d != 0
            && i != 0
            && (bi == 0 || u64::from(d) * u64::from(bi) > u64::from(bd) * u64::from(i))
        {
            (*slot).best = [d, i];
        }
    }
}

/// Whether the reader moved since the flow's last full sample on this CPU,
/// as the data segment about to be processed finds it: the window was
/// closed and is open again (the window-closed clock stops), or data
/// waited unread and now nothing does (`copied_seq == rcv_nxt`: the
/// reader caught up, a catch-up to count). The segment is then sampled,
/// or the move noted for the next sample ([`note_moved`]). There is no
/// hook on reads where the poll-time read runs: the sample finds when the
/// reader moved from the socket's last event
/// (`receive::integrate_reader`).
///
/// # Safety
/// `slot` must be this CPU's slot of the flow of `sk`.
#[inline(always)]
pub unsafe fn reader_moved(slot: *mut PacketSlot, sk: Sk) -> bool {
    // SAFETY: caller guarantees `slot`.
    let reader = unsafe { (*slot).reader };
    if reader == 0 {
        return false;
    }
    let rcv_nxt: u32 = sk.get(off!(rcv_nxt));
    if reader & LAGGING != 0 && rcv_nxt == sk.get::<u32>(off!(copied_seq)) {
        return true;
    }
    // Open again: the reader's window update went out.
    let mss = u32::from(sk.get::<u16>(off!(rcv_mss)));
    reader & CLOSED != 0 && receive::has_room(receive::window_left(sk, rcv_nxt), mss)
}

/// Notes in this CPU's slot that the reader moved ([`reader_moved`]) before
/// the data segment about to be processed, which adds `consumed` in-order
/// bytes and does not close the window: the flow's next full sample on
/// this CPU splits its interval there ([`receive::integrate_reader`]), so
/// this segment need not be sampled. The slot then holds what a sample
/// here would have left in it ([`note_reader`]). False where a move is
/// kept already (then the segment is sampled).
///
/// # Safety
/// `slot` must be this CPU's slot of the flow of `sk`, the arrival noted
/// ([`crate::arrivals::note`] set `last_ns`).
#[inline(always)]
pub unsafe fn note_moved(slot: *mut PacketSlot, sk: Sk, consumed: u32) -> bool {
    // SAFETY: caller guarantees `slot`.
    unsafe {
        if (*slot).moved.seg_ns != 0 {
            return false;
        }
        let seg_ns = (*slot).last_ns;
        let at = receive::last_event_ns(sk);
        let rcv_nxt: u32 = sk.get(off!(rcv_nxt));
        let unread = receive::unread(sk, rcv_nxt);
        (*slot).moved = Moved {
            at_ns: if at != 0 && at < seg_ns { at } else { seg_ns },
            seg_ns,
            unread,
            left: receive::window_left(sk, rcv_nxt),
            consumed,
            _pad: 0,
        };
        (*slot).reader = u32::from(unread != 0) * LAGGING;
    }
    true
}

/// Takes what [`note_moved`] kept in this CPU's slot, for the full sample
/// about to be taken ([`Moved::NONE`] if nothing).
///
/// # Safety
/// `slot` must be this CPU's slot of the flow.
#[inline(always)]
pub unsafe fn take_moved(slot: *mut PacketSlot) -> Moved {
    // SAFETY: caller guarantees `slot`.
    unsafe {
        let m = (*slot).moved;
        (*slot).moved = Moved::NONE;
        m
    }
}

/// Whether this CPU's last full sample of the flow left its receive
/// window closed (and no segment since found it open again: that one
/// noted the move, [`note_moved`], or was sampled): the window-closed
/// clock already runs, so a
/// segment that closes the window again need not be sampled.
///
/// # Safety
/// `slot` must be this CPU's slot of the flow.
#[inline(always)]
pub unsafe fn left_closed(slot: *const PacketSlot) -> bool {
    // SAFETY: caller guarantees `slot`.
    unsafe { (*slot).reader & CLOSED != 0 }
}

/// Records in this CPU's slot what the full sample `s` found of the
/// reader: `lagging` (data waited unread when its segment arrived, before
/// the segment's own bytes) and whether it leaves the window closed. So a
/// catch-up is counted after each sample that found the reader behind the
/// network, not after every segment (a request/response flow's reader
/// drains each request before the next arrives: arming on the segment's
/// own bytes sampled every segment, 3-4 times the cost per segment).
///
/// # Safety
/// `slot` must be this CPU's slot of the flow; `s` valid for reads.
#[inline(always)]
pub unsafe fn note_reader(slot: *mut PacketSlot, s: *const FlowSample, lagging: bool) {
    // SAFETY: caller guarantees both.
    unsafe {
        let closed = receive::closed(s);
        (*slot).reader = (u32::from(lagging) * LAGGING) | (u32::from(closed) * CLOSED);
    }
}

/// Moves this CPU's sums of the flow into its entry `s`, just refreshed
/// (at `(*s).last_seen_ns`) from `sk`: the burst sums, and the fastest
/// delivery-rate sample into the flow's recent best (with direct reads
/// only, as [`crate::refresh::fill`] keeps the best: the verifier's budget
/// on 6.1's helper reads).
///
/// # Safety
/// `s` must be valid for reads and writes.
#[inline(always)]
pub unsafe fn collect(s: *mut FlowSample, sk: Sk) {
    // SAFETY: caller guarantees `s`.
    let cookie = unsafe { (*s).cookie };
    let Some(p) = SLOTS.get_ptr_mut(cookie as u32 & (PACKET_SLOTS - 1)) else {
        return;
    };
    // SAFETY: this CPU's slot (see `of`) and the caller's `s`.
    unsafe {
        if (*p).cookie != cookie {
            return;
        }
        (*s).burst_bytes += u64::from((*p).burst_bytes);
        (*s).burst_ns += u64::from((*p).burst_ns);
        (*p).burst_bytes = 0;
        (*p).burst_ns = 0;
        let [d, i] = (*p).best;
        if i != 0 && sk.direct() {
            crate::delivery::delivery_max(s, (*s).last_seen_ns, true, d, i);
            (*p).best = [0, 0];
        }
    }
}
