//! The metric catalogue: every series observer exports, in one registry,
//! and how each poll's events move them. The metrics themselves are
//! defined by concept, each group in its own file: `flows` (the
//! observed flows), `top` (the opt-in per-flow gauges), `peers` (the
//! opt-in per-peer gauges), `agent` (observer's own health) and
//! `endpoint` (the connections `/metrics` refused). Adding a
//! metric is one edit in its group's file. Labels never carry 5-tuples or
//! addresses, except the top-N gauges, whose series count is capped at N.

use std::collections::HashSet;

use observer_common::Counter;
use prometheus::Registry;

use super::{
    admission::Refusals,
    agent::AgentMetrics,
    flows::FlowMetrics,
    labels::{Aggregation, Labeller},
    peers::TopPeers,
    registrar::Registrar,
    top::TopFlows,
};
use crate::attribution::{Attribution, LimitedTime};
use crate::filter::Filter;
use crate::model::flow::Flow;
use crate::track::{event::Event, live::LiveFlows, poller::PollStats, tracked::TrackedFlow};

/// Errors building the catalogue (a duplicate or malformed definition).
#[derive(Debug, thiserror::Error)]
#[error("metric definition: {0}")]
pub struct CatalogueError(#[from] prometheus::Error);

/// What the catalogue exports, as `observer run`'s flags set it.
#[derive(Clone, Debug, Default)]
pub struct CatalogueConfig {
    /// The opt-in aggregation labels of per-flow metrics.
    pub aggregation: Aggregation,
    /// Most distinct aggregation label sets; later ones fold into `other`.
    pub max_label_sets: usize,
    /// How many of the fastest flows get per-flow gauges (0: none).
    pub top_flows: usize,
    /// How many of the peers that moved the most bytes get per-peer gauges
    /// (0: none).
    pub top_peers: usize,
    /// The thresholds the peers' groups are judged by.
    pub attribution: crate::attribution::Config,
    /// The value `observer_programs_attached` reports.
    pub programs_attached: i64,
    /// Count only the flows this expression selects (`observer run
    /// --filter`); every flow when `None`. Named by `observer_filter_info`.
    pub filter: Option<Filter>,
    /// How long an aggregation label set may go unused before its series
    /// are removed and its place under the cap is freed (zero: never).
    pub label_idle: std::time::Duration,
}

/// Every metric, registered in one registry.
pub struct Catalogue {
    /// The registry `/metrics` encodes.
    pub registry: Registry,
    labels: Labeller,
    flows: FlowMetrics,
    top: TopFlows,
    peers: TopPeers,
    agent: AgentMetrics,
    /// The counters of connections the endpoint refused.
    refusals: Refusals,
    /// The counts of the flow records written and dropped.
    flow_log: super::FlowLogCounters,
    filter: Option<Filter>,
    /// Flows seen starting whose owner was not known yet, with the
    /// `comm` or `cgroup` label on: counted in `flows_started_total` once
    /// it is (or at their close), so that the label is the process's, not
    /// `unknown` (an accepted flow has no owner until it is read from).
    pending_start: HashSet<u64>,
    /// Whether an aggregation label comes from the owner (`comm`, `cgroup`).
    owner_labels: bool,
}

impl Catalogue {
    /// Defines and registers every metric.
    ///
    /// # Errors
    /// A malformed definition (a programming error caught by the tests).
    pub fn new(cfg: CatalogueConfig) -> Result<Catalogue, CatalogueError> {
        let registry = Registry::new();
        let labels = Labeller::new(
            cfg.aggregation,
            cfg.max_label_sets,
            u64::try_from(cfg.label_idle.as_nanos()).unwrap_or(u64::MAX),
        );
        let names = labels.names();
        let r = Registrar {
            registry: &registry,
            aggregation: &names,
        };
        let flows = FlowMetrics::new(&r)?;
        let top = TopFlows::new(&r, cfg.top_flows)?;
        let peers = TopPeers::new(&r, cfg.top_peers, cfg.attribution)?;
        let agent = AgentMetrics::new(&r, cfg.programs_attached, cfg.filter.as_ref())?;
        let refusals = super::endpoint::refusals(&r)?;
        let flow_log = super::FlowLogCounters::new(&r)?;
        // The agent process's CPU, memory, open files and start time
        // (`process_*`, read from /proc/self and the CPU clock at each
        // scrape), as every Prometheus client library exports them.
        registry.register(Box::new(super::process::ProcessMetrics::for_self()?))?;
        Ok(Catalogue {
            registry,
            labels,
            flows,
            top,
            peers,
            agent,
            refusals,
            flow_log,
            filter: cfg.filter,
            pending_start: HashSet::new(),
            owner_labels: cfg.aggregation.comm
                || cfg.aggregation.cgroup
                || cfg.aggregation.workload,
        })
    }

    /// Moves the metrics by one poll: its `events`, the live flows after it,
    /// the kernel's self-`counters` and the poll's `stats`; `max_flows` is
    /// the kernel flow map's size.
    pub fn update(
        &mut self,
        events: &[Event],
        live: &LiveFlows,
        counters: &[u64; Counter::COUNT as usize],
        stats: &PollStats,
        max_flows: u32,
    ) {
        let mut limited = LimitedTime::default();
        let mut quiet = false;
        // With aggregation labels, limited time is labelled flow by flow;
        // without, one sum per poll costs five updates, not five per flow.
        let per_flow = !self.labels.names().is_empty();
        for e in events {
            match e {
                Event::Started { cookie } => {
                    let t = live.get(*cookie);
                    if !self.selects_tracked(t) {
                        continue;
                    }
                    let flow = t.map(|t| &t.flow);
                    if self.owner_labels && flow.is_some_and(|f| f.pid == 0) {
                        self.pending_start.insert(*cookie);
                    } else {
                        self.flows.started(&mut self.labels, flow);
                    }
                }
                Event::Progress {
                    cookie,
                    verdict,
                    bytes_acked,
                    bytes_received,
                    retransmits,
                    limited: l,
                } => {
                    // An idle flow's step (most of a poll's events on a
                    // busy host) is its limited time alone: without a
                    // filter or per-flow labels, no need to look it up.
                    if self.filter.is_none()
                        && !per_flow
                        && *bytes_acked == 0
                        && *bytes_received == 0
                        && *retransmits == 0
                    {
                        limited.add(l);
                        continue;
                    }
                    let t = live.get(*cookie);
                    if !self.selects_tracked(t) {
                        continue;
                    }
                    let flow = t.map(|t| &t.flow);
                    if per_flow {
                        self.flows.limited(&mut self.labels, flow, l);
                    } else {
                        // Summed over the poll, added once per reason below.
                        limited.add(l);
                    }
                    self.flows
                        .retransmitted(&mut self.labels, flow, *retransmits);
                    if *bytes_acked == 0 && *bytes_received == 0 {
                        continue;
                    }
                    self.flows.moved(
                        &mut self.labels,
                        *verdict,
                        (*bytes_acked, *bytes_received),
                        t,
                    );
                }
                // Without a filter or per-flow labels the live flows sum the
                // quiet flows' steps ([`Catalogue::idle_per_flow`]).
                Event::Quiet { limited: l, .. } => {
                    quiet = true;
                    limited.add(l);
                }
                Event::Closed {
                    life,
                    flow,
                    duration_s,
                } => {
                    if self.pending_start.remove(&flow.cookie) {
                        // Never owned while open: its start takes the
                        // close's owner (still `unknown` if it has none).
                        self.flows.started(&mut self.labels, Some(flow));
                    }
                    if self.selects(flow, life) {
                        self.flows.closed(&mut self.labels, life, flow, *duration_s);
                    }
                }
            }
        }
        if !per_flow || quiet {
            self.flows.limited(&mut self.labels, None, &limited);
        }
        self.start_owned(live);
        // The open flows one by one only where a filter, per-flow labels
        // or the top-N need them; else the live flows' open counts by verdict.
        let by_flow = self.idle_per_flow() || self.top.wanted() || self.peers.wanted();
        let open: Vec<&TrackedFlow> = if by_flow {
            live.flows()
                .filter(|t| !t.is_closed() && self.selects(&t.flow, &t.current))
                .collect()
        } else {
            Vec::new()
        };
        if self.idle_per_flow() {
            self.flows.active(&mut self.labels, &open);
        } else {
            self.flows.active_by_verdict(live.open_by_verdict());
        }
        self.top.update(&open);
        self.peers.update(&open);
        self.agent.update(counters, stats, live, max_flows);
        self.agent.label_overflow(self.labels.overflowed());
    }
}

impl Catalogue {
    /// Whether the metrics count flow by flow (a filter, or aggregation
    /// labels): the live flows must then make each quiet flow's step an event
    /// of its own ([`crate::track::live::LiveConfig::idle_per_flow`]).
    pub fn idle_per_flow(&self) -> bool {
        self.filter.is_some() || !self.labels.names().is_empty()
    }

    /// Sets the time label uses are stamped with (monotonic ns), and
    /// removes the series of the aggregation label sets unused for the
    /// configured idle time. Called once per poll, before [`Catalogue::update`].
    pub fn advance_to(&mut self, now_ns: u64) {
        self.labels.set_now(now_ns);
        for agg in self.labels.expire() {
            self.flows.forget(&agg);
        }
    }

    /// Moves the per-program counters: (name, runs, run time in ns) of
    /// each attached program ([`crate::kernel::probes::Probes::program_stats`]).
    pub fn programs(&mut self, programs: &[super::agent::ProgramRuns]) {
        self.agent.programs(programs);
    }

    /// The counters the endpoint's gate counts refused connections into
    /// ([`super::admission::Gate`]).
    pub fn refusals(&self) -> Refusals {
        self.refusals.clone()
    }

    /// The counters of the flow records `--records` writes.
    pub fn flow_log(&self) -> super::FlowLogCounters {
        self.flow_log.clone()
    }

    /// Whether the agent's filter selects `flow` judged `life` (every flow
    /// without a filter): whose records `--records` writes, closed or open.
    pub fn selects_record(&self, flow: &Flow, life: &Attribution) -> bool {
        self.selects(flow, life)
    }

    /// Sets `observer_programs_attached` to the programs attached now
    /// ([`crate::kernel::load::links::attached`]).
    pub fn attached(&mut self, n: usize) {
        self.agent.attached(n);
    }

    /// Counts the starts held back for an owner: those whose flow now has
    /// one, and those no longer tracked (forgotten, never closed).
    fn start_owned(&mut self, live: &LiveFlows) {
        if self.pending_start.is_empty() {
            return;
        }
        let labels = &mut self.labels;
        let flows = &self.flows;
        self.pending_start.retain(|c| match live.get(*c) {
            Some(t) if t.flow.pid == 0 => true,
            Some(t) => {
                flows.started(labels, Some(&t.flow));
                false
            }
            None => {
                flows.started(labels, None);
                false
            }
        });
    }

    /// Whether the agent's filter selects `flow` judged `attribution`.
    fn selects(&self, flow: &Flow, attribution: &Attribution) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|f| f.matches(flow, Some(attribution)))
    }

    /// [`Catalogue::selects`] for a tracked flow, by its current verdict;
    /// a flow no longer tracked is counted only without a filter.
    fn selects_tracked(&self, t: Option<&TrackedFlow>) -> bool {
        match t {
            Some(t) => self.selects(&t.flow, &t.current),
            None => self.filter.is_none(),
        }
    }
}

#[cfg(test)]
#[path = "catalogue_tests.rs"]
mod tests;
