//! Per-direction counters, updated by the relay and readable at any time.

use std::sync::atomic::{AtomicU64, Ordering};

/// Upper bounds (ns, exclusive) of the delivery-lateness histogram buckets;
/// the last bucket of [`LinkStats::lateness_hist`] counts everything later.
pub const LATENESS_BUCKETS_NS: [u64; 7] = [
    10_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 5_000_000,
];

/// Number of lateness histogram buckets (one more than the bounds).
const NB: usize = LATENESS_BUCKETS_NS.len() + 1;

/// A snapshot of one direction's counters. Byte counts are IP packet bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Packets read from the sending side's TUN (every packet offered to the model).
    pub packets_in: u64,
    /// Packets written to the receiving side's TUN.
    pub packets_forwarded: u64,
    /// Bytes written to the receiving side's TUN.
    pub bytes_forwarded: u64,
    /// Packets dropped because the drop-tail queue was full.
    pub packets_dropped_queue: u64,
    /// Bytes of the packets dropped because the queue was full.
    pub bytes_dropped_queue: u64,
    /// Packets dropped by the random-loss draw.
    pub packets_dropped_loss: u64,
    /// Bytes of the packets dropped by the random-loss draw.
    pub bytes_dropped_loss: u64,
    /// Packets dropped by the token-bucket policer (too few tokens left).
    pub packets_dropped_police: u64,
    /// Bytes of the packets dropped by the token-bucket policer.
    pub bytes_dropped_police: u64,
    /// Packets dropped because the shaper's drop-tail queue was full.
    pub packets_dropped_shaper: u64,
    /// Bytes of the packets dropped because the shaper's queue was full.
    pub bytes_dropped_shaper: u64,
    /// Packets dropped because they arrived during an outage.
    pub packets_dropped_outage: u64,
    /// Bytes of the packets dropped because they arrived during an outage.
    pub bytes_dropped_outage: u64,
    /// Packets dropped for being longer than `drop_over_bytes` (PMTU black hole).
    pub packets_dropped_oversize: u64,
    /// Bytes of the packets dropped for being longer than `drop_over_bytes`.
    pub bytes_dropped_oversize: u64,
    /// Packets the reorder draw held back by `reorder_delay` (counted when
    /// accepted, also while still in flight; whether a later packet actually
    /// overtook one depends on the traffic behind it).
    pub packets_reordered: u64,
    /// Writes to the receiving TUN that failed (the packet is lost).
    pub write_errors: u64,
    /// Packets accepted but not yet delivered (in the queue or the delay line).
    pub packets_in_flight: u64,
    /// Sum over delivered packets of how late each was written, relative to
    /// its scheduled delivery time (ns); divide by `packets_forwarded` for the mean.
    pub lateness_sum_ns: u64,
    /// The largest lateness of any delivered packet (ns).
    pub lateness_max_ns: u64,
    /// Delivered packets per lateness bucket: bucket `i` counts lateness below
    /// [`LATENESS_BUCKETS_NS`]`[i]` (and at least the previous bound); the
    /// last bucket counts 5 ms and more.
    pub lateness_hist: [u64; NB],
}

impl LinkStats {
    /// Mean delivery lateness (ns) over all forwarded packets; 0 before the first.
    pub fn mean_lateness_ns(&self) -> u64 {
        self.lateness_sum_ns
            .checked_div(self.packets_forwarded)
            .unwrap_or(0)
    }

    /// The fraction (0..=1) of delivered packets that were at least `bound_ns` late,
    /// where `bound_ns` is one of [`LATENESS_BUCKETS_NS`] (else rounded up to the next one).
    pub fn late_fraction(&self, bound_ns: u64) -> f64 {
        let first = LATENESS_BUCKETS_NS
            .iter()
            .position(|b| *b >= bound_ns)
            .map_or(NB - 1, |i| i + 1);
        let late: u64 = self.lateness_hist[first..].iter().sum();
        let all: u64 = self.lateness_hist.iter().sum();
        if all == 0 {
            0.0
        } else {
            late as f64 / all as f64
        }
    }

