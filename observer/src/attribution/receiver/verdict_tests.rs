//! The receiver-side rules, one case each, with the figures of the
//! scenario that imposes the limit.

use super::fixtures::*;
use crate::attribution::*;

/// 64 KB advertised, 104 ms receiver RTT: a 5.0 Mbit/s ceiling.
fn window_64k() -> R {
    R {
        rcv_wnd: 65_536,
        rtt_us: 104_000,
        min_rtt_us: 104_000,
        ..R::default()
    }
}

#[test]
fn sorcvbuf_binds_and_is_named() {
    let a = judge(
        5.0e6,
        R {
            rcvbuf_locked: true,
            rcvbuf: 131_072,
            ..window_64k()
        },
    );
    assert_eq!(a.side, Side::Receiver);
    assert_eq!(a.verdict, Verdict::ReceiveWindow, "{}", a.explanation);
    assert!(
        a.explanation
            .contains("SO_RCVBUF set by the application: a 131.1 KB buffer")
    );
    assert!(
        a.explanation.contains(
            "mean rcv_wnd 65.5 KB / rcv_rtt 104.0 ms = 5.0 Mbit/s ceiling, receiving 5.0 Mbit/s"
        ),
        "{}",
        a.explanation
    );
    assert!((a.evidence.receive.window_fill - 0.99).abs() < 0.01);
}

#[test]
fn window_causes_in_order() {
    let cause = |r: R| judge(5.0e6, r).explanation;
    let no_scale = cause(R {
        wscale_ok: false,
        rcvbuf_locked: true,
        ..window_64k()
    });
    assert!(
        no_scale.contains("no window scaling on this connection: at most 65.5 KB"),
        "{no_scale}"
    );
    let rmem = cause(R {
        rcvbuf: 131_072,
        tcp_rmem_max: 131_072,
        ..window_64k()
    });
    assert!(
        rmem.contains("tcp_rmem max reached: the buffer is at net.ipv4.tcp_rmem's 131.1 KB"),
        "{rmem}"
    );
    let growing = cause(R {
        rcvbuf: 200_000,
        tcp_rmem_max: 6_291_456,
        ..window_64k()
    });
    assert!(
        growing.contains("autotuning still growing: buffer 200.0 KB of tcp_rmem max 6.29 MB"),
        "{growing}"
    );
    // TCP_WINDOW_CLAMP of 64 KB set before connect: window scale 1, and
    // the window pinned at 131 KB however far the buffer grows.
    let pinned = |rcv_wnd| R {
        rcv_wnd,
        rcv_wscale: 1,
        rcvbuf: 2_000_000,
        tcp_rmem_max: 6_291_456,
        ..window_64k()
    };
    // Judged at the rate each window carries over 104 ms.
    let full = |r: R| judge(f64::from(r.rcv_wnd) * 8.0 / 0.104, r).explanation;
    let scale = full(pinned(131_000));
    assert!(
        scale
            .contains("window scale 1 agreed at the handshake: at most 131.1 KB can be advertised"),
        "{scale}"
    );
    // Just under 90% of what the scale carries: the buffer's growth.
    let under = full(pinned(117_000));
    assert!(under.contains("autotuning still growing"), "{under}");
}

#[test]
fn a_closed_window_or_a_buffer_of_unread_data_is_the_reader() {
    // curl --limit-rate 250k: the window sits closed half the time.
    let a = judge(
        2.0e6,
        R {
            rcv_wnd: 20_000,
            rtt_us: 40_000,
            min_rtt_us: 40_000,
            closed_ms: 1_000,
            unread: 300_000,
            ..R::default()
        },
    );
    assert_eq!(a.verdict, Verdict::ReceiverApplication, "{}", a.explanation);
    assert!(
        a.explanation
            .contains("leaves 300.0 KB unread on average and read all that was waiting 1000 times in 50 round trips; the window was closed 50%"),
        "{}",
        a.explanation
    );
    assert!(
        a.what_if.is_none(),
        "more window does not help a slow reader"
    );
    // Never closed, but the window is full and unread data fill the buffer.
    let b = judge(
        5.0e6,
        R {
            unread: 70_000,
            ..window_64k()
        },
    );
    assert_eq!(b.verdict, Verdict::ReceiverApplication, "{}", b.explanation);
}

