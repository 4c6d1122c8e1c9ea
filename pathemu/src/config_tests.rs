//! Validation of links and path configurations: defaults, builders, and
//! each range on its edge and just outside it.

use super::*;

#[test]
fn bottleneck_puts_rate_on_forward_only() {
    let c = PathConfig::bottleneck(35_000_000, Duration::from_millis(52), 460_000);
    assert_eq!(c.forward.rate_bps, 35_000_000);
    assert_eq!(c.forward.queue_bytes, 460_000);
    assert_eq!(c.reverse.rate_bps, 0);
    assert_eq!(c.forward.delay, c.reverse.delay);
    assert!(c.validate().is_ok());
}

#[test]
fn loss_out_of_range_is_rejected() {
    let c = PathConfig::new(Link::unlimited().loss(1.5), Link::unlimited());
    assert!(matches!(c.validate(), Err(Error::InvalidConfig(_))));
    let c = PathConfig::new(Link::unlimited(), Link::unlimited().loss(f64::NAN));
    assert!(c.validate().is_err());
}

#[test]
fn mtu_defaults_and_range() {
    assert_eq!(PathConfig::default().mtu, 1500);
    assert!(PathConfig::default().mtu(1280).validate().is_ok());
    assert!(PathConfig::default().mtu(9000).validate().is_ok());
    for bad in [0, 575, 9001] {
        let c = PathConfig::default().ipv6(false).mtu(bad);
        assert!(
            matches!(c.validate(), Err(Error::InvalidConfig(_))),
            "{bad}"
        );
    }
    // Below 1280 only without IPv6.
    assert!(PathConfig::default().mtu(576).validate().is_err());
    assert!(
        PathConfig::default()
            .mtu(576)
            .ipv6(false)
            .validate()
            .is_ok()
    );
}

#[test]
fn police_burst_must_hold_a_full_packet() {
    let policed = |burst| Link::unlimited().police(10_000_000, burst);
    let c = PathConfig::new(policed(1500), Link::unlimited());
    assert!(c.validate().is_ok());
    let c = PathConfig::new(Link::unlimited(), policed(1499));
    assert!(matches!(c.validate(), Err(Error::InvalidConfig(_))));
    // Against the configured MTU, not 1500.
    let c = PathConfig::new(policed(1280), Link::unlimited()).mtu(1280);
    assert!(c.validate().is_ok());
    let c = PathConfig::new(policed(1500), Link::unlimited()).mtu(9000);
    assert!(c.validate().is_err());
    // No policer: the burst is ignored.
    let l = Link::unlimited().police(0, 0);
    assert_eq!(l, Link::unlimited());
    assert!(PathConfig::new(l, l).validate().is_ok());
}

#[test]
fn bdp() {
    let l = Link::unlimited()
        .rate(35_000_000)
        .delay(Duration::from_millis(104));
    assert_eq!(l.bdp_bytes(), 455_000);
}

/// Whether a path with `forward` (and an unlimited reverse) is valid.
fn ok(forward: Link) -> bool {
    PathConfig::new(forward, Link::unlimited())
        .validate()
        .is_ok()
}

/// The message of the validation error of `c`.
fn message(c: &PathConfig) -> String {
    match c.validate() {
        Err(Error::InvalidConfig(m)) => m,
        other => panic!("not an InvalidConfig: {other:?}"),
    }
}

#[test]
fn new_options_default_to_off_and_builders_set_them() {
    let u = Link::unlimited();
    assert_eq!(
        (u.shaper_bps, u.shaper_queue_bytes, u.drop_over_bytes),
        (0, 0, 0)
    );
    assert_eq!(u.reorder_share, 0.0);
    assert!(u.jitter.is_zero() && u.reorder_delay.is_zero());
    assert!(u.outage_every.is_zero() && u.outage_for.is_zero());
    assert!(u.options_set().is_empty());
    let ms = Duration::from_millis;
    let l = Link::unlimited()
        .shaper(5_000_000, 40_000)
        .jitter(ms(3))
        .reorder(0.1, ms(7))
        .outage(ms(500), ms(50))
        .drop_over(1400);
    assert_eq!((l.shaper_bps, l.shaper_queue_bytes), (5_000_000, 40_000));
    assert_eq!(l.jitter, ms(3));
    assert_eq!((l.reorder_share, l.reorder_delay), (0.1, ms(7)));
    assert_eq!((l.outage_every, l.outage_for), (ms(500), ms(50)));
    assert_eq!(l.drop_over_bytes, 1400);
    assert!(ok(l));
    assert_eq!(
        l.options_set(),
        vec![
            "shaper_bps",
            "shaper_queue_bytes",
            "jitter",
            "reorder_share",
            "reorder_delay",
            "outage_every",
            "outage_for",
            "drop_over_bytes"
        ]
    );
}

