//! The truth of fixed situations, worked by hand (docs/accuracy.md).

use observer::attribution::Verdict;

use crate::space::{Cc, Kind, RcvLimit, Reader, Situation, Stall, Writer};
use crate::truth::{Limit, ceilings, cubic_window, truth};

/// A bulk transfer over `mbit` Mbit/s and `rtt_ms`, a queue of one BDP.
fn path(cc: Cc, mbit: f64, rtt_ms: u64) -> Situation {
    let link_bps = (mbit * 1e6) as u64;
    let queue_bytes = link_bps / 8 * rtt_ms / 1000;
    Situation {
        secs: 10,
        ..Situation::bulk(0, Kind::Link, cc, (rtt_ms * 1000, link_bps, queue_bytes))
    }
}

fn mbit(x: f64) -> f64 {
    (x / 1e4).round() / 100.0
}

#[test]
fn the_seed_paths_64k_window() {
    // 35 Mbit/s, 104 ms, tcp_rmem max 128 KB: a window of 0.61 x 131072 = 79,954 B.
    let s = Situation {
        rcv: Some(RcvLimit::RmemMax(131_072)),
        ..path(Cc::Cubic, 35.0, 104)
    };
    let t = truth(&s);
    // 79,954 B x 8 / (104 ms + 1500 B at 35 Mbit/s = 0.343 ms) = 6.13 Mbit/s.
    assert_eq!(t.tightest().limit, Limit::Window);
    assert_eq!(mbit(t.tightest().bps), 6.13);
    // 35 Mbit/s x 1448/1500 = 33.79 Mbit/s of payload.
    let next = t.next().unwrap();
    assert_eq!((next.limit, mbit(next.bps)), (Limit::Link, 33.79));
    assert!(t.clear);
    assert_eq!(t.sender, vec![Verdict::ReceiveWindow]);
    assert_eq!(t.receiver, vec![Verdict::ReceiveWindow]);
}

#[test]
fn cubic_loss_takes_the_reno_friendly_region_on_a_short_path() {
    // 1% at 30 ms: CUBIC's own mean window is 2.41 segments, the
    // Reno-friendly one sqrt(3/(2p)) = 12.25: the larger holds.
    assert_eq!((cubic_window(0.01, 0.03012) * 100.0).round() / 100.0, 12.25);
    // At 0.01% and 300 ms CUBIC's own region is larger: 427.2 against 122.5.
    assert_eq!(cubic_window(0.0001, 0.3).round(), 427.0);
    let s = Situation {
        loss_fwd: 0.01,
        kind: Kind::Loss,
        ..path(Cc::Cubic, 100.0, 30)
    };
    let t = truth(&s);
    // 12.25 x 1448 B x 8 / 30.12 ms = 4.71 Mbit/s.
    assert_eq!(
        (t.tightest().limit, mbit(t.tightest().bps)),
        (Limit::Loss, 4.71)
    );
    assert!(t.clear);
    assert_eq!(t.sender, vec![Verdict::CongestionWindow]);
    // BBR sets no loss ceiling: the link binds.
    let t = truth(&Situation {
        cc: Cc::Bbr,
        ..s.clone()
    });
    assert_eq!(t.tightest().limit, Limit::Link);
    // Nor does loss of ACKs.
    let t = truth(&Situation {
        loss_fwd: 0.0,
        loss_rev: 0.01,
        ..s
    });
    assert_eq!(t.tightest().limit, Limit::Link);
}

#[test]
fn a_chunked_reader_is_the_readers_at_the_receiver_and_the_window_at_the_sender() {
    let s = Situation {
        reader: Reader::Chunks {
            bytes: 65_536,
            period_ms: 20,
        },
        ..path(Cc::Bbr, 100.0, 50)
    };
    let t = truth(&s);
    // 64 KB every 20 ms = 26.21 Mbit/s, under half of 96.53.
    assert_eq!(
        (t.tightest().limit, mbit(t.tightest().bps)),
        (Limit::Reader, 26.21)
    );
    assert!(t.clear);
    assert_eq!(t.sender, vec![Verdict::ReceiveWindow]);
    assert_eq!(t.receiver, vec![Verdict::ReceiverApplication]);
}

