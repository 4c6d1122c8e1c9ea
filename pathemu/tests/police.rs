//! Root test: a token-bucket policer holds a TCP bulk transfer to about the
//! policed rate on an otherwise much faster link, by dropping (not queueing).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{bulk_tcp, report, root_or_skip, tcp_pair};
use pathemu::{Direction, Link, Path, PathConfig};

const LINK_BPS: u64 = 100_000_000;
const POLICE_BPS: u64 = 10_000_000;
/// 40 ms of tokens at the policed rate (one base RTT).
const BURST_BYTES: u64 = 50_000;
const ONE_WAY: Duration = Duration::from_millis(20);
const WARMUP: Duration = Duration::from_secs(1);
const MEASURE: Duration = Duration::from_secs(4);

#[test]
fn tcp_is_held_to_the_policed_rate() {
    if !root_or_skip("tcp_is_held_to_the_policed_rate") {
        return;
    }
    let forward = Link::with_delay_only(ONE_WAY)
        .rate(LINK_BPS)
        .queue(500_000)
        .police(POLICE_BPS, BURST_BYTES);
    let reverse = Link::with_delay_only(ONE_WAY);
    let path = Path::new(PathConfig::new(forward, reverse)).unwrap();
    let (sender, receiver) = tcp_pair(&path, path.ip(pathemu::Side::B));
    let bulk = bulk_tcp(&path, sender, receiver, WARMUP, MEASURE);
    let s = bulk.forward;
    let secs = bulk.elapsed.as_secs_f64();
    let goodput = bulk.goodput_bps();
    let ip_rate = s.bytes_forwarded as f64 * 8.0 / secs;
    report("forward (window)", &s);
    eprintln!(
        "policed {} Mbit/s (burst {BURST_BYTES} B) on a {} Mbit/s link: goodput {:.3} Mbit/s, \
         IP-level {:.3} Mbit/s over {secs:.3} s; {} of {} packets police-dropped",
        POLICE_BPS / 1_000_000,
        LINK_BPS / 1_000_000,
        goodput / 1e6,
        ip_rate / 1e6,
        s.packets_dropped_police,
        s.packets_in,
    );
    assert!(
        (6e6..=11e6).contains(&goodput),
        "goodput {goodput:.0} bit/s, want 6..11 Mbit/s"
    );
    // Never more than the bucket and its refill (plus 20 ms of timing slack
    // between the relay's clock and the window's).
    let ceiling = (POLICE_BPS as f64 / 8.0) * (secs + 0.02) + BURST_BYTES as f64;
    assert!(
        s.bytes_forwarded as f64 <= ceiling,
        "forwarded {} B > {ceiling:.0} B",
        s.bytes_forwarded
    );
    assert!(s.packets_dropped_police > 0, "no police drops");
    // A conforming burst is at most 50 kB, far below the 500 kB queue.
    assert_eq!(s.packets_dropped_queue, 0);
    assert_eq!(s.packets_dropped_loss, 0);
    // The reverse direction (ACKs) has no policer.
    assert_eq!(path.stats(Direction::Reverse).packets_dropped_police, 0);
}
