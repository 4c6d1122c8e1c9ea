//! Each sender verdict's plain case, with the figures of the run or
//! reference path that shows it, and the measured confidence a verdict is
//! given at.

use super::fixtures::{P, point, verdict_between, window_bound_pair};
use crate::attribution::*;

#[test]
fn window_bound_flow_is_receive_window_even_at_56_percent() {
    // Reference A, -w 64K: snd_wnd 80480 B, srtt 105 ms, 6.1 Mbit/s, busy
    // all the time but rwnd-limited for only 56% of it.
    let (from, to) = window_bound_pair(1_532_952);
    let a = verdict_between(from, to);
    assert_eq!(a.verdict, Verdict::ReceiveWindow);
    assert_eq!(a.side, Side::Sender);
    assert!((a.evidence.rate_bps - 6.13e6).abs() < 0.01e6);
    assert!((a.evidence.ceilings.rwnd_bps - 6.13e6).abs() < 0.01e6);
    assert!((a.evidence.shares.rwnd_limited - 0.56).abs() < 1e-9);
    assert!(a.explanation.starts_with(
        "receive window: snd_wnd 80.5 KB / srtt 105.0 ms = 6.1 Mbit/s ceiling, delivering 6.1 Mbit/s"
    ), "{}", a.explanation);
    let w = a.what_if.unwrap();
    assert_eq!(w.window_bytes, 80_480);
    assert!((w.needed_bytes - 2.0 * 80_480.0).abs() < 200.0);
    assert!(a.confidence >= 0.8);
}

#[test]
fn at_the_rwnd_ceiling_with_little_rwnd_time_is_still_receive_window() {
    let a = verdict_between(
        P::at(0.0)
            .snd_wnd(65_536)
            .srtt_us(104_000)
            .min_rtt_us(104_000),
        P::at(1.0)
            .acked(630_000)
            .busy_ms(1000)
            .rwnd_ms(50)
            .snd_wnd(65_536)
            .srtt_us(104_000)
            .min_rtt_us(104_000),
    );
    assert_eq!(a.verdict, Verdict::ReceiveWindow);
}

#[test]
fn rwnd_share_boundary() {
    let mk = |rwnd_ms| {
        verdict_between(
            P::at(0.0),
            // Far below every ceiling; only the share can make it rwnd.
            P::at(1.0)
                .acked(1_000_000)
                .busy_ms(1000)
                .rwnd_ms(rwnd_ms)
                .cwnd_ms(0),
        )
        .verdict
    };
    assert_eq!(mk(200), Verdict::ReceiveWindow);
    assert_ne!(mk(199), Verdict::ReceiveWindow);
}

#[test]
fn send_buffer() {
    let a = verdict_between(
        P::at(0.0),
        P::at(1.0)
            // 1.6 Mbit/s, under 16 KB / 50 ms = 2.6 Mbit/s.
            .acked(200_000)
            .busy_ms(1000)
            .sndbuf_ms(700)
            .rwnd_ms(100),
    );
    assert_eq!(a.verdict, Verdict::SendBuffer);
    assert!(
        a.explanation.contains("window open 70% of busy time")
            && a.explanation
                .contains("(sk_sndbuf 16.4 KB, sized by net.ipv4.tcp_wmem)"),
        "{}",
        a.explanation
    );
    assert_eq!(a.what_if.unwrap().window_bytes, 16_384);
}

#[test]
fn idle_sender_is_application() {
    let a = verdict_between(P::at(0.0), P::at(5.0).acked(1_250_000).busy_ms(1000));
    assert_eq!(a.verdict, Verdict::Application);
    assert!((a.confidence - 0.8).abs() < 1e-9);
    let idle = verdict_between(P::at(0.0), P::at(5.0));
    assert_eq!(idle.verdict, Verdict::Application);
    assert!(idle.explanation.contains("nothing sent"));
}

#[test]
fn busy_but_app_limited_sender_is_application() {
    // 2 Mbit/s on a path whose windows allow far more; busy 90% because each
    // small write is in flight for a round trip.
    let a = verdict_between(
        P::at(0.0),
        P::at(2.0)
            .acked(500_000)
            .busy_ms(1800)
            .app_limited_ms(1900)
            .cwnd(40),
    );
    assert_eq!(a.verdict, Verdict::Application);
    assert!(a.explanation.contains("app-limited"));
    assert_eq!(a.evidence.app_limited_share, 0.95);
}

#[test]
fn one_app_limited_sample_at_the_end_does_not_name_the_application() {
    // A bulk sender whose last delivery sample, and only the last 50 ms of
    // the interval, was app-limited (its writer paused as the poll came):
    // the interval was not the application's.
    let a = verdict_between(
        P::at(0.0).cwnd(100),
        P::at(1.0)
            .acked(2_500_000)
            .busy_ms(1000)
            .cwnd(100)
            .app_limited_ms(50),
    );
    assert!(a.evidence.app_limited);
    assert_ne!(a.verdict, Verdict::Application, "{}", a.explanation);
}

