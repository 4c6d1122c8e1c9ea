//! The flow's recent best delivery rate: what the path has shown it can
//! carry, kept as a windowed maximum over two epochs.

use observer_common::{DELIVERY_EPOCH_NS, FlowSample};

/// Keeps the fastest delivery-rate sample (`delivered` segments over
/// `interval_us`) of the current epoch and of the one before it
/// ([`FlowSample::delivery_best`]); `fresh`: an ACK delivered data since
/// the last refresh, so the kernel's stored sample is new (after a
/// silence, the old one must not enter the new epoch). Rates are compared by cross-multiplying
/// (d1 x i2 > d2 x i1, u32 x u32 in u64): no division in the program.
///
/// # Safety
/// `s` must be valid for reads and writes.
#[inline(always)]
pub unsafe fn delivery_max(
    s: *mut FlowSample,
    now: u64,
    fresh: bool,
    delivered: u32,
    interval_us: u32,
) {
    // SAFETY: caller guarantees `s`.
    unsafe {
        let age = now.saturating_sub((*s).delivery_epoch_ns);
        if age >= DELIVERY_EPOCH_NS {
            // The epoch just ended is the previous one only if it ended
            // within an epoch; after a longer silence neither is recent.
            (*s).delivery_prev = if age < 2 * DELIVERY_EPOCH_NS {
                (*s).delivery_best
            } else {
                [0, 0]
            };
            (*s).delivery_best = [0, 0];
            (*s).delivery_epoch_ns = now;
        }
        if fresh && delivered != 0 && interval_us != 0 {
            let [d, i] = (*s).delivery_best;
            if i == 0 || u64::from(delivered) * u64::from(i) > u64::from(d) * u64::from(interval_us)
            {
                (*s).delivery_best = [delivered, interval_us];
            }
        }
    }
}
