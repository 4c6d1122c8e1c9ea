//! `cargo xtask bench`: what observer costs, measured as ratios within one
//! run, alternating the sides over several rounds; medians with min and max.
//! Targets live here, never in timed tests.

pub mod agent;
pub mod breakdown;
pub mod churn;
pub mod churn_load;
pub mod env;
pub mod fixed_load;
pub mod floor;
mod notes;
pub mod peer;
pub mod report;
#[cfg(test)]
mod report_tests;
pub mod rr;
pub mod targets;
pub mod throughput;

use serde::Serialize;

/// Median, minimum and maximum of a set of measurements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Stat {
    /// Median.
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Number of measurements.
    pub n: usize,
}

impl Stat {
    /// Summarises `v`; all zero when empty.
    pub fn of(v: &[f64]) -> Stat {
        if v.is_empty() {
            return Stat::default();
        }
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        let mid = s.len() / 2;
        let median = if s.len().is_multiple_of(2) {
            (s[mid - 1] + s[mid]) / 2.0
        } else {
            s[mid]
        };
        Stat {
            median,
            min: s[0],
            max: s[s.len() - 1],
            n: s.len(),
        }
    }
}

/// The sides of a with/without comparison, round by round.
#[derive(Debug, Default)]
pub struct Alternated {
    /// The measurement with observer, per round.
    pub with: Vec<f64>,
    /// The first measurement without it, per round.
    pub without: Vec<f64>,
    /// with / without, per round (0 where without was 0).
    pub ratios: Vec<f64>,
    /// A/A control: the second run without / the first, per round.
    pub aa: Vec<f64>,
}

/// Runs `rounds` rounds of three measurements: `with` observer, and
/// `without` it twice (the second is the A/A control, showing how far two
/// identical sides drift apart here), rotating their order each round so
/// drift favours no side.
///
/// # Errors
/// The first measurement that failed.
pub fn alternate(
    rounds: usize,
    mut with: impl FnMut() -> anyhow::Result<f64>,
    mut without: impl FnMut() -> anyhow::Result<f64>,
) -> anyhow::Result<Alternated> {
    let mut a = Alternated::default();
    for round in 0..rounds {
        let (mut w, mut wo, mut wo2) = (0.0, 0.0, 0.0);
        for i in 0..3 {
            match (i + round) % 3 {
                0 => w = with()?,
                1 => wo = without()?,
                _ => wo2 = without()?,
            }
        }
        a.with.push(w);
        a.without.push(wo);
        a.ratios.push(if wo > 0.0 { w / wo } else { 0.0 });
        a.aa.push(if wo > 0.0 { wo2 / wo } else { 0.0 });
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alternation_rotates_and_pairs_each_round() {
        // Each call returns the next number: round 0 runs with, without,
        // without2; round 1 without, without2, with; round 2 without2,
        // with, without.
        let n = std::cell::Cell::new(0.0);
        let next = || {
            n.set(n.get() + 1.0);
            Ok(n.get())
        };
        let a = alternate(3, next, next).unwrap();
        assert_eq!(a.with, [1.0, 6.0, 8.0]);
        assert_eq!(a.without, [2.0, 4.0, 9.0]);
        assert_eq!(a.ratios, [0.5, 1.5, 8.0 / 9.0]);
        assert_eq!(a.aa, [1.5, 1.25, 7.0 / 9.0]);
    }

    #[test]
    fn stats() {
        let s = Stat::of(&[3.0, 1.0, 2.0, 10.0]);
        assert_eq!((s.median, s.min, s.max, s.n), (2.5, 1.0, 10.0, 4));
        assert_eq!(Stat::of(&[5.0]).median, 5.0);
        assert_eq!(Stat::of(&[]).n, 0);
    }
}
