//! Confidence as measured: each rule's share of right verdicts over the
//! accuracy harness's tuning seed (docs/accuracy.md), so that a verdict
//! given at 0.9 is right nine times in ten over situations with a known
//! limit, not at a number chosen by hand.
//!
//! The table (`measured::MEASURED`) is written by
//! `cargo xtask accuracy --seed 1 --rejudge --calibrate
//! observer/src/attribution/measured.rs` from the seed's scored ends (clear
//! and matched); `--seed 2 --rejudge` checks it on the check seed (the
//! report's calibration bins). A rule the harness met fewer than
//! `Config::measured_min_ends` times keeps the confidence it computes.

use super::side::Side;

/// One rule's record over the tuning seed: how often its verdict was
/// right at the ends it decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Measured {
    /// The side whose table the rule is in.
    pub side: Side,
    /// The rule's name (`SENDER_RULES`, `RECEIVER_RULES`).
    pub rule: &'static str,
    /// Scored ends it decided.
    pub ends: u32,
    /// Of those, ends where its verdict was right.
    pub right: u32,
}

impl Measured {
    /// The rule's precision as a probability (0 to 1): right + 1 over
    /// ends + 2 (Laplace's rule of succession), so a rule right 12 times
    /// in 12 says 0.93, not a certainty twelve ends cannot show.
    pub fn confidence(&self) -> f64 {
        f64::from(self.right + 1) / f64::from(self.ends + 2)
    }
}

/// The measured confidence of `rule` on `side` in `table`: None where the
/// table has no record of it, or one of fewer than `min_ends` ends
/// (`Config::measured`, `Config::measured_min_ends`).
pub fn measured(table: &[Measured], min_ends: u32, side: Side, rule: &str) -> Option<f64> {
    table
        .iter()
        .find(|m| m.side == side && m.rule == rule)
        .filter(|m| m.ends >= min_ends)
        .map(Measured::confidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &[Measured] = &[
        Measured {
            side: Side::Sender,
            rule: "full_bottleneck",
            ends: 48,
            right: 48,
        },
        Measured {
            side: Side::Receiver,
            rule: "loss_held",
            ends: 8,
            right: 4,
        },
    ];

    #[test]
    fn a_rule_says_its_smoothed_precision_once_met_often_enough() {
        // 49 / 50: right every time in 48 ends is not certainty.
        assert_eq!(
            measured(TABLE, 8, Side::Sender, "full_bottleneck"),
            Some(0.98)
        );
        assert_eq!(measured(TABLE, 8, Side::Receiver, "loss_held"), Some(0.5));
        // The other side's rule of the same name, or one never met.
        assert_eq!(measured(TABLE, 8, Side::Receiver, "full_bottleneck"), None);
        assert_eq!(measured(TABLE, 8, Side::Sender, "pacing"), None);
        // Just under the ends asked for: the rule's own confidence.
        assert_eq!(measured(TABLE, 9, Side::Receiver, "loss_held"), None);
    }
}
