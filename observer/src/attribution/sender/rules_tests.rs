//! Each sender rule on its own: it finds on its shape and stays silent just
//! outside it (the rules before any window's, in `early_rules_tests.rs`) (the shapes are intervals' evidence built by hand; the whole
//! table's order is tested on real shapes in `real_world_tests.rs` and the
//! recorded suite's golden file).

use super::{
    context::SenderCtx,
    rules::{Reason, SENDER_RULES},
};
use crate::{
    attribution::{
        config::Config,
        evidence::{Ceilings, Evidence, Shares},
        verdict::Verdict,
    },
    model::flow::Flow,
    testkit::sample::SampleBuilder,
};

/// One second busy throughout, 10 Mbit/s delivered, both windows allowing
/// 100 Mbit/s at srtt = min_rtt = 50 ms, no limited time.
pub(super) fn base() -> Evidence {
    Evidence {
        interval_us: 1_000_000,
        bytes_acked: 1_250_000,
        rate_bps: 10e6,
        shares: Shares {
            other_busy: 1.0,
            ..Shares::default()
        },
        ceilings: Ceilings {
            rwnd_bps: 100e6,
            cwnd_bps: 100e6,
            rcv_wnd_bps: 0.0,
        },
        srtt_us: 50_000,
        min_rtt_us: 50_000,
        snd_wnd: 625_000,
        snd_cwnd: 432,
        mss: 1448,
        ..Evidence::default()
    }
}

/// A flow with a 16 KB send buffer (cubic).
pub(super) fn flow() -> Flow {
    let mut f = SampleBuilder::new(1).flow();
    f.sndbuf = 16_384;
    f.cc = "cubic".to_string();
    f
}

/// `ev` with `share` of its busy time moved from other busy time into
/// `field` of its shares.
pub(super) fn limited(
    mut ev: Evidence,
    field: fn(&mut Shares) -> &mut f64,
    share: f64,
) -> Evidence {
    *field(&mut ev.shares) += share;
    ev.shares.other_busy -= share;
    ev
}

/// `ev` with srtt `srtt_us` over min_rtt 50 ms: a standing queue.
pub(super) fn queued(mut ev: Evidence, srtt_us: u32) -> Evidence {
    ev.srtt_us = srtt_us;
    ev.queue_delay_us = srtt_us - ev.min_rtt_us;
    ev
}

/// What the rule named `name` finds in `ev` for `flow`.
pub(super) fn rule(name: &str, ev: &Evidence, flow: &Flow) -> Option<(Verdict, Reason)> {
    let cfg = Config::default();
    let c = SenderCtx::new(ev, flow, &cfg);
    let r = SENDER_RULES
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no sender rule {name}"));
    (r.judge)(&c).map(|f| (f.verdict, f.reason))
}

pub(super) fn rwnd(ev: Evidence, share: f64) -> Evidence {
    limited(ev, |s| &mut s.rwnd_limited, share)
}

pub(super) fn sndbuf(ev: Evidence, share: f64) -> Evidence {
    limited(ev, |s| &mut s.sndbuf_limited, share)
}

pub(super) fn cwnd(ev: Evidence, share: f64) -> Evidence {
    limited(ev, |s| &mut s.cwnd_limited, share)
}

pub(super) fn nothing_moved(mut ev: Evidence) -> Evidence {
    ev.bytes_acked = 0;
    ev.rate_bps = 0.0;
    ev
}

#[test]
fn buffer_through_queue_is_a_buffer_that_would_allow_twice_the_rate_at_min_rtt() {
    // sndbuf-limited 30% with a 50 ms queue: at min_rtt 50 ms a buffer of
    // 125,001 B allows just over twice the 10 Mbit/s.
    let ev = queued(sndbuf(base(), 0.3), 100_000);
    let mut f = flow();
    f.sndbuf = 125_001;
    assert!(matches!(
        rule("buffer_through_queue", &ev, &f),
        Some((Verdict::Path, Reason::BufferThroughQueue(b))) if (b - 20.00016e6).abs() < 1.0
    ));
    // 125,000 B allows exactly twice: the buffer is not full only through
    // the queue.
    f.sndbuf = 125_000;
    assert_eq!(rule("buffer_through_queue", &ev, &f), None);
    // No queue: silent however large the buffer.
    f.sndbuf = 4_000_000;
    assert_eq!(rule("buffer_through_queue", &sndbuf(base(), 0.3), &f), None);
}