    /// Counter-wise difference `self - earlier` (for measuring an interval);
    /// `packets_in_flight` and `lateness_max_ns` are taken from `self`.
    pub fn since(&self, earlier: &LinkStats) -> LinkStats {
        LinkStats {
            packets_in: self.packets_in.saturating_sub(earlier.packets_in),
            packets_forwarded: self
                .packets_forwarded
                .saturating_sub(earlier.packets_forwarded),
            bytes_forwarded: self.bytes_forwarded.saturating_sub(earlier.bytes_forwarded),
            packets_dropped_queue: self
                .packets_dropped_queue
                .saturating_sub(earlier.packets_dropped_queue),
            bytes_dropped_queue: self
                .bytes_dropped_queue
                .saturating_sub(earlier.bytes_dropped_queue),
            packets_dropped_loss: self
                .packets_dropped_loss
                .saturating_sub(earlier.packets_dropped_loss),
            bytes_dropped_loss: self
                .bytes_dropped_loss
                .saturating_sub(earlier.bytes_dropped_loss),
            packets_dropped_police: self
                .packets_dropped_police
                .saturating_sub(earlier.packets_dropped_police),
            bytes_dropped_police: self
                .bytes_dropped_police
                .saturating_sub(earlier.bytes_dropped_police),
            packets_dropped_shaper: self
                .packets_dropped_shaper
                .saturating_sub(earlier.packets_dropped_shaper),
            bytes_dropped_shaper: self
                .bytes_dropped_shaper
                .saturating_sub(earlier.bytes_dropped_shaper),
            packets_dropped_outage: self
                .packets_dropped_outage
                .saturating_sub(earlier.packets_dropped_outage),
            bytes_dropped_outage: self
                .bytes_dropped_outage
                .saturating_sub(earlier.bytes_dropped_outage),
            packets_dropped_oversize: self
                .packets_dropped_oversize
                .saturating_sub(earlier.packets_dropped_oversize),
            bytes_dropped_oversize: self
                .bytes_dropped_oversize
                .saturating_sub(earlier.bytes_dropped_oversize),
            packets_reordered: self
                .packets_reordered
                .saturating_sub(earlier.packets_reordered),
            write_errors: self.write_errors.saturating_sub(earlier.write_errors),
            packets_in_flight: self.packets_in_flight,
            lateness_sum_ns: self.lateness_sum_ns.saturating_sub(earlier.lateness_sum_ns),
            lateness_max_ns: self.lateness_max_ns,
            lateness_hist: std::array::from_fn(|i| {
                self.lateness_hist[i].saturating_sub(earlier.lateness_hist[i])
            }),
        }
    }
}

/// The live, shared counters of one direction (written by one relay thread).
#[derive(Debug, Default)]
pub(crate) struct LinkCounters {
    pub(crate) packets_in: AtomicU64,
    pub(crate) packets_forwarded: AtomicU64,
    pub(crate) bytes_forwarded: AtomicU64,
    pub(crate) packets_dropped_queue: AtomicU64,
    pub(crate) bytes_dropped_queue: AtomicU64,
    pub(crate) packets_dropped_loss: AtomicU64,
    pub(crate) bytes_dropped_loss: AtomicU64,
    pub(crate) packets_dropped_police: AtomicU64,
    pub(crate) bytes_dropped_police: AtomicU64,
    pub(crate) packets_dropped_shaper: AtomicU64,
    pub(crate) bytes_dropped_shaper: AtomicU64,
    pub(crate) packets_dropped_outage: AtomicU64,
    pub(crate) bytes_dropped_outage: AtomicU64,
    pub(crate) packets_dropped_oversize: AtomicU64,
    pub(crate) bytes_dropped_oversize: AtomicU64,
    pub(crate) packets_reordered: AtomicU64,
    pub(crate) write_errors: AtomicU64,
    pub(crate) packets_in_flight: AtomicU64,
    pub(crate) lateness_sum_ns: AtomicU64,
    pub(crate) lateness_max_ns: AtomicU64,
    pub(crate) lateness_hist: [AtomicU64; NB],
}

