//! Groups of each shape the seed experiments name, and just outside each
//! rule's edge. Rates and windows are the seeds' (../shared/docs/
//! seed-experiments.md); the expected figures are worked by hand.

use super::{GroupBy, fixtures::*, judge::Limit};
use crate::attribution::{Bounds, PeerWindow, Side, Verdict};
use crate::testkit::sample::v4;

/// Reference A's `-w 64K` upload at `rate` (bits/s): the peer's 80,480 B
/// window at srtt 105 ms, its best delivery-rate sample 6.2 Mbit/s.
fn w64k(rate: f64) -> F {
    F {
        verdict: Verdict::ReceiveWindow,
        rule: "receive_window",
        rate_bps: rate,
        shown_bps: 6.2e6,
        window: Some((
            80_480,
            Bounds {
                shift: Some(7),
                peer: Some(PeerWindow {
                    full_share: 0.565,
                    min_rtt_us: 104_000,
                    now_bytes: 80_480,
                    max_bytes: 80_480,
                }),
                ..Bounds::default()
            },
        )),
        ..F::default()
    }
}
#[test]
fn one_autotuned_stream_is_shared() {
    // Reference A, default cubic: 33.8 Mbit/s, srtt 208 ms over 104 ms.
    let g = only_group(&[F {
        rate_bps: 33.8e6,
        srtt_us: 208_000,
        shown_bps: 35e6,
        ..F::default()
    }]);
    assert_eq!((g.limit, g.rule), (Limit::Shared, "one_flow"));
    assert_eq!(
        g.explanation,
        "shared limit: one flow, at the path's bottleneck (path, 33.8 Mbit/s): more streams would share the same bottleneck"
    );
    assert_eq!(g.what_if.len(), 1);
    assert_eq!(g.what_if[0].knob, "path");
    assert!(g.what_if[0].summary.starts_with(
        "1 of 1 uploads to 10.0.0.2 (100% of bytes) ran at the path's bottleneck: more streams or bigger windows would not help"
    ), "{}", g.what_if[0].summary);
    assert_eq!(g.peer.as_deref(), Some("10.0.0.2"));
    assert_eq!(g.verdicts.get("path"), Some(&42_250_000));
}

#[test]
fn one_window_bound_stream_is_per_flow() {
    let g = only_group(&[w64k(5.78e6)]);
    assert_eq!((g.limit, g.rule), (Limit::PerFlow, "one_flow"));
    assert!(
        g.explanation.starts_with(
            "per-flow limit: one flow, held by the peer's receive window (receive_window, 5.8 Mbit/s)"
        ),
        "{}",
        g.explanation
    );
    assert!(
        g.explanation
            .ends_with("a limit of its own; parallel streams would each bring their own"),
        "{}",
        g.explanation
    );
    // Its best sample (6.2 Mbit/s) is all the path has shown: no speed-up
    // is claimed.
    let w = &g.what_if[0];
    assert_eq!(w.knob, "peer_window");
    assert!(!w.helps);
    assert_eq!(w.speedup, None);
    assert_eq!(
        w.summary,
        "1 of 1 uploads to 10.0.0.2 (100% of bytes) were held by the peer's receive window (80.5 KB): their windows allowed about 6.1 Mbit/s each at their 105.0 ms RTT; the path has shown 6.2 Mbit/s, no more than they ran: what a bigger window would buy is not known from these flows"
    );
}

#[test]
fn four_window_bound_streams_are_per_flow() {
    // Reference A, -w 64K -P 4: 5.87 + 3.77 + 5.77 + 5.77 = 21.18 Mbit/s,
    // with iperf3's control connection open a second either side (not
    // judged: it stretches no rate).
    let control = F {
        verdict: Verdict::Unknown,
        rule: "too_little",
        rate_bps: 1_000.0,
        start_s: -1.0,
        secs: 12.0,
        ..F::default()
    };
    let g = only_group(&[
        w64k(5.87e6),
        w64k(3.77e6),
        w64k(5.77e6),
        w64k(5.77e6),
        control,
    ]);
    assert_eq!((g.limit, g.rule), (Limit::PerFlow, "own_limits"));
    assert_eq!((g.flows, g.judged, g.concurrent), (5, 4, 4));
    assert!((g.rate_bps - 21.18e6).abs() < 1.0, "{}", g.rate_bps);
    assert_eq!(
        g.explanation,
        "per-flow limit: 4 flows each held by its own limit (the peer's receive window) together ran 21.2 Mbit/s, 3.6 times the fastest alone (5.9 Mbit/s); the path has shown at least 21.2 Mbit/s (the flows together): more streams would add rate"
    );
    let w = &g.what_if[0];
    // The path has shown only what the four carried together, 5.3 Mbit/s
    // each at once: no more than each ran, so no speed-up is promised
    // (not 21.18 / 5.3 = 4.0x each: they share the path). The control
    // connection moved 1.5 KB: no upload ("4 of 4").
    assert_eq!((w.needed_bytes, w.speedup, w.helps), (None, None, false));
    assert_eq!(
        w.summary,
        "4 of 4 uploads to 10.0.0.2 (100% of bytes) were held by the peer's receive window (80.5 KB): their windows allowed about 6.1 Mbit/s each at their 105.0 ms RTT; the path has shown at least 21.2 Mbit/s (the flows together), 5.3 Mbit/s each with 4 at once, no more than they ran: what a bigger window would buy is not known from these flows"
    );
}

