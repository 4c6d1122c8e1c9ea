use crate::attribution::*;
use crate::testkit::sample::SampleBuilder;

const SEC: u64 = 1_000_000_000;

/// A sender flow at time `t` seconds with the given cumulative figures.
#[derive(Clone, Copy)]
pub(in crate::attribution) struct P {
    pub(in crate::attribution) t: f64,
    pub(in crate::attribution) acked: u64,
    pub(in crate::attribution) received: u64,
    pub(in crate::attribution) busy_ms: u64,
    pub(in crate::attribution) rwnd_ms: u64,
    pub(in crate::attribution) sndbuf_ms: u64,
    /// Observer's own send-buffer clock (`Flow::sndbuf_full_us`).
    pub(in crate::attribution) sndbuf_full_ms: u64,
    pub(in crate::attribution) cwnd_ms: u64,
    pub(in crate::attribution) srtt_us: u32,
    pub(in crate::attribution) min_rtt_us: u32,
    pub(in crate::attribution) snd_wnd: u32,
    /// The largest window the peer has offered (bytes; 0: unknown).
    pub(in crate::attribution) snd_wnd_max: u32,
    pub(in crate::attribution) cwnd: u32,
    /// Time whose latest delivery-rate sample was app-limited (ms).
    pub(in crate::attribution) app_limited_ms: u64,
    pub(in crate::attribution) rcv_wnd: u32,
    pub(in crate::attribution) rcv_rtt_us: u32,
    /// The recent best delivery-rate sample (bits/s; 0: none kept).
    pub(in crate::attribution) delivery_max_bps: u64,
    /// Segments retransmitted so far.
    pub(in crate::attribution) retransmits: u32,
}

impl Default for P {
    fn default() -> Self {
        P {
            t: 0.0,
            acked: 0,
            received: 0,
            busy_ms: 0,
            rwnd_ms: 0,
            sndbuf_ms: 0,
            sndbuf_full_ms: 0,
            cwnd_ms: 0,
            srtt_us: 50_000,
            min_rtt_us: 50_000,
            snd_wnd: 4_000_000,
            snd_wnd_max: 0,
            cwnd: 1000,
            app_limited_ms: 0,
            rcv_wnd: 65_535,
            rcv_rtt_us: 0,
            delivery_max_bps: 0,
            retransmits: 0,
        }
    }
}

pub(in crate::attribution) fn point(p: P) -> Point {
    let mut f = SampleBuilder::new(1).flow();
    f.bytes_acked = p.acked;
    f.bytes_received = p.received;
    f.busy_us = p.busy_ms * 1000;
    f.rwnd_limited_us = p.rwnd_ms * 1000;
    f.sndbuf_limited_us = p.sndbuf_ms * 1000;
    f.sndbuf_full_us = p.sndbuf_full_ms * 1000;
    f.cwnd_limited_us = p.cwnd_ms * 1000;
    f.srtt_us = p.srtt_us;
    f.min_rtt_us = p.min_rtt_us;
    f.snd_wnd = p.snd_wnd;
    f.snd_wnd_max = p.snd_wnd_max;
    f.snd_cwnd = p.cwnd;
    f.app_limited = p.app_limited_ms > 0;
    f.app_limited_us = p.app_limited_ms * 1000;
    f.rcv_wnd = p.rcv_wnd;
    f.rcv_rtt_us = p.rcv_rtt_us;
    f.delivery_rate_max_bps = p.delivery_max_bps;
    f.retransmits = p.retransmits;
    f.sndbuf = 16_384;
    Point {
        at_ns: (p.t * SEC as f64) as u64 + 10 * SEC,
        first_seen_ns: 10 * SEC,
        born_at_close: false,
        flow: f,
    }
}

/// The verdict between two points; every case also keeps the property that
/// no verdict rests on a ceiling the rate outran.
pub(in crate::attribution) fn verdict_between(a: P, b: P) -> Attribution {
    checked(attribute(Some(&point(a)), &point(b), &Config::default()))
}

/// `a`, after asserting [`Attribution::check_ceilings`].
pub(in crate::attribution) fn checked(a: Attribution) -> Attribution {
    let cfg = Config::default();
    if let Err(e) = a.check_ceilings(&cfg).and(a.check_binds(&cfg)) {
        panic!("{e}; explanation: {}", a.explanation);
    }
    a
}

