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
//! stay as cheap as the gate itself: a per-CPU direct-mapped slot (no
//! hashing, no shared cache line), one clock read, a few arithmetic
//! operations. A flow's segments normally arrive on one CPU (RSS/RPS
//! steer a flow to one queue); a flow that moves loses one spacing, and
//! two flows sharing a slot restart each other's mean. The sums move into
//! the flow's entry at its next full sample on the same CPU.
//!
//! With GRO (real NICs) a burst that arrives within one NAPI poll is one
//! merged segment here; its spacing from the previous one still reflects
//! the link rate, so the estimate holds at that coarser grain.

use aya_ebpf::{helpers::bpf_ktime_get_ns, macros::map, maps::PerCpuArray};
use observer_common::{FlowSample, RX_GAP_NS};

/// Slots per CPU (a power of two). Memory: 1024 x 32 bytes = 32 KiB per CPU.
pub const ARRIVAL_SLOTS: u32 = 1024;

/// One flow's arrival state on one CPU.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ArrivalSlot {
    /// Socket cookie (0: empty).
    pub cookie: u64,
    /// When the flow's previous data segment arrived (monotonic ns).
    pub last_ns: u64,
    /// Bytes of burst segments not yet moved into the flow's entry.
    pub burst_bytes: u32,
    /// Their spacing (ns), likewise.
    pub burst_ns: u32,
    /// Running mean spacing over active periods (ps per byte; EWMA 1/8).
    pub mean_ps_per_byte: u32,
    /// Explicit padding.
    pub _pad: u32,
}

#[map(name = "ARRIVALS")]
static ARRIVALS: PerCpuArray<ArrivalSlot> = PerCpuArray::with_max_entries(ARRIVAL_SLOTS, 0);

#[inline(always)]
fn slot(cookie: u64) -> Option<*mut ArrivalSlot> {
    ARRIVALS.get_ptr_mut(cookie as u32 & (ARRIVAL_SLOTS - 1))
}

/// Notes a data segment of `len` bytes (TCP header and payload) of flow
/// `cookie` arriving now.
#[inline(always)]
pub fn note(cookie: u64, len: u32) {
    let Some(a) = slot(cookie) else {
        return;
    };
    // SAFETY: a helper without arguments.
    let now = unsafe { bpf_ktime_get_ns() };
    // SAFETY: this CPU's slot; a program nesting on this CPU can at worst
    // disturb one spacing.
    unsafe {
        if (*a).cookie != cookie {
            *a = ArrivalSlot {
                cookie,
                last_ns: now,
                burst_bytes: 0,
                burst_ns: 0,
                mean_ps_per_byte: 0,
                _pad: 0,
            };
            return;
        }
        let gap = now.saturating_sub((*a).last_ns);
        (*a).last_ns = now;
        // A pause (the sender's, counted on the flow's entry; or time the
        // flow spent on another CPU) is not spacing within an active period.
        if gap > RX_GAP_NS || len == 0 {
            return;
        }
        let per_byte = (gap * 1000 / u64::from(len)).min(u64::from(u32::MAX)) as u32;
        let mean = (*a).mean_ps_per_byte;
        if mean != 0 && per_byte < mean / 2 {
            (*a).burst_bytes = (*a).burst_bytes.saturating_add(len);
            (*a).burst_ns = (*a).burst_ns.saturating_add(gap as u32);
        }
        (*a).mean_ps_per_byte = if mean == 0 {
            per_byte
        } else {
            mean - mean / 8 + per_byte / 8
        };
    }
}

/// Moves this CPU's burst sums of the flow into its entry `s`.
///
/// # Safety
/// `s` must be valid for reads and writes.
#[inline(always)]
pub unsafe fn collect(s: *mut FlowSample) {
    // SAFETY: caller guarantees `s`.
    let cookie = unsafe { (*s).cookie };
    let Some(a) = slot(cookie) else {
        return;
    };
    // SAFETY: this CPU's slot (see `note`) and the caller's `s`.
    unsafe {
        if (*a).cookie != cookie {
            return;
        }
        (*s).burst_bytes += u64::from((*a).burst_bytes);
        (*s).burst_ns += u64::from((*a).burst_ns);
        (*a).burst_bytes = 0;
        (*a).burst_ns = 0;
    }
}
