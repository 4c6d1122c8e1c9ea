//! Root tests: a plain veth path joins the namespaces with the kernel's own
//! forwarding: the same addresses and API, a sub-millisecond round trip,
//! zero relay counters, and nothing left after drop. A veth path refuses
//! any link model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::{IpAddr, SocketAddr, TcpListener};
use std::os::unix::fs::MetadataExt;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Echo, median, probe_rtts, root_or_skip, udp_in};
use pathemu::{Direction, Error, Link, LinkStats, Path, PathConfig, Side};

fn netns_list() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn veth_path_refuses_a_link_model() {
    let mut c = PathConfig::veth();
    c.forward = Link::with_delay_only(Duration::from_millis(5));
    let r = Path::new(c);
    assert!(
        matches!(&r, Err(Error::InvalidConfig(m)) if m.contains("veth") && m.contains("delay")),
        "{r:?}"
    );
}

#[test]
fn veth_path_has_a_sub_millisecond_rtt_and_cleans_up() {
    if !root_or_skip("veth_path_has_a_sub_millisecond_rtt_and_cleans_up") {
        return;
    }
    let path = Path::new(PathConfig::veth()).unwrap();
    let names = [
        path.netns_name(Side::A).to_owned(),
        path.netns_name(Side::B).to_owned(),
    ];
    for side in [Side::A, Side::B] {
        // The interface is a veth end, with the usual addresses.
        let out = path
            .command(side, "ip")
            .args(["-d", "-o", "addr", "show", "dev", path.tun_name()])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let link = path
            .command(side, "ip")
            .args(["-d", "-o", "link", "show", "dev", path.tun_name()])
            .output()
            .unwrap();
        let link = String::from_utf8_lossy(&link.stdout);
        assert!(link.contains("veth") && link.contains("mtu 1500"), "{link}");
        let want = format!("{} peer {}/32", path.addr(side), path.addr(side.peer()));
        assert!(text.contains(&want), "{text}");
        let inode = path
            .run_in(side, || {
                std::fs::metadata("/proc/thread-self/ns/net").unwrap().ino()
            })
            .unwrap();
        assert_eq!(inode, path.netns_inode(side));
    }
    assert_eq!(path.base_rtt(), Duration::ZERO);

    // UDP echo round trips: well under 1 ms.
    let echo = Echo::start(&path, Side::B, path.ip(Side::B));
    let client = udp_in(&path, Side::A, path.ip(Side::A));
    let rtts = probe_rtts(&client, echo.addr, 50, Duration::from_millis(2));
    assert_eq!(rtts.len(), 50, "probes lost on a veth");
    let m = median(&rtts);
    eprintln!(
        "veth UDP RTT median {m:?}, min {:?}, max {:?}",
        rtts.iter().min().unwrap(),
        rtts.iter().max().unwrap()
    );
    assert!(m < Duration::from_millis(1), "median RTT {m:?}");

    // A TCP connect (one round trip) over IPv6 too.
    let b6 = IpAddr::V6(path.addr_v6(Side::B).unwrap());
    let listener = path
        .run_in(Side::B, move || TcpListener::bind(SocketAddr::new(b6, 0)))
        .unwrap()
        .unwrap();
    let to = listener.local_addr().unwrap();
    let took = path
        .run_in(Side::A, move || {
            // The first connect also resolves the neighbour; time the second.
            drop(pathemu::connect_routable(to).unwrap());
            let t = Instant::now();
            let s = std::net::TcpStream::connect(to).unwrap();
            (t.elapsed(), s)
        })
        .unwrap()
        .0;
    eprintln!("veth TCP connect over IPv6 {took:?}");
    assert!(took < Duration::from_millis(1), "connect took {took:?}");

    // Nothing goes through a relay.
    assert_eq!(path.stats(Direction::Forward), LinkStats::default());
    assert_eq!(path.stats(Direction::Reverse), LinkStats::default());

    drop((echo, client, listener));
    drop(path);
    let list = netns_list();
    for n in &names {
        assert!(!list.contains(n), "{n} still listed: {list:?}");
    }
    // The pair never had an end in this namespace, and none is left.
    let out = Command::new("ip")
        .args(["-o", "link", "show", "type", "veth"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("pe0"), "{text}");
}