#[test]
fn four_windowed_downloads_name_their_so_rcvbuf() {
    // The same from the receiving end: iperf3 -w 64K sets SO_RCVBUF (the
    // kernel doubles it to 131,072 B); the bursts show the 35 Mbit/s link.
    let d = |rate, shown_bps| F {
        side: Side::Receiver,
        rcvbuf: 131_072,
        rcvbuf_locked: true,
        shown_bps,
        window: Some((
            80_480,
            Bounds {
                shift: Some(7),
                own: true,
                path_bps: shown_bps,
                ..Bounds::default()
            },
        )),
        ..w64k(rate)
    };
    let four = |rate, shown| {
        [
            d(rate, shown),
            d(rate, shown),
            d(rate, shown),
            d(rate, shown),
        ]
    };
    let g = only_group(&four(5.3e6, 35e6));
    assert_eq!((g.limit, g.rule), (Limit::PerFlow, "own_limits"));
    // 35 Mbit/s x 105 ms = 459,375 B, what one flow needs alone;
    // 131,072 x 459,375 / 80,480 = 748,151 B of SO_RCVBUF. The four at
    // once share the 35 Mbit/s: 8.75 each, 8.75 / 5.3 = 1.65x (not
    // 35 / 5.3 = 6.6x).
    let w = &g.what_if[0];
    assert!((w.needed_bytes.unwrap() - 459_375.0).abs() < 1.0);
    assert!((w.speedup.unwrap() - 8.75 / 5.3).abs() < 1e-9);
    assert_eq!(
        w.summary,
        "4 of 4 downloads from 10.0.0.2 (100% of bytes) were held by an SO_RCVBUF the application set (131.1 KB): their windows allowed about 6.1 Mbit/s each at their 105.0 ms RTT while the path has shown 35.0 Mbit/s; an SO_RCVBUF of 748.2 KB would let each reach the path's rate alone, and the 4 at once share it, about 8.8 Mbit/s each: 1.7x faster"
    );
    // Just outside: where the path has shown 26.4 Mbit/s, 6.6 each, the
    // four at 5.3 already run at 80% of their share (5.28): no speed-up
    // is promised; at 26.6 shown (5.32) one is.
    let g = only_group(&four(5.3e6, 26.4e6));
    assert_eq!(g.what_if[0].speedup, None);
    assert!(
        g.what_if[0]
            .summary
            .contains("6.6 Mbit/s each with 4 at once, no more than they ran"),
        "{}",
        g.what_if[0].summary
    );
    let g = only_group(&four(5.3e6, 26.6e6));
    assert!((g.what_if[0].speedup.unwrap() - 26.6 / 4.0 / 5.3).abs() < 1e-9);
    // The judgement says so too: bigger windows would add rate here.
    assert!(
        g.explanation
            .ends_with(": more streams or bigger windows would add rate"),
        "{}",
        g.explanation
    );
}

