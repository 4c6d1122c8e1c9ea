//! Scoring: each end's verdict against the truth, and the figures of a
//! whole run (confusion matrices, accuracy by kind, calibration, Brier
//! score, the counterfactual and what-if checks, the worst misses).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::{
    outcome::{EndVerdict, Outcome},
    pairs::{PairScore, score_pairs},
    relax::{apply_what_if, changes, predicted_gain},
    space::Situation,
    truth::{Truth, truth},
};

/// The confidence bins of the calibration table: `[low, high)`, the last
/// one closed.
pub const BINS: [(f64, f64); 4] = [(0.0, 0.5), (0.5, 0.7), (0.7, 0.9), (0.9, 1.0)];
/// The tightest limit relaxed must raise the rate by at least this ...
pub const RELAXED_GAIN: f64 = 1.3;
/// ... and the second tightest relaxed by less than this.
pub const SECOND_GAIN: f64 = 1.1;
/// Calibration holds when, in every bin of at least [`CALIBRATED_MIN`]
/// verdicts, the mean confidence and the share right differ by at most
/// this.
pub const CALIBRATED_WITHIN: f64 = 0.1;
/// The least verdicts a bin needs to count for calibration.
pub const CALIBRATED_MIN: u32 = 20;
/// A what-if comes true when the rate reached is within this share of
/// the rate promised.
pub const WHAT_IF_TOLERANCE: f64 = 0.3;

/// Which end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// The sending end (namespace A).
    Sender,
    /// The receiving end (namespace B).
    Receiver,
}

/// One end of one situation, scored.
#[derive(Clone, Debug, Serialize)]
pub struct ScoredEnd {
    /// The situation's number and kind.
    pub index: u32,
    /// Its congestion control and kind (`cubic/window`).
    pub what: String,
    /// Which end.
    pub end: End,
    /// Whether the situation is clear.
    pub clear: bool,
    /// What counts as right.
    pub expected: Vec<String>,
    /// What observer said, with its confidence and rule.
    pub given: String,
    /// Its confidence.
    pub confidence: f64,
    /// The rule.
    pub rule: String,
    /// Whether it is right.
    pub right: bool,
    /// The explanation observer gave.
    pub explanation: String,
    /// The ceilings, tightest first, as `limit=Mbit/s`.
    pub ceilings: String,
}

/// Whether `given` is right against `truth` at `end`: one of the
/// verdicts the truth allows (`unknown` never is).
pub fn is_right(truth: &Truth, end: End, given: &EndVerdict) -> bool {
    let allowed = match end {
        End::Sender => &truth.sender,
        End::Receiver => &truth.receiver,
    };
    given
        .parsed()
        .is_some_and(|v| allowed.contains(&v) && v != observer::attribution::Verdict::Unknown)
}

/// Whether an outcome's counterfactual reruns behaved as the truth
/// predicts: relaxing the tightest limit raised the rate by
/// [`RELAXED_GAIN`] or more, relaxing the second by less than
/// [`SECOND_GAIN`] times the gain the truth predicts for it (1 but where
/// the tightest ceiling adds the second's time to its own: an object's
/// round trips and its time through the link). `None` where it was not
/// checked, or where the reruns relaxed other limits than the truth now
/// ranks first and second (a checkpoint from an older truth).
pub fn as_predicted(o: &Outcome) -> Option<bool> {
    let s = &o.situation;
    let done: Vec<&str> = o.counterfactual.iter().map(|r| r.change.as_str()).collect();
    if done.is_empty() || done != changes(s) {
        return None;
    }
    let base = o.bps.max(1.0);
    let t = truth(s);
    match o.counterfactual.as_slice() {
        [first, second] => {
            let gain = t
                .next()
                .and_then(|c| predicted_gain(s, c.limit))
                .unwrap_or(1.0)
                .max(1.0);
            Some(first.bps >= RELAXED_GAIN * base && second.bps < SECOND_GAIN * gain * base)
        }
        // The second limit is one nothing relaxes (the host).
        [first] => Some(first.bps >= RELAXED_GAIN * base),
        _ => None,
    }
}

