//! Metrics about observer itself: the kernel programs' self-counters, the
//! flow map's fill, the agent's table, poll time, label overflow and the
//! build.

use observer_common::Counter;
use prometheus::{Gauge, Histogram, IntCounter, IntCounterVec, IntGauge};

use super::registrar::{Registrar, exp_buckets};
use crate::{
    filter::Filter,
    track::{live::Book, poller::PollStats},
};

/// The agent's own health.
pub(super) struct AgentMetrics {
    kernel: IntCounterVec,
    /// Kernel counters as of the last update, in [`Counter::ALL`] order.
    kernel_last: [u64; Counter::COUNT as usize],
    /// `recursion_misses` as of the last update.
    recursion_misses_last: u64,
    map_fill: Gauge,
    tracked: IntGauge,
    poll_duration: Histogram,
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
        r.int_gauge(
            "observer_programs_attached",
            "eBPF programs attached to a kernel hook (one kernel link each).",
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
        Ok(AgentMetrics {
            kernel: r.counter_vec(
                "observer_kernel_events_total",
                "Self-counters of the kernel programs: probe_hits, flows_created, flows_closed, \
                 ringbuf_drops, lru_evictions, read_errors, map_errors, owner_updates; and \
                 recursion_misses, program runs the kernel skipped because the program was \
                 already running on that CPU.",
                &["event"],
            )?,
            kernel_last: [0; Counter::COUNT as usize],
            recursion_misses_last: 0,
            map_fill: r.gauge(
                "observer_flow_map_fill_ratio",
                "Tracked flows over the kernel flow map's max_entries.",
            )?,
            tracked: r.int_gauge("observer_tracked_flows", "Flows in the agent's flow table.")?,
            poll_duration: r.histogram(
                "observer_poll_duration_seconds",
                "Time one poll of the kernel maps took.",
                exp_buckets(0.0001, 4.0, 10)?,
            )?,
            label_overflow: r.counter(
                "observer_label_sets_overflow_total",
                "Label sets folded into 'other' because the --max-label-sets cap was reached.",
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
        book: &Book,
        max_flows: u32,
    ) {
        for c in Counter::ALL {
            let i = c as usize;
            let delta = counters[i].saturating_sub(self.kernel_last[i]);
            self.kernel.with_label_values(&[c.name()]).inc_by(delta);
            self.kernel_last[i] = counters[i];
        }
        let delta = stats
            .recursion_misses
            .saturating_sub(self.recursion_misses_last);
        self.kernel
            .with_label_values(&["recursion_misses"])
            .inc_by(delta);
        self.recursion_misses_last = stats.recursion_misses;
        let open = book.flows().filter(|t| !t.is_closed()).count();
        self.tracked.set(book.len() as i64);
        self.map_fill.set(open as f64 / f64::from(max_flows.max(1)));
        self.poll_duration.observe(stats.took_us as f64 / 1e6);
    }

    /// Counts the label sets folded since the last call (`total` so far).
    pub fn label_overflow(&mut self, total: u64) {
        self.label_overflow
            .inc_by(total.saturating_sub(self.label_overflow_last));
        self.label_overflow_last = total;
    }
}