#[test]
fn send_buffer_is_a_significant_sndbuf_limited_share() {
    let f = flow();
    assert_eq!(
        rule("send_buffer", &sndbuf(base(), 0.2), &f),
        Some((Verdict::SendBuffer, Reason::SendBuffer))
    );
    assert_eq!(rule("send_buffer", &sndbuf(base(), 0.19), &f), None);
    // No less than rwnd-limited.
    let both = rwnd(sndbuf(base(), 0.3), 0.31);
    assert_eq!(rule("send_buffer", &both, &f), None);
    // Less than cwnd-limited at a full bottleneck (a queue and loss): more
    // buffer would add queue.
    let mut full = queued(cwnd(sndbuf(base(), 0.3), 0.4), 100_000);
    full.retransmits = 3;
    assert_eq!(rule("send_buffer", &full, &f), None);
    full.retransmits = 0;
    full.delivery_rate_max_bps = 100_000_000;
    assert!(rule("send_buffer", &full, &f).is_some());
}

#[test]
fn peer_reader_is_a_peer_window_under_its_share_of_the_largest() {
    let mut f = flow();
    f.snd_wnd = 500_000;
    f.snd_wnd_max = 1_000_000;
    // 500 KB at srtt 50 ms allows 80 Mbit/s; a ceiling of 40 Mbit/s (4 x
    // the rate) is what a window that binds may allow.
    let mut ev = Evidence {
        snd_wnd: 500_000,
        ..base()
    };
    ev.ceilings.rwnd_bps = 40e6;
    assert_eq!(
        rule("peer_reader", &ev, &f),
        Some((Verdict::ReceiveWindow, Reason::PeerReader))
    );
    // 60% of 833,333 B is 499,999.8 B: 500,000 is not under it.
    f.snd_wnd_max = 833_333;
    assert_eq!(rule("peer_reader", &ev, &f), None);
    // Unknown largest window.
    f.snd_wnd_max = 0;
    assert_eq!(rule("peer_reader", &ev, &f), None);
}

#[test]
fn peer_reader_needs_the_window_to_bind() {
    let mut f = flow();
    f.snd_wnd = 500_000;
    f.snd_wnd_max = 1_000_000;
    // A window whose ceiling is over 4 times the rate holds nothing back
    // (a large buffer absorbing its reader's stalls)...
    let mut loose = Evidence {
        snd_wnd: 500_000,
        ..base()
    };
    loose.ceilings.rwnd_bps = 40.1e6;
    assert_eq!(rule("peer_reader", &loose, &f), None);
    // ...unless its clock says it blocked the sender.
    let blocked = rwnd(loose, 0.2);
    assert!(rule("peer_reader", &blocked, &f).is_some());
}

#[test]
fn drops_without_queue_are_steady_clustered_drops_at_a_plateau() {
    // The policer of the suite: 9.4 Mbit/s over 40 ms with 13 of 1,230
    // segments retransmitted (1.06%), cwnd-bound, no queue, at the 11.2
    // Mbit/s the path has shown: isolated losses of that share would let
    // cubic reach 3.4 Mbit/s.
    let f = flow();
    let policed = || {
        let mut ev = cwnd(base(), 1.0);
        ev.interval_us = 1_500_000;
        ev.rate_bps = 9.4e6;
        ev.bytes_acked = 1_762_500;
        ev.srtt_us = 40_800;
        ev.min_rtt_us = 40_000;
        ev.queue_delay_us = 800;
        ev.retransmits = 13;
        ev.delivery_rate_max_bps = 11_200_000;
        ev.ceilings.cwnd_bps = 9.5e6;
        ev
    };
    assert_eq!(
        rule("drops_without_queue", &policed(), &f),
        Some((Verdict::Path, Reason::DropsWithoutQueue))
    );
    // 3.8 Mbit/s with the same 13 drops, 2.6% of 505 segments: 1.72
    // times the 2.2 Mbit/s isolated losses of that share allow.
    let isolated = Evidence {
        rate_bps: 3.8e6,
        bytes_acked: 712_500,
        ceilings: Ceilings {
            cwnd_bps: 3.9e6,
            ..policed().ceilings
        },
        delivery_rate_max_bps: 4_400_000,
        ..policed()
    };
    assert_eq!(rule("drops_without_queue", &isolated, &f), None);
    // Fewer than 0.3% of the segments lost (3 of 1,220): not steady drops.
    let rare = Evidence {
        retransmits: 3,
        ..policed()
    };
    assert_eq!(rule("drops_without_queue", &rare, &f), None);
    // Under 0.7 of the best the path has shown (a slow-start overshoot).
    let below = Evidence {
        delivery_rate_max_bps: 13_500_000,
        ..policed()
    };
    assert_eq!(rule("drops_without_queue", &below, &f), None);
    // A queue stands: a full bottleneck's drops, not a policer's.
    assert_eq!(
        rule("drops_without_queue", &queued(policed(), 60_001), &f),
        None
    );
    // BBR does not set its rate by loss.
    let mut bbr = flow();
    bbr.cc = "bbr".to_string();
    assert_eq!(rule("drops_without_queue", &policed(), &bbr), None);
}