/// Whether a situation is scored: it ran, a verdict is defined for its
/// limit, and its counterfactual (where checked) behaved as predicted.
pub fn scored(o: &Outcome, t: &Truth) -> bool {
    o.error.is_none() && t.scorable() && as_predicted(o) != Some(false)
}

fn ceilings_text(t: &Truth) -> String {
    t.ceilings
        .iter()
        .take(3)
        .map(|c| format!("{:?}={:.2}", c.limit, c.bps / 1e6))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every judged end of `outcomes` (scored situations only).
pub fn judged(outcomes: &[Outcome]) -> Vec<ScoredEnd> {
    let mut v = Vec::new();
    for o in outcomes {
        let t = truth(&o.situation);
        if !scored(o, &t) {
            continue;
        }
        for (end, given) in [(End::Sender, &o.sender), (End::Receiver, &o.receiver)] {
            let allowed = match end {
                End::Sender => &t.sender,
                End::Receiver => &t.receiver,
            };
            // A data flow not seen at an end is a miss at that end.
            let missing = EndVerdict {
                verdict: "not_seen".into(),
                confidence: 0.0,
                rule: String::new(),
                explanation: String::new(),
                what_if_window: None,
                what_if_bps: None,
                what_if_from: None,
                also: None,
                flows: 0,
            };
            let g = given.as_ref().unwrap_or(&missing);
            v.push(ScoredEnd {
                index: o.situation.index,
                what: what(&o.situation),
                end,
                clear: t.clear,
                expected: allowed.iter().map(|v| v.name().to_string()).collect(),
                given: g.verdict.clone(),
                confidence: g.confidence,
                rule: g.rule.clone(),
                right: is_right(&t, end, g),
                explanation: g.explanation.clone(),
                ceilings: ceilings_text(&t),
            });
        }
    }
    v
}

/// `cc/kind`.
fn what(s: &Situation) -> String {
    format!("{}/{}", s.cc.name(), s.kind.name())
}

/// Right and judged ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Tally {
    /// Ends judged right.
    pub right: u32,
    /// Ends judged.
    pub judged: u32,
}

impl Tally {
    fn add(&mut self, right: bool) {
        self.judged += 1;
        self.right += u32::from(right);
    }

    /// The share right (0 when nothing was judged).
    pub fn share(&self) -> f64 {
        if self.judged == 0 {
            0.0
        } else {
            f64::from(self.right) / f64::from(self.judged)
        }
    }
}

/// Both ends' tallies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Ends {
    /// The sending end.
    pub sender: Tally,
    /// The receiving end.
    pub receiver: Tally,
}

impl Ends {
    fn add(&mut self, end: End, right: bool) {
        match end {
            End::Sender => self.sender.add(right),
            End::Receiver => self.receiver.add(right),
        }
    }
}

/// One calibration bin.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Bin {
    /// Lowest confidence in the bin.
    pub low: f64,
    /// Highest (exclusive, but for the last bin).
    pub high: f64,
    /// Verdicts in it.
    pub n: u32,
    /// Their mean confidence.
    pub mean_confidence: f64,
    /// The share of them right.
    pub right: f64,
}

/// A per-kind tally.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct KindScore {
    /// Ends judged (clear situations).
    pub n: u32,
    /// Of them right.
    pub right: u32,
    /// Situations of the kind, scored or not.
    pub situations: u32,
    /// Situations of the kind left unscored.
    pub unscored: u32,
}

/// How one rule did: the precision a confidence it gives should match.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct RuleScore {
    /// Ends it decided (clear and matched situations).
    pub n: u32,
    /// Of them right.
    pub right: u32,
    /// The mean confidence it gave them.
    pub mean_confidence: f64,
}

/// The counterfactual check.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CounterfactualScore {
    /// Situations rerun with their limits relaxed.
    pub checked: u32,
    /// Of them, those whose rates moved as the truth predicts.
    pub as_predicted: u32,
    /// Those that did not: faults of the truth model, left unscored.
    pub failed: Vec<Unpredicted>,
}

