//! Scoring: a planted wrong verdict is a miss, and the figures add up.

use crate::outcome::{EndVerdict, Outcome, Rerun};
use crate::score::{as_predicted, score};
use crate::space::{Cc, Kind, RcvLimit, Situation};

fn window_situation(index: u32) -> Situation {
    Situation {
        rcv: Some(RcvLimit::RmemMax(131_072)),
        secs: 10,
        ..Situation::bulk(
            index,
            Kind::Window,
            Cc::Cubic,
            (104_000, 35_000_000, 455_000),
        )
    }
}

fn end(verdict: &str, confidence: f64) -> Option<EndVerdict> {
    Some(EndVerdict {
        verdict: verdict.into(),
        confidence,
        rule: "r".into(),
        explanation: String::new(),
        what_if_window: None,
        what_if_bps: None,
        what_if_from: None,
        also: None,
        flows: 1,
    })
}

fn outcome(index: u32, sender: &str, receiver: &str, confidence: f64) -> Outcome {
    Outcome {
        situation: window_situation(index),
        bps: 5e6,
        sender: end(sender, confidence),
        receiver: end(receiver, confidence),
        error: None,
        counterfactual: Vec::new(),
        what_if: None,
    }
}

#[test]
fn a_planted_wrong_verdict_is_a_miss() {
    let right = score(
        &[outcome(0, "receive_window", "receive_window", 0.9)],
        1,
        "c",
    );
    assert_eq!((right.ends.sender.right, right.ends.sender.judged), (1, 1));
    assert_eq!(
        (right.ends.receiver.right, right.ends.receiver.judged),
        (1, 1)
    );
    let planted = score(&[outcome(0, "path", "receive_window", 0.95)], 1, "c");
    assert_eq!(
        (planted.ends.sender.right, planted.ends.sender.judged),
        (0, 1)
    );
    assert_eq!(planted.worst.len(), 1);
    assert_eq!(planted.worst[0].given, "path");
    // `unknown` on a clear situation is a miss too.
    let unknown = score(&[outcome(0, "unknown", "unknown", 0.0)], 1, "c");
    assert_eq!(unknown.ends.sender.right + unknown.ends.receiver.right, 0);
    // An end that saw no data flow is a miss.
    let mut o = outcome(0, "receive_window", "receive_window", 0.9);
    o.receiver = None;
    assert_eq!(score(&[o], 1, "c").ends.receiver.right, 0);
}

#[test]
fn calibration_and_brier() {
    let outcomes = [
        outcome(0, "receive_window", "receive_window", 0.95),
        outcome(1, "path", "path", 0.95),
        outcome(2, "receive_window", "sender", 0.6),
    ];
    let r = score(&outcomes, 1, "c");
    let top = r.calibration.last().unwrap();
    assert_eq!((top.low, top.n), (0.9, 4));
    assert_eq!(top.right, 0.5);
    assert!((top.mean_confidence - 0.95).abs() < 1e-12);
    let mid = r.calibration[1];
    assert_eq!((mid.low, mid.n, mid.right), (0.5, 2, 0.5));
    // (0.05^2 x 2 + 0.95^2 x 2 + 0.4^2 + 0.6^2) / 6
    let brier = (2.0 * 0.0025 + 2.0 * 0.9025 + 0.16 + 0.36) / 6.0;
    assert!((r.brier - brier).abs() < 1e-12, "{}", r.brier);
    assert_eq!(r.kinds["window"].n, 6);
    assert_eq!(r.kinds["window"].right, 3);
    assert_eq!(r.confusion["sender/cubic"]["receive_window"]["path"], 1);
    // Per rule ("r" gave every end): 3 of 6 right at a mean of 0.83.
    let rule = r.rules["sender/r"];
    assert_eq!((rule.n, rule.right), (3, 2));
    assert!((rule.mean_confidence - (0.95 + 0.95 + 0.6) / 3.0).abs() < 1e-12);
    assert_eq!(r.rules["receiver/r"].right, 1);
}

#[test]
fn a_counterfactual_that_fails_leaves_the_situation_unscored() {
    let mut o = outcome(0, "path", "path", 0.9);
    let changes = crate::relax::changes(&o.situation);
    assert_eq!(changes[0], "window x4");
    o.counterfactual = vec![
        Rerun {
            change: changes[0].clone(),
            bps: 5.5e6,
        },
        Rerun {
            change: changes[1].clone(),
            bps: 5.0e6,
        },
    ];
    assert_eq!(as_predicted(&o), Some(false));
    let r = score(&[o.clone()], 1, "c");
    assert_eq!((r.unscored, r.ends.sender.judged), (1, 0));
    assert_eq!(
        (r.counterfactual.checked, r.counterfactual.as_predicted),
        (1, 0)
    );
    o.counterfactual[0].bps = 6.5e6;
    assert_eq!(as_predicted(&o), Some(true));
    // Relaxing the second limit must not move the rate 10%.
    o.counterfactual[1].bps = 5.6e6;
    assert_eq!(as_predicted(&o), Some(false));
    // Reruns of limits the truth no longer ranks first are not a check.
    o.counterfactual[0].change = "link x4".into();
    assert_eq!(as_predicted(&o), None);
}

