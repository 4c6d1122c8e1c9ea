//! Root test: a shaper slower than the link's bottleneck becomes the
//! bottleneck: a UDP blast between the two rates passes the bottleneck's
//! queue untouched, overflows the shaper's, and what gets through matches
//! the shaper's rate.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Sink, blast, drain, force_rcvbuf, report, root_or_skip, udp_in};
use pathemu::{Direction, Link, Path, PathConfig, Side};

const LINK_BPS: u64 = 40_000_000;
const SHAPER_BPS: u64 = 10_000_000;
const SHAPER_QUEUE_BYTES: u64 = 30_000;
const PAYLOAD: usize = 1400;
/// IP bytes per datagram: payload + 8 UDP + 20 IP.
const IP_BYTES: u64 = PAYLOAD as u64 + 28;

#[test]
fn udp_blast_queues_and_drops_at_a_slower_shaper() {
    if !root_or_skip("udp_blast_queues_and_drops_at_a_slower_shaper") {
        return;
    }
    let forward = Link::with_delay_only(Duration::from_millis(5))
        .rate(LINK_BPS)
        .queue(200_000)
        .shaper(SHAPER_BPS, SHAPER_QUEUE_BYTES);
    let reverse = Link::with_delay_only(Duration::from_millis(5));
    let path = Path::new(PathConfig::new(forward, reverse)).unwrap();
    let rx = udp_in(&path, Side::B, path.ip(Side::B));
    force_rcvbuf(&rx, 8 << 20);
    let to = rx.local_addr().unwrap();
    let sink = Sink::start(rx);
    let tx = udp_in(&path, Side::A, path.ip(Side::A));

    // Offer 3x the shaper's rate (3/4 of the link's) for about 1.5 s.
    let count = 3 * SHAPER_BPS * 3 / 2 / (IP_BYTES * 8);
    let took = blast(&tx, to, count, PAYLOAD, 3 * SHAPER_BPS, 8);
    let s = drain(&path, Direction::Forward, Duration::from_secs(2));
    std::thread::sleep(Duration::from_millis(100));
    let (rx_packets, _) = sink.finish();
    report("forward", &s);

    assert_eq!(s.packets_in, count, "every datagram reached the relay");
    assert_eq!(
        s.packets_dropped_queue, 0,
        "the bottleneck's queue overflowed"
    );
    assert!(s.packets_dropped_shaper > 0, "no shaper drops");
    assert_eq!(s.bytes_dropped_shaper, s.packets_dropped_shaper * IP_BYTES);
    assert_eq!(s.packets_forwarded + s.packets_dropped_shaper, s.packets_in);
    assert_eq!(rx_packets, s.packets_forwarded);

    // The shaper was busy from shortly after the first datagram to the end
    // of the blast, then drained at most its queue.
    let at_rate = SHAPER_BPS as f64 / 8.0 * took.as_secs_f64();
    let fwd = s.bytes_forwarded as f64;
    eprintln!(
        "blast {took:?}, forwarded {fwd:.0} B, shaper rate x time {at_rate:.0} B, queue {SHAPER_QUEUE_BYTES} B"
    );
    assert!(fwd >= at_rate * 0.95, "forwarded {fwd} < 95% of {at_rate}");
    assert!(
        fwd <= at_rate * 1.05 + SHAPER_QUEUE_BYTES as f64,
        "forwarded {fwd} > 105% of {at_rate} + queue"
    );
}
