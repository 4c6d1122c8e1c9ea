//! The receiver's reading of a slow link's spacing: arrival gaps that are
//! the link's (or a slow ACK path's) pace of full-sized segments are no
//! pause of the sender, where the path shows itself busy (drops and a
//! queue, or a queue of several gaps), and just outside those shapes the
//! pauses count again.

use super::{
    context::ReceiverCtx,
    rules::Reason,
    rules_tests::{base, flow, queued, rule, rx},
};
use crate::attribution::{config::Config, evidence::Evidence, verdict::Verdict};

/// Two seconds through a 0.6 Mbit/s link: 104 full-sized segments, each
/// after a counted gap of about 19 ms (a 1,500-byte packet's time on the
/// link), silent 99% of the time by the gap counter; loss upstream.
fn slow_link() -> Evidence {
    let mut ev = rx(base(), |r| {
        r.data_segments = 104;
        r.gaps = 100;
        r.gap_share = 0.99;
        r.mean_gap_us = 19_800.0;
        r.ooo_packets = 4;
        r.since_ooo_s = Some(0.5);
        r.in_flight_bytes = 3_750.0;
        r.window_fill = 0.004;
        r.queue_delay_us = 8_000;
        r.rtt_mean_us = 58_000.0;
    });
    ev.bytes_received = 150_000;
    ev.recv_rate_bps = 0.6e6;
    ev
}

#[test]
fn a_slow_links_spacing_of_full_segments_is_not_a_pause() {
    let ev = slow_link();
    for name in ["loss_held", "sender_held"] {
        assert_eq!(rule(name, &ev), None, "{name}");
    }
    assert!(matches!(
        rule("even_arrival", &ev),
        Some((Verdict::Path, Reason::EvenArrival))
    ));
    let cfg = Config::default();
    let f = flow();
    let c = ReceiverCtx::new(&ev, &f, &cfg);
    let text = super::text::explain(Reason::EvenArrival, &c);
    assert!(
        text.contains("after each of 100 gaps of 19.8 ms on average: a slow link's pace"),
        "{text}"
    );
    // Just outside: three segments a gap (a sender's bursts, at 1.74
    // Mbit/s: each 19.8 ms gap three segments' time, over the two the
    // spacing allows) ...
    let mut bursts = rx(ev.clone(), |r| r.data_segments = 300);
    bursts.bytes_received = 300 * 1448;
    bursts.recv_rate_bps = 1.74e6;
    assert!(rule("loss_held", &bursts).is_some());
    // ... or segments under 0.9 of the MSS (a writer's small writes) ...
    let mut small = ev.clone();
    small.bytes_received = 104 * 1300;
    assert!(rule("sender_held", &small).is_some());
    // ... or a path that shows itself neither full nor lossy: a writer
    // that sends a segment's worth every 19 ms has the link's shape.
    // A receiver RTT stretched by the writer's pauses is no witness.
    let app = rx(ev.clone(), |r| r.ooo_packets = 0);
    assert!(rule("sender_held", &app).is_some());
    assert!(rule("sender_held", &queued(app, 20_000)).is_some());
    // A queue under 0.4 of the 19.8 ms mean gap: a sender pacing a small
    // window over the round trip, the link idle between its segments.
    assert!(rule("loss_held", &queued(ev.clone(), 7_919)).is_some());
    assert_eq!(rule("loss_held", &queued(ev, 7_920)), None);
}

/// Six seconds through a 1.3 Mbit/s link (seed 1's cubic/loss #97 of the
/// accuracy harness): a full-sized segment every 9.8 ms on average, so
/// only the spacings that run over the 10 ms a gap must last are counted:
/// 173 gaps of 11.3 ms before 613 segments, silent 32% of the time by the
/// gap counter; drops at the full link's queue.
fn link_near_the_gap_floor() -> Evidence {
    let mut ev = rx(base(), |r| {
        r.data_segments = 613;
        r.gaps = 173;
        r.gap_share = 0.32;
        r.mean_gap_us = 11_250.0;
        r.ooo_packets = 146;
        r.since_ooo_s = Some(0.06);
        r.in_flight_bytes = 1_780.0;
        r.window_fill = 0.02;
        r.queue_delay_us = 9_800;
        r.rtt_mean_us = 12_000.0;
    });
    ev.bytes_received = 886_000;
    ev.recv_rate_bps = 1.18e6;
    ev
}

#[test]
fn a_links_spacing_counted_only_where_it_runs_over_the_gap_floor_is_no_pause() {
    // Three and a half segments a counted gap, but each gap 1.15 of a
    // segment's time at the flow's rate (9.8 ms): the link's spacing.
    let ev = link_near_the_gap_floor();
    for name in ["loss_held", "sender_held"] {
        assert_eq!(rule(name, &ev), None, "{name}");
    }
    assert!(matches!(
        rule("even_arrival", &ev),
        Some((Verdict::Path, Reason::EvenArrival))
    ));
    // Just outside: gaps of over two segments' time (19.6 ms) at that
    // rate are a sender's pauses, its bursts sent between them.
    let paused = rx(ev.clone(), |r| r.mean_gap_us = 19_700.0);
    assert!(rule("loss_held", &paused).is_some());
    let within = rx(ev, |r| r.mean_gap_us = 19_500.0);
    assert_eq!(rule("loss_held", &within), None);
}

/// Six seconds of a download whose ACKs wait on a slow way back (seed 2's
/// cubic/ack_path #20 of the accuracy harness: 15 kbit/s for the ACKs,
/// a 108 ms path): the sender is clocked by the ACKs, a couple of
/// full-sized segments after each, so data arrives evenly at 0.81 Mbit/s,
/// a gap of 26.6 ms (1.86 segments' time) before each pair, with no drop
/// and a queue of 13 gaps in the round trip.
fn slow_ack_path() -> Evidence {
    let mut ev = rx(base(), |r| {
        r.data_segments = 420;
        r.gaps = 210;
        r.gap_share = 0.95;
        r.mean_gap_us = 26_600.0;
        r.ooo_packets = 0;
        r.since_ooo_s = None;
        r.in_flight_bytes = 49_800.0;
        r.window_fill = 0.39;
        r.rcv_wnd_mean = 126_600.0;
        r.base_rtt_us = 137_000;
        r.queue_delay_us = 353_000;
        r.rtt_mean_us = 490_000.0;
    });
    ev.interval_us = 6_000_000;
    ev.bytes_received = 420 * 1448;
    ev.recv_rate_bps = 0.81e6;
    ev
}

#[test]
fn a_queue_of_several_gaps_without_drops_shows_a_pace_not_a_pause() {
    let ev = slow_ack_path();
    assert_eq!(rule("sender_held", &ev), None);
    assert!(matches!(
        rule("even_arrival", &ev),
        Some((Verdict::Path, Reason::EvenArrival))
    ));
    let cfg = Config::default();
    let f = flow();
    let c = ReceiverCtx::new(&ev, &f, &cfg);
    let text = super::text::explain(Reason::EvenArrival, &c);
    assert!(
        text.contains("the pace of a slow link, or of ACKs queued on a slow way back"),
        "{text}"
    );
    // Just outside: a queue under 3 gaps (79.5 ms of 26.6 ms gaps), as
    // a paced writer's pauses make of the RTT samples they fall in.
    let short = rx(ev.clone(), |r| r.queue_delay_us = 79_500);
    assert!(rule("sender_held", &short).is_some());
    let long = rx(ev, |r| r.queue_delay_us = 79_900);
    assert_eq!(rule("sender_held", &long), None);
}
