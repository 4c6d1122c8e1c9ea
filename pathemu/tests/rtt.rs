//! Root test: the configured delay is reproduced as round-trip time.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::IpAddr;
use std::time::Duration;

use common::{Echo, median, probe_rtts, report, root_or_skip, udp_in};
use pathemu::{Direction, Path, PathConfig, Side};

const ONE_WAY: Duration = Duration::from_millis(26);
const TOLERANCE: Duration = Duration::from_millis(2);

fn assert_rtt_near(rtts: &[Duration], want: Duration) {
    assert!(
        rtts.len() >= 25,
        "only {} of the probes answered",
        rtts.len()
    );
    let m = median(rtts);
    eprintln!("median RTT {m:?} of {} probes: {rtts:?}", rtts.len());
    assert!(
        m.abs_diff(want) <= TOLERANCE,
        "median RTT {m:?}, want {want:?} ± {TOLERANCE:?}"
    );
    // The path never delivers early.
    assert!(
        rtts.iter().all(|r| *r >= want),
        "an RTT below {want:?}: {rtts:?}"
    );
}

#[test]
fn udp_echo_rtt_matches_configured_delay() {
    if !root_or_skip("udp_echo_rtt_matches_configured_delay") {
        return;
    }
    let path = Path::new(PathConfig::symmetric_delay(ONE_WAY)).unwrap();
    assert_eq!(path.base_rtt(), 2 * ONE_WAY);
    let echo = Echo::start(&path, Side::B, path.ip(Side::B));
    let client = udp_in(&path, Side::A, path.ip(Side::A));
    let rtts = probe_rtts(&client, echo.addr, 31, Duration::from_millis(10));
    assert_rtt_near(&rtts, 2 * ONE_WAY);

    // IPv6 across the same path.
    let b6 = IpAddr::V6(path.addr_v6(Side::B).unwrap());
    let echo6 = Echo::start(&path, Side::B, b6);
    let client6 = udp_in(&path, Side::A, IpAddr::V6(path.addr_v6(Side::A).unwrap()));
    let rtts6 = probe_rtts(&client6, echo6.addr, 31, Duration::from_millis(10));
    assert_rtt_near(&rtts6, 2 * ONE_WAY);

    let fwd = path.stats(Direction::Forward);
    report("forward", &fwd);
    report("reverse", &path.stats(Direction::Reverse));
    assert_eq!(fwd.packets_dropped_queue + fwd.packets_dropped_loss, 0);
}

#[test]
fn asymmetric_delays_add_up() {
    if !root_or_skip("asymmetric_delays_add_up") {
        return;
    }
    let forward = pathemu::Link::with_delay_only(Duration::from_millis(30));
    let reverse = pathemu::Link::with_delay_only(Duration::from_millis(5));
    let path = Path::new(PathConfig::new(forward, reverse)).unwrap();
    let echo = Echo::start(&path, Side::B, path.ip(Side::B));
    let client = udp_in(&path, Side::A, path.ip(Side::A));
    let rtts = probe_rtts(&client, echo.addr, 31, Duration::from_millis(5));
    assert_rtt_near(&rtts, Duration::from_millis(35));
}
