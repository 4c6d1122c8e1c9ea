//! The receiver's `requests` rule: gaps that wait for this host's own
//! requests, a round trip each, are the receiving application's pattern
//! (it asks for one object at a time), not the sender pausing.

use super::fixtures::*;
use crate::attribution::*;

/// A client fetching 128 KB objects one at a time over a 50 ms path at
/// 20 Mbit/s: in 2 s, 14 gaps of `gap_ms_each` between objects, of which
/// `asked_ms` in gaps where this host had sent its next request; each
/// object arrives in a burst at 100 Mbit/s.
fn fetches(gap_ms_each: u64, gaps: u32, asked_ms: u64) -> R {
    R {
        gap_ms: gap_ms_each * u64::from(gaps),
        gaps,
        gap_asked_ms: asked_ms,
        // A 100-byte request before each object.
        acked: 1 + 100 * u64::from(gaps),
        burst_bytes: 1_800_000,
        burst_ns: 144_000_000,
        data_segs: 2_500,
        ..R::default()
    }
}

#[test]
fn gaps_that_wait_for_this_hosts_requests_are_the_receiving_application() {
    // 14 gaps of 50 ms, every one after a request: 35% of the time.
    let a = judge(20e6, fetches(50, 14, 700));
    assert_eq!(a.verdict, Verdict::ReceiverApplication, "{}", a.explanation);
    assert_eq!(a.rule, "requests");
    // Every gap asked: as sure as the rule's floor allows.
    assert_eq!(a.confidence, 1.0);
    assert_eq!(
        a.explanation,
        "receiver application: this host asks for its data a piece at a time: 35% of the time the sender waited for its next request, 14 gaps of 50.0 ms on average, about one round trip of 50.0 ms; receiving 20.0 Mbit/s (larger requests, or several at once, would help)"
    );
    // Nothing else held it: no second limit.
    assert_eq!(a.also, None);
}

#[test]
fn gaps_mostly_not_asked_stay_the_senders() {
    // 20 gaps of 50 ms (half the time), 490 of their 1000 ms after a
    // request: under half of them.
    let a = judge(20e6, fetches(50, 20, 490));
    assert_eq!(a.rule, "sender_held", "{}", a.explanation);
    // At half, the requests rule decides.
    let a = judge(20e6, fetches(50, 20, 500));
    assert_eq!(a.rule, "requests", "{}", a.explanation);
}

#[test]
fn a_peer_that_takes_its_time_to_answer_is_the_sender() {
    // Each request answered 250 ms later, five round trips: the peer's
    // own time, not the request's way there and back.
    let a = judge(20e6, fetches(250, 4, 1_000));
    assert_eq!(a.verdict, Verdict::Sender, "{}", a.explanation);
    // Two round trips each is still the request's.
    let a = judge(20e6, fetches(100, 7, 700));
    assert_eq!(a.rule, "requests", "{}", a.explanation);
    let a = judge(20e6, fetches(101, 7, 707));
    assert_eq!(a.rule, "sender_held", "{}", a.explanation);
}

#[test]
fn requests_that_fill_too_little_of_the_time_are_not_the_limit() {
    // 7 gaps of 50 ms after a request: 17.5% of the time, under the 20%
    // the sender's pauses must fill (`sender_gap_share`).
    let a = judge(20e6, fetches(50, 7, 350));
    assert_ne!(a.rule, "requests", "{}", a.explanation);
    assert_ne!(a.verdict, Verdict::ReceiverApplication, "{}", a.explanation);
}

#[test]
fn gaps_counted_as_asked_with_nothing_sent_are_no_requests() {
    // Every gap counted as asked, but this host's data acknowledged did
    // not move: there were no requests (a recording from before the
    // kernel told asked gaps apart counts every gap as asked).
    let r = R {
        acked: 1,
        ..fetches(50, 14, 700)
    };
    let a = judge(20e6, r);
    assert_ne!(a.rule, "requests", "{}", a.explanation);
}

#[test]
fn objects_whose_bursts_are_dropped_are_held_by_the_loss() {
    // The same requests with recent, repeated out-of-order arrivals (a
    // shallow queue dropping each object's tail): the loss holds them.
    let r = R {
        ooo: 400,
        ooo_age_s: Some(0.1),
        ..fetches(50, 14, 700)
    };
    let a = judge(20e6, r);
    assert_eq!(a.rule, "loss_held", "{}", a.explanation);
}