#[test]
fn reorder_share_and_hold_are_checked() {
    let ms = Duration::from_millis;
    assert!(ok(Link::unlimited().reorder(1.0, ms(1))));
    assert!(ok(Link::unlimited().reorder(0.0, ms(1))));
    assert!(ok(Link::unlimited().reorder(0.0, Duration::ZERO)));
    for bad in [1.0 + f64::EPSILON, -0.01, f64::NAN] {
        assert!(!ok(Link::unlimited().reorder(bad, ms(1))), "{bad}");
    }
    // A share with no hold reorders nothing: rejected, with a reason.
    let c = PathConfig::new(
        Link::unlimited(),
        Link::unlimited().reorder(0.1, Duration::ZERO),
    );
    let m = message(&c);
    assert!(m.contains("reverse") && m.contains("reorder_delay"), "{m}");
    assert!(ok(Link::unlimited().reorder(0.1, MAX_DELAY)));
    assert!(!ok(
        Link::unlimited().reorder(0.1, MAX_DELAY + Duration::from_nanos(1))
    ));
}

#[test]
fn jitter_is_at_most_an_hour() {
    assert!(ok(Link::unlimited().jitter(MAX_DELAY)));
    let l = Link::unlimited().jitter(MAX_DELAY + Duration::from_nanos(1));
    let m = message(&PathConfig::new(l, Link::unlimited()));
    assert!(m.contains("jitter"), "{m}");
}

#[test]
fn outages_need_both_durations_and_a_gap() {
    let ms = Duration::from_millis;
    assert!(ok(Link::unlimited().outage(ms(100), ms(99))));
    assert!(ok(
        Link::unlimited().outage(ms(100), ms(100) - Duration::from_nanos(1))
    ));
    assert!(ok(Link::unlimited().outage(Duration::ZERO, Duration::ZERO)));
    for (every, length) in [(100, 100), (100, 101), (0, 10), (100, 0)] {
        let l = Link::unlimited().outage(ms(every), ms(length));
        let m = message(&PathConfig::new(l, Link::unlimited()));
        assert!(m.contains("outage"), "{every}/{length}: {m}");
    }
}

#[test]
fn drop_over_is_at_least_576_and_below_the_mtu() {
    assert!(ok(Link::unlimited().drop_over(0)));
    assert!(ok(Link::unlimited().drop_over(576)));
    assert!(ok(Link::unlimited().drop_over(1499)));
    for bad in [1, 575, 1500, 9000] {
        let l = Link::unlimited().drop_over(bad);
        let m = message(&PathConfig::new(l, Link::unlimited()));
        assert!(m.contains("drop_over_bytes"), "{bad}: {m}");
    }
    // Against the configured MTU.
    let l = Link::unlimited().drop_over(1500);
    assert!(PathConfig::new(l, l).mtu(9000).validate().is_ok());
    assert!(PathConfig::new(l, l).mtu(1500).validate().is_err());
}

#[test]
fn veth_path_takes_no_link_model() {
    let c = PathConfig::veth();
    assert!(c.veth);
    assert_eq!(
        (c.forward, c.reverse),
        (Link::unlimited(), Link::unlimited())
    );
    assert!(c.validate().is_ok());
    assert!(PathConfig::veth().mtu(1280).validate().is_ok());
    assert!(!PathConfig::default().veth);
    // Any model option is refused, naming the direction and the fields.
    let mut c = PathConfig::veth();
    c.forward = Link::with_delay_only(Duration::from_millis(1)).rate(1_000_000);
    let m = message(&c);
    assert!(m.contains("veth") && m.contains("forward"), "{m}");
    assert!(m.contains("rate_bps, delay"), "{m}");
    for reverse in [
        Link::unlimited().loss(0.01),
        Link::unlimited().queue(1),
        Link::unlimited().police(1_000_000, 1500),
        Link::unlimited().shaper(1_000_000, 0),
        Link::unlimited().jitter(Duration::from_nanos(1)),
        Link::unlimited().reorder(0.1, Duration::from_millis(1)),
        Link::unlimited().outage(Duration::from_secs(1), Duration::from_millis(1)),
        Link::unlimited().drop_over(1400),
    ] {
        let mut c = PathConfig::veth();
        c.reverse = reverse;
        let m = message(&c);
        assert!(m.contains("reverse"), "{m}");
    }
    // The MTU is still checked.
    assert!(PathConfig::veth().mtu(100).validate().is_err());
}