#[test]
fn matched_limits_accept_either() {
    // A writer paced at 30 Mbit/s over 33.79 of goodput: matched.
    let s = Situation {
        writer: Writer::Paced { bps: 30_000_000 },
        ..path(Cc::Cubic, 35.0, 40)
    };
    let t = truth(&s);
    assert!(!t.clear);
    assert_eq!(t.sender, vec![Verdict::Application, Verdict::Path]);
    assert_eq!(t.receiver, vec![Verdict::Sender, Verdict::Path]);
    // Just under half: clear.
    let s = Situation {
        writer: Writer::Paced { bps: 16_800_000 },
        ..s
    };
    assert!(truth(&s).clear);
    let s = Situation {
        writer: Writer::Paced { bps: 17_000_000 },
        ..s
    };
    assert!(!truth(&s).clear);
}

#[test]
fn slow_start_of_short_transfers() {
    // 300 KB: 208 segments in 10+20+40+80+58: 5 rounds; a queue of one
    // BDP drops nothing.
    let s = Situation {
        writer: Writer::Short { bytes: 300_000 },
        kind: Kind::Rounds,
        ..path(Cc::Cubic, 100.0, 80)
    };
    let t = truth(&s);
    // 300 KB x 8 over 6 round trips of 80 ms (one for the handshake) and
    // 24.9 ms through the link = 4.75 Mbit/s.
    assert_eq!(
        (t.tightest().limit, mbit(t.tightest().bps)),
        (Limit::SlowStart, 4.75)
    );
    assert_eq!(t.sender, vec![Verdict::CongestionWindow]);
    assert_eq!(t.receiver, vec![Verdict::CongestionWindow]);
}

#[test]
fn requests_one_at_a_time() {
    // 128 KB objects (91 segments) at 50 ms over 50 Mbit/s and a queue
    // of one BDP: the first takes slow start's 4 rounds (10, 20, 40, 21),
    // the second 2 (80, 11), each other a round trip, and each 21.8 ms
    // through the link; 137 objects of 1,048,576 bits in 10.04 s = 14.31
    // Mbit/s, under half the link's.
    let s = Situation {
        writer: Writer::Requests { bytes: 131_072 },
        ..path(Cc::Cubic, 50.0, 50)
    };
    let t = truth(&s);
    assert_eq!(
        (t.tightest().limit, mbit(t.tightest().bps)),
        (Limit::Requests, 14.31)
    );
    assert!(t.clear);
    assert_eq!(t.sender, vec![Verdict::Application]);
    assert_eq!(t.receiver, vec![Verdict::ReceiverApplication]);
}

#[test]
fn a_black_hole_is_the_path_and_the_host_is_unscored() {
    let s = Situation {
        stall: Some(Stall::BlackHole { bytes: 1300 }),
        ..path(Cc::Bbr, 20.0, 30)
    };
    let t = truth(&s);
    assert_eq!(
        (t.tightest().limit, t.tightest().bps),
        (Limit::BlackHole, 0.0)
    );
    assert_eq!(t.sender, vec![Verdict::Path]);
    // A LAN with nothing at its ends: the host binds, and no verdict is defined.
    let lan = Situation {
        rtt_us: 0,
        link_bps: 0,
        queue_bytes: 0,
        kind: Kind::Lan,
        ..path(Cc::Bbr, 1.0, 1)
    };
    let t = truth(&lan);
    assert_eq!(t.tightest().limit, Limit::Host);
    assert!(!t.scorable());
}

