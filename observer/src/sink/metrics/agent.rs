//! Metrics about observer itself: the kernel programs' self-counters, the
//! flow map's fill, the agent's table, poll time, label overflow and the
//! build.

use observer_common::Counter;
use std::collections::HashMap;

use prometheus::{CounterVec, Gauge, Histogram, IntCounter, IntCounterVec, IntGauge};

use super::registrar::{Registrar, exp_buckets};
use crate::{
    filter::Filter,
    track::{live::LiveFlows, poller::PollStats},
};

/// One eBPF program's run statistics, as the kernel counts them
/// (`bpf_prog_info`: `run_cnt`, `run_time_ns`, with
/// `kernel.bpf_stats_enabled` on).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProgramRuns {
    /// The program's name.
    pub name: String,
    /// Runs so far.
    pub runs: u64,
    /// Time spent in it so far (ns).
    pub run_time_ns: u64,
}

/// The agent's own health.
pub(super) struct AgentMetrics {
    programs_attached: IntGauge,
    /// One counter per kernel self-counter, in [`Counter::ALL`] order.
    kernel: Vec<IntCounter>,
    /// Kernel counters as of the last update, in [`Counter::ALL`] order.
    kernel_last: [u64; Counter::COUNT as usize],
    /// `recursion_misses` as of the last update.
    recursion_misses_last: u64,
    recursion_misses: IntCounter,
    /// `parked_evicted` as of the last update.
    parked_evicted_last: u64,
    parked_evicted: IntCounter,
    program_runs: IntCounterVec,
    program_run_seconds: CounterVec,
    /// Per program: its runs as of the last update.
    program_last: HashMap<String, ProgramRuns>,
    map_fill: Gauge,
    tracked: IntGauge,
    poll_duration: Histogram,
    walking: IntGauge,
    walk_seconds: Gauge,
    label_overflow: IntCounter,
    /// Label sets folded as of the last update.
    label_overflow_last: u64,
}

