//! Arrival spacing of data segments at the receiving end: which of them
//! come in bursts (back to back at the bottleneck's rate), and at what rate.
//!
//! From the receiver, a flow that fills its bottleneck arrives evenly: each
//! segment one bottleneck-serialisation time after the last, the same as the
//! flow's mean spacing. A flow held back at its sender (a congestion window
//! after loss, a send buffer, an application) arrives in back-to-back runs
//! at the bottleneck's rate with longer spaces between them. So for each
//! data segment the hook compares its spacing from the previous one with
//! the flow's running mean spacing (an EWMA of nanoseconds per byte over
//! active periods); a segment that arrived at least twice as fast as the
//! mean adds its bytes and spacing to the burst sums. User space divides
//! them: the burst rate estimates the bottleneck, and the receive rate
//! against it says how much of the path the flow uses.
//!
//! This runs for every data segment, before the sample gate, so it must
//! stay as cheap as the gate itself: it works in the flow's per-CPU slot
//! ([`crate::packet_slot`]), with one clock read and a few arithmetic
//! operations. A flow that moves to another CPU loses one spacing; the
//! sums move into the flow's entry at its next full sample on the same CPU
//! ([`crate::packet_slot::collect`]).
//!
//! With GRO (real NICs) a burst that arrives within one NAPI poll is one
//! merged segment here; its spacing from the previous one still reflects
//! the link rate, so the estimate holds at that coarser grain.

use aya_ebpf::helpers::bpf_ktime_get_ns;
use observer_common::RX_GAP_NS;

use crate::packet_slot::PacketSlot;

/// Notes a data segment of `len` bytes (TCP header and payload) of the
/// flow of `slot` arriving now.
///
/// # Safety
/// `slot` must be this CPU's slot of the flow ([`crate::packet_slot::of`]).
#[inline(always)]
pub unsafe fn note(slot: *mut PacketSlot, len: u32) {
    // SAFETY: a helper without arguments.
    let now = unsafe { bpf_ktime_get_ns() };
    // SAFETY: caller guarantees `slot`; a program nesting on this CPU can
    // at worst disturb one spacing.
    unsafe {
        let last = (*slot).last_ns;
        (*slot).last_ns = now;
        if last == 0 {
            return;
        }
        let gap = now.saturating_sub(last);
        // A pause (the sender's, counted on the flow's entry; or time the
        // flow spent on another CPU) is not spacing within an active period.
        if gap > RX_GAP_NS || len == 0 {
            return;
        }
        let per_byte = (gap * 1000 / u64::from(len)).min(u64::from(u32::MAX)) as u32;
        let mean = (*slot).mean_ps_per_byte;
        if mean != 0 && per_byte < mean / 2 {
            (*slot).burst_bytes = (*slot).burst_bytes.saturating_add(len);
            (*slot).burst_ns = (*slot).burst_ns.saturating_add(gap as u32);
        }
        (*slot).mean_ps_per_byte = if mean == 0 {
            per_byte
        } else {
            mean - mean / 8 + per_byte / 8
        };
    }
}
