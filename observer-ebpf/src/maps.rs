//! Maps and load-time globals shared by the hooks.

use aya_ebpf::{
    macros::map,
    maps::{Array, LruHashMap, PerCpuArray, RingBuf},
};
use observer_common::{Counter, DEFAULT_MAX_FLOWS, DEFAULT_RINGBUF_BYTES, FlowSample, Offsets};

/// Per-flow state keyed by socket cookie. max_entries is set at load time.
#[map(name = "FLOWS")]
pub static FLOWS: LruHashMap<u64, FlowSample> = LruHashMap::with_max_entries(DEFAULT_MAX_FLOWS, 0);

/// Final records of closed flows.
#[map(name = "CLOSED")]
pub static CLOSED: RingBuf = RingBuf::with_byte_size(DEFAULT_RINGBUF_BYTES, 0);

/// Self-counters, indexed by [`Counter`].
#[map(name = "COUNTERS")]
pub static COUNTERS: PerCpuArray<u64> = PerCpuArray::with_max_entries(Counter::COUNT, 0);

/// Slot `LIVE_PROGRAMS_ADDED`: flow entries the programs inserted minus
/// those they removed; slot `LIVE_AGENT_REMOVED`: parked closes the agent
/// read and removed (written by user space only). Live entries are the
/// first minus the second (`observer_common::MAP_LIVE`).
#[map(name = "LIVE")]
pub static LIVE: Array<u64> = Array::with_max_entries(2, 0);

/// Scratch space for building a new flow entry off the 512-byte stack.
#[map(name = "SCRATCH")]
pub static SCRATCH: PerCpuArray<FlowSample> = PerCpuArray::with_max_entries(1, 0);

/// The tick program's reading (see `observer_common::MAP_TICK`).
#[map(name = "TICK")]
pub static TICK: Array<u64> = Array::with_max_entries(2, 0);

/// BTF-resolved member offsets, written by user space before load.
#[unsafe(no_mangle)]
pub static OFFSETS: Offsets = Offsets::NONE;

/// 1: read socket fields with direct BTF-checked loads; 0: with
/// `bpf_probe_read_kernel`. Written by user space before load.
#[unsafe(no_mangle)]
pub static DIRECT: u8 = 0;

/// The pause threshold (ns; `observer_common::rx_gap_ns` for the kernel's
/// HZ), written by user space before load.
#[unsafe(no_mangle)]
pub static RX_GAP: u64 = observer_common::RX_GAP_NS;

/// max_entries of FLOWS, written by user space before load.
#[unsafe(no_mangle)]
pub static MAX_FLOWS: u32 = DEFAULT_MAX_FLOWS;

/// Adds one to `counter` on this CPU.
#[inline(always)]
pub fn count(counter: Counter) {
    if let Some(p) = COUNTERS.get_ptr_mut(counter as u32) {
        // SAFETY: per-CPU slot; programs do not nest on one CPU for these hooks
        // beyond what a lost increment would cost.
        unsafe { *p += 1 };
    }
}

/// Adds `delta` (two's complement for a decrement) to the live-entry count.
#[inline(always)]
pub fn live_add(delta: u64) {
    if let Some(p) = LIVE.get_ptr_mut(observer_common::LIVE_PROGRAMS_ADDED) {
        // SAFETY: a valid map value pointer, updated with an atomic add
        // because every CPU shares the slot.
        unsafe {
            core::arch::asm!("lock *(u64 *)({p} + 0) += {d}", p = in(reg) p, d = in(reg) delta)
        };
    }
}

/// The live-entry count (racy read, good enough to detect a full map).
#[inline(always)]
pub fn live() -> u64 {
    let slot = |i| match LIVE.get_ptr(i) {
        // SAFETY: a valid map value pointer.
        Some(p) => unsafe { core::ptr::read_volatile(p) },
        None => 0,
    };
    slot(observer_common::LIVE_PROGRAMS_ADDED)
        .wrapping_sub(slot(observer_common::LIVE_AGENT_REMOVED))
}

/// The flow map's max_entries as user space configured it.
#[inline(always)]
pub fn max_flows() -> u64 {
    // SAFETY: reading a static; volatile so the compiler does not fold the
    // default that user space overwrites at load time.
    u64::from(unsafe { core::ptr::read_volatile(&MAX_FLOWS) })
}
