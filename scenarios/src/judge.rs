//! Judging one flow's timeline against a scenario's expected verdicts.

use std::collections::HashMap;

use observer::attribution::Verdict;

use crate::catalog::{
    Expect, IDLE_LINK_USE, MIN_SHARE, RX_MIN_ACCURACY, RX_MIN_SAMPLES, SETTLE_S, View,
};

/// The limits before the bottleneck that a sender-side flow can show:
/// where `path` was expected and the link stood idle, one of these is the
/// truth, and is right.
const BEFORE_THE_LINK: [Verdict; 2] = [Verdict::Sender, Verdict::CongestionWindow];

/// `samples` as they are judged against `expected`, with how many in
/// `[from, to)` were read right only for the link. Where `path` was
/// expected but the bottleneck carried under [`IDLE_LINK_USE`] of its rate
/// over the sample's verdict window (`link_use`, in step with `samples`;
/// `None` where unmeasured), the path did not hold the flow: a verdict
/// of a limit before it ([`BEFORE_THE_LINK`]) is the truth there, and
/// counts as the expected one.
pub fn read_at_link(
    samples: &[(f64, Verdict)],
    link_use: &[Option<f64>],
    (from, to): (f64, f64),
    expected: Verdict,
) -> (Vec<(f64, Verdict)>, usize) {
    let mut idle_right = 0;
    let read = samples
        .iter()
        .enumerate()
        .map(|(i, &(t, v))| {
            let idle = link_use
                .get(i)
                .copied()
                .flatten()
                .is_some_and(|u| u < IDLE_LINK_USE);
            if expected == Verdict::Path && idle && BEFORE_THE_LINK.contains(&v) {
                idle_right += usize::from(t >= from && t < to);
                (t, expected)
            } else {
                (t, v)
            }
        })
        .collect();
    (read, idle_right)
}

/// Majority verdict in `[from, to)`, its share, and when the expected one
/// settled (first time from which at least 80% of later samples agree).
pub fn judge(
    samples: &[(f64, Verdict)],
    from: f64,
    to: f64,
    expected: Verdict,
) -> (Verdict, f64, Option<f64>) {
    let span: Vec<&(f64, Verdict)> = samples
        .iter()
        .filter(|(t, _)| *t >= from && *t < to)
        .collect();
    if span.is_empty() {
        return (Verdict::Unknown, 0.0, None);
    }
    let mut counts: HashMap<Verdict, usize> = HashMap::new();
    for (_, v) in &span {
        *counts.entry(*v).or_default() += 1;
    }
    let (majority, n) = counts
        .iter()
        .max_by_key(|(v, n)| (**n, **v == expected))
        .map(|(v, n)| (*v, *n))
        .unwrap_or((Verdict::Unknown, 0));
    let share = n as f64 / span.len() as f64;
    let settled = (0..span.len()).find_map(|i| {
        let rest = &span[i..];
        let ok = rest.iter().filter(|(_, v)| *v == expected).count();
        (ok as f64 >= 0.8 * rest.len() as f64).then(|| (span[i].0 - from).max(0.0))
    });
    (majority, share, settled)
}

/// Samples in `[from, to)` and how many of them are right: `expected`,
/// or `also` where the span names a second fair reading.
pub fn tally(
    samples: &[(f64, Verdict)],
    from: f64,
    to: f64,
    expected: Verdict,
    also: Option<Verdict>,
) -> (usize, usize) {
    samples
        .iter()
        .filter(|(t, _)| *t >= from && *t < to)
        .fold((0, 0), |(ok, n), (_, v)| {
            (ok + usize::from(*v == expected || Some(*v) == also), n + 1)
        })
}

/// Whether a span passes. Sender side: the expected verdict is the
/// majority with at least [`MIN_SHARE`] and settled within [`SETTLE_S`].
/// Receiver side: at least [`RX_MIN_ACCURACY`] of at least
/// [`RX_MIN_SAMPLES`] samples are right (the expected verdict, or the
/// span's second fair reading, and then the expected one is still the
/// majority with at least [`MIN_SHARE`]); the criteria are the catalogue's.
pub fn span_passes(
    view: View,
    e: &Expect,
    (majority, share, settled): (Verdict, f64, Option<f64>),
    (right, samples): (usize, usize),
) -> bool {
    let leads = majority == e.verdict && share >= MIN_SHARE;
    match view {
        View::Sender => leads && settled.is_some_and(|s| s <= SETTLE_S),
        View::Receiver => {
            samples >= RX_MIN_SAMPLES
                && right as f64 >= RX_MIN_ACCURACY * samples as f64
                && (e.also.is_none() || leads)
        }
    }
}

/// The majority verdict of `samples` in `[from, to)`, if any, with the
/// rule (`rules`, in step with `samples`) that decided most of them.
pub fn majority(
    samples: &[(f64, Verdict)],
    rules: &[&'static str],
    from: f64,
    to: f64,
) -> Option<(Verdict, &'static str)> {
    let mut counts: HashMap<(Verdict, &'static str), usize> = HashMap::new();
    let mut verdicts: HashMap<Verdict, usize> = HashMap::new();
    for ((t, v), rule) in samples.iter().zip(rules) {
        if *t >= from && *t < to {
            *counts.entry((*v, rule)).or_default() += 1;
            *verdicts.entry(*v).or_default() += 1;
        }
    }
    let (verdict, _) = verdicts.into_iter().max_by_key(|(_, n)| *n)?;
    counts
        .into_iter()
        .filter(|((v, _), _)| *v == verdict)
        .max_by_key(|(_, n)| *n)
        .map(|(k, _)| k)
}

#[cfg(test)]
#[path = "judge_tests.rs"]
mod tests;
