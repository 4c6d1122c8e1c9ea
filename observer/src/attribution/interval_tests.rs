//! The sender's judgement over an interval: too little data, the span
//! since birth, shares that sum to one, evidence of the interval rather
//! than its last reading, and ceilings the rate beat or that bind.

use super::sender::fixtures::{P, point, verdict_between};
use super::*;

#[test]
fn too_little_data_is_unknown() {
    let a = verdict_between(P::at(0.0), P::at(1.0).acked(10_000).busy_ms(100));
    assert_eq!(a.verdict, Verdict::Unknown);
    assert_eq!(a.confidence, 0.0);
    // Enough bytes but under four round trips of the path (min_rtt).
    let a = verdict_between(
        P::at(0.0).srtt_us(100_000).min_rtt_us(100_000),
        P::at(0.3)
            .acked(1_000_000)
            .busy_ms(300)
            .srtt_us(100_000)
            .min_rtt_us(100_000),
    );
    assert_eq!(a.verdict, Verdict::Unknown);
    // The same at a 50 ms min_rtt, srtt stretched to 100 ms by a queue:
    // six round trips of the path, enough to judge.
    let a = verdict_between(
        P::at(0.0).srtt_us(100_000),
        P::at(0.3).acked(1_000_000).busy_ms(300).srtt_us(100_000),
    );
    assert_ne!(a.verdict, Verdict::Unknown, "{}", a.explanation);
}

#[test]
fn since_birth_uses_first_seen() {
    let b = point(
        P::at(2.0)
            .acked(1_532_952)
            .busy_ms(2000)
            .rwnd_ms(1200)
            .srtt_us(105_000)
            .min_rtt_us(104_000)
            .snd_wnd(80_480),
    );
    let a = attribute(None, &b, &Config::default());
    assert_eq!(a.evidence.interval_us, 2_000_000);
    assert_eq!(a.verdict, Verdict::ReceiveWindow);
}

#[test]
fn shares_sum_to_one_and_never_exceed_busy() {
    let a = verdict_between(
        P::at(0.0),
        // Inconsistent input: limited times larger than busy, busy larger than wall.
        P::at(1.0)
            .acked(1_000_000)
            .busy_ms(1500)
            .rwnd_ms(900)
            .sndbuf_ms(400)
            .cwnd_ms(900),
    );
    let s = a.evidence.shares;
    let sum = s.rwnd_limited + s.sndbuf_limited + s.cwnd_limited + s.other_busy + s.idle;
    assert!((sum - 1.0).abs() < 1e-9);
    assert!(s.idle >= 0.0 && s.cwnd_limited >= 0.0);
}

#[test]
fn pacing_sender_touching_its_cwnd_is_path_not_cwnd() {
    // BBR at a 100 Mbit/s bottleneck, 110 ms: cwnd-limited 24% of busy time,
    // delivering 96 Mbit/s against a 166 Mbit/s cwnd ceiling, 20 ms of queue.
    let a = verdict_between(
        P::at(0.0).cwnd(1870),
        P::at(1.0)
            .acked(12_000_000)
            .busy_ms(1000)
            .cwnd_ms(240)
            .cwnd(1870)
            .srtt_us(130_700)
            .min_rtt_us(110_000),
    );
    assert_eq!(a.verdict, Verdict::Path, "{}", a.explanation);
}

#[test]
fn flow_first_seen_at_close_gets_no_rate() {
    let mut b = point(P::at(0.000_001).acked(3_500_000).busy_ms(900));
    b.born_at_close = true;
    let a = attribute(None, &b, &Config::default());
    assert_eq!(a.verdict, Verdict::Unknown);
    assert_eq!(a.evidence.rate_bps, 0.0);
    assert_eq!(a.evidence.interval_us, 0);
    assert!(a.explanation.contains("first seen at its close"));
}

#[test]
fn evidence_describes_the_interval_not_its_last_reading() {
    // A reverse transfer whose reader stopped at the end: snd_wnd read
    // 18.3 KB at the last sample after 2 s at 79,488 B.
    let a = point(P::at(0.0).srtt_us(45_400));
    let mut b = point(
        P::at(2.0)
            .acked(3_375_000)
            .busy_ms(2000)
            .rwnd_ms(1500)
            .srtt_us(45_400)
            .snd_wnd(18_300),
    );
    b.flow.integrals = crate::model::integrals::Integrals {
        us: 2_000_000,
        snd_wnd: 79_488 * 2_000_000,
        srtt: 45_400 * 2_000_000,
        cwnd: 1000 * 2_000_000,
        ..Default::default()
    };
    let r = attribute(Some(&a), &b, &Config::default());
    assert_eq!(r.evidence.snd_wnd, 79_488);
    assert_eq!(r.verdict, Verdict::ReceiveWindow, "{}", r.explanation);
    assert!(
        r.explanation.contains(
            "snd_wnd 79.5 KB / srtt 45.4 ms = 14.0 Mbit/s ceiling, delivering 13.5 Mbit/s"
        ),
        "{}",
        r.explanation
    );
}

