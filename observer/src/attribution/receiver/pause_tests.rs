//! The receiver's reader rule against the sender's own pauses: where the
//! sender paused with room to send longer than the reader kept the window
//! shut, the flow waited on the sender more, and the reader is not named.

use super::fixtures::*;
use crate::attribution::*;

/// An apt download from this machine's mirror (2026-12-06, the fifth
/// batch's second run, scaled from its 207 ms to 2 s): 2.02 Gbit/s, a
/// 121 KB window with 624 KB unread on average, closed 23% of the time,
/// and the sender silent 33% of it in 20 gaps of 33 ms, of which
/// `shut_ms` with the window shut. The round trip is 186 µs over a 62 µs
/// base.
fn apt(closed_ms: u64, shut_ms: u64) -> R {
    R {
        rcv_wnd: 121_000,
        rtt_us: 186,
        min_rtt_us: 62,
        unread: 624_000,
        drains: 58,
        closed_ms,
        gap_ms: 660,
        gaps: 20,
        gap_shut_ms: shut_ms,
        burst_bytes: 256_000_000,
        burst_ns: 450_000_000,
        data_segs: 20_000,
        ..R::default()
    }
}

#[test]
fn a_sender_that_pauses_with_room_longer_than_the_reader_shuts_is_named() {
    // 40 of the 660 ms of gaps with the window shut: the sender paused
    // with room to send 31% of the time, the reader shut it 23%.
    let a = judge(2.02e9, apt(460, 40));
    assert_eq!(a.verdict, Verdict::Sender, "{}", a.explanation);
    assert_eq!(a.rule, "sender_held");
    // As sure as the sender's share of the two waits: 30.8% of 53.8%.
    assert_eq!(a.confidence, 0.57);
    assert!(
        a.explanation.starts_with(
            "sender: the sender paused 33% of the time (2% of the time with the window shut), without loss, while the window was open 77% of the time"
        ),
        "{}",
        a.explanation
    );
    assert!(
        a.explanation.ends_with(
            "; this host's reader left 624.0 KB unread on average and shut the window 23% of the time, less than the sender's own pauses with room to send (31%); also receiver_application: the reader left the window shut 23% of the time"
        ),
        "{}",
        a.explanation
    );
    // Matched: the reader held the flow a share of its own, and is named.
    let also = a.also.as_ref().expect("the reader is named as well");
    assert_eq!(also.verdict, Verdict::ReceiverApplication);
    assert_eq!(also.share, 0.23);
}

#[test]
fn a_reader_that_shut_the_window_through_the_gaps_is_still_named() {
    // The same figures where the window was shut all through the gaps:
    // the silence is the reader's, and the sender had no room to pause in.
    let a = judge(2.02e9, apt(660, 660));
    assert_eq!(a.verdict, Verdict::ReceiverApplication, "{}", a.explanation);
    assert_eq!(a.rule, "reader");
}

#[test]
fn the_longer_wait_is_named_either_side_of_the_reader_closed_time() {
    // Closed 23%. Pauses with room of 21% (240 ms shut of 660) are less:
    // the reader; of 25% (160 ms shut) more: the sender.
    let under = judge(2.02e9, apt(460, 240));
    assert_eq!(
        under.verdict,
        Verdict::ReceiverApplication,
        "{}",
        under.explanation
    );
    let over = judge(2.02e9, apt(460, 160));
    assert_eq!(over.verdict, Verdict::Sender, "{}", over.explanation);
    // Either way both waits pass `also_share` (20%): the other is named
    // beside, so the pair is the same whichever wait is the longer.
    let also = |a: &Attribution| a.also.as_ref().map(|x| x.verdict);
    assert_eq!(also(&under), Some(Verdict::Sender), "{}", under.explanation);
    assert_eq!(
        also(&over),
        Some(Verdict::ReceiverApplication),
        "{}",
        over.explanation
    );
}