#[test]
fn downloads_held_by_tcp_rmem_max_one_at_a_time() {
    // Four downloads from one peer, one after another, each with a 3 MB
    // window at 110 ms (218.2 Mbit/s) behind a 6 MB tcp_rmem max, bursts
    // at 800 Mbit/s; a fifth not judged.
    let d = |start_s| F {
        remote: v4(203, 0, 113, 5),
        side: Side::Receiver,
        verdict: Verdict::ReceiveWindow,
        rule: "receive_window",
        rate_bps: 218e6,
        start_s,
        min_rtt_us: 110_000,
        srtt_us: 110_000,
        shown_bps: 800e6,
        window: Some((
            3_000_000,
            Bounds {
                shift: Some(9),
                own: true,
                path_bps: 800e6,
                ..Bounds::default()
            },
        )),
        ..F::default()
    };
    let fifth = F {
        verdict: Verdict::Unknown,
        rule: "rwnd_outran",
        rate_bps: 200e6,
        start_s: 80.0,
        secs: 6.4,
        ..d(0.0)
    };
    let g = only_group(&[d(0.0), d(20.0), d(40.0), d(60.0), fifth]);
    assert_eq!((g.limit, g.rule), (Limit::Unknown, "not_concurrent"));
    assert_eq!(g.concurrent, 1);
    // 1.09 GB of 1.25 GB; 800 Mbit/s x 110 ms = 11 MB of window, and the
    // buffer scales with it: 6,291,456 x 11 / 3 = 23.07 MB; 800 / 218.
    assert_eq!(
        g.what_if[0].summary,
        "4 of 5 downloads from 203.0.113.5 (87% of bytes) were held by this host's tcp_rmem max (6.29 MB): their windows allowed about 218.2 Mbit/s each at their 110.0 ms RTT while the path has shown 800.0 Mbit/s; a 23.07 MB max would let them reach the path's rate, about 3.7x faster"
    );
    assert_eq!(g.verdicts.get("unknown"), Some(&160_000_000));
    assert_eq!(g.verdicts.get("receive_window"), Some(&1_090_000_000));
}

/// A download behind a per-flow policer: the receiving end reads the
/// drops as loss holding the sender's window (a 50 Mbit/s link in bursts).
fn policed(rate: f64) -> F {
    F {
        side: Side::Receiver,
        verdict: Verdict::CongestionWindow,
        rule: "loss_held",
        rate_bps: rate,
        min_rtt_us: 40_000,
        srtt_us: 40_500,
        shown_bps: 50e6,
        ooo: 30,
        ..F::default()
    }
}

#[test]
fn four_policed_downloads_are_per_flow() {
    let g = only_group(&[
        policed(4.8e6),
        policed(4.9e6),
        policed(4.7e6),
        policed(4.8e6),
    ]);
    assert_eq!((g.limit, g.rule), (Limit::PerFlow, "own_limits"));
    assert_eq!(
        g.explanation,
        "per-flow limit: 4 flows each held by its own limit (the sender's congestion window) together ran 19.2 Mbit/s, 3.9 times the fastest alone (4.9 Mbit/s); the path has shown 50.0 Mbit/s: more streams would add rate"
    );
    assert_eq!(
        g.what_if[0].summary,
        "4 of 4 downloads from 10.0.0.2 (100% of bytes) were held by the sender's congestion window (4.8 Mbit/s each on average, 120 out-of-order arrivals): raising the window would not help; more streams would each bring their own (together the flows ran 19.2 Mbit/s)"
    );
    // From the sending end the same drops are a policer's.
    let up = |rate| F {
        verdict: Verdict::Path,
        rule: "drops_without_queue",
        rate_bps: rate,
        shown_bps: 5.1e6,
        retransmits: 40,
        ..F::default()
    };
    let g = only_group(&[up(4.8e6), up(4.9e6), up(4.7e6), up(4.8e6)]);
    assert_eq!((g.limit, g.rule), (Limit::PerFlow, "own_limits"));
    assert_eq!(g.what_if[0].knob, "policer");
    assert!(g.what_if[0].summary.contains(
        "were held by a rate limit that drops without a queue (a policer), about 4.8 Mbit/s each: a bigger window would not help"
    ), "{}", g.what_if[0].summary);
}

#[test]
fn own_limits_that_fill_what_the_path_showed_are_shared() {
    // Four policed downloads at 8.1 Mbit/s: 32.4 of the 40 Mbit/s the
    // bursts showed, over 80% (group_fills_path).
    let at = |rate| F {
        shown_bps: 40e6,
        ..policed(rate)
    };
    let g = only_group(&[at(8.1e6), at(8.1e6), at(8.1e6), at(8.1e6)]);
    assert_eq!((g.limit, g.rule), (Limit::Shared, "fills_path"));
    assert!(
        g.explanation
            .contains("together they ran 32.4 Mbit/s, 81% of the 40.0 Mbit/s the path has shown"),
        "{}",
        g.explanation
    );
    // At 7.9 Mbit/s each, 79%: per flow.
    let g = only_group(&[at(7.9e6), at(7.9e6), at(7.9e6), at(7.9e6)]);
    assert_eq!((g.limit, g.rule), (Limit::PerFlow, "own_limits"));
    // A sum equal to what the path has shown (two downloads through one
    // shaper show its rate only together) fills it: shared, not per flow.
    let both = |rate| F {
        shown_bps: 50e6,
        ..policed(rate)
    };
    let g = only_group(&[both(25e6), both(25e6)]);
    assert_eq!(
        (g.limit, g.rule),
        (Limit::Shared, "fills_path"),
        "{}",
        g.explanation
    );
    let g = only_group(&[both(26e6), both(26e6)]);
    assert_eq!(
        (g.limit, g.rule),
        (Limit::Shared, "fills_path"),
        "{}",
        g.explanation
    );
}

