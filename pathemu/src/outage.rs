//! Outages of one direction (radio-like stalls): the direction goes dark
//! for a while at a fixed period, and packets arriving then are dropped.

use std::time::Duration;

/// The outage schedule of one direction: dark for `for_ns` once every
/// `every_ns`, counted from the first packet the direction sees.
///
/// With that first packet's arrival at `t0`, outage `k` (k = 1, 2, ...)
/// covers `t0 + k * every_ns ..< t0 + k * every_ns + for_ns`: the first one
/// begins `every_ns` after the first packet, never at once.
#[derive(Debug, Clone)]
pub struct Outage {
    /// Period (ns); 0 means no outages.
    every_ns: u64,
    /// Length of each outage (ns); 0 means no outages.
    for_ns: u64,
    /// Arrival time of the first packet (ns), once one has been seen.
    start_ns: Option<u64>,
}

impl Outage {
    /// Outages of `length` once every `every` (both non-zero for any outage;
    /// `length` is expected to be shorter than `every`).
    pub fn new(every: Duration, length: Duration) -> Self {
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        Outage {
            every_ns: ns(every),
            for_ns: ns(length),
            start_ns: None,
        }
    }

    /// Whether any outage is configured.
    pub fn is_enabled(&self) -> bool {
        self.every_ns != 0 && self.for_ns != 0
    }

    /// When the schedule started (ns): the first packet's arrival, if any yet.
    pub fn start_ns(&self) -> Option<u64> {
        self.start_ns
    }

    /// Whether the direction is dark at `now_ns`, on a schedule started at
    /// `start_ns` (false before the first period has passed).
    fn dark_since(&self, start_ns: u64, now_ns: u64) -> bool {
        let since = now_ns.saturating_sub(start_ns);
        since >= self.every_ns && since % self.every_ns < self.for_ns
    }

    /// Whether the direction would be dark at `now_ns` (false before the
    /// first packet, and always when disabled).
    pub fn is_dark(&self, now_ns: u64) -> bool {
        self.is_enabled()
            && self
                .start_ns
                .is_some_and(|start| self.dark_since(start, now_ns))
    }

    /// Notes a packet arriving at `now_ns` (the first one starts the
    /// schedule) and says whether it arrives during an outage (then it is
    /// to be dropped). Always false when disabled.
    pub fn arrive(&mut self, now_ns: u64) -> bool {
        if !self.is_enabled() {
            return false;
        }
        let start = *self.start_ns.get_or_insert(now_ns);
        self.dark_since(start, now_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn disabled_never_drops() {
        for (every, length) in [(0, 0), (100, 0), (0, 10)] {
            let mut o = Outage::new(Duration::from_millis(every), Duration::from_millis(length));
            assert!(!o.is_enabled());
            assert!((0..10_000).all(|t| !o.arrive(t * MS)));
            assert_eq!(o.start_ns(), None);
        }
    }

    #[test]
    fn first_outage_starts_one_period_after_the_first_packet() {
        // Dark for 30 ms once every 100 ms; the first packet at 5 ms.
        let mut o = Outage::new(Duration::from_millis(100), Duration::from_millis(30));
        assert!(!o.is_dark(5 * MS), "no schedule before the first packet");
        assert!(!o.arrive(5 * MS));
        assert_eq!(o.start_ns(), Some(5 * MS));
        // Not at once, not until 105 ms.
        assert!(!o.arrive(5 * MS + 1));
        assert!(!o.arrive(105 * MS - 1));
        // The edges: dark from 105 ms inclusive to 135 ms exclusive.
        assert!(o.arrive(105 * MS));
        assert!(o.arrive(135 * MS - 1));
        assert!(!o.arrive(135 * MS));
        // Every period again, with the same phase.
        assert!(!o.arrive(205 * MS - 1));
        assert!(o.arrive(205 * MS));
        assert!(o.arrive(234 * MS));
        assert!(!o.arrive(235 * MS));
        assert!(o.is_dark(10_005 * MS));
        assert!(!o.is_dark(10_035 * MS));
    }

    #[test]
    fn dark_share_over_a_long_run() {
        // One arrival every 1 ms for 100 s: 10 ms dark per 40 ms is 1/4 of
        // the arrivals after the first period (none in the first 40 ms).
        let mut o = Outage::new(Duration::from_millis(40), Duration::from_millis(10));
        let dark = (0..100_000u64).filter(|t| o.arrive(t * MS)).count();
        assert_eq!(dark, (100_000 - 40) / 4);
    }
}