#[test]
fn ramping_is_a_bbr_sender_pacing_well_above_what_it_delivered() {
    let mut f = flow();
    f.cc = "bbr".to_string();
    f.pacing_rate_bps = Some(15_000_000);
    assert_eq!(
        rule("ramping", &base(), &f),
        Some((Verdict::CongestionWindow, Reason::Ramping))
    );
    // 1.49 times the rate: a probing sender at its estimate.
    f.pacing_rate_bps = Some(14_900_000);
    assert_eq!(rule("ramping", &base(), &f), None);
    // A queue standing, or app-limited samples: not a ramp.
    f.pacing_rate_bps = Some(15_000_000);
    assert_eq!(rule("ramping", &queued(base(), 100_000), &f), None);
    let app = Evidence {
        app_limited_share: 0.5,
        ..base()
    };
    assert_eq!(rule("ramping", &app, &f), None);
    assert!(rule("application", &app, &f).is_some());
    // Drops at steady_loss_share (0.3%) show it has met the path's limit:
    // 3 of some 866 segments (0.35%) retransmitted is no ramp; 2 (0.23%)
    // still is.
    let dropping = |retransmits| Evidence {
        retransmits,
        ..base()
    };
    assert_eq!(rule("ramping", &dropping(3), &f), None);
    assert_eq!(
        rule("ramping", &dropping(2), &f),
        Some((Verdict::CongestionWindow, Reason::Ramping))
    );
    // A loss-based sender's pacing rate is no estimate of the path.
    let mut cubic = f.clone();
    cubic.cc = "cubic".to_string();
    assert_eq!(rule("ramping", &base(), &cubic), None);
}

#[test]
fn rwnd_outran_is_a_binding_window_whose_ceiling_the_rate_beat() {
    let f = flow();
    let mut ev = rwnd(base(), 0.3);
    ev.ceilings.rwnd_bps = 7.9e6;
    assert!(matches!(
        rule("rwnd_outran", &ev, &f),
        Some((Verdict::Unknown, Reason::Outran("peer's window", _)))
    ));
    // 10 Mbit/s is within 1.25 x 8 Mbit/s.
    ev.ceilings.rwnd_bps = 8e6;
    assert_eq!(rule("rwnd_outran", &ev, &f), None);
}

#[test]
fn window_through_queue_is_a_binding_window_full_only_through_a_queue() {
    let f = flow();
    // 625 KB at min_rtt 50 ms allows 100 Mbit/s, ten times the rate.
    let ev = queued(rwnd(base(), 0.3), 100_000);
    assert!(matches!(
        rule("window_through_queue", &ev, &f),
        Some((Verdict::Path, Reason::WindowThroughQueue(b))) if (b - 100e6).abs() < 1.0
    ));
    // No queue standing (10 ms is a fifth of 50 ms, not over it).
    assert_eq!(
        rule(
            "window_through_queue",
            &queued(rwnd(base(), 0.3), 60_000),
            &f
        ),
        None
    );
    // A window that allows only 20 Mbit/s at min_rtt: full on its own.
    let small = Evidence {
        snd_wnd: 125_000,
        ..ev
    };
    assert_eq!(rule("window_through_queue", &small, &f), None);
}

#[test]
fn a_queue_is_one_the_path_holds() {
    // srtt 100 ms over min_rtt 50 ms while the flow runs at a tenth of
    // the 100 Mbit/s the path has carried for it, without loss: late
    // window updates from a slow peer reader, not a queue.
    let f = flow();
    let mut stretched = queued(rwnd(base(), 0.3), 100_000);
    stretched.delivery_rate_max_bps = 100_000_000;
    assert_eq!(rule("window_through_queue", &stretched, &f), None);
    assert_eq!(
        rule("receive_window", &stretched, &f),
        Some((Verdict::ReceiveWindow, Reason::ReceiveWindow))
    );
    // At 80% of what the path has shown, the queue is the path's.
    stretched.delivery_rate_max_bps = 12_500_000;
    assert!(rule("window_through_queue", &stretched, &f).is_some());
}

