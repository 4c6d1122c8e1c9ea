//! Sender-side cases of issue 14's real-world shapes: a send buffer that
//! the sender overshoots in bursts, a window ceiling the rate outran, and
//! app-limited marks that BBR sets itself.

use super::tests::{P, checked, point, verdict_between};
use super::*;

/// A flow that delivers 40 Mbit/s while its time-weighted cwnd / srtt says
/// 10 Mbit/s (an RTT overstated by bursts): the kernel's clocks say the
/// cwnd binds, its arithmetic says it cannot: no verdict rests on it.
#[test]
fn a_ceiling_the_flow_outran_is_not_the_verdict() {
    let a = verdict_between(
        P {
            t: 0.0,
            ..P::default()
        },
        P {
            t: 1.0,
            acked: 5_000_000,
            busy_ms: 1000,
            cwnd_ms: 900,
            cwnd: 40,
            srtt_us: 50_000,
            min_rtt_us: 48_000,
            ..P::default()
        },
    );
    assert_eq!(a.verdict, Verdict::Unknown, "{}", a.explanation);
    assert!(
        a.explanation.contains("congestion window binds")
            && a.explanation
                .contains("9.3 Mbit/s is below the 40.0 Mbit/s"),
        "{}",
        a.explanation
    );
}

/// A steady application-limited cubic sender: cwnd validation keeps its
/// cwnd near what it uses, so it delivers 86% of cwnd / srtt with
/// app-limited delivery samples: `application`. The same figures from a
/// BBR sender, whose ProbeRTT marks its own samples app-limited, are not.
#[test]
fn app_limited_marks_name_the_application_except_for_bbr() {
    let end = |cc: &str| {
        let mut p = point(P {
            t: 1.0,
            acked: 2_500_000,
            busy_ms: 1000,
            cwnd: 100,
            app_limited: true,
            ..P::default()
        });
        p.flow.cc = cc.to_string();
        p
    };
    let from = point(P::default());
    let cubic = checked(attribute(Some(&from), &end("cubic"), &Config::default()));
    assert_eq!(cubic.verdict, Verdict::Application, "{}", cubic.explanation);
    let bbr = checked(attribute(Some(&from), &end("bbr"), &Config::default()));
    assert_ne!(bbr.verdict, Verdict::Application, "{}", bbr.explanation);
}

/// Issue 14's first input: a 16 KB SO_SNDBUF (sk_sndbuf 32 KB) on a 20 ms,
/// 100 Mbit/s path. The sender moves in bursts that overshoot the buffer
/// and delivers 40 Mbit/s, above sk_sndbuf / srtt; the kernel's
/// sndbuf-limited clock never ran, observer's own saw the writer wait 55%
/// of busy time, the window full 35%.
#[test]
fn bursty_send_buffer_is_send_buffer_without_a_ceiling() {
    let from = point(P {
        t: 0.0,
        ..P::default()
    });
    let mut to = point(P {
        t: 1.0,
        acked: 5_000_000,
        busy_ms: 1000,
        sndbuf_full_ms: 550,
        cwnd_ms: 350,
        srtt_us: 24_800,
        min_rtt_us: 20_000,
        cwnd: 139,
        ..P::default()
    });
    to.flow.sndbuf = 32_768;
    to.flow.sndbuf_locked = true;
    let a = checked(attribute(Some(&from), &to, &Config::default()));
    assert_eq!(a.verdict, Verdict::SendBuffer, "{}", a.explanation);
    assert_eq!(a.evidence.shares.sndbuf_limited, 0.55);
    assert!(
        a.explanation.contains("window open 55% of busy time")
            && a.explanation.contains(
                "the application set SO_SNDBUF 16.4 KB, sk_sndbuf 32.8 KB, moving in bursts"
            )
            && a.explanation.contains("cwnd-limited 35% of busy"),
        "{}",
        a.explanation
    );
    // 32 KB / 24.8 ms = 10.6 Mbit/s is below the 40 Mbit/s measured: no
    // arithmetic that the measurement contradicts.
    assert!(a.what_if.is_none());
}