#[test]
fn bursts_after_loss_are_the_senders_congestion_window() {
    // rx-ref-b-cubic: 42 Mbit/s, half the data in bursts at 104 Mbit/s,
    // the last out-of-order arrival 4 s ago.
    let r = R {
        rtt_us: 110_000,
        min_rtt_us: 110_000,
        rcv_wnd: 5_240_000,
        ooo_age_s: Some(4.0),
        burst_bytes: 5_500_000,
        burst_ns: 423_000_000,
        ..R::default()
    };
    let a = judge(42.0e6, r);
    assert_eq!(a.verdict, Verdict::CongestionWindow, "{}", a.explanation);
    assert!(
        a.explanation
            .contains("0 out-of-order arrivals, the last 4.0 s ago"),
        "{}",
        a.explanation
    );
    assert!((a.evidence.receive.burst_rate_bps - 104.0e6).abs() < 0.1e6);
    assert!((a.evidence.receive.path_use - 42.0 / 104.0).abs() < 0.01);
    // The same shape with no loss for longer than the memory: the sender.
    let b = judge(
        42.0e6,
        R {
            ooo_age_s: Some(30.0),
            ..r
        },
    );
    assert_eq!(b.verdict, Verdict::Sender, "{}", b.explanation);
    // Out-of-order arrivals in the interval itself.
    let c = judge(
        42.0e6,
        R {
            ooo: 12,
            ooo_age_s: Some(0.1),
            ..r
        },
    );
    assert_eq!(c.verdict, Verdict::CongestionWindow, "{}", c.explanation);
    assert!(
        c.explanation.contains("12 out-of-order arrivals;"),
        "{}",
        c.explanation
    );
}

#[test]
fn pauses_with_the_window_open_are_the_sender() {
    // iperf3 -R -b 3M: 128 KB bursts with long pauses.
    let a = judge(
        3.0e6,
        R {
            gap_ms: 1_500,
            ..R::default()
        },
    );
    assert_eq!(a.verdict, Verdict::Sender, "{}", a.explanation);
    assert!(
        a.explanation
            .contains("the sender paused 75% of the time, without loss"),
        "{}",
        a.explanation
    );
    assert!(a.what_if.is_none());
}

#[test]
fn even_arrivals_with_the_window_open_are_the_path() {
    // bbr at a 20 Mbit/s bottleneck: no bursts, no pauses, no queue.
    let a = judge(19.0e6, R::default());
    assert_eq!(a.verdict, Verdict::Path, "{}", a.explanation);
    assert!(!a.explanation.contains("a queue builds"));
    // cubic filling a deep queue: the receiver RTT far above its base.
    let b = judge(
        9.5e6,
        R {
            rtt_us: 900_000,
            min_rtt_us: 50_000,
            ..R::default()
        },
    );
    assert_eq!(b.verdict, Verdict::Path, "{}", b.explanation);
    assert!(
        b.explanation
            .contains("and a queue builds; rcv_rtt 900.0 ms vs base 50.0 ms"),
        "{}",
        b.explanation
    );
    assert_eq!(b.evidence.receive.queue_delay_us, 850_000);
}

#[test]
fn too_little_data_is_unknown() {
    let a = judge(50_000.0, R::default());
    assert_eq!(a.verdict, Verdict::Unknown, "{}", a.explanation);
}

#[test]
fn a_pausing_sender_is_held_by_loss_only_if_it_is_fresh() {
    // rx-server-paced: 12 segments lost in bbr's startup overshoot, then
    // nginx paces at 3 Mbit/s; rx-loss: 1% loss keeps cutting cubic.
    let paused = |age: f64, ooo: u32| {
        judge(
            3.0e6,
            R {
                gap_ms: 1_800,
                ooo,
                ooo_age_s: Some(age),
                ..R::default()
            },
        )
    };
    let old = paused(1.5, 5);
    assert_eq!(old.verdict, Verdict::Sender);
    assert!(
        old.explanation
            .contains("5 out-of-order arrivals but none in the last 1.5 s"),
        "{}",
        old.explanation
    );
    let held = paused(0.4, 5);
    assert_eq!(
        held.verdict,
        Verdict::CongestionWindow,
        "{}",
        held.explanation
    );
    assert!(
        held.explanation
            .contains("5 out-of-order arrivals; the sender paused 90% of the time"),
        "{}",
        held.explanation
    );
}