#[test]
fn own_pauses_under_the_sender_gap_share_leave_the_reader_named() {
    // A reader whose window binds with 10% closed, and a sender whose
    // pauses with room fill 18% of the interval: more than the closed
    // time, but under `sender_gap_share` (20%), too little to count.
    let a = judge(
        2.02e9,
        R {
            gap_ms: 360,
            ..apt(200, 0)
        },
    );
    assert_eq!(a.verdict, Verdict::ReceiverApplication, "{}", a.explanation);
    // 18% of pauses is under `also_share` too: nothing named beside.
    assert_eq!(a.also, None, "{}", a.explanation);
    let b = judge(
        2.02e9,
        R {
            gap_ms: 420,
            ..apt(200, 0)
        },
    );
    assert_eq!(b.verdict, Verdict::Sender, "{}", b.explanation);
    // Nor the reader's 10% closed beside the sender.
    assert_eq!(b.also, None, "{}", b.explanation);
}

#[test]
fn gaps_within_a_round_trip_are_not_the_senders_own() {
    // Issue 14's reader (64 KB every 20 ms over 50 ms round trips) with
    // its window open: the sender's 40 ms gaps, 40% of the interval, each
    // end within a round trip of the room the reader made, so none is
    // the sender's own and the reader stays named.
    let reader = R {
        rcv_wnd: 230_000,
        rtt_us: 50_000,
        min_rtt_us: 50_000,
        unread: 200_000,
        gap_ms: 800,
        gaps: 20,
        burst_bytes: 3_520_000,
        burst_ns: 227_000_000,
        data_segs: 4_400,
        ..R::default()
    };
    let a = judge(25.6e6, reader);
    assert_eq!(a.verdict, Verdict::ReceiverApplication, "{}", a.explanation);
    // Gaps of 150 ms (three round trips) with the window open are the
    // sender's for two round trips each: 40% of the interval.
    let b = judge(
        25.6e6,
        R {
            gap_ms: 1_200,
            gaps: 8,
            ..reader
        },
    );
    assert_eq!(b.verdict, Verdict::Sender, "{}", b.explanation);
}

#[test]
fn gaps_in_which_this_host_asked_for_more_are_not_the_senders_own() {
    // The apt figures where this host sent data (its next request) in
    // every gap: a keep-alive client's think time, not the sender's rest.
    let a = judge(
        2.02e9,
        R {
            gap_asked_ms: 660,
            ..apt(460, 40)
        },
    );
    assert_eq!(a.verdict, Verdict::ReceiverApplication, "{}", a.explanation);
    // Asked in half of them: 10% of the interval left, not enough.
    let b = judge(
        2.02e9,
        R {
            gap_asked_ms: 330,
            ..apt(200, 0)
        },
    );
    assert_eq!(b.verdict, Verdict::ReceiverApplication, "{}", b.explanation);
}

#[test]
fn a_rest_that_began_before_the_interval_counts_only_its_part_in_it() {
    // A 3 s rest with the window open ends 0.4 s into a 2 s interval (the
    // kernel counts it whole there); the reader then shuts the window 35%
    // of the interval. Of the rest, 0.4 s is this interval's: 20%, less
    // than the reader's 35%, so the reader is named.
    let end = R {
        closed_ms: 700,
        gap_ms: 3_000,
        gaps: 1,
        ..apt(0, 0)
    };
    let (mut from, to) = interval(2.02e9, end);
    from.flow.last_rx_ns = from.at_ns - 2_600_000_000;
    let a = sender::fixtures::checked(attribute(Some(&from), &to, &Config::default()));
    assert_eq!(a.verdict, Verdict::ReceiverApplication, "{}", a.explanation);
    // Begun 2.0 s before the interval: 1.0 s in it, 50%, more than the
    // reader's 35%: the sender.
    from.flow.last_rx_ns = from.at_ns - 2_000_000_000;
    let b = sender::fixtures::checked(attribute(Some(&from), &to, &Config::default()));
    assert_eq!(b.verdict, Verdict::Sender, "{}", b.explanation);
}
