//! Judging and tallying timelines, on made-up ones.

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

#[test]
fn a_limit_before_an_idle_link_is_right_where_the_path_was_expected() {
    // 10 samples from 5.5 s: path while the link is full, then the
    // sender (its cwnd cut below the BDP) while it carries 55% or 69%.
    let s: Vec<(f64, Verdict)> = (11..21)
        .map(|i| (f64::from(i) * 0.5, if i < 15 { Path } else { Sender }))
        .collect();
    let mut link: Vec<Option<f64>> = (11..21)
        .map(|i| Some(if i < 15 { 0.97 } else { 0.55 }))
        .collect();
    link[9] = Some(0.69);
    let span = (5.5, f64::INFINITY);
    let (read, idle) = read_at_link(&s, &link, span, Path);
    assert_eq!(idle, 6);
    assert!(read.iter().all(|(_, v)| *v == Path));
    assert_eq!(tally(&read, 5.5, f64::INFINITY, Path, None), (10, 10));
    // Just outside: the link at 71% of its rate is not idle.
    link[9] = Some(0.71);
    let (read, idle) = read_at_link(&s, &link, span, Path);
    assert_eq!((idle, read[9].1), (5, Sender));
    // Only samples in the span are counted.
    assert_eq!(read_at_link(&s, &link, (7.5, f64::INFINITY), Path).1, 5);
    assert_eq!(read_at_link(&s, &link, (5.5, 7.5), Path).1, 0);
    // The reader is not a limit before the link; nor is anything right
    // where another verdict than the path was expected, or the link's use
    // is unmeasured.
    let reader: Vec<(f64, Verdict)> = s
        .iter()
        .map(|&(t, v)| (t, if v == Sender { ReceiverApplication } else { v }))
        .collect();
    assert_eq!(read_at_link(&reader, &link, span, Path).1, 0);
    assert_eq!(read_at_link(&s, &link, span, ReceiveWindow).1, 0);
    assert_eq!(read_at_link(&s, &[None; 10], span, Path).1, 0);
    assert_eq!(read_at_link(&s, &[], span, Path), (s.clone(), 0));
}