#[test]
fn a_shut_peer_window_with_nothing_delivered_is_receive_window() {
    // The python3 end of `curl --limit-rate`: busy, rwnd-limited all of
    // the interval, nothing acknowledged.
    let a = verdict_between(
        P::at(0.0)
            .acked(10_000_000)
            .busy_ms(5_000)
            .rwnd_ms(4_000)
            .snd_wnd(0),
        P::at(1.0)
            .acked(10_000_000)
            .busy_ms(6_000)
            .rwnd_ms(5_000)
            .snd_wnd(0),
    );
    assert_eq!(a.verdict, Verdict::ReceiveWindow, "{}", a.explanation);
    assert!(
        a.explanation.contains("the peer's window is shut"),
        "{}",
        a.explanation
    );
    assert!(a.what_if.is_none(), "no arithmetic for 0 bit/s");
}

#[test]
fn a_rate_over_its_ceiling_says_by_how_much() {
    use super::assemble::ceiling_and_rate;
    // cwnd-clamp under cubic: 10 x 1448 B over a 51.6 ms srtt allows
    // 2.245 Mbit/s, and 2.26 Mbit/s was acked.
    assert_eq!(
        ceiling_and_rate(2.245e6, "delivering", 2.26e6),
        "2.2 Mbit/s ceiling, delivering 2.3 Mbit/s, 1% above it (the ceiling rests on a smoothed RTT)"
    );
    assert_eq!(
        ceiling_and_rate(6.1e6, "receiving", 5.8e6),
        "6.1 Mbit/s ceiling, receiving 5.8 Mbit/s"
    );
    // The same flow in another run: 0.3% over, which rounds to 0%.
    assert_eq!(
        ceiling_and_rate(2.29e6, "delivering", 2.297e6),
        "2.3 Mbit/s ceiling, delivering 2.3 Mbit/s, under 1% above it (the ceiling rests on a \
         smoothed RTT)"
    );
}

/// The bind property (`Attribution::check_binds`): a named window within
/// four times the rate, or blocking the flow by its own clock.
#[test]
fn a_named_window_binds_by_its_ceiling_or_its_clock() {
    let named = |rule: &'static str, ceiling: f64, rwnd_share: f64| Attribution {
        verdict: Verdict::ReceiveWindow,
        rule,
        confidence: 0.8,
        side: Side::Sender,
        explanation: String::new(),
        evidence: Evidence {
            rate_bps: 10e6,
            ceilings: Ceilings {
                rwnd_bps: ceiling,
                ..Ceilings::default()
            },
            shares: Shares {
                rwnd_limited: rwnd_share,
                other_busy: 1.0 - rwnd_share,
                ..Shares::default()
            },
            ..Evidence::default()
        },
        what_if: None,
        also: None,
    };
    let cfg = Config::default();
    assert!(named("receive_window", 40e6, 0.0).check_binds(&cfg).is_ok());
    let loose = named("receive_window", 40.1e6, 0.19).check_binds(&cfg);
    assert!(
        loose.as_ref().is_err_and(|e| e.contains("4.0 times")),
        "{loose:?}"
    );
    assert!(
        named("receive_window", 400e6, 0.2)
            .check_binds(&cfg)
            .is_ok()
    );
    // Probes meet the window one phase in eight: 5% of busy time is its
    // clock's say.
    assert!(
        named("probes_meet_window", 55e6, 0.05)
            .check_binds(&cfg)
            .is_ok()
    );
    assert!(
        named("probes_meet_window", 55e6, 0.04)
            .check_binds(&cfg)
            .is_err()
    );
}

/// A reader that shut the window rests on its closed time, not on the
/// window's ceiling: a chunk reader's window, reopened a chunk at a time
/// and each chunk sent at once, averaged 22.9 KB over 50 ms (3.65
/// Mbit/s) while 5.26 Mbit/s came through (a bbr suite run of
/// `rx-chunk-reader`, 2026-12-06, the window closed 38% of the time).
/// One that held the window by waiting data alone names the ceiling.
#[test]
fn a_reader_that_shut_the_window_names_no_ceiling() {
    let reader = |closed_share: f64| Attribution {
        verdict: Verdict::ReceiverApplication,
        rule: "reader",
        confidence: 0.6,
        side: Side::Receiver,
        explanation: String::new(),
        evidence: Evidence {
            recv_rate_bps: 5.26e6,
            ceilings: Ceilings {
                rcv_wnd_bps: 3.65e6,
                ..Ceilings::default()
            },
            receive: Receive {
                closed_share,
                ..Receive::default()
            },
            ..Evidence::default()
        },
        what_if: None,
        also: None,
    };
    let cfg = Config::default();
    assert_eq!(reader(0.38).named_ceiling(&cfg), None);
    assert!(reader(0.38).check_ceilings(&cfg).is_ok());
    // Just under the significant share: the window's ceiling is named,
    // and the rate contradicts it.
    let waiting = reader(0.19);
    assert_eq!(waiting.named_ceiling(&cfg), Some(("rcv_wnd", 3.65e6)));
    let outran = waiting.check_ceilings(&cfg);
    assert!(
        outran
            .as_ref()
            .is_err_and(|e| e.contains("ceiling 3650000 bit/s is below the measured 5260000")),
        "{outran:?}"
    );
}
