//! Delay jitter that keeps order: each packet draws an extra delay, but is
//! never delivered before the packet ahead of it (a link whose queueing
//! varies, not netem's reordering jitter).

use std::time::Duration;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

/// The seeded, order-keeping jitter of one direction.
///
/// A packet that is ready at `t_ns` leaves at
/// `max(t_ns + j, previous leave time)`, with `j` drawn uniformly from
/// `0..=max_ns` (whole ns).
#[derive(Debug, Clone)]
pub struct Jitter {
    /// The largest extra delay (ns); 0 means none.
    max_ns: u64,
    rng: Xoshiro256PlusPlus,
    /// When the previous packet leaves (ns); 0 before the first.
    floor_ns: u64,
}

impl Jitter {
    /// Jitter of up to `max` per packet, drawn from a xoshiro256++ generator
    /// seeded with `seed` (same seed, same draws).
    pub fn new(max: Duration, seed: u64) -> Self {
        Jitter {
            max_ns: u64::try_from(max.as_nanos()).unwrap_or(u64::MAX),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            floor_ns: 0,
        }
    }

    /// Whether any jitter is configured.
    pub fn is_enabled(&self) -> bool {
        self.max_ns != 0
    }

    /// The time (ns) a packet ready at `t_ns` leaves, given the packets
    /// before it. Without jitter it is `t_ns` and no number is drawn.
    pub fn apply(&mut self, t_ns: u64) -> u64 {
        if !self.is_enabled() {
            return t_ns;
        }
        let extra = self.rng.random_range(0..=self.max_ns);
        let leave = t_ns.saturating_add(extra).max(self.floor_ns);
        self.floor_ns = leave;
        leave
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn no_jitter_is_the_identity() {
        let mut j = Jitter::new(Duration::ZERO, 1);
        assert!(!j.is_enabled());
        // Even out of order input passes unchanged (nothing to keep).
        for t in [5, 3, 3, 100] {
            assert_eq!(j.apply(t * MS), t * MS);
        }
    }

    #[test]
    fn draws_stay_in_range_keep_order_and_are_seeded() {
        let max = 4 * MS;
        let run = |seed| {
            let mut j = Jitter::new(Duration::from_nanos(max), seed);
            (0..10_000u64).map(|i| j.apply(i * MS)).collect::<Vec<_>>()
        };
        let a = run(9);
        assert_eq!(a, run(9));
        assert_ne!(a, run(10));
        for (i, t) in a.iter().enumerate() {
            let ready = i as u64 * MS;
            // Never early; at most max late, or held only behind a predecessor.
            assert!(*t >= ready);
            let prev = if i == 0 { 0 } else { a[i - 1] };
            assert!(*t <= ready + max || *t == prev, "{i}: {t}");
        }
        assert!(a.windows(2).all(|w| w[0] <= w[1]), "order kept");
        // Packets 1 ms apart with up to 4 ms of jitter: both ends of the
        // range are reached, and the mean extra lies well inside it.
        let extra: Vec<u64> = a
            .iter()
            .enumerate()
            .map(|(i, t)| t - i as u64 * MS)
            .collect();
        assert!(extra.iter().any(|e| *e < MS / 10));
        assert!(extra.iter().any(|e| *e > max - MS / 10));
        let mean = extra.iter().sum::<u64>() / extra.len() as u64;
        assert!((2 * MS..4 * MS).contains(&mean), "{mean}");
    }

    #[test]
    fn back_to_back_packets_never_overtake() {
        // Ten packets ready at once: each leaves no earlier than the one before.
        let mut j = Jitter::new(Duration::from_millis(10), 3);
        let v: Vec<_> = (0..10).map(|_| j.apply(0)).collect();
        assert!(v.windows(2).all(|w| w[0] <= w[1]), "{v:?}");
        assert!(v.iter().all(|t| *t <= 10 * MS));
        // One ns of jitter: 0 or 1.
        let mut j = Jitter::new(Duration::from_nanos(1), 3);
        assert!((0..100).all(|i| (i * MS..=i * MS + 1).contains(&j.apply(i * MS))));
    }
}