#[test]
fn clamped_cwnd_without_queue_is_congestion_window() {
    // cwnd locked at 10 on a 50 ms path: 10 x 1448 B / 50 ms = 2.3 Mbit/s.
    let a = verdict_between(
        P::at(0.0).cwnd(10),
        P::at(2.0)
            .acked(579_200)
            .busy_ms(2000)
            .cwnd_ms(1900)
            .cwnd(10)
            .srtt_us(50_300),
    );
    assert_eq!(a.verdict, Verdict::CongestionWindow, "{}", a.explanation);
    assert!(
        a.explanation
            .contains("cwnd 10 x 1448 B / srtt 50.3 ms = 2.3 Mbit/s ceiling"),
        "{}",
        a.explanation
    );
    assert_eq!(a.what_if.unwrap().window_bytes, 14_480);
}

#[test]
fn cwnd_bound_with_standing_queue_is_path() {
    // Cubic filling a 35 Mbit/s link: srtt 208 ms against 104 ms minimum.
    let a = verdict_between(
        P::at(0.0).cwnd(600),
        P::at(1.0)
            .acked(4_300_000)
            .busy_ms(1000)
            .cwnd_ms(700)
            .cwnd(600)
            .srtt_us(208_000)
            .min_rtt_us(104_000),
    );
    assert_eq!(a.verdict, Verdict::Path);
    assert!(
        a.explanation.contains("104.0 ms standing queue"),
        "{}",
        a.explanation
    );
    assert!(a.what_if.is_none());
}

#[test]
fn pacing_bound_busy_sender_is_path() {
    // BBR at a 20 Mbit/s bottleneck: busy, not window-limited, cwnd = 2 BDP.
    let a = verdict_between(
        P::at(0.0),
        P::at(2.0)
            .acked(5_000_000)
            .busy_ms(2000)
            .cwnd_ms(20)
            .cwnd(173)
            .srtt_us(52_000),
    );
    assert_eq!(a.verdict, Verdict::Path, "{}", a.explanation);
}

/// `cfg` with one record in its table of measured confidences: the
/// sender rule `rule` right `right` times in `ends`.
fn with_record(cfg: Config, rule: &'static str, ends: u32, right: u32) -> Config {
    let record = crate::attribution::calibration::Measured {
        side: Side::Sender,
        rule,
        ends,
        right,
    };
    Config {
        measured: Box::leak(Box::new([record])),
        ..cfg
    }
}

#[test]
fn a_verdict_is_given_at_its_rules_measured_precision() {
    // Reference A's window-bound sender: the rule's own confidence, and
    // the same verdict and explanation at the measured one where the
    // table (`measured.rs`) has a record of enough ends.
    let (from, to) = window_bound_pair(1_532_952);
    let (from, to) = (point(from), point(to));
    let cfg = Config::default();
    let own = attribute(Some(&from), &to, &cfg.rules_own());
    let measured = attribute(
        Some(&from),
        &to,
        &with_record(cfg, "receive_window", 18, 12),
    );
    assert_eq!(measured.verdict, own.verdict);
    assert_eq!(measured.explanation, own.explanation);
    // 13 / 20.
    assert_eq!(measured.confidence, 0.65);
    assert_ne!(own.confidence, 0.65, "the test must tell them apart");
    // Under measured_min_ends (10): the rule's own.
    let few = with_record(cfg, "receive_window", 9, 1);
    assert_eq!(attribute(Some(&from), &to, &few).confidence, own.confidence);
    // `unknown` stays at 0 whatever the table says of its rule.
    let table = with_record(cfg, "too_little", 50, 50);
    let (from, to) = window_bound_pair(1_000);
    let a = attribute(Some(&point(from)), &point(to), &table);
    assert_eq!(
        (a.verdict, a.rule, a.confidence),
        (Verdict::Unknown, "too_little", 0.0)
    );
}

/// A cubic flow through a shallow queue on a short path (the accuracy
/// harness's seed 1 cubic/loss #1: 61.2 Mbit/s over a 1.7 ms path, cwnd
/// 21, every busy moment cwnd-limited) over 10 s, with `retransmits` and
/// srtt `srtt_us`.
fn shallow(retransmits: u32, srtt_us: u32) -> Attribution {
    let from = P::at(0.0).srtt_us(srtt_us).min_rtt_us(1_700).cwnd(21);
    verdict_between(
        from,
        from.t(10.0)
            .acked(76_500_000)
            .busy_ms(10_000)
            .cwnd_ms(10_000)
            .retransmits(retransmits),
    )
}

#[test]
fn a_shallow_queue_that_drops_is_the_path_under_the_queue_floor() {
    // 1.9 ms of queue on a 1.7 ms path, under the 2 ms floor, with 400
    // of some 53,000 segments retransmitted (0.75%): the queue overflows.
    let a = shallow(400, 3_600);
    assert_eq!(a.verdict, Verdict::Path, "{}", a.explanation);
    assert_eq!(a.rule, "full_bottleneck");
    assert!(
        a.explanation.starts_with(
            "path: the bottleneck is full, srtt 3.6 ms vs min_rtt 1.7 ms: 1.9 ms standing queue"
        ),
        "{}",
        a.explanation
    );
    // Just outside: drops under steady_loss_share (100 of ~53,000,
    // 0.19%), or a queue under queue_fraction of min_rtt (0.3 ms of 1.7,
    // 18%): the path has room, as before.
    for (retransmits, srtt_us) in [(100, 3_600), (400, 2_000)] {
        let b = shallow(retransmits, srtt_us);
        assert_eq!(b.verdict, Verdict::CongestionWindow, "{}", b.explanation);
        assert_eq!(b.rule, "congestion_window");
    }
}
