//! The receiver's reader rule where the window stays open: a reader that
//! lags the network by more than a round trip (issue 14's slow reader).

use super::receiver_kit::*;
use super::*;

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
    // Less waiting than in flight: the bursts are the sender's.
    let b = judge(25.6e6, slow_reader(120_000));
    assert_eq!(b.verdict, Verdict::Sender, "{}", b.explanation);
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
