//! Each sender rule on its own: it finds on its shape and stays silent just
//! outside it (the shapes are intervals' evidence built by hand; the whole
//! table's order is tested on real shapes in `sender_tests.rs` and the
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
fn base() -> Evidence {
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
fn flow() -> Flow {
    let mut f = SampleBuilder::new(1).flow();
    f.sndbuf = 16_384;
    f.cc = "cubic".to_string();
    f
}

/// `ev` with `share` of its busy time moved from other busy time into
/// `field` of its shares.
fn limited(mut ev: Evidence, field: fn(&mut Shares) -> &mut f64, share: f64) -> Evidence {
    *field(&mut ev.shares) += share;
    ev.shares.other_busy -= share;
    ev
}

/// `ev` with srtt `srtt_us` over min_rtt 50 ms: a standing queue.
fn queued(mut ev: Evidence, srtt_us: u32) -> Evidence {
    ev.srtt_us = srtt_us;
    ev.queue_delay_us = srtt_us - ev.min_rtt_us;
    ev
}

/// What the rule named `name` finds in `ev` for `flow`.
fn rule(name: &str, ev: &Evidence, flow: &Flow) -> Option<(Verdict, Reason)> {
    let cfg = Config::default();
    let c = SenderCtx::new(ev, flow, &cfg);
    let r = SENDER_RULES
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no sender rule {name}"));
    (r.judge)(&c).map(|f| (f.verdict, f.reason))
}

fn rwnd(ev: Evidence, share: f64) -> Evidence {
    limited(ev, |s| &mut s.rwnd_limited, share)
}

fn sndbuf(ev: Evidence, share: f64) -> Evidence {
    limited(ev, |s| &mut s.sndbuf_limited, share)
}

fn cwnd(ev: Evidence, share: f64) -> Evidence {
    limited(ev, |s| &mut s.cwnd_limited, share)
}

fn nothing_moved(mut ev: Evidence) -> Evidence {
    ev.bytes_acked = 0;
    ev.rate_bps = 0.0;
    ev
}

#[test]
fn not_observed_is_an_empty_interval() {
    let f = flow();
    let empty = Evidence {
        interval_us: 0,
        ..base()
    };
    assert_eq!(
        rule("not_observed", &empty, &f),
        Some((Verdict::Unknown, Reason::NotObserved))
    );
    let one_us = Evidence {
        interval_us: 1,
        ..base()
    };
    assert_eq!(rule("not_observed", &one_us, &f), None);
}

#[test]
fn shut_window_is_rwnd_limited_with_nothing_delivered() {
    let f = flow();
    let shut = nothing_moved(rwnd(base(), 0.2));
    assert_eq!(
        rule("shut_window", &shut, &f),
        Some((Verdict::ReceiveWindow, Reason::ShutWindow))
    );
    // Under a significant share, or with a byte delivered: silent.
    assert_eq!(
        rule("shut_window", &nothing_moved(rwnd(base(), 0.19)), &f),
        None
    );
    let moved = Evidence {
        bytes_acked: 1,
        ..shut
    };
    assert_eq!(rule("shut_window", &moved, &f), None);
}

#[test]
fn nothing_sent_is_an_interval_without_a_byte() {
    let f = flow();
    assert_eq!(
        rule("nothing_sent", &nothing_moved(base()), &f),
        Some((Verdict::Application, Reason::NothingSent))
    );
    let received = Evidence {
        bytes_received: 1,
        ..nothing_moved(base())
    };
    assert_eq!(rule("nothing_sent", &received, &f), None);
}

#[test]
fn too_little_is_under_min_bytes_or_min_rtts() {
    let f = flow();
    let cfg = Config::default();
    let few = Evidence {
        bytes_acked: cfg.min_bytes - 1,
        ..base()
    };
    assert!(matches!(
        rule("too_little", &few, &f),
        Some((Verdict::Unknown, Reason::TooLittle(r))) if (r - 20.0).abs() < 1e-9
    ));
    let enough = Evidence {
        bytes_acked: cfg.min_bytes,
        ..base()
    };
    assert_eq!(rule("too_little", &enough, &f), None);
    // 3.99 round trips of 50 ms, then 4.
    let short = Evidence {
        interval_us: 199_500,
        ..base()
    };
    assert!(rule("too_little", &short, &f).is_some());
    let four = Evidence {
        interval_us: 200_000,
        ..base()
    };
    assert_eq!(rule("too_little", &four, &f), None);
}

#[test]
fn mostly_idle_is_half_the_interval_idle() {
    let f = flow();
    let idle = |share: f64| {
        let mut ev = base();
        ev.shares.idle = share;
        ev.shares.other_busy = 1.0 - share;
        ev
    };
    assert_eq!(
        rule("mostly_idle", &idle(0.5), &f),
        Some((Verdict::Application, Reason::MostlyIdle))
    );
    assert_eq!(rule("mostly_idle", &idle(0.49), &f), None);
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
    let ev = Evidence {
        snd_wnd: 500_000,
        ..base()
    };
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
    // BBR marks its own samples app-limited.
    let mut bbr = flow();
    bbr.cc = "bbr".to_string();
    assert_eq!(rule("application", &near, &bbr), None);
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

#[test]
fn rule_names_are_unique_snake_case() {
    let mut seen = std::collections::HashSet::new();
    for r in SENDER_RULES {
        assert!(seen.insert(r.name), "{} twice", r.name);
        assert!(
            r.name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
            "{}",
            r.name
        );
        assert!(!r.recognises.is_empty());
    }
}
