//! The building blocks the scenario lists are written with: the reference
//! paths, traffic shorthands and the all-defaults scenario.

use std::time::Duration;

use observer::attribution::Verdict;
use pathemu::{Link, PathConfig};

use observer::attribution::group::judge::Limit;

use super::model::{Expect, GroupExpect, HttpClient, HttpServer, Scenario, Traffic, View};

pub(crate) const MS: fn(u64) -> Duration = Duration::from_millis;

pub(crate) fn steady(v: Verdict) -> Vec<Expect> {
    vec![Expect {
        from_s: 3.0,
        to_s: f64::INFINITY,
        verdict: v,
        also: None,
    }]
}

/// [`steady`], where `also` is a fair reading of the same flow too (a
/// shared limit); `v` must still be the majority.
pub(crate) fn steady_or(v: Verdict, also: Verdict) -> Vec<Expect> {
    vec![Expect {
        also: Some(also),
        ..steady(v)[0]
    }]
}

/// The group of the judged end's flows must be judged `limit`, its advice
/// must name each of `knobs`, and say of a bigger window `window_helps`.
pub(crate) fn grouped(
    limit: Limit,
    knobs: &'static [&'static str],
    window_helps: Option<bool>,
) -> Option<GroupExpect> {
    Some(GroupExpect {
        limit,
        knobs,
        window_helps,
    })
}

pub(crate) fn iperf(args: &[&str]) -> Traffic {
    Traffic::Iperf {
        args: args.iter().map(|s| s.to_string()).collect(),
    }
}

/// iperf3 `-R`: server in A, client in B.
pub(crate) fn iperf_r(args: &[&str]) -> Traffic {
    Traffic::IperfReverse {
        args: args.iter().map(|s| s.to_string()).collect(),
    }
}

pub(crate) fn nginx(limit_rate: Option<&'static str>, sndbuf: Option<&'static str>) -> HttpServer {
    HttpServer::Nginx { limit_rate, sndbuf }
}

pub(crate) fn curl(server: HttpServer, limit_rate: Option<&'static str>) -> Traffic {
    Traffic::Http {
        server,
        clients: vec![HttpClient::Curl { limit_rate }],
    }
}

/// Reference A: 35 Mbit/s, queue about one BDP of the 104 ms path, with a
/// one-way delay of `one_way_us` (52 ms: 104 ms RTT; 1.8 ms: the 3.6 ms lab).
pub(crate) fn ref_a(one_way_us: u64) -> PathConfig {
    PathConfig::bottleneck(35_000_000, Duration::from_micros(one_way_us), 460_000)
}

/// Reference B's shape: 110 ms RTT, a little random loss, a bottleneck
/// scaled from the article's ~300 Mbit/s to 100 Mbit/s so that the relay and
/// both iperf3 ends fit on two cores with exact timing.
pub(crate) fn ref_b() -> PathConfig {
    let fwd = Link::unlimited()
        .rate(100_000_000)
        .delay(MS(55))
        .queue(1_000_000)
        .loss(0.0001);
    PathConfig::new(fwd, Link::with_delay_only(MS(55))).seed(7)
}

/// A VPN tunnel at a long RTT: MTU 1280 (MSS 1228), 150 ms each way,
/// 40 Mbit/s with a one-BDP queue, and 1% random loss on the data.
pub(crate) fn tunnel() -> PathConfig {
    let fwd = Link::unlimited()
        .rate(40_000_000)
        .delay(MS(150))
        .queue(1_500_000)
        .loss(0.01);
    PathConfig::new(fwd, Link::with_delay_only(MS(150))).mtu(1280)
}

/// A 100 Mbit/s link with 20 ms each way and a 500 KB queue behind a
/// 10 Mbit/s token-bucket policer with a bucket of `burst_bytes`.
pub(crate) fn policed(burst_bytes: u64) -> PathConfig {
    let fwd = Link::unlimited()
        .rate(100_000_000)
        .delay(MS(20))
        .queue(500_000)
        .police(10_000_000, burst_bytes);
    PathConfig::new(fwd, Link::with_delay_only(MS(20)))
}

/// `net.ipv4.tcp_rmem` maximum that gives about a 4 MB advertised window
/// (Linux advertises about half the buffer).
pub(crate) const RMEM_4MB_WINDOW: u64 = 8 << 20;
pub(crate) const RMEM_32MB_WINDOW: u64 = 64 << 20;

/// A scenario judged from the sender with every optional setting off: the
/// lists start from it.
pub(crate) fn base(
    name: &'static str,
    about: &'static str,
    path: PathConfig,
    traffic: Traffic,
    expect: Vec<Expect>,
) -> Scenario {
    Scenario {
        name,
        about,
        path,
        rcv_rmem_max: None,
        rcv_window_scaling: None,
        snd_cc_default: None,
        snd_wmem_max: None,
        cc: None,
        cwnd_lock: None,
        traffic,
        secs: 10,
        flows: 1,
        view: View::Sender,
        expect,
        expect_each: Vec::new(),
        group: None,
        reference_bps: None,
        emulator_check_bps: None,
    }
}
