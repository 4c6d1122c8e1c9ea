//! Matched limits scored: whether an end names both limits of a matched
//! situation (its verdict and its `also` together cover the tightest
//! limit's verdicts and the next one's), and how often an `also` is given
//! where the situation is clear (docs/accuracy.md, "Matched limits").

use observer::attribution::Verdict;
use serde::Serialize;

use crate::{
    outcome::{EndVerdict, Outcome},
    truth::{Truth, truth},
};

/// The figures of matched limits over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct PairScore {
    /// Ends of scored matched situations with a verdict.
    pub matched_ends: u32,
    /// Of them, ends whose verdict and `also` cover both limits.
    pub named_both: u32,
    /// Of them, ends that gave an `also` at all.
    pub matched_with_also: u32,
    /// Ends of scored clear situations with a verdict.
    pub clear_ends: u32,
    /// Of them, ends that gave an `also`.
    pub clear_with_also: u32,
    /// Every `also` given at a scored end.
    pub alsos: u32,
    /// Of them, those naming one of the two tightest limits' verdicts.
    pub alsos_in_top_two: u32,
}

/// The verdicts that name `limit` number `i` (tightest first) at `end`
/// (0: the sending end, 1: the receiving end); empty where there is none.
fn names(t: &Truth, i: usize, end: usize) -> Vec<Verdict> {
    t.ceilings
        .get(i)
        .map(|c| {
            let (s, r) = c.limit.expected();
            if end == 0 { s.to_vec() } else { r.to_vec() }
        })
        .unwrap_or_default()
}

/// Whether `e` names both of `t`'s two tightest limits at `end`.
pub fn names_both(t: &Truth, end: usize, e: &EndVerdict) -> bool {
    let given: Vec<Verdict> = e
        .parsed()
        .into_iter()
        .chain(
            e.also
                .as_deref()
                .and_then(|a| Verdict::ALL.into_iter().find(|v| v.name() == a)),
        )
        .collect();
    let covers = |want: Vec<Verdict>| !want.is_empty() && want.iter().any(|v| given.contains(v));
    covers(names(t, 0, end)) && covers(names(t, 1, end))
}

/// Scores the matched limits of `outcomes`, those `scored` keeps only
/// (`score::scored`, passed in so this module does not import its
/// caller).
pub fn score_pairs(outcomes: &[Outcome], scored: fn(&Outcome, &Truth) -> bool) -> PairScore {
    let mut p = PairScore::default();
    for o in outcomes {
        let t = truth(&o.situation);
        if !scored(o, &t) {
            continue;
        }
        for (end, e) in [&o.sender, &o.receiver].into_iter().enumerate() {
            let Some(e) = e.as_ref().filter(|e| e.parsed().is_some()) else {
                continue;
            };
            let also = e.also.is_some();
            if t.clear {
                p.clear_ends += 1;
                p.clear_with_also += u32::from(also);
            } else {
                p.matched_ends += 1;
                p.matched_with_also += u32::from(also);
                p.named_both += u32::from(names_both(&t, end, e));
            }
            if let Some(a) = e.also.as_deref() {
                p.alsos += 1;
                let top: Vec<Verdict> = names(&t, 0, end)
                    .into_iter()
                    .chain(names(&t, 1, end))
                    .collect();
                p.alsos_in_top_two += u32::from(top.iter().any(|v| v.name() == a));
            }
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::truth::{Ceiling, Limit};

    fn truth_of(a: Limit, b: Limit) -> Truth {
        Truth {
            ceilings: vec![
                Ceiling {
                    limit: a,
                    bps: 10e6,
                },
                Ceiling {
                    limit: b,
                    bps: 15e6,
                },
            ],
            clear: false,
            sender: Vec::new(),
            receiver: Vec::new(),
        }
    }

    fn end(verdict: &str, also: Option<&str>) -> EndVerdict {
        EndVerdict {
            verdict: verdict.into(),
            confidence: 0.8,
            rule: String::new(),
            explanation: String::new(),
            what_if_window: None,
            what_if_bps: None,
            what_if_from: None,
            also: also.map(str::to_string),
            flows: 1,
        }
    }

    #[test]
    fn both_limits_are_named_by_the_verdict_and_its_also_together() {
        // A reader (receiving end: receiver_application) and the link.
        let t = truth_of(Limit::Reader, Limit::Link);
        assert!(names_both(
            &t,
            1,
            &end("receiver_application", Some("path"))
        ));
        assert!(names_both(
            &t,
            1,
            &end("path", Some("receiver_application"))
        ));
        // One of the two alone, or an also that names neither.
        assert!(!names_both(&t, 1, &end("receiver_application", None)));
        assert!(!names_both(
            &t,
            1,
            &end("receiver_application", Some("sender"))
        ));
        // At the sending end the reader is the peer's window.
        assert!(names_both(&t, 0, &end("path", Some("receive_window"))));
        assert!(!names_both(
            &t,
            0,
            &end("path", Some("receiver_application"))
        ));
    }

    #[test]
    fn limits_that_share_a_verdict_are_named_by_it_alone() {
        // A queue and the link are both `path` at either end.
        let t = truth_of(Limit::Queue, Limit::Link);
        assert!(names_both(&t, 0, &end("path", None)));
        // `congestion_window` names the queue only.
        assert!(!names_both(&t, 0, &end("congestion_window", None)));
    }
}