impl AgentMetrics {
    /// Defines and registers the agent's metrics; `programs` is the value
    /// of `observer_programs_attached`, `filter` the label of
    /// `observer_filter_info`.
    pub fn new(
        r: &Registrar,
        programs: i64,
        filter: Option<&Filter>,
    ) -> Result<AgentMetrics, prometheus::Error> {
        r.int_gauge_vec(
            "observer_filter_info",
            "The flow filter (--filter) the flow metrics count by; \"\" when every flow counts (value 1).",
            &["filter"],
        )?
        .with_label_values(&[filter.map_or("", Filter::text)])
        .set(1);
        let programs_attached = r.int_gauge(
            "observer_programs_attached",
            "eBPF programs attached to a kernel hook (one kernel link each), counted at each poll.",
        )?;
        programs_attached.set(programs);
        r.int_gauge(
            "observer_programs_attached_at_start",
            "eBPF programs the agent attached at start: observer_programs_attached below it \
             means one is gone.",
        )?
        .set(programs);
        r.int_gauge_vec(
            "observer_build_info",
            "observer's version, the commit it was built from and the compiler (value 1).",
            &["version", "revision", "rustc"],
        )?
        .with_label_values(&[
            env!("CARGO_PKG_VERSION"),
            env!("OBSERVER_REVISION"),
            env!("OBSERVER_RUSTC"),
        ])
        .set(1);
        let kernel = Counter::ALL
            .iter()
            .map(|c| {
                let (name, help) = kernel_metric(*c);
                r.counter(name, help)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(AgentMetrics {
            programs_attached,
            kernel,
            kernel_last: [0; Counter::COUNT as usize],
            recursion_misses_last: 0,
            recursion_misses: r.counter(
                "observer_recursion_misses_total",
                "Runs of observer's programs the kernel skipped because the program was already \
                 running on that CPU (bpf_prog_info.recursion_misses, Linux 5.12+): samples lost.",
            )?,
            parked_evicted_last: 0,
            parked_evicted: r.counter(
                "observer_parked_closes_evicted_total",
                "Closed-flow records parked in the flow map (observer_close_records_parked_total) \
                 that the map's LRU evicted before a poll read them: lost. Counted from parked \
                 minus read, so it may rise a poll late. With --pin, also what a replaced set \
                 of programs lost.",
            )?,
            program_runs: r.counter_vec(
                "observer_program_runs_total",
                "Runs of each attached program (bpf_prog_info.run_cnt): counted only while the \
                 sysctl kernel.bpf_stats_enabled is 1, as ebpf_exporter's are.",
                &["program"],
            )?,
            program_run_seconds: r.seconds_vec(
                "observer_program_run_seconds_total",
                "Time spent in each attached program (bpf_prog_info.run_time_ns): counted only \
                 while kernel.bpf_stats_enabled is 1.",
                &["program"],
            )?,
            program_last: HashMap::new(),
            map_fill: r.gauge(
                "observer_flow_map_fill_ratio",
                "Flows in the kernel flow map over its max_entries (the --max-flows it was made with).",
            )?,
            tracked: r.int_gauge("observer_tracked_flows", "Flows in the agent's flow table.")?,
            poll_duration: r.histogram(
                "observer_poll_duration_seconds",
                "Time one poll of the kernel maps took.",
                exp_buckets(0.0001, 4.0, 10)?,
            )?,
            walking: r.int_gauge(
                "observer_poll_read_walking",
                "1 while the poll-time read walks the sockets at each poll; 0 where it is paused \
                 (its walk took over its budget, 1% of the interval in CPU time under --poll-read \
                 auto: the programs then sample every segment that ends a burst) or does not run \
                 (--poll-read off, or a kernel before 5.11: every segment that ends a burst \
                 and every read that drains is sampled).",
            )?,
            walk_seconds: r.gauge(
                "observer_poll_read_walk_seconds",
                "CPU time the poll-time read's last walk took, user and kernel (a trial walk's \
                 while paused; the wall clock's where the thread's CPU clock cannot be read); 0 \
                 without one. Its budget under --poll-read auto is 1% of the interval.",
            )?,
            label_overflow: r.counter(
                "observer_label_sets_overflow_total",
                "Distinct aggregation label sets folded into 'other' because --max-label-sets were \
                 in use (each counted once until it goes unused for --label-idle).",
            )?,
            label_overflow_last: 0,
        })
    }

    /// Moves the counters to the kernel's (`counters`, in [`Counter::ALL`]
    /// order) and the poll's figures.
    pub fn update(
        &mut self,
        counters: &[u64; Counter::COUNT as usize],
        stats: &PollStats,
        live: &LiveFlows,
        max_flows: u32,
    ) {
        for (i, metric) in self.kernel.iter().enumerate() {
            metric.inc_by(counters[i].saturating_sub(self.kernel_last[i]));
            self.kernel_last[i] = counters[i];
        }
        self.recursion_misses.inc_by(
            stats
                .recursion_misses
                .saturating_sub(self.recursion_misses_last),
        );
        self.recursion_misses_last = stats.recursion_misses;
        self.parked_evicted.inc_by(
            stats
                .parked_evicted
                .saturating_sub(self.parked_evicted_last),
        );
        self.parked_evicted_last = stats.parked_evicted;
        let open = live.open_len();
        self.tracked.set(live.len() as i64);
        self.map_fill.set(open as f64 / f64::from(max_flows.max(1)));
        self.poll_duration.observe(stats.took_us as f64 / 1e6);
        let (walking, walk_us) = stats.walk.unwrap_or((false, 0));
        self.walking.set(i64::from(walking));
        self.walk_seconds.set(walk_us as f64 / 1e6);
    }

    /// Sets the count of programs attached now.
    pub fn attached(&self, n: usize) {
        self.programs_attached
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Moves the per-program counters to `programs`, each attached
    /// program's runs as the kernel counts them.
    pub fn programs(&mut self, programs: &[ProgramRuns]) {
        for p in programs {
            let last = self.program_last.entry(p.name.clone()).or_default();
            self.program_runs
                .with_label_values(&[&p.name])
                .inc_by(p.runs.saturating_sub(last.runs));
            self.program_run_seconds
                .with_label_values(&[&p.name])
                .inc_by(p.run_time_ns.saturating_sub(last.run_time_ns) as f64 / 1e9);
            *last = p.clone();
        }
    }

    /// Counts the label sets folded since the last call (`total` so far).
    pub fn label_overflow(&mut self, total: u64) {
        self.label_overflow
            .inc_by(total.saturating_sub(self.label_overflow_last));
        self.label_overflow_last = total;
    }
}

/// The metric of one kernel self-counter: its name and help.
fn kernel_metric(c: Counter) -> (&'static str, &'static str) {
    match c {
        Counter::ProbeHits => (
            "observer_probe_hits_total",
            "Samples the kernel programs took of a flow (per-segment, send, receive and state \
             hooks together).",
        ),
        Counter::FlowsCreated => (
            "observer_flow_map_inserts_total",
            "Entries the kernel programs created in the flow map.",
        ),
        Counter::FlowsClosed => (
            "observer_close_records_total",
            "Closed-flow records the kernel programs wrote to the ring buffer.",
        ),
        Counter::RingbufDrops => (
            "observer_ring_drops_total",
            "Closed-flow records lost: the ring buffer was full and the flow map could not keep \
             them either (a failed insert).",
        ),
        Counter::LruEvictions => (
            "observer_flow_map_evictions_total",
            "Flow-map entries created while the map was full: the kernel evicted the least \
             recently used flow (raise --max-flows).",
        ),
        Counter::ReadErrors => (
            "observer_kernel_read_errors_total",
            "Failed reads of kernel memory (bpf_probe_read_kernel) in the kernel programs.",
        ),
        Counter::MapErrors => (
            "observer_flow_map_errors_total",
            "Flow-map inserts that failed for a reason other than a full map.",
        ),
        Counter::OwnerUpdates => (
            "observer_owner_updates_total",
            "Times a flow's owner (pid, comm, cgroup) was set or changed from process context.",
        ),
        Counter::ClosesParked => (
            "observer_close_records_parked_total",
            "Closed-flow records the full ring buffer could not take (the agent stopped or slow), \
             kept in the flow map until the next poll read them there.",
        ),
    }
}