#[test]
fn a_sum_little_above_the_fastest_shows_no_gain() {
    // 5.0 + 2.4 = 7.4 Mbit/s, under 1.5 x 5.0 (group_gain).
    let g = only_group(&[w64k(5.0e6), w64k(2.4e6)]);
    assert_eq!((g.limit, g.rule), (Limit::Unknown, "no_gain"));
    assert!(
        g.explanation
            .contains("together they ran 7.4 Mbit/s, 1.5 times the fastest alone (5.0 Mbit/s)"),
        "{}",
        g.explanation
    );
    // 5.0 + 2.6 = 7.6: over it.
    let g = only_group(&[w64k(5.0e6), w64k(2.6e6)]);
    assert_eq!((g.limit, g.rule), (Limit::PerFlow, "own_limits"));
}

#[test]
fn two_processes_one_reading_slowly_are_mixed() {
    let slow = F {
        side: Side::Receiver,
        verdict: Verdict::ReceiverApplication,
        rule: "reader",
        rate_bps: 2e6,
        pid: 100,
        comm: "slowread",
        ..F::default()
    };
    let fast = F {
        side: Side::Receiver,
        verdict: Verdict::Path,
        rule: "even_arrival",
        rate_bps: 3e6,
        srtt_us: 104_000,
        pid: 200,
        comm: "fastread",
        ..F::default()
    };
    let g = only_group(&[slow, fast]);
    assert_eq!((g.limit, g.rule), (Limit::Mixed, "own_and_path"));
    assert_eq!(
        g.explanation,
        "mixed: 40% of the judged bytes held by limits of their own (this host's reader: 1 flow of slowread (pid 100)), 60% at the path's bottleneck (1 flow of fastread (pid 200))"
    );
    assert_eq!(g.what_if.len(), 2);
    assert_eq!(g.what_if[0].knob, "path");
    assert_eq!(
        g.what_if[1].summary,
        "1 of 2 downloads from 10.0.0.2 (40% of bytes) were held by this host's reader, slowread (pid 100): a faster reader would help, a bigger window would not"
    );
    // 15% held by the reader: the path's 85% decides (group_dominant_share).
    let g = only_group(&[
        F {
            rate_bps: 1.5e6,
            ..slow
        },
        F {
            rate_bps: 8.5e6,
            ..fast
        },
    ]);
    assert_eq!((g.limit, g.rule), (Limit::Shared, "one_bottleneck"));
    // By process, each is its own group with its own answer.
    let g = judge_all(&[slow, fast], GroupBy::Process);
    let limits: Vec<(&str, Limit)> = g.iter().map(|g| (g.key.as_str(), g.limit)).collect();
    assert_eq!(
        limits,
        [
            ("fastread (pid 200)", Limit::Shared),
            ("slowread (pid 100)", Limit::PerFlow)
        ]
    );
}

#[test]
fn too_little_and_just_enough() {
    // 30,000 B: under min_bytes (32 KiB).
    let g = only_group(&[F {
        rate_bps: 24_000.0,
        ..F::default()
    }]);
    assert_eq!((g.limit, g.rule), (Limit::Unknown, "too_little"));
    assert_eq!(
        g.explanation,
        "unknown: too little to say: 1 flow moved 30.0 KB, 1 judged"
    );
    // 40,000 B: judged by its own verdict.
    let g = only_group(&[F {
        rate_bps: 32_000.0,
        ..F::default()
    }]);
    assert_eq!((g.limit, g.rule), (Limit::Shared, "one_flow"));
    // Nothing judged.
    let g = only_group(&[F {
        verdict: Verdict::Unknown,
        ..F::default()
    }]);
    assert_eq!((g.limit, g.rule), (Limit::Unknown, "too_little"));
}

