//! Root tests: the configured MTU is set on both TUNs and shapes what
//! crosses the path: TCP's MSS follows a 1280-byte (VPN-like) MTU, and a
//! 9000-byte (jumbo) MTU carries 9000-byte packets whole.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::IpAddr;
use std::time::Duration;

use common::{bulk_tcp, drain, root_or_skip, tcp_mss, tcp_pair, udp_in};
use pathemu::{Direction, Error, Path, PathConfig, Side};

/// The MTU `ip link show` reports for the TUN in `side`'s namespace.
fn tun_mtu(path: &Path, side: Side) -> u32 {
    let out = path
        .command(side, "ip")
        .args(["-o", "link", "show", path.tun_name()])
        .output()
        .unwrap();
    assert!(out.status.success(), "ip link show: {out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut words = text.split_whitespace();
    words.find(|w| *w == "mtu").unwrap();
    words.next().unwrap().parse().unwrap()
}

#[test]
fn out_of_range_mtu_is_rejected_before_building() {
    for mtu in [100, 9001] {
        let r = Path::new(PathConfig::default().ipv6(false).mtu(mtu));
        assert!(matches!(r, Err(Error::InvalidConfig(_))), "{mtu}: {r:?}");
    }
}

#[test]
fn tcp_mss_follows_a_1280_mtu() {
    if !root_or_skip("tcp_mss_follows_a_1280_mtu") {
        return;
    }
    // A 50 Mbit/s bottleneck keeps the bulk transfer below light CPU use.
    let config = PathConfig::bottleneck(50_000_000, Duration::from_millis(2), 100_000).mtu(1280);
    let path = Path::new(config).unwrap();
    assert_eq!(tun_mtu(&path, Side::A), 1280);
    assert_eq!(tun_mtu(&path, Side::B), 1280);

    // IPv4: 1280 - 20 IP - 20 TCP = 1240, less 12 for timestamps = 1228.
    let (client, server) = tcp_pair(&path, path.ip(Side::B));
    let (mss_a, mss_b) = (tcp_mss(&client), tcp_mss(&server));
    // IPv6: 1280 - 40 IP - 20 TCP = 1220, less 12 = 1208.
    let v6 = IpAddr::V6(path.addr_v6(Side::B).unwrap());
    let (c6, s6) = tcp_pair(&path, v6);
    let (mss6_a, mss6_b) = (tcp_mss(&c6), tcp_mss(&s6));
    eprintln!("MSS IPv4 {mss_a}/{mss_b}, IPv6 {mss6_a}/{mss6_b} (client/server)");
    assert!(mss_a <= 1240 && mss_b <= 1240, "IPv4 MSS {mss_a}/{mss_b}");
    assert!(mss_a >= 1200, "IPv4 MSS {mss_a} far below the MTU");
    assert!(
        mss6_a <= 1220 && mss6_b <= 1220,
        "IPv6 MSS {mss6_a}/{mss6_b}"
    );
    drop((c6, s6));

    // A bulk transfer's packets fit the MTU: on average no more than 1280 B,
    // and the full-sized ones dominate.
    let bulk = bulk_tcp(
        &path,
        client,
        server,
        Duration::from_millis(200),
        Duration::from_millis(800),
    );
    let s = bulk.forward;
    let mean = s.bytes_forwarded / s.packets_forwarded.max(1);
    eprintln!(
        "bulk: {} packets, {} B, mean {mean} B per packet, goodput {:.1} Mbit/s",
        s.packets_forwarded,
        s.bytes_forwarded,
        bulk.goodput_bps() / 1e6
    );
    assert!(s.packets_forwarded > 2000, "too little traffic: {s:?}");
    assert!((1200..=1280).contains(&mean), "mean packet {mean} B");
    assert_eq!(s.write_errors, 0);
}

#[test]
fn jumbo_mtu_carries_9000_byte_packets() {
    if !root_or_skip("jumbo_mtu_carries_9000_byte_packets") {
        return;
    }
    let path = Path::new(PathConfig::symmetric_delay(Duration::from_millis(1)).mtu(9000)).unwrap();
    assert_eq!(tun_mtu(&path, Side::A), 9000);
    let rx = udp_in(&path, Side::B, path.ip(Side::B));
    rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let tx = udp_in(&path, Side::A, path.ip(Side::A));
    let before = path.stats(Direction::Forward);
    // 9000 - 20 IP - 8 UDP: one full-sized, unfragmented packet.
    let payload: Vec<u8> = (0..8972u32).map(|i| (i % 251) as u8).collect();
    tx.send_to(&payload, rx.local_addr().unwrap()).unwrap();
    let mut buf = vec![0u8; 16_384];
    let n = rx.recv(&mut buf).unwrap();
    let s = drain(&path, Direction::Forward, Duration::from_secs(1)).since(&before);
    assert_eq!(n, payload.len());
    assert_eq!(&buf[..n], &payload[..]);
    assert_eq!((s.packets_forwarded, s.bytes_forwarded), (1, 9000), "{s:?}");
}
