//! The host-view scenarios: several flows to one peer, judged as a group
//! (`observer flows --by peer`): one shared bottleneck, a limit per
//! flow, and one of each. The seed paths' single and parallel transfers
//! carry their group judgements in `sender`.

use observer::attribution::{Verdict, group::judge::Limit};
use pathemu::{Link, PathConfig};

use super::{
    model::{HttpClient, HttpServer, Scenario, Traffic, View},
    parts::{MS, base, grouped, iperf, iperf_r, steady},
};

/// Four downloads, each through a policer of its own at 5 Mbit/s with a
/// one-BDP (25 KB) bucket, on a 50 Mbit/s link with 20 ms each way.
fn policed_each_flow() -> PathConfig {
    let fwd = Link::unlimited()
        .rate(50_000_000)
        .delay(MS(20))
        .queue(250_000)
        .police_each_flow(5_000_000, 25_000);
    PathConfig::new(fwd, Link::with_delay_only(MS(20)))
}

/// The host-view scenarios, in running order.
pub fn all() -> Vec<Scenario> {
    use Verdict::*;
    vec![
        Scenario {
            cc: Some("cubic"),
            flows: 4,
            group: grouped(Limit::Shared, &["path"], Some(false)),
            ..base(
                "peers-shared",
                "four cubic uploads through one 20 Mbit/s bottleneck, large windows: one shared limit",
                PathConfig::bottleneck(20_000_000, MS(25), 125_000),
                iperf(&["-P", "4"]),
                steady(Path),
            )
        },
        Scenario {
            view: View::Receiver,
            cc: Some("cubic"),
            flows: 4,
            group: grouped(Limit::PerFlow, &[], Some(false)),
            ..base(
                "peers-policer",
                "four downloads, each through its own 5 Mbit/s policer on a 50 Mbit/s link: a limit per flow",
                policed_each_flow(),
                iperf_r(&["-P", "4"]),
                steady(CongestionWindow),
            )
        },
        // Two processes at one peer download from this host's nginx, one
        // reading 16 KiB every 25 ms behind a 1 MiB tcp_rmem max. Judged
        // where both flows are sent: the slow reader's window binds (the
        // peer's reader, once its buffer is full, 1.5-3 s in), the other
        // fills the link that is left (the path). A loss at the shared
        // queue cuts the slow flow's cwnd under its reader's rate for a
        // second now and then, and there it reads `path` or
        // `congestion_window`, rightly: its own samples are not asserted
        // (a sender-side span must settle and stay), its life reading is,
        // through the group's advice, which must name its limit.
        Scenario {
            snd_cc_default: Some("cubic"),
            flows: 2,
            secs: 15,
            rcv_rmem_max: Some(1 << 20),
            expect_each: vec![Vec::new(), steady(Path)],
            group: grouped(Limit::Mixed, &["peer_window", "path"], None),
            ..base(
                "peers-mixed",
                "two downloads from one nginx through 20 Mbit/s, 20 ms, one reading 16 KiB every 25 ms (5.2 Mbit/s), one curl: the peer's reader and the path",
                PathConfig::bottleneck(20_000_000, MS(10), 50_000),
                Traffic::Http {
                    server: HttpServer::Nginx {
                        limit_rate: None,
                        sndbuf: None,
                    },
                    clients: vec![
                        HttpClient::Steady {
                            chunk: 16_384,
                            period_ms: 25,
                        },
                        HttpClient::Curl { limit_rate: None },
                    ],
                },
                steady(Path),
            )
        },
    ]
}
