//! Reordering: a share of the packets is held back for a while, and the
//! packets behind it overtake it.

use std::time::Duration;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

/// The seeded hold-back decision of one direction: one draw per packet.
#[derive(Debug, Clone)]
pub struct Reorder {
    /// Probability (0.0..=1.0) a packet is held back; 0 means never.
    share: f64,
    /// How long a held-back packet is held (ns).
    hold_ns: u64,
    rng: Xoshiro256PlusPlus,
}

impl Reorder {
    /// Holds back each packet with probability `share` by `hold`, drawing
    /// from a xoshiro256++ generator seeded with `seed` (same seed, same pattern).
    pub fn new(share: f64, hold: Duration, seed: u64) -> Self {
        Reorder {
            share,
            hold_ns: u64::try_from(hold.as_nanos()).unwrap_or(u64::MAX),
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }

    /// Whether any packet can be held back (a non-zero share and hold).
    pub fn is_enabled(&self) -> bool {
        self.share > 0.0 && self.hold_ns != 0
    }

    /// Decides for the next packet: how long it is held back (ns), the
    /// configured hold or 0. When disabled, 0 and no number is drawn.
    pub fn hold_ns(&mut self) -> u64 {
        if !self.is_enabled() {
            return 0;
        }
        if self.rng.random::<f64>() < self.share {
            self.hold_ns
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn disabled_holds_nothing() {
        for (share, hold) in [(0.0, 5), (0.5, 0), (0.0, 0)] {
            let mut r = Reorder::new(share, Duration::from_millis(hold), 1);
            assert!(!r.is_enabled());
            assert!((0..1000).all(|_| r.hold_ns() == 0));
        }
    }

    #[test]
    fn share_is_seeded_and_near_its_probability() {
        let pattern = |seed| {
            let mut r = Reorder::new(0.1, Duration::from_millis(5), seed);
            (0..10_000).map(|_| r.hold_ns()).collect::<Vec<_>>()
        };
        let a = pattern(4);
        assert_eq!(a, pattern(4));
        assert_ne!(a, pattern(5));
        assert!(a.iter().all(|h| *h == 0 || *h == 5 * MS));
        let held = a.iter().filter(|h| **h != 0).count() as f64;
        // 4-sigma binomial bound around 1000.
        let sigma = (10_000.0f64 * 0.1 * 0.9).sqrt();
        assert!((held - 1000.0).abs() < 4.0 * sigma, "{held}");
    }

    #[test]
    fn share_one_holds_every_packet() {
        let mut r = Reorder::new(1.0, Duration::from_nanos(1), 1);
        assert!((0..1000).all(|_| r.hold_ns() == 1));
    }
}
