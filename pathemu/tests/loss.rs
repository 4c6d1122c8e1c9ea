//! Root test: random loss happens at the configured rate, within a 4-sigma
//! binomial bound. (Determinism of the seeded draw is unit-tested in `model`.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Sink, blast, drain, force_rcvbuf, report, root_or_skip, udp_in};
use pathemu::{Direction, Link, Path, PathConfig, Side};

const LOSS: f64 = 0.05;
const PACKETS: u64 = 20_000;
const PAYLOAD: usize = 200;

#[test]
fn udp_loss_rate_within_binomial_bound() {
    if !root_or_skip("udp_loss_rate_within_binomial_bound") {
        return;
    }
    let forward = Link::with_delay_only(Duration::from_millis(2)).loss(LOSS);
    let reverse = Link::with_delay_only(Duration::from_millis(2));
    let path = Path::new(PathConfig::new(forward, reverse).seed(42)).unwrap();
    let rx = udp_in(&path, Side::B, path.ip(Side::B));
    force_rcvbuf(&rx, 16 << 20);
    let to = rx.local_addr().unwrap();
    let sink = Sink::start(rx);
    let tx = udp_in(&path, Side::A, path.ip(Side::A));

    // 20k datagrams at about 10k packets/s.
    blast(
        &tx,
        to,
        PACKETS,
        PAYLOAD,
        10_000 * (PAYLOAD as u64 + 28) * 8,
        20,
    );
    let s = drain(&path, Direction::Forward, Duration::from_secs(2));
    std::thread::sleep(Duration::from_millis(100));
    let (rx_packets, _) = sink.finish();
    report("forward", &s);

    let n = s.packets_in as f64;
    let lost = s.packets_dropped_loss as f64;
    let sigma = (n * LOSS * (1.0 - LOSS)).sqrt();
    eprintln!(
        "offered {n}, lost {lost} ({:.4}), expected {:.0} ± {:.1} (4 sigma)",
        lost / n,
        n * LOSS,
        4.0 * sigma
    );
    assert_eq!(s.packets_in, PACKETS, "every datagram reached the relay");
    assert!(
        (lost - n * LOSS).abs() <= 4.0 * sigma,
        "lost {lost} of {n}: outside 4 sigma of {LOSS}"
    );
    assert_eq!(s.packets_dropped_queue, 0);
    assert_eq!(s.packets_forwarded + s.packets_dropped_loss, s.packets_in);
    assert_eq!(rx_packets, s.packets_forwarded);
    // The reverse direction has no loss configured.
    assert_eq!(path.stats(Direction::Reverse).packets_dropped_loss, 0);
}