/// Adds `n` to a counter (single writer, relaxed ordering is enough).
pub(crate) fn bump(counter: &AtomicU64, n: u64) {
    counter.fetch_add(n, Ordering::Relaxed);
}

impl LinkCounters {
    /// Reads all counters (each one atomically; the set is not a single atomic snapshot).
    pub(crate) fn snapshot(&self) -> LinkStats {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        LinkStats {
            packets_in: r(&self.packets_in),
            packets_forwarded: r(&self.packets_forwarded),
            bytes_forwarded: r(&self.bytes_forwarded),
            packets_dropped_queue: r(&self.packets_dropped_queue),
            bytes_dropped_queue: r(&self.bytes_dropped_queue),
            packets_dropped_loss: r(&self.packets_dropped_loss),
            bytes_dropped_loss: r(&self.bytes_dropped_loss),
            packets_dropped_police: r(&self.packets_dropped_police),
            bytes_dropped_police: r(&self.bytes_dropped_police),
            packets_dropped_shaper: r(&self.packets_dropped_shaper),
            bytes_dropped_shaper: r(&self.bytes_dropped_shaper),
            packets_dropped_outage: r(&self.packets_dropped_outage),
            bytes_dropped_outage: r(&self.bytes_dropped_outage),
            packets_dropped_oversize: r(&self.packets_dropped_oversize),
            bytes_dropped_oversize: r(&self.bytes_dropped_oversize),
            packets_reordered: r(&self.packets_reordered),
            write_errors: r(&self.write_errors),
            packets_in_flight: r(&self.packets_in_flight),
            lateness_sum_ns: r(&self.lateness_sum_ns),
            lateness_max_ns: r(&self.lateness_max_ns),
            lateness_hist: std::array::from_fn(|i| r(&self.lateness_hist[i])),
        }
    }

    /// Records the delivery of a packet of `bytes` that was `late_ns` late.
    pub(crate) fn delivered(&self, bytes: u64, late_ns: u64) {
        bump(&self.packets_forwarded, 1);
        bump(&self.bytes_forwarded, bytes);
        bump(&self.lateness_sum_ns, late_ns);
        self.lateness_max_ns.fetch_max(late_ns, Ordering::Relaxed);
        let bucket = LATENESS_BUCKETS_NS
            .iter()
            .position(|b| late_ns < *b)
            .unwrap_or(NB - 1);
        bump(&self.lateness_hist[bucket], 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_and_since() {
        let c = LinkCounters::default();
        c.delivered(1500, 10);
        let a = c.snapshot();
        c.delivered(100, 30);
        bump(&c.packets_dropped_queue, 2);
        bump(&c.packets_dropped_police, 3);
        bump(&c.bytes_dropped_police, 4500);
        bump(&c.packets_dropped_shaper, 5);
        bump(&c.bytes_dropped_oversize, 1501);
        bump(&c.packets_reordered, 6);
        let b = c.snapshot();
        let d = b.since(&a);
        assert_eq!(d.packets_forwarded, 1);
        assert_eq!(d.bytes_forwarded, 100);
        assert_eq!(d.packets_dropped_queue, 2);
        assert_eq!(d.packets_dropped_police, 3);
        assert_eq!(d.bytes_dropped_police, 4500);
        assert_eq!(d.packets_dropped_shaper, 5);
        assert_eq!(d.bytes_dropped_oversize, 1501);
        assert_eq!(d.packets_reordered, 6);
        assert_eq!(d.packets_dropped_outage, 0);
        assert_eq!(b.lateness_max_ns, 30);
        assert_eq!(b.mean_lateness_ns(), 20);
        c.delivered(100, 7_000_000);
        c.delivered(100, 300_000);
        let s = c.snapshot();
        assert_eq!(s.lateness_hist, [2, 0, 0, 0, 1, 0, 0, 1]);
        assert_eq!(s.late_fraction(1_000_000), 0.25);
        assert_eq!(s.late_fraction(250_000), 0.5);
        assert_eq!(s.late_fraction(10_000), 0.5);
    }
}