/// Reference A's `-w 64K` sender over 2 s in which the peer acked
/// `acked` bytes: snd_wnd 80,480 B, srtt 105 ms (104 ms min), busy all
/// the time and rwnd-limited 56% of it.
pub(in crate::attribution) fn window_bound_pair(acked: u64) -> (P, P) {
    let a = P {
        t: 1.0,
        acked: 1_000_000,
        busy_ms: 1000,
        rwnd_ms: 560,
        srtt_us: 105_000,
        min_rtt_us: 104_000,
        snd_wnd: 80_480,
        ..P::default()
    };
    let b = P {
        t: 3.0,
        acked: 1_000_000 + acked,
        busy_ms: 3000,
        rwnd_ms: 1680,
        ..a
    };
    (a, b)
}

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
        P {
            t: 0.0,
            snd_wnd: 65_536,
            srtt_us: 104_000,
            min_rtt_us: 104_000,
            ..P::default()
        },
        P {
            t: 1.0,
            acked: 630_000,
            busy_ms: 1000,
            rwnd_ms: 50,
            snd_wnd: 65_536,
            srtt_us: 104_000,
            min_rtt_us: 104_000,
            ..P::default()
        },
    );
    assert_eq!(a.verdict, Verdict::ReceiveWindow);
}

#[test]
fn rwnd_share_boundary() {
    let mk = |rwnd_ms| {
        verdict_between(
            P {
                t: 0.0,
                ..P::default()
            },
            // Far below every ceiling; only the share can make it rwnd.
            P {
                t: 1.0,
                acked: 1_000_000,
                busy_ms: 1000,
                rwnd_ms,
                cwnd_ms: 0,
                ..P::default()
            },
        )
        .verdict
    };
    assert_eq!(mk(200), Verdict::ReceiveWindow);
    assert_ne!(mk(199), Verdict::ReceiveWindow);
}

#[test]
fn send_buffer() {
    let a = verdict_between(
        P {
            t: 0.0,
            ..P::default()
        },
        P {
            t: 1.0,
            // 1.6 Mbit/s, under 16 KB / 50 ms = 2.6 Mbit/s.
            acked: 200_000,
            busy_ms: 1000,
            sndbuf_ms: 700,
            rwnd_ms: 100,
            ..P::default()
        },
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
    let a = verdict_between(
        P {
            t: 0.0,
            ..P::default()
        },
        P {
            t: 5.0,
            acked: 1_250_000,
            busy_ms: 1000,
            ..P::default()
        },
    );
    assert_eq!(a.verdict, Verdict::Application);
    assert!((a.confidence - 0.8).abs() < 1e-9);
    let idle = verdict_between(
        P {
            t: 0.0,
            ..P::default()
        },
        P {
            t: 5.0,
            ..P::default()
        },
    );
    assert_eq!(idle.verdict, Verdict::Application);
    assert!(idle.explanation.contains("nothing sent"));
}

#[test]
fn busy_but_app_limited_sender_is_application() {
    // 2 Mbit/s on a path whose windows allow far more; busy 90% because each
    // small write is in flight for a round trip.
    let a = verdict_between(
        P {
            t: 0.0,
            ..P::default()
        },
        P {
            t: 2.0,
            acked: 500_000,
            busy_ms: 1800,
            app_limited_ms: 1900,
            cwnd: 40,
            ..P::default()
        },
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
        P {
            t: 0.0,
            cwnd: 100,
            ..P::default()
        },
        P {
            t: 1.0,
            acked: 2_500_000,
            busy_ms: 1000,
            cwnd: 100,
            app_limited_ms: 50,
            ..P::default()
        },
    );
    assert!(a.evidence.app_limited);
    assert_ne!(a.verdict, Verdict::Application, "{}", a.explanation);
}

#[test]
fn clamped_cwnd_without_queue_is_congestion_window() {
    // cwnd locked at 10 on a 50 ms path: 10 x 1448 B / 50 ms = 2.3 Mbit/s.
    let a = verdict_between(
        P {
            t: 0.0,
            cwnd: 10,
            ..P::default()
        },
        P {
            t: 2.0,
            acked: 579_200,
            busy_ms: 2000,
            cwnd_ms: 1900,
            cwnd: 10,
            srtt_us: 50_300,
            ..P::default()
        },
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
        P {
            t: 0.0,
            cwnd: 600,
            ..P::default()
        },
        P {
            t: 1.0,
            acked: 4_300_000,
            busy_ms: 1000,
            cwnd_ms: 700,
            cwnd: 600,
            srtt_us: 208_000,
            min_rtt_us: 104_000,
            ..P::default()
        },
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
        P {
            t: 0.0,
            ..P::default()
        },
        P {
            t: 2.0,
            acked: 5_000_000,
            busy_ms: 2000,
            cwnd_ms: 20,
            cwnd: 173,
            srtt_us: 52_000,
            ..P::default()
        },
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
