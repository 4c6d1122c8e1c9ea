//! The sender rules tried before any window's, each on its own: an
//! empty, idle or stalled interval, too little to judge, and a pacing cap
//! the application set. The shapes and helpers are `rules_tests.rs`'s.

use super::{
    context::SenderCtx,
    rules::Reason,
    rules_tests::{base, flow, nothing_moved, rule, rwnd},
};
use crate::attribution::{config::Config, evidence::Evidence, verdict::Verdict};

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
fn stalled_is_retransmissions_with_next_to_nothing_acked() {
    let mut f = flow();
    f.unacked = 1;
    f.ca_state = 4;
    let cfg = Config::default();
    // A black hole: six seconds, the same full-sized segment sent again
    // at each timeout, nothing acknowledged.
    let dark = Evidence {
        interval_us: 6_000_000,
        retransmits: 4,
        ..nothing_moved(base())
    };
    assert_eq!(
        rule("stalled", &dark, &f),
        Some((Verdict::Path, Reason::Stalled))
    );
    // The table calls it that before `nothing_sent` and `too_little`.
    let c = SenderCtx::new(&dark, &f, &cfg);
    assert_eq!(
        super::rules::first(&c).map(|(name, _)| name),
        Some("stalled")
    );
    // Two retransmissions, or as much acknowledged as min_bytes: not a stall.
    let two = Evidence {
        retransmits: 2,
        ..dark.clone()
    };
    assert_eq!(rule("stalled", &two, &f), None);
    let moving = Evidence {
        bytes_acked: cfg.min_bytes,
        ..dark.clone()
    };
    assert_eq!(rule("stalled", &moving, &f), None);
    // Nothing left waiting (a control connection whose few segments a
    // full queue dropped, then delivered): it sent what it had.
    f.unacked = 0;
    assert_eq!(rule("stalled", &dark, &f), None);
    f.notsent = 1;
    assert!(rule("stalled", &dark, &f).is_some());
    // Retransmitting fast, in Recovery (3), not after a timeout: a slow,
    // lossy flow, not a stall.
    f.ca_state = 3;
    assert_eq!(rule("stalled", &dark, &f), None);
}

#[test]
fn pacing_cap_is_pacing_at_the_applications_cap_and_delivering_near_it() {
    // SO_MAX_PACING_RATE at 10 Mbit/s, the kernel pacing at it, the flow
    // delivering 10 Mbit/s with windows that allow 100.
    let mut f = flow();
    f.max_pacing_rate_bps = Some(10_000_000);
    f.pacing_rate_bps = Some(10_000_000);
    let ev = base();
    assert!(matches!(
        rule("pacing_cap", &ev, &f),
        Some((Verdict::Application, Reason::PacingCap(cap))) if cap == 10e6
    ));
    // Delivering under 80% of the cap: something else holds the flow.
    let slow = Evidence {
        rate_bps: 7.9e6,
        bytes_acked: 987_500,
        ..base()
    };
    assert_eq!(rule("pacing_cap", &slow, &f), None);
    // Pacing under 80% of the cap: the congestion control's own rate.
    f.pacing_rate_bps = Some(7_900_000);
    assert_eq!(rule("pacing_cap", &ev, &f), None);
    // No cap set.
    f.pacing_rate_bps = Some(10_000_000);
    f.max_pacing_rate_bps = None;
    assert_eq!(rule("pacing_cap", &ev, &f), None);
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