/// A situation whose counterfactual reruns did not move as predicted.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Unpredicted {
    /// The situation's number.
    pub index: u32,
    /// Its congestion control and kind (`cubic/window`).
    pub what: String,
    /// The ceilings, tightest first, as `limit=Mbit/s`.
    pub ceilings: String,
    /// The rate measured as drawn (bits/s).
    pub bps: f64,
    /// Each rerun's change and the ratio of its rate to `bps`.
    pub reruns: Vec<(String, f64)>,
}

/// The what-if check.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WhatIfScore {
    /// What-ifs applied.
    pub checked: u32,
    /// Of them, those that reached within [`WHAT_IF_TOLERANCE`] of the promise.
    pub within_30pct: u32,
    /// Each ratio of the rate reached to the rate promised.
    pub ratios: Vec<f64>,
}

/// The figures of a run.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The commit measured.
    pub commit: String,
    /// The seed.
    pub seed: u64,
    /// Situations run.
    pub situations: u32,
    /// Of them, clear.
    pub clear: u32,
    /// Situations left unscored (failed runs, no verdict defined,
    /// counterfactual not as predicted).
    pub unscored: u32,
    /// Ends of clear situations.
    pub ends: Ends,
    /// Ends of matched situations.
    pub matched: Ends,
    /// Whether matched situations' ends name both limits, and how often
    /// an `also` is given where a situation is clear.
    pub pairs: PairScore,
    /// Ends of clear situations per congestion control.
    pub by_cc: BTreeMap<String, Ends>,
    /// Per kind (clear situations' ends).
    pub kinds: BTreeMap<String, KindScore>,
    /// Confusion matrix per end and cc: `end/cc` -> expected -> given -> count,
    /// clear situations, expected as the tightest limit's first verdict.
    pub confusion: BTreeMap<String, BTreeMap<String, BTreeMap<String, u32>>>,
    /// Calibration over every judged end.
    pub calibration: Vec<Bin>,
    /// Per end and rule (`sender/congestion_window`), over every judged
    /// end: a rule's precision is what its confidence should be.
    pub rules: BTreeMap<String, RuleScore>,
    /// Brier score over every judged end: mean (confidence - right)^2.
    pub brier: f64,
    /// The counterfactual check.
    pub counterfactual: CounterfactualScore,
    /// The what-if check.
    pub what_if: WhatIfScore,
    /// The ten misses given with the highest confidence.
    pub worst: Vec<ScoredEnd>,
}

/// The rate a what-if promised (bits/s): its target, capped by the
/// tightest ceiling of the situation with the what-if's setting applied
/// (a larger window cannot pass the next limit). `None` where no end
/// gave one.
pub fn promised(o: &Outcome) -> Option<f64> {
    [&o.sender, &o.receiver]
        .into_iter()
        .flatten()
        .find_map(|e| {
            let target = e.what_if_bps?;
            let (changed, _) =
                apply_what_if(&o.situation, &e.verdict, e.what_if_from?, e.what_if_window?)?;
            let cap = truth(&changed).tightest().bps;
            Some(target.min(cap)).filter(|p| *p > 0.0)
        })
}

