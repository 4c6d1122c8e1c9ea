//! Root test: a UDP blast faster than the bottleneck overflows a small
//! drop-tail queue, and what gets through matches the rate.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Sink, blast, drain, force_rcvbuf, report, root_or_skip, udp_in};
use pathemu::{Direction, Path, PathConfig, Side};

const RATE_BPS: u64 = 10_000_000;
const QUEUE_BYTES: u64 = 30_000;
const PAYLOAD: usize = 1400;
/// IP bytes per datagram: payload + 8 UDP + 20 IP.
const IP_BYTES: u64 = PAYLOAD as u64 + 28;

#[test]
fn udp_blast_overflows_queue_and_is_held_to_rate() {
    if !root_or_skip("udp_blast_overflows_queue_and_is_held_to_rate") {
        return;
    }
    let path = Path::new(PathConfig::bottleneck(
        RATE_BPS,
        Duration::from_millis(5),
        QUEUE_BYTES,
    ))
    .unwrap();
    let rx = udp_in(&path, Side::B, path.ip(Side::B));
    force_rcvbuf(&rx, 8 << 20);
    let to = rx.local_addr().unwrap();
    let sink = Sink::start(rx);
    let tx = udp_in(&path, Side::A, path.ip(Side::A));

    // Offer 3x the rate for about 2 s.
    let count = 3 * RATE_BPS * 2 / (IP_BYTES * 8);
    let took = blast(&tx, to, count, PAYLOAD, 3 * RATE_BPS, 8);
    let s = drain(&path, Direction::Forward, Duration::from_secs(2));
    std::thread::sleep(Duration::from_millis(100));
    let (rx_packets, rx_bytes) = sink.finish();
    report("forward", &s);

    assert_eq!(s.packets_in, count, "every datagram reached the relay");
    assert!(s.packets_dropped_queue > 0, "no queue drops");
    assert_eq!(s.packets_dropped_loss, 0);
    assert_eq!(s.packets_forwarded + s.packets_dropped_queue, s.packets_in);
    assert_eq!(
        rx_packets, s.packets_forwarded,
        "receiver got what was forwarded"
    );
    assert_eq!(rx_bytes, rx_packets * PAYLOAD as u64);

    // The serialiser was busy from the first datagram to the end of the blast;
    // what was still queued then (at most the queue limit) drained afterwards.
    let busy = took.as_secs_f64();
    let at_rate = RATE_BPS as f64 / 8.0 * busy;
    let fwd = s.bytes_forwarded as f64;
    eprintln!(
        "blast {busy:.3} s, forwarded {fwd:.0} B, rate x time {at_rate:.0} B, queue {QUEUE_BYTES} B"
    );
    assert!(fwd >= at_rate * 0.95, "forwarded {fwd} < 95% of {at_rate}");
    assert!(
        fwd <= at_rate * 1.05 + QUEUE_BYTES as f64,
        "forwarded {fwd} > 105% of {at_rate} + queue"
    );
}
