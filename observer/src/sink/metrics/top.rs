//! The opt-in per-flow gauges of the `--top-flows` fastest flows: the only
//! metrics whose labels carry endpoints, so their series count is capped
//! at N. A flow is named by its network namespace and endpoints (`netns`,
//! `local`, `remote`): two containers may each have a flow between the
//! same addresses and ports, so a join must be `on(instance, netns, local,
//! remote)`. The info gauge also carries the namespace's `ip netns` name
//! (`netns_name`, `""` where it has none), to read beside the inode, and
//! the second limit named beside the verdict (`also`, `""` where none:
//! docs/attribution.md, "Matched limits").

use prometheus::{GaugeVec, IntGaugeVec};

use super::registrar::Registrar;
use crate::track::tracked::TrackedFlow;

/// Rate, srtt and verdict of the N fastest open flows.
pub(super) struct TopFlows {
    n: usize,
    rate: GaugeVec,
    srtt: GaugeVec,
    info: IntGaugeVec,
}

impl TopFlows {
    /// Defines and registers the gauges for the `n` fastest flows (none
    /// are set when `n` is 0).
    pub fn new(r: &Registrar, n: usize) -> Result<TopFlows, prometheus::Error> {
        Ok(TopFlows {
            n,
            rate: r.gauge_vec(
                "observer_top_flow_rate_bytes_per_second",
                "Throughput of the --top-flows fastest flows over the last poll.",
                &["netns", "local", "remote"],
            )?,
            srtt: r.gauge_vec(
                "observer_top_flow_srtt_seconds",
                "Smoothed RTT of the --top-flows fastest flows.",
                &["netns", "local", "remote"],
            )?,
            info: r.int_gauge_vec(
                "observer_top_flow_info",
                "Verdict, second limit, process and namespace name of the --top-flows fastest \
                 flows (value 1).",
                &[
                    "netns",
                    "local",
                    "remote",
                    "verdict",
                    "also",
                    "comm",
                    "netns_name",
                ],
            )?,
        })
    }

    /// Whether any per-flow gauge is asked for (`--top-flows` above 0).
    pub fn wanted(&self) -> bool {
        self.n > 0
    }

    /// Replaces the series with the fastest of the open flows `open`.
    pub fn update(&self, open: &[&TrackedFlow]) {
        self.rate.reset();
        self.srtt.reset();
        self.info.reset();
        if self.n == 0 {
            return;
        }
        let mut open: Vec<_> = open
            .iter()
            .map(|t| (t.history.back().map_or(0.0, |h| h.rate_bps), t))
            .collect();
        open.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (rate, t) in open.into_iter().take(self.n) {
            let (netns, local, remote) = (
                t.flow.netns.to_string(),
                t.flow.local.to_string(),
                t.flow.remote.to_string(),
            );
            let lr = [netns.as_str(), local.as_str(), remote.as_str()];
            self.rate.with_label_values(&lr).set(rate / 8.0);
            self.srtt
                .with_label_values(&lr)
                .set(f64::from(t.flow.srtt_us) / 1e6);
            let also = t.current.also.as_ref().map_or("", |a| a.verdict.name());
            self.info
                .with_label_values(&[
                    netns.as_str(),
                    local.as_str(),
                    remote.as_str(),
                    t.current.verdict.name(),
                    also,
                    t.flow.comm.as_str(),
                    t.flow.netns_name.as_deref().unwrap_or(""),
                ])
                .set(1);
        }
    }
}
