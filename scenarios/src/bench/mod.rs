//! `cargo xtask bench`: what observer costs, measured as ratios within one
//! run, alternating the sides over several rounds; medians with min and max.
//! Targets live here, never in timed tests.

pub mod agent;
pub mod breakdown;
pub mod churn;
pub mod churn_load;
pub mod env;
pub mod floor;
mod notes;
pub mod report;
#[cfg(test)]
mod report_tests;
pub mod rr;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats() {
        let s = Stat::of(&[3.0, 1.0, 2.0, 10.0]);
        assert_eq!((s.median, s.min, s.max, s.n), (2.5, 1.0, 10.0, 4));
        assert_eq!(Stat::of(&[5.0]).median, 5.0);
        assert_eq!(Stat::of(&[]).n, 0);
    }
}