/// Scores `outcomes` of a run of `seed` at `commit`.
pub fn score(outcomes: &[Outcome], seed: u64, commit: &str) -> Report {
    let all = judged(outcomes);
    let mut r = Report {
        commit: commit.to_string(),
        seed,
        situations: outcomes.len() as u32,
        clear: 0,
        unscored: 0,
        ends: Ends::default(),
        matched: Ends::default(),
        pairs: score_pairs(outcomes, scored),
        by_cc: BTreeMap::new(),
        kinds: BTreeMap::new(),
        confusion: BTreeMap::new(),
        calibration: Vec::new(),
        rules: BTreeMap::new(),
        brier: 0.0,
        counterfactual: CounterfactualScore::default(),
        what_if: WhatIfScore::default(),
        worst: Vec::new(),
    };
    for o in outcomes {
        let t = truth(&o.situation);
        let k = r
            .kinds
            .entry(o.situation.kind.name().to_string())
            .or_default();
        k.situations += 1;
        if !scored(o, &t) {
            r.unscored += 1;
            k.unscored += 1;
        } else if t.clear {
            r.clear += 1;
        }
        if let Some(ok) = as_predicted(o) {
            r.counterfactual.checked += 1;
            r.counterfactual.as_predicted += u32::from(ok);
            if !ok {
                r.counterfactual.failed.push(Unpredicted {
                    index: o.situation.index,
                    what: what(&o.situation),
                    ceilings: ceilings_text(&t),
                    bps: o.bps,
                    reruns: o
                        .counterfactual
                        .iter()
                        .map(|c| (c.change.clone(), c.bps / o.bps.max(1.0)))
                        .collect(),
                });
            }
        }
        if let Some((w, p)) = o.what_if.as_ref().zip(promised(o)) {
            let ratio = w.bps / p;
            r.what_if.checked += 1;
            r.what_if.within_30pct += u32::from((ratio - 1.0).abs() <= WHAT_IF_TOLERANCE);
            r.what_if.ratios.push(ratio);
        }
    }
    let cc_of = |j: &ScoredEnd| j.what.split('/').next().unwrap_or("").to_string();
    let kind_of = |j: &ScoredEnd| j.what.split('/').nth(1).unwrap_or("").to_string();
    for j in &all {
        if j.clear {
            r.ends.add(j.end, j.right);
            r.by_cc.entry(cc_of(j)).or_default().add(j.end, j.right);
            let k = r.kinds.entry(kind_of(j)).or_default();
            k.n += 1;
            k.right += u32::from(j.right);
            let end = match j.end {
                End::Sender => "sender",
                End::Receiver => "receiver",
            };
            *r.confusion
                .entry(format!("{end}/{}", cc_of(j)))
                .or_default()
                .entry(j.expected.first().cloned().unwrap_or_default())
                .or_default()
                .entry(j.given.clone())
                .or_default() += 1;
        } else {
            r.matched.add(j.end, j.right);
        }
    }
    r.calibration = calibration(&all);
    for j in &all {
        let end = match j.end {
            End::Sender => "sender",
            End::Receiver => "receiver",
        };
        let s = r.rules.entry(format!("{end}/{}", j.rule)).or_default();
        s.mean_confidence =
            (s.mean_confidence * f64::from(s.n) + j.confidence) / f64::from(s.n + 1);
        s.n += 1;
        s.right += u32::from(j.right);
    }
    r.brier = if all.is_empty() {
        0.0
    } else {
        all.iter()
            .map(|j| (j.confidence - f64::from(u8::from(j.right))).powi(2))
            .sum::<f64>()
            / all.len() as f64
    };
    let mut misses: Vec<_> = all.into_iter().filter(|j| !j.right).collect();
    misses.sort_by(|a, b| b.confidence.total_cmp(&a.confidence));
    misses.truncate(10);
    r.worst = misses;
    r
}

/// The calibration table over `judged`.
pub fn calibration(judged: &[ScoredEnd]) -> Vec<Bin> {
    BINS.iter()
        .enumerate()
        .map(|(i, &(low, high))| {
            let last = i == BINS.len() - 1;
            let inside: Vec<_> = judged
                .iter()
                .filter(|j| j.confidence >= low && (j.confidence < high || last))
                .collect();
            let n = inside.len() as u32;
            let mean = |f: &dyn Fn(&ScoredEnd) -> f64| {
                if n == 0 {
                    0.0
                } else {
                    inside.iter().map(|j| f(j)).sum::<f64>() / f64::from(n)
                }
            };
            Bin {
                low,
                high,
                n,
                mean_confidence: mean(&|j| j.confidence),
                right: mean(&|j| f64::from(u8::from(j.right))),
            }
        })
        .collect()
}

/// Whether `bins` are calibrated: every bin of at least
/// [`CALIBRATED_MIN`] verdicts has its mean confidence within
/// [`CALIBRATED_WITHIN`] of its share right.
pub fn calibrated(bins: &[Bin]) -> bool {
    bins.iter()
        .filter(|b| b.n >= CALIBRATED_MIN)
        .all(|b| (b.mean_confidence - b.right).abs() <= CALIBRATED_WITHIN)
}