#[test]
fn the_default_send_buffer_and_slow_start_bind_a_long_fat_path() {
    // 4 MB of BDP (80 Mbit/s x 400 ms): 4 MB of tcp_wmem lets 0.74 x 4 MB
    // = 3.10 MB fly, 24.83 Mbit / 400.15 ms = 62.05 Mbit/s, under the
    // default tcp_rmem's 0.61 x 6 MB window (76.73) and the link (77.23).
    let s = Situation {
        secs: 20,
        ..path(Cc::Bbr, 80.0, 400)
    };
    let c = ceilings(&s);
    let of = |l| c.iter().find(|c| c.limit == l).map(|c| mbit(c.bps));
    assert_eq!(of(Limit::DefaultSendBuffer), Some(62.05));
    assert_eq!(of(Limit::DefaultWindow), Some(76.73));
    // Slow start to the link's 77.23 Mbit/s (2,667 packets a round trip)
    // takes 9 rounds, 3.6 s, and carries about 1.4 rounds' worth: over
    // 20 s the flow averages 66.29, within a factor 2 of the buffer's.
    assert_eq!(of(Limit::SlowStart), Some(66.29));
    let t = truth(&s);
    assert_eq!(t.tightest().limit, Limit::DefaultSendBuffer);
    assert!(!t.clear);
    assert_eq!(
        t.sender,
        vec![Verdict::SendBuffer, Verdict::CongestionWindow]
    );
    assert_eq!(t.receiver, vec![Verdict::Sender, Verdict::CongestionWindow]);
}

#[test]
fn a_shallow_queue_keeps_cubic_under_the_link_and_bbr_not() {
    // 50 Mbit/s, 200 ms, a 0.1-BDP queue, 10 s: slow start averages
    // 42.98 Mbit/s, and the overflow at 1.1 BDP with CUBIC's 8.8 s climb
    // back (K) takes that to 38.11, against the link's 48.27.
    let s = Situation {
        queue_bytes: 125_000,
        secs: 10,
        ..path(Cc::Cubic, 50.0, 200)
    };
    let t = truth(&s);
    assert_eq!(
        (t.tightest().limit, mbit(t.tightest().bps)),
        (Limit::Queue, 38.11)
    );
    let next = t.next().unwrap();
    assert_eq!((next.limit, mbit(next.bps)), (Limit::SlowStart, 42.98));
    assert_eq!(t.sender, vec![Verdict::Path, Verdict::CongestionWindow]);
    // A queue of 2 BDP keeps the link busy: slow start alone is left.
    let deep = truth(&Situation {
        queue_bytes: 2_500_000,
        ..s.clone()
    });
    assert!(deep.ceilings.iter().all(|c| c.limit != Limit::Queue));
    let bbr = truth(&Situation { cc: Cc::Bbr, ..s });
    assert!(bbr.ceilings.iter().all(|c| c.limit != Limit::Queue));
}

#[test]
fn objects_whose_bursts_overflow_a_shallow_queue_are_held_by_it() {
    // Seed 1 cubic #31's shape: 450 KB objects (312 segments) at 108 ms
    // over 97.6 Mbit/s and a queue of 0.16 BDP (143 packets). Once the
    // window covers an object it leaves as one burst, and the queue
    // drops its tail each time: the queue binds, well under what the
    // requests alone allow.
    let shallow = Situation {
        writer: Writer::Requests { bytes: 450_611 },
        kind: Kind::Rounds,
        queue_bytes: 215_253,
        ..path(Cc::Cubic, 97.6, 108)
    };
    let t = truth(&shallow);
    let limits: Vec<Limit> = t.ceilings.iter().take(2).map(|c| c.limit).collect();
    assert_eq!(limits, vec![Limit::Queue, Limit::Requests]);
    assert!(t.clear, "{:?}", t.ceilings);
    assert_eq!(t.sender, vec![Verdict::Path, Verdict::CongestionWindow]);
    // Just outside: a queue that holds an object's burst drops nothing,
    // and the requests bind.
    let deep = Situation {
        queue_bytes: 312 * 1500,
        ..shallow.clone()
    };
    let t = truth(&deep);
    assert_eq!(t.tightest().limit, Limit::Requests);
    assert!(t.ceilings.iter().all(|c| c.limit != Limit::Queue));
    // BBR paces its bursts: the same queue drops nothing.
    let paced = Situation {
        cc: Cc::Bbr,
        ..shallow
    };
    assert_eq!(truth(&paced).tightest().limit, Limit::Requests);
}
