//! The receiver's reader rule where the window stays open: a reader that
//! lags the network by more than a round trip (issue 14's slow reader).

use super::fixtures::*;
use crate::attribution::*;

/// Issue 14's reader, from its own host: it takes 64 KB every 20 ms
/// (25.6 Mbit/s) from a 100 Mbit/s path with 25 ms each way, leaving
/// about 200 KB unread against a 230 KB window that never shuts; the
/// sender lets each reopened window out in a burst (55% of the bytes, at
/// 124 Mbit/s).
fn slow_reader(unread: u32) -> R {
    R {
        rcv_wnd: 230_000,
        rtt_us: 50_000,
        min_rtt_us: 50_000,
        unread,
        burst_bytes: 3_520_000,
        burst_ns: 227_000_000,
        data_segs: 4_400,
        ..R::default()
    }
}

#[test]
fn a_reader_that_keeps_more_waiting_than_in_flight_is_the_limit() {
    // In flight: 25.6 Mbit/s x 50 ms = 160 KB; 200 KB wait unread.
    let a = judge(25.6e6, slow_reader(200_000));
    assert_eq!(a.verdict, Verdict::ReceiverApplication, "{}", a.explanation);
    assert!(
        a.explanation.starts_with(
            "receiver application: this host's reader leaves 200.0 KB unread on average"
        ),
        "{}",
        a.explanation
    );
    // Less waiting than in flight, and a reader that catches up many
    // times a round trip: the bursts are the sender's.
    let b = judge(25.6e6, slow_reader(120_000));
    assert_eq!(b.verdict, Verdict::Sender, "{}", b.explanation);
}

#[test]
fn a_reader_that_never_catches_up_is_the_limit_however_little_waits() {
    // The same reader where the sender's bursts leave less waiting: 103 KB
    // (45% of the window, under the 160 KB in flight; a CI run of the
    // root test `reader`), but the reader read all that was waiting only twice in
    // the 40 round trips of the 2 s interval.
    let a = judge(
        25.6e6,
        R {
            drains: 2,
            ..slow_reader(103_000)
        },
    );
    assert_eq!(a.verdict, Verdict::ReceiverApplication, "{}", a.explanation);
    assert!(
        a.explanation.contains(
            "leaves 103.0 KB unread on average and read all that was waiting twice in 40 round trips;"
        ),
        "{}",
        a.explanation
    );
    // Not the reader (unread, catch-ups, path RTT in µs):
    for (unread, drains, rtt_us, why) in [
        (
            103_000,
            11,
            50_000,
            "eleven catch-ups are one in 3.6 round trips: a reader that keeps up now and then",
        ),
        (
            60_000,
            5,
            50_000,
            "60 KB is 19 ms behind, under half a round trip, and five catch-ups are one in 8",
        ),
        (
            50_000,
            0,
            50_000,
            "a backlog under a quarter of the window (50 KB of 230 KB)",
        ),
        (
            103_000,
            0,
            250_000,
            "2 s of a 250 ms path: too few round trips to expect a catch-up",
        ),
    ] {
        let r = judge(
            25.6e6,
            R {
                drains,
                rtt_us,
                min_rtt_us: rtt_us,
                ..slow_reader(unread)
            },
        );
        assert_ne!(
            r.verdict,
            Verdict::ReceiverApplication,
            "{why}: {}",
            r.explanation
        );
    }
}

#[test]
fn a_reader_a_round_trip_behind_that_catches_up_once_a_cycle_is_the_limit() {
    // A CI run of the root test `reader` (2026-12-06): the window had grown
    // to 447 KB, 157 KB waited unread (under the 161 KB in flight, 35% of
    // the window: 49 ms behind, about a round trip), and the reader caught
    // up 7 times in the 60 round trips of 3 s, about once in each 8-round
    // ProbeBW cycle of the BBR sender paced at its rate: 5 in the 40
    // round trips of 2 s. 10 catch-ups in 40 (one in 4) still lag; 11 do
    // not (above).
    for (unread, window, drains) in [
        (157_000, 447_000, 5),
        (103_000, 230_000, 10),
        (103_000, 230_000, 5),
    ] {
        let r = judge(
            25.8e6,
            R {
                drains,
                rcv_wnd: window,
                ..slow_reader(unread)
            },
        );
        assert_eq!(
            r.verdict,
            Verdict::ReceiverApplication,
            "{unread} B unread, {drains} catch-ups: {}",
            r.explanation
        );
    }
}

