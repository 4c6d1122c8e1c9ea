//! Root tests: outages drop what arrives while the direction is dark, the
//! first one a period after the first packet; a PMTU black hole drops
//! packets over its size silently, which stalls TCP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::time::Duration;

use common::{
    Numbered, drain_sent, force_rcvbuf, report, root_or_skip, send_numbered, tcp_pair, udp_in,
};
use pathemu::{Direction, Link, Path, PathConfig, Side};

#[test]
fn outages_drop_what_arrives_in_the_dark() {
    if !root_or_skip("outages_drop_what_arrives_in_the_dark") {
        return;
    }
    // Dark 50 ms every 201 ms; one datagram every 2 ms for 1 s, the first
    // starting the clock: outage k covers 201k..201k+50 ms, so datagrams
    // ceil(201k / 2) to ceil((201k + 50) / 2) - 1 fall in it (k = 1..=4).
    // The edges of outages 1 and 3 fall 1 ms from a send, those of 2 and 4
    // on one (either fate): hence one datagram of tolerance at each edge.
    const COUNT: u32 = 500;
    const PAYLOAD: usize = 100;
    let forward = Link::with_delay_only(Duration::from_millis(1))
        .outage(Duration::from_millis(201), Duration::from_millis(50));
    let reverse = Link::with_delay_only(Duration::from_millis(1));
    // IPv4 only: no packet but the test's own starts the outage clock.
    let path = Path::new(PathConfig::new(forward, reverse).ipv6(false)).unwrap();
    let rx = udp_in(&path, Side::B, path.ip(Side::B));
    force_rcvbuf(&rx, 4 << 20);
    let to = rx.local_addr().unwrap();
    let recorder = Numbered::start(rx);
    let tx = udp_in(&path, Side::A, path.ip(Side::A));
    send_numbered(&tx, to, COUNT, PAYLOAD, Duration::from_millis(2));
    let s = drain_sent(
        &path,
        Direction::Forward,
        u64::from(COUNT),
        Duration::from_secs(2),
    );
    std::thread::sleep(Duration::from_millis(50));
    let arrivals = recorder.finish();
    report("forward", &s);

    assert_eq!(s.packets_in, u64::from(COUNT));
    assert_eq!(s.packets_forwarded + s.packets_dropped_outage, s.packets_in);
    assert_eq!(
        s.bytes_dropped_outage,
        s.packets_dropped_outage * (PAYLOAD as u64 + 28)
    );
    assert_eq!(arrivals.len() as u64, s.packets_forwarded);
    let got: BTreeSet<u32> = arrivals.iter().map(|a| a.seq).collect();
    let missing: Vec<u32> = (0..COUNT).filter(|i| !got.contains(i)).collect();
    // The missing datagrams form one run per outage.
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for m in missing {
        match runs.last_mut() {
            Some((_, end)) if *end + 1 == m => *end = m,
            _ => runs.push((m, m)),
        }
    }
    eprintln!("dropped runs {runs:?}");
    assert_eq!(runs.len(), 4, "{runs:?}");
    for (k, (first, last)) in (1u32..).zip(&runs) {
        let (want_first, want_last) = ((201 * k).div_ceil(2), (201 * k + 50).div_ceil(2) - 1);
        assert!(
            first.abs_diff(want_first) <= 1 && last.abs_diff(want_last) <= 1,
            "outage {k}: {first}..={last}, want {want_first}..={want_last}"
        );
    }
}

#[test]
fn oversize_packets_vanish_silently_and_tcp_stalls() {
    if !root_or_skip("oversize_packets_vanish_silently_and_tcp_stalls") {
        return;
    }
    // IPv4 only, so that nothing but the test's own traffic crosses.
    let forward = Link::with_delay_only(Duration::from_millis(1)).drop_over(1400);
    let reverse = Link::with_delay_only(Duration::from_millis(1));
    let path = Path::new(PathConfig::new(forward, reverse).ipv6(false)).unwrap();
    let rx = udp_in(&path, Side::B, path.ip(Side::B));
    rx.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let to = rx.local_addr().unwrap();
    let tx = udp_in(&path, Side::A, path.ip(Side::A));
    // 1400 B IP packets pass, 1401 B ones do not (payload + 28 header bytes).
    for _ in 0..20 {
        tx.send_to(&[1u8; 1372], to).unwrap();
        tx.send_to(&[2u8; 1373], to).unwrap();
    }
    let mut sizes = Vec::new();
    let mut buf = [0u8; 2048];
    while let Ok(n) = rx.recv(&mut buf) {
        sizes.push(n);
    }
    let s = drain_sent(&path, Direction::Forward, 40, Duration::from_secs(1));
    report("forward", &s);
    assert_eq!(sizes, vec![1372; 20]);
    assert_eq!(s.packets_dropped_oversize, 20);
    assert_eq!(s.bytes_dropped_oversize, 20 * 1401);
    // Silently: nothing at all came back (no ICMP "fragmentation needed").
    assert_eq!(path.stats(Direction::Reverse).packets_in, 0);

    // TCP connects (small packets), but its full-sized segments (1500 B at
    // MTU 1500) vanish: nothing arrives.
    let (mut client, mut server) = tcp_pair(&path, path.ip(Side::B));
    client.write_all(&[7u8; 20_000]).unwrap();
    server
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let got = server.read(&mut buf);
    let after = path.stats(Direction::Forward);
    report("forward after TCP", &after);
    assert!(got.is_err(), "read {got:?} through the black hole");
    assert!(after.packets_dropped_oversize > 20);
}