#[test]
fn loss_at_the_groups_own_bottleneck_is_shared() {
    // Two curl downloads through one emulated 35 Mbit/s path, one at
    // --limit-rate 1M: the faster reads `path` over a standing queue with
    // 8,506 out-of-order arrivals, the slower `congestion_window` (3,611):
    // the same queue overflowing cut both.
    let path = |ooo| F {
        ooo,
        ..at_bottleneck(19.3e6, 68_000)
    };
    let held = |ooo| F {
        verdict: Verdict::CongestionWindow,
        rule: "loss_held",
        ooo,
        ..at_bottleneck(9.8e6, 12_000)
    };
    let g = only_group(&[path(8_506), held(3_611)]);
    assert_eq!((g.limit, g.rule), (Limit::Shared, "one_bottleneck"));
    assert_eq!(g.what_if.len(), 1);
    assert_eq!(g.what_if[0].knob, "path");
    assert_eq!(g.what_if[0].flows, 2);
    // Its verdict still counts its bytes as its own.
    assert_eq!(g.verdicts.get("congestion_window"), Some(&12_250_000));
    // The path's flow lost nothing: the loss is the flow's own.
    let g = only_group(&[path(0), held(3_611)]);
    assert_eq!((g.limit, g.rule), (Limit::Mixed, "own_and_path"));
    // Nor does a flow that lost nothing join.
    let g = only_group(&[path(8_506), held(0)]);
    assert_eq!((g.limit, g.rule), (Limit::Mixed, "own_and_path"));
    // Nor a path flow's loss without a standing queue.
    let g = only_group(&[
        F {
            srtt_us: 41_000,
            ..path(8_506)
        },
        held(3_611),
    ]);
    assert_eq!((g.limit, g.rule), (Limit::Mixed, "own_and_path"));
}

#[test]
fn uploads_held_by_the_peer_s_readers_ask_for_no_window() {
    // Two uploads to curl --limit-rate 300k and 400k readers: the peer
    // offered 73.5 KB on average, 1.0 KB at the end, of the 474.1 KB it
    // had offered (a real run over 35 Mbit/s, 104 ms).
    let read = |rate| F {
        rule: "peer_reader",
        window: Some((
            73_500,
            Bounds {
                shift: Some(7),
                peer: Some(PeerWindow {
                    full_share: 0.9,
                    min_rtt_us: 104_000,
                    now_bytes: 1_000,
                    max_bytes: 474_100,
                }),
                ..Bounds::default()
            },
        )),
        shown_bps: 27.3e6,
        ..w64k(rate)
    };
    let g = only_group(&[read(2.9e6), read(3.9e6)]);
    assert_eq!((g.limit, g.rule), (Limit::PerFlow, "own_limits"));
    assert!(
        g.explanation
            .ends_with("the path has shown 27.3 Mbit/s: more streams would add rate"),
        "{}",
        g.explanation
    );
    assert_eq!(
        g.what_if[0].summary,
        "2 of 2 uploads to 10.0.0.2 (100% of bytes) were held by the peer's receive window (73.5 KB): raising the window would not help: the peer's reader, not its window's size: the peer offered 73.5 KB on average (1.0 KB now), 16% of the 474.1 KB it has offered before: its buffer holds data its application has not read; a larger buffer would fill too"
    );
    assert!(!g.what_if[0].helps);
}

#[test]
fn a_few_compressed_arrivals_do_not_show_the_path() {
    // Four windowed downloads at 5.3 Mbit/s each through 35 Mbit/s, on a
    // host that handed 5% of their segments over in batches: 1.16 Gbit/s
    // "in bursts" (a new user's run) is not the link, and no 234x or
    // 55x speed-up is promised; the path has shown only their sum.
    let d = |burst_share| F {
        side: Side::Receiver,
        rcvbuf: 131_072,
        rcvbuf_locked: true,
        shown_bps: 1.16e9,
        burst_share,
        window: Some((
            80_480,
            Bounds {
                shift: Some(7),
                own: true,
                ..Bounds::default()
            },
        )),
        ..w64k(5.3e6)
    };
    let four = |share| [d(share), d(share), d(share), d(share)];
    let g = only_group(&four(0.05));
    assert!((g.path_bps - 21.2e6).abs() < 1.0, "{}", g.path_bps);
    assert_eq!(g.what_if[0].speedup, None);
    // Just inside: a fifth of the bytes in bursts shows the path.
    let g = only_group(&four(0.2));
    assert_eq!(g.path_bps, 1.16e9);
}

#[test]
fn a_download_shows_its_burst_rate_from_a_fifth_of_its_bytes() {
    let rx = |burst_share| crate::attribution::evidence::Receive {
        burst_rate_bps: 35e6,
        burst_share,
        ..Default::default()
    };
    assert_eq!(rx(0.2).shown_bps(0.2), 35e6);
    assert_eq!(rx(0.19).shown_bps(0.2), 0.0);
    let cfg = crate::attribution::Config::default();
    assert_eq!(rx(1.0).shown_bps(cfg.shown_burst_share), 35e6);
}