/// A reader behind a standing queue: 20 Mbit/s through an 80 ms queue on
/// a 20 ms path (a 100 ms round trip, 250 KB in flight), a 380 KB window.
fn behind_a_queue(unread: u32, drains: u32) -> Attribution {
    judge(
        20e6,
        R {
            rcv_wnd: 380_000,
            rtt_us: 100_000,
            min_rtt_us: 20_000,
            drains,
            burst_bytes: 0,
            burst_ns: 0,
            ..slow_reader(unread)
        },
    )
}

#[test]
fn a_readers_lag_behind_a_queue_is_counted_in_round_trips_with_the_queue() {
    // A review's case: the reader wakes every 80 ms and reads all that
    // waits, 100 KB on average (40 ms: two round trips of the path, but
    // under half of the 100 ms the flow's round trip takes), 25 times in
    // 2 s, more than once a round trip: it keeps up, and the queue is
    // the path's. Counted in round trips of the path it read as the
    // reader (25 catch-ups in 100 "rounds").
    let a = behind_a_queue(100_000, 25);
    assert_eq!(a.verdict, Verdict::Path, "{}", a.explanation);
    // Just outside: 130 KB is 52 ms behind, over half a round trip, and
    // five catch-ups in the 20 round trips of 2 s are one in 4: it lags.
    // A sixth is more than one in 4.
    let b = behind_a_queue(130_000, 5);
    assert_eq!(b.verdict, Verdict::ReceiverApplication, "{}", b.explanation);
    assert!(
        b.explanation
            .contains("read all that was waiting 5 times in 20 round trips;"),
        "{}",
        b.explanation
    );
    let c = behind_a_queue(130_000, 6);
    assert_ne!(c.verdict, Verdict::ReceiverApplication, "{}", c.explanation);
}

#[test]
fn unread_above_a_small_flight_but_far_below_the_window_is_not_the_reader() {
    // A LAN download read promptly in 64 KB reads: 30 KB waiting on
    // average, more than the 25 KB in flight at 1 Gbit/s and 0.2 ms, but
    // a hundredth of the 3 MB window.
    let a = judge(
        1e9,
        R {
            rcv_wnd: 3_000_000,
            rtt_us: 200,
            min_rtt_us: 200,
            unread: 30_000,
            ..R::default()
        },
    );
    assert_ne!(a.verdict, Verdict::ReceiverApplication, "{}", a.explanation);
}

#[test]
fn a_lan_readers_catch_ups_are_quoted_in_rounds_of_the_grain() {
    // apt with `Dl-Limit=3000` (2026-12-06): 25.8 Mbit/s from a mirror
    // 264 µs away, the window closed 76% of the time. Its catch-ups are
    // counted in jiffies (4 ms), not in the 7,600 round trips of 2 s.
    let a = judge(
        25.8e6,
        R {
            rcv_wnd: 686_000,
            rtt_us: 264,
            min_rtt_us: 264,
            unread: 1_000_000,
            drains: 34,
            closed_ms: 1_520,
            ..R::default()
        },
    );
    assert_eq!(a.verdict, Verdict::ReceiverApplication, "{}", a.explanation);
    assert!(
        a.explanation.contains(
            "read all that was waiting 34 times in 500 rounds of 4.0 ms (the sampling grain; a round trip takes 264 µs); the window was closed 76% of the time"
        ),
        "{}",
        a.explanation
    );
}