#[test]
fn receive_window_is_rwnd_limited_or_at_its_ceiling() {
    let f = flow();
    assert_eq!(
        rule("receive_window", &rwnd(base(), 0.2), &f),
        Some((Verdict::ReceiveWindow, Reason::ReceiveWindow))
    );
    assert_eq!(rule("receive_window", &rwnd(base(), 0.19), &f), None);
    // At 80% of its ceiling with the cwnd limiting under half: binds.
    let mut at = cwnd(base(), 0.49);
    at.ceilings.rwnd_bps = 12.5e6;
    assert!(rule("receive_window", &at, &f).is_some());
    let mut below = at.clone();
    below.ceilings.rwnd_bps = 12.6e6;
    assert_eq!(rule("receive_window", &below, &f), None);
    // At the ceiling but cwnd-limited half the time: the cwnd's.
    let mut cwnd_half = cwnd(base(), 0.5);
    cwnd_half.ceilings.rwnd_bps = 12.5e6;
    assert_eq!(rule("receive_window", &cwnd_half, &f), None);
}

#[test]
fn full_bottleneck_is_a_binding_cwnd_at_a_full_queue() {
    let f = flow();
    let mut ev = queued(cwnd(base(), 0.5), 100_000);
    ev.retransmits = 1;
    assert_eq!(
        rule("full_bottleneck", &ev, &f),
        Some((Verdict::Path, Reason::FullBottleneck))
    );
    // Without loss, at a tenth of the best rate the path has shown: the
    // queue is the flow's own bursts'.
    ev.retransmits = 0;
    ev.delivery_rate_max_bps = 100_000_000;
    assert_eq!(rule("full_bottleneck", &ev, &f), None);
    // At 80% of it: full.
    ev.delivery_rate_max_bps = 12_500_000;
    assert!(rule("full_bottleneck", &ev, &f).is_some());
    // cwnd-limited under half, far below its ceiling: the cwnd does not bind.
    let mut loose = queued(cwnd(base(), 0.49), 100_000);
    loose.retransmits = 1;
    assert_eq!(rule("full_bottleneck", &loose, &f), None);
}

#[test]
fn cwnd_outran_is_a_binding_cwnd_whose_ceiling_the_rate_beat() {
    let f = flow();
    let mut ev = cwnd(base(), 0.6);
    ev.ceilings.cwnd_bps = 7.9e6;
    assert!(matches!(
        rule("cwnd_outran", &ev, &f),
        Some((Verdict::Unknown, Reason::Outran("congestion window", _)))
    ));
    ev.ceilings.cwnd_bps = 8e6;
    assert_eq!(rule("cwnd_outran", &ev, &f), None);
}

#[test]
fn congestion_window_is_cwnd_limited_half_the_time_or_at_its_ceiling() {
    let f = flow();
    assert_eq!(
        rule("congestion_window", &cwnd(base(), 0.5), &f),
        Some((Verdict::CongestionWindow, Reason::CongestionWindow))
    );
    assert_eq!(rule("congestion_window", &cwnd(base(), 0.49), &f), None);
    let mut at = base();
    at.ceilings.cwnd_bps = 12.5e6;
    assert!(rule("congestion_window", &at, &f).is_some());
    // At its ceiling but app-limited: not the cwnd.
    at.app_limited_share = 0.5;
    assert_eq!(rule("congestion_window", &at, &f), None);
}

#[test]
fn application_is_app_limited_samples_or_far_below_the_windows() {
    let f = flow();
    // 10 Mbit/s against 100: under 35%.
    assert_eq!(
        rule("application", &base(), &f),
        Some((Verdict::Application, Reason::Application))
    );
    let mut near = base();
    near.ceilings.rwnd_bps = 10e6 / 0.35;
    near.ceilings.cwnd_bps = 10e6 / 0.35;
    assert_eq!(rule("application", &near, &f), None);
    near.app_limited_share = 0.5;
    assert!(rule("application", &near, &f).is_some());
    // BBR marks its own samples app-limited, and its cwnd is twice its
    // estimate: neither says anything of its application.
    let mut bbr = flow();
    bbr.cc = "bbr".to_string();
    assert_eq!(rule("application", &near, &bbr), None);
    assert_eq!(rule("application", &base(), &bbr), None);
}

#[test]
fn probes_meet_window_is_a_little_rwnd_limited_time_above_the_cwnd() {
    let f = flow();
    assert_eq!(
        rule("probes_meet_window", &rwnd(base(), 0.05), &f),
        Some((Verdict::ReceiveWindow, Reason::ProbesMeetWindow))
    );
    assert_eq!(rule("probes_meet_window", &rwnd(base(), 0.049), &f), None);
    assert_eq!(
        rule("probes_meet_window", &cwnd(rwnd(base(), 0.05), 0.05), &f),
        None
    );
}

#[test]
fn pacing_always_finds_and_ends_the_table() {
    let f = flow();
    for ev in [base(), nothing_moved(base()), Evidence::default()] {
        assert!(matches!(
            rule("pacing", &ev, &f),
            Some((Verdict::Path, Reason::Pacing))
        ));
    }
    assert_eq!(SENDER_RULES.last().map(|r| r.name), Some("pacing"));
}
