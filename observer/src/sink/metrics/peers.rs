//! The opt-in gauges of the `--top-peers` busiest peers: the host view
//! (`observer flows --by peer`) as series. Each poll groups the open flows
//! by remote address within their network namespace, judges each group
//! over the flows' current window (per-flow, shared, mixed or unknown
//! limit: docs/attribution.md, "Groups") and exports the N groups that
//! moved the most bytes. Labels carry a peer address, so the series count
//! is capped at N (times the limits a peer passes through while its
//! series lives: a series goes as soon as its peer leaves the top N or
//! changes limit).

use std::collections::HashMap;

use prometheus::{GaugeVec, IntGaugeVec};

use super::registrar::Registrar;
use crate::{
    attribution::{
        Attribution, Config,
        group::{Direction, GroupBy, group},
    },
    model::flow::Flow,
    track::tracked::TrackedFlow,
};

/// Rate and flow count of the N busiest peers, by their group's limit.
pub(super) struct TopPeers {
    n: usize,
    /// The thresholds the groups are judged by.
    cfg: Config,
    rate: GaugeVec,
    flows: IntGaugeVec,
}

impl TopPeers {
    /// Defines and registers the gauges for the `n` busiest peers, judged
    /// under `cfg` (none are set when `n` is 0).
    pub fn new(r: &Registrar, n: usize, cfg: Config) -> Result<TopPeers, prometheus::Error> {
        let labels = ["netns", "peer", "direction", "limit"];
        Ok(TopPeers {
            n,
            cfg,
            rate: r.gauge_vec(
                "observer_peer_throughput_bytes_per_second",
                "Throughput of the --top-peers peers whose open flows moved the most bytes over \
                 the window: their flows' rates over the last poll added up, by direction \
                 (download: this host receives; upload: it sends) and what limits them as a \
                 group: \
                 per_flow (each flow held by its own limit: more streams or larger windows \
                 would add rate), shared (one bottleneck), mixed, unknown.",
                &labels,
            )?,
            flows: r.int_gauge_vec(
                "observer_peer_flows",
                "Open flows to each of the --top-peers peers, by direction and the group's limit.",
                &labels,
            )?,
        })
    }

    /// Whether any peer gauge is asked for (`--top-peers` above 0).
    pub fn wanted(&self) -> bool {
        self.n > 0
    }

    /// Replaces the series with the busiest peers of the open flows `open`.
    pub fn update(&self, open: &[&TrackedFlow]) {
        self.rate.reset();
        self.flows.reset();
        if self.n == 0 {
            return;
        }
        let pairs: Vec<(&Flow, &Attribution)> =
            open.iter().map(|t| (&t.flow, &t.current)).collect();
        let mut groups = group(&pairs, GroupBy::Peer, &self.cfg);
        groups.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.key.cmp(&b.key)));
        // The throughput is the flows' rates over the last poll added up,
        // as `top_flow_rate_bytes_per_second` gives each: the group's own
        // rate spans its flows' windows, which end at each flow's last
        // sample, not at one instant.
        let mut now: HashMap<(u32, String, Direction), f64> = HashMap::new();
        for t in open {
            let key = (
                t.flow.netns,
                GroupBy::Peer.key(&t.flow),
                Direction::of(t.current.side),
            );
            *now.entry(key).or_default() += t.history.back().map_or(0.0, |h| h.rate_bps);
        }
        for g in groups.iter().take(self.n) {
            let netns = g.netns.to_string();
            let labels = [
                netns.as_str(),
                g.key.as_str(),
                g.direction.name(),
                g.limit.name(),
            ];
            let bps = now
                .get(&(g.netns, g.key.clone(), g.direction))
                .copied()
                .unwrap_or(0.0);
            self.rate.with_label_values(&labels).set(bps / 8.0);
            self.flows
                .with_label_values(&labels)
                .set(i64::try_from(g.flows).unwrap_or(i64::MAX));
        }
    }
}