#[test]
fn a_sender_that_pauses_longer_than_a_round_trip_waits_for_data_not_acks() {
    // rx-server-paced as tcpdump shows it: nginx's limit_rate sends a
    // second's allowance in one burst (BBR's window lets it out at once,
    // and the burst overflows the queue), then waits about 940 ms.
    let paced = R {
        gap_ms: 1_800,
        gaps: 2,
        ooo: 24,
        ooo_age_s: Some(0.2),
        ..R::default()
    };
    let a = judge(3.0e6, paced);
    assert_eq!(a.verdict, Verdict::Sender, "{}", a.explanation);
    assert!(
        a.explanation.contains(
            "24 out-of-order arrivals, but its pauses last 900.0 ms on average, longer than a sender waiting for ACKs waits (250.0 ms at a 50.0 ms round trip): it waits for data or a timer"
        ),
        "{}",
        a.explanation
    );
    assert_eq!(a.evidence.receive.mean_gap_us, 900_000.0);
    // rx-loss: 1% loss holds cubic's window at a few segments; it sends
    // them and waits one round trip (less the burst) for the ACKs.
    let held = judge(3.0e6, R { gaps: 40, ..paced });
    assert_eq!(
        held.verdict,
        Verdict::CongestionWindow,
        "{}",
        held.explanation
    );
    assert_eq!(held.evidence.receive.mean_gap_us, 45_000.0);
    // At the bar: pauses of a retransmission timeout (200 ms) and a round
    // trip still count as ACK waits; longer ones do not.
    let bar = judge(
        3.0e6,
        R {
            gap_ms: 1_500,
            gaps: 6,
            ..paced
        },
    );
    assert_eq!(bar.evidence.receive.mean_gap_us, 250_000.0);
    assert_eq!(
        bar.verdict,
        Verdict::CongestionWindow,
        "{}",
        bar.explanation
    );
    let over = judge(
        3.0e6,
        R {
            gap_ms: 1_500,
            gaps: 5,
            ..paced
        },
    );
    assert_eq!(over.verdict, Verdict::Sender, "{}", over.explanation);
    // A 1 ms LAN path stalled by retransmission timeouts (200 ms, the
    // minimum, without backoff): every counted gap (over 10 ms) is many
    // round trips, yet the sender waits on loss.
    let lan = judge(
        3.0e6,
        R {
            rtt_us: 1_000,
            min_rtt_us: 1_000,
            gap_ms: 1_800,
            gaps: 9,
            ..paced
        },
    );
    assert_eq!(lan.evidence.receive.mean_gap_us, 200_000.0);
    assert_eq!(
        lan.verdict,
        Verdict::CongestionWindow,
        "{}",
        lan.explanation
    );
}

#[test]
fn the_two_ends_agree_only_on_the_same_limit() {
    use Verdict::*;
    assert!(ends_agree(ReceiveWindow, ReceiverApplication));
    assert!(ends_agree(Application, Sender));
    assert!(ends_agree(SendBuffer, Sender));
    assert!(ends_agree(Path, Path));
    assert!(ends_agree(Unknown, Path));
    assert!(!ends_agree(Path, Sender));
    assert!(!ends_agree(ReceiveWindow, Path));
    assert!(!ends_agree(Application, ReceiverApplication));
    // Every pair is decided without panicking, and the table is not
    // trivially true.
    let agreeing = Verdict::ALL
        .iter()
        .flat_map(|s| Verdict::ALL.iter().map(move |r| ends_agree(*s, *r)))
        .filter(|x| *x)
        .count();
    assert_eq!(agreeing, 8 + 8 - 1 + 2 + 2 + 2 + 1);
    // A sender's path pairs with the receiver's congestion window only
    // where the rule says the window binds at drops: a policer's, or a
    // full queue's.
    for (rule, agree) in [
        ("drops_without_queue", true),
        ("full_bottleneck", true),
        ("pacing", false),
        ("probes_meet_window", false),
    ] {
        assert_eq!(
            ends_agree_by_rule((Path, rule), CongestionWindow),
            agree,
            "{rule}"
        );
        assert!(!ends_agree_by_rule((Path, rule), Sender), "{rule}");
    }
}

#[test]
fn bursts_over_a_standing_queue_are_a_shared_full_path() {
    // ref-b-bbr-p4 from a receiver: a quarter of a 100 Mbit/s link, its
    // segments interleaved with three other flows', a 28 ms queue.
    let r = R {
        rtt_us: 138_000,
        min_rtt_us: 110_000,
        ooo: 40,
        ooo_age_s: Some(0.2),
        burst_bytes: 3_000_000,
        burst_ns: 240_000_000,
        ..R::default()
    };
    let a = judge(25.0e6, r);
    assert_eq!(a.verdict, Verdict::Path, "{}", a.explanation);
    assert!(
        a.explanation
            .contains("the bottleneck is full: a queue stands (rcv_rtt 138.0 ms vs base 110.0 ms)"),
        "{}",
        a.explanation
    );
    // The same bursts without the queue: loss holds the sender's window.
    let b = judge(
        25.0e6,
        R {
            rtt_us: 110_000,
            ..r
        },
    );
    assert_eq!(b.verdict, Verdict::CongestionWindow, "{}", b.explanation);
}

