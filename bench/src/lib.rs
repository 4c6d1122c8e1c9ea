//! `cargo xtask bench`: what observer costs, measured as ratios within one
//! run, alternating the sides over several rounds; medians with min and max.
//! Targets live here, never in timed tests.
//!
//! In: the loads it drives (pathemu's namespaces, iperf3, its own
//! request/response and churn clients), observer's probes loaded in this
//! process or its agent run beside them. Out: [`report::Results`], written
//! as JSON and rendered to docs/benchmarks.md by the binary (`main.rs`).

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
    let sides = rotate(rounds, 3, |side| if side == 0 { with() } else { without() })?;
    Ok(Alternated {
        ratios: per_round(&sides[0], &sides[1]),
        aa: per_round(&sides[2], &sides[1]),
        with: sides[0].clone(),
        without: sides[1].clone(),
    })
}

/// `a / b` round by round (0 where `b` is 0).
pub fn per_round(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter()
        .zip(b)
        .map(|(a, b)| if *b > 0.0 { a / b } else { 0.0 })
        .collect()
}

/// Runs `rounds` rounds of `sides` measurements (`run(side)`, side 0 to
/// `sides - 1`), starting each round one side later than the last so that
/// drift over the run favours no side. Returns each side's measurements,
/// round by round.
///
/// # Errors
/// The first measurement that failed.
pub fn rotate(
    rounds: usize,
    sides: usize,
    mut run: impl FnMut(usize) -> anyhow::Result<f64>,
) -> anyhow::Result<Vec<Vec<f64>>> {
    let mut out: Vec<Vec<f64>> = (0..sides).map(|_| Vec::with_capacity(rounds)).collect();
    for round in 0..rounds {
        let mut this = vec![0.0; sides];
        for i in 0..sides {
            let side = (i + round) % sides;
            this[side] = run(side)?;
        }
        for (side, v) in out.iter_mut().zip(this) {
            side.push(v);
        }
    }
    Ok(out)
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
    fn rotation_starts_each_round_one_side_later() {
        let order = std::cell::RefCell::new(Vec::new());
        let sides = rotate(3, 4, |side| {
            order.borrow_mut().push(side);
            Ok(side as f64 * 10.0 + order.borrow().len() as f64)
        })
        .unwrap();
        assert_eq!(*order.borrow(), [0, 1, 2, 3, 1, 2, 3, 0, 2, 3, 0, 1]);
        assert_eq!(sides[0], [1.0, 8.0, 11.0]);
        assert_eq!(sides[3], [34.0, 37.0, 40.0]);
        assert_eq!(per_round(&[2.0, 3.0], &[4.0, 0.0]), [0.5, 0.0]);
    }

    #[test]
    fn stats() {
        let s = Stat::of(&[3.0, 1.0, 2.0, 10.0]);
        assert_eq!((s.median, s.min, s.max, s.n), (2.5, 1.0, 10.0, 4));
        assert_eq!(Stat::of(&[5.0]).median, 5.0);
        assert_eq!(Stat::of(&[]).n, 0);
    }
}