#[test]
fn relaxing_the_link_under_requests_is_held_to_the_gain_the_truth_predicts() {
    use crate::space::Writer;
    // 450 KB objects over 108 ms and 97.6 Mbit/s: 146 ms per object, 38
    // of them through the link; a link 4 times as fast leaves 118 ms.
    let mut o = outcome(0, "application", "receiver_application", 0.9);
    o.situation = Situation {
        writer: Writer::Requests { bytes: 450_611 },
        ..Situation::bulk(0, Kind::Rounds, Cc::Cubic, (107_776, 97_555_105, 1_000_000))
    };
    let gain = crate::relax::predicted_gain(&o.situation, crate::truth::Limit::Link).unwrap();
    assert!((1.2..1.3).contains(&gain), "{gain}");
    let changes = crate::relax::changes(&o.situation);
    o.bps = 24e6;
    o.counterfactual = vec![
        Rerun {
            change: changes[0].clone(),
            bps: 60e6,
        },
        Rerun {
            change: changes[1].clone(),
            bps: 24e6 * 1.25,
        },
    ];
    // 1.25x is what the truth predicts, within 1.1 of it.
    assert_eq!(as_predicted(&o), Some(true));
    o.counterfactual[1].bps = 24e6 * 1.45;
    assert_eq!(as_predicted(&o), Some(false));
}

#[test]
fn a_what_if_is_held_to_its_target_capped_by_the_next_ceiling() {
    use crate::score::promised;
    // The seed path's 78 KB window (6.13 Mbit/s); the what-if asks for
    // twice the window to reach 12 Mbit/s: the link allows 33.79.
    let mut o = outcome(0, "receive_window", "receive_window", 0.9);
    let s = o.sender.as_mut().unwrap();
    s.what_if_from = Some(80_000);
    s.what_if_window = Some(160_000);
    s.what_if_bps = Some(12e6);
    assert_eq!(promised(&o), Some(12e6));
    o.what_if = Some(Rerun {
        change: "tcp_rmem max 262144".into(),
        bps: 11e6,
    });
    let r = score(&[o.clone()], 1, "c");
    assert_eq!((r.what_if.checked, r.what_if.within_30pct), (1, 1));
    // A target past the link is held to the link's 33.79 Mbit/s: 20 of it
    // is 59%, not within 30%.
    let s = o.sender.as_mut().unwrap();
    s.what_if_window = Some(800_000);
    s.what_if_bps = Some(60e6);
    assert_eq!((promised(&o).unwrap() / 1e4).round() / 100.0, 33.79);
    o.what_if = Some(Rerun {
        change: "tcp_rmem max 1310720".into(),
        bps: 20e6,
    });
    let r = score(&[o], 1, "c");
    assert_eq!((r.what_if.checked, r.what_if.within_30pct), (1, 0));
}

#[test]
fn calibration_holds_only_within_a_tenth_in_bins_large_enough() {
    use crate::score::{Bin, calibrated};
    let bin = |n, mean_confidence, right| Bin {
        low: 0.5,
        high: 0.7,
        n,
        mean_confidence,
        right,
    };
    assert!(calibrated(&[bin(20, 0.6, 0.7), bin(100, 0.95, 0.9)]));
    // Just outside: 0.11 apart in a bin of 20.
    assert!(!calibrated(&[bin(20, 0.6, 0.71), bin(100, 0.95, 0.9)]));
    // A bin of 19 does not count, however far off.
    assert!(calibrated(&[bin(19, 0.6, 0.0)]));
}

#[test]
fn the_measured_table_holds_each_rules_record_and_leaves_unknowns_out() {
    use crate::calibrate::{records, source};
    // Planted verdicts (rule "r" is no rule of either table) are left
    // out; rename them to real rules.
    let mut outcomes: Vec<Outcome> = (0..4)
        .map(|i| outcome(i, "receive_window", "receive_window", 0.9))
        .collect();
    outcomes[3].sender = end("path", 0.9);
    for o in &mut outcomes {
        for e in [&mut o.sender, &mut o.receiver].into_iter().flatten() {
            e.rule = "receive_window".into();
        }
    }
    let mut unknown = outcome(4, "unknown", "unknown", 0.0);
    for e in [&mut unknown.sender, &mut unknown.receiver]
        .into_iter()
        .flatten()
    {
        e.rule = "too_little".into();
    }
    outcomes.push(unknown);
    let r = records(&crate::score::judged(&outcomes));
    let got: Vec<_> = r
        .iter()
        .map(|(end, rule, rec)| (*end, *rule, rec.ends, rec.right))
        .collect();
    use crate::score::End;
    assert_eq!(
        got,
        [
            (End::Sender, "receive_window", 4, 3),
            (End::Receiver, "receive_window", 4, 4)
        ]
    );
    let text = source(&r, 1, "abc1234");
    assert!(text.contains("rule: \"receive_window\",\n        ends: 4,\n        right: 3,"));
    assert!(!text.contains("too_little"));
}
