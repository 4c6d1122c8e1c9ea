//! The scenario run's judging and tallying, on made-up timelines.

use super::*;
use Verdict::*;

#[test]
fn judging_spans() {
    let s: Vec<(f64, Verdict)> = vec![
        (0.5, Unknown),
        (1.0, CongestionWindow),
        (2.0, Path),
        (3.0, ReceiveWindow),
        (3.5, ReceiveWindow),
        (4.0, Path),
        (4.5, ReceiveWindow),
        (5.0, ReceiveWindow),
        (5.5, ReceiveWindow),
    ];
    let (v, share, settled) = judge(&s, 3.0, f64::INFINITY, ReceiveWindow);
    assert_eq!(v, ReceiveWindow);
    assert!((share - 5.0 / 6.0).abs() < 1e-9);
    assert_eq!(settled, Some(0.0));
    // A three-way tie goes to the expected verdict.
    let (v, _, settled) = judge(&s, 0.0, 2.5, Path);
    assert_eq!(v, Path);
    assert_eq!(settled, Some(2.0));
    assert_eq!(judge(&s, 9.0, 10.0, Path), (Unknown, 0.0, None));
}

#[test]
fn receiver_rule_counts_right_verdicts() {
    let mut s: Vec<(f64, Verdict)> = vec![(1.0, Unknown), (2.0, Unknown)];
    s.extend((6..20).map(|i| (f64::from(i) * 0.5, ReceiveWindow)));
    s[5].1 = Sender;
    s[9].1 = Sender;
    s[12].1 = Sender;
    let (right, n) = tally(&s, 3.0, f64::INFINITY, ReceiveWindow, None);
    assert_eq!((right, n), (11, 14));
    let judged = judge(&s, 3.0, f64::INFINITY, ReceiveWindow);
    let e = Expect {
        from_s: 3.0,
        to_s: f64::INFINITY,
        verdict: ReceiveWindow,
        also: None,
    };
    // 11/14 = 79%: short of 80%, though the majority and settled.
    assert!(!span_passes(View::Receiver, &e, judged, (right, n)));
    assert!(span_passes(View::Sender, &e, judged, (right, n)));
    assert!(span_passes(View::Receiver, &e, judged, (12, 15)));
    // Too few samples to judge.
    assert!(!span_passes(View::Receiver, &e, judged, (3, 3)));
}

#[test]
fn a_second_fair_reading_counts_only_behind_a_leading_expected_one() {
    // 14 samples from 3 s: 9 sender, 3 congestion_window, 2 path.
    let mut s: Vec<(f64, Verdict)> = (6..20).map(|i| (f64::from(i) * 0.5, Sender)).collect();
    for i in [2, 3, 9] {
        s[i].1 = CongestionWindow;
    }
    for i in [6, 12] {
        s[i].1 = Path;
    }
    let e = Expect {
        from_s: 3.0,
        to_s: f64::INFINITY,
        verdict: Sender,
        also: Some(CongestionWindow),
    };
    let judged = judge(&s, 3.0, f64::INFINITY, Sender);
    // Sender alone: 9/14 = 64%, short of 80%.
    assert_eq!(tally(&s, 3.0, f64::INFINITY, Sender, None), (9, 14));
    let none = Expect { also: None, ..e };
    assert!(!span_passes(View::Receiver, &none, judged, (9, 14)));
    // With the second reading: 12/14 = 86%, and sender leads with 64%.
    let right = tally(&s, 3.0, f64::INFINITY, Sender, e.also);
    assert_eq!(right, (12, 14));
    assert!(span_passes(View::Receiver, &e, judged, right));
    // The second reading as the majority does not pass.
    let mut flipped = s.clone();
    for i in [0, 1, 4, 5] {
        flipped[i].1 = CongestionWindow;
    }
    let judged = judge(&flipped, 3.0, f64::INFINITY, Sender);
    let right = tally(&flipped, 3.0, f64::INFINITY, Sender, e.also);
    assert_eq!(right, (12, 14));
    assert!(!span_passes(View::Receiver, &e, judged, right));
}
