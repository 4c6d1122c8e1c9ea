//! The host-view scenarios: several flows to one peer, judged as a group
//! (`observer flows --by peer`): one shared bottleneck, and a limit per
//! flow. The seed paths' single and parallel transfers
//! carry their group judgements in `sender`.

use observer::attribution::{Verdict, group::judge::Limit};
use pathemu::{Link, PathConfig};

use super::{
    model::{Scenario, View},
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
    ]
}