#[test]
fn one_reordered_segment_does_not_hold_a_pausing_sender() {
    // apt from the package mirror: one out-of-order arrival in 80,000
    // segments while the client waited for its next response.
    let a = judge(
        900.0e6,
        R {
            rcv_wnd: 2_670_000,
            rtt_us: 1_163,
            min_rtt_us: 136,
            gap_ms: 460,
            ooo: 1,
            ooo_age_s: Some(0.3),
            data_segs: 80_000,
            ..R::default()
        },
    );
    assert_eq!(a.verdict, Verdict::Sender, "{}", a.explanation);
    assert!(
        a.explanation
            .contains("1 out-of-order arrival but none in the last 0.3 s")
            || a.explanation.contains("1 out-of-order arrival"),
        "{}",
        a.explanation
    );
}

#[test]
fn a_shut_window_with_nothing_arriving_is_the_reader() {
    // curl --limit-rate between its visits: nothing arrives for the whole
    // interval, the window shut, unread data waiting.
    let at = |t: f64, received: u64, closed_ms: u64| R {
        t,
        received,
        rcv_wnd: 0,
        unread: 1_200_000,
        closed_ms,
        ..R::default()
    };
    let from = point(at(0.0, 10_000_000, 0));
    let to = point(at(1.0, 10_000_000, 1_000));
    let a = attribute(Some(&from), &to, &Config::default());
    assert_eq!(a.side, Side::Receiver);
    assert_eq!(a.verdict, Verdict::ReceiverApplication, "{}", a.explanation);
    assert!(a.what_if.is_none());
}

#[test]
fn path_wording_matches_how_the_data_arrives() {
    // Loopback iperf3 -R: 92% of the data in bursts, the flow using 95%
    // of their rate: not "evenly".
    let a = judge(
        15.0e9,
        R {
            rtt_us: 60,
            min_rtt_us: 40,
            burst_bytes: 3_450_000_000,
            burst_ns: 1_750_000_000,
            ..R::default()
        },
    );
    assert_eq!(a.verdict, Verdict::Path, "{}", a.explanation);
    assert!(
        a.explanation.contains("of the rate of its bursts"),
        "{}",
        a.explanation
    );
    assert!(!a.explanation.contains("evenly"), "{}", a.explanation);
    assert!(
        a.explanation.contains("rcv_rtt 60 µs vs base 40 µs"),
        "{}",
        a.explanation
    );
    // The same bursts, the flow faster than them on average (a new user's
    // loopback run read "18.10 Gbit/s, 100% of the rate of its bursts
    // (13.14 Gbit/s)"): the bursts name no rate the data came at.
    let b = judge(
        18.1e9,
        R {
            rtt_us: 60,
            min_rtt_us: 40,
            burst_bytes: 3_450_000_000,
            burst_ns: 2_100_000_000,
            ..R::default()
        },
    );
    assert_eq!(b.verdict, Verdict::Path, "{}", b.explanation);
    assert!(
        b.explanation
            .contains("data arrives evenly at 18.10 Gbit/s"),
        "{}",
        b.explanation
    );
}

#[test]
fn a_rate_past_the_window_ceiling_is_not_a_window_limit() {
    // In flight 1.4 times the window: the receiver RTT is overstated (a
    // sender's pauses inflate the timestamp RTT), so the window cannot be
    // shown to bind.
    let a = judge(
        900.0e6,
        R {
            gap_ms: 1_000,
            ..R::default()
        },
    );
    assert!(a.evidence.receive.window_fill > 1.25);
    assert_eq!(a.verdict, Verdict::Sender, "{}", a.explanation);
}

/// Window scaling off over a 10 Mbit/s path with 20 ms of base RTT and a
/// 250 KB queue (an adversarial run, 4 of 4): 65,535 B is 2.6 BDPs, so
/// the window fills the link and the rest waits in the queue (rcv_rtt
/// 51.6 ms). At the base RTT the window allows 26.2 Mbit/s: `path`, not
/// "enable window scaling". Without the queue it is the window.
#[test]
fn a_window_full_only_through_a_queue_is_the_path() {
    let unscaled = |rtt_us: u32| R {
        rcv_wnd: 65_535,
        rtt_us,
        min_rtt_us: 20_000,
        wscale_ok: false,
        ..R::default()
    };
    let a = judge(9.6e6, unscaled(51_600));
    assert_eq!(a.verdict, Verdict::Path, "{}", a.explanation);
    assert_eq!(
        a.explanation,
        "path: the bottleneck is full: this host's window is full only through a queue: rcv_wnd 65.5 KB allows 26.2 Mbit/s at the base RTT 20.0 ms, and rcv_rtt 51.6 ms vs base 20.0 ms; data arrives at 9.6 Mbit/s, 0 out-of-order arrivals: a larger window would add queue, not rate"
    );
    assert!(a.what_if.is_none());
    let b = judge(24.0e6, unscaled(20_500));
    assert_eq!(b.verdict, Verdict::ReceiveWindow, "{}", b.explanation);
}
