//! The metric catalogue: every series observer exports, defined once, and
//! how each poll's events move them. Labels never carry 5-tuples, except
//! the opt-in top-N per-flow gauges, whose series count is capped at N.

use prometheus::{
    Gauge, GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry,
};

use super::labels::{Aggregation, Limiter};
use crate::{
    attribution::Verdict,
    track::live::{Book, Event},
    track::poller::PollStats,
};
use observer_common::Counter;

/// Errors building the catalogue (a duplicate or malformed definition).
#[derive(Debug, thiserror::Error)]
#[error("metric definition: {0}")]
pub struct CatalogueError(#[from] prometheus::Error);

/// Limited-time reasons, in the order of `Event::Progress::limited_us`
/// (rwnd, sndbuf, cwnd, other busy, idle).
pub const REASONS: [&str; 5] = ["rwnd", "sndbuf", "cwnd", "path", "app"];

/// Every metric, registered in one registry.
pub struct Catalogue {
    /// The registry `/metrics` encodes.
    pub registry: Registry,
    agg: Aggregation,
    limiter: Limiter,
    top_n: usize,
    flows_started: IntCounterVec,
    flows_closed: IntCounterVec,
    bytes_acked: IntCounterVec,
    bytes_received: IntCounterVec,
    limited_seconds: prometheus::CounterVec,
    retransmits: IntCounter,
    active_flows: IntGaugeVec,
    srtt: Histogram,
    min_rtt: Histogram,
    queue_delay: Histogram,
    delivery_rate: Histogram,
    duration: HistogramVec,
    size: HistogramVec,
    top_rate: GaugeVec,
    top_srtt: GaugeVec,
    top_info: IntGaugeVec,
    kernel: IntCounterVec,
    kernel_last: [u64; Counter::COUNT as usize],
    /// `recursion_misses` as of the last update.
    recursion_misses_last: u64,
    map_fill: Gauge,
    tracked: IntGauge,
    programs: IntGauge,
    poll_duration: Histogram,
    label_overflow: IntCounter,
}

fn exp_buckets(start: f64, factor: f64, count: usize) -> Result<Vec<f64>, prometheus::Error> {
    prometheus::exponential_buckets(start, factor, count)
}

impl Catalogue {
    /// Defines and registers every metric.
    ///
    /// # Errors
    /// A malformed definition (a programming error caught by the tests).
    pub fn new(
        agg: Aggregation,
        label_cap: usize,
        top_n: usize,
        programs: i64,
    ) -> Result<Catalogue, CatalogueError> {
        let registry = Registry::new();
        let agg_names = agg.names();
        let with = |first: &[&'static str]| -> Vec<&'static str> {
            first
                .iter()
                .copied()
                .chain(agg_names.iter().copied())
                .collect()
        };
        let counter_vec = |name: &str, help: &str, labels: &[&str]| {
            IntCounterVec::new(Opts::new(name, help), labels)
        };
        let rtt = exp_buckets(0.0001, 2.0, 16)?; // 100 µs .. 3.3 s
        let c = Catalogue {
            flows_started: counter_vec(
                "observer_flows_started_total",
                "TCP flows seen starting (or first seen, for flows older than the agent).",
                &with(&[]),
            )?,
            flows_closed: counter_vec(
                "observer_flows_closed_total",
                "TCP flows closed, by the verdict over their observed life.",
                &with(&["verdict"]),
            )?,
            bytes_acked: counter_vec(
                "observer_bytes_acked_total",
                "Bytes acknowledged by peers (sent by this host), by the flow's current verdict.",
                &with(&["verdict"]),
            )?,
            bytes_received: counter_vec(
                "observer_bytes_received_total",
                "Bytes received by this host, by the flow's current verdict.",
                &with(&["verdict"]),
            )?,
            limited_seconds: prometheus::CounterVec::new(
                Opts::new(
                    "observer_limited_seconds_total",
                    "Flow-seconds by what held the sender: rwnd (peer's window), sndbuf (send buffer), \
                     cwnd (in-flight >= cwnd), path (busy otherwise: pacing, a full bottleneck), \
                     app (idle: nothing to send).",
                ),
                &["reason"],
            )?,
            retransmits: IntCounter::new(
                "observer_retransmitted_segments_total",
                "TCP segments retransmitted by observed flows.",
            )?,
            active_flows: IntGaugeVec::new(
                Opts::new("observer_active_flows", "Open TCP flows, by current verdict."),
                &with(&["verdict"]),
            )?,
            srtt: Histogram::with_opts(
                HistogramOpts::new(
                    "observer_flow_srtt_seconds",
                    "Smoothed RTT of flows that moved data, sampled once per poll per flow.",
                )
                .buckets(rtt.clone()),
            )?,
            min_rtt: Histogram::with_opts(
                HistogramOpts::new(
                    "observer_flow_min_rtt_seconds",
                    "Minimum RTT of flows that moved data, sampled once per poll per flow.",
                )
                .buckets(rtt.clone()),
            )?,
            queue_delay: Histogram::with_opts(
                HistogramOpts::new(
                    "observer_flow_queue_delay_seconds",
                    "Standing queue (srtt - min_rtt) of flows that moved data, once per poll per flow.",
                )
                .buckets(rtt),
            )?,
            delivery_rate: Histogram::with_opts(
                HistogramOpts::new(
                    "observer_flow_delivery_rate_bytes_per_second",
                    "Throughput of flows that moved data over the last poll interval, once per poll per flow.",
                )
                .buckets(exp_buckets(1_000.0, 4.0, 12)?), // 1 kB/s .. 4 GB/s
            )?,
            duration: HistogramVec::new(
                HistogramOpts::new("observer_flow_duration_seconds", "Observed life of closed flows.")
                    .buckets(exp_buckets(0.001, 4.0, 12)?),
                &["verdict"],
            )?,
            size: HistogramVec::new(
                HistogramOpts::new(
                    "observer_flow_size_bytes",
                    "Bytes moved (acked plus received) by closed flows.",
                )
                .buckets(exp_buckets(1_024.0, 4.0, 14)?),
                &["verdict"],
            )?,
            top_rate: GaugeVec::new(
                Opts::new(
                    "observer_top_flow_rate_bytes_per_second",
                    "Throughput of the --top-flows fastest flows over the last poll.",
                ),
                &["local", "remote"],
            )?,
            top_srtt: GaugeVec::new(
                Opts::new("observer_top_flow_srtt_seconds", "Smoothed RTT of the --top-flows fastest flows."),
                &["local", "remote"],
            )?,
            top_info: IntGaugeVec::new(
                Opts::new(
                    "observer_top_flow_info",
                    "Verdict and process of the --top-flows fastest flows (value 1).",
                ),
                &["local", "remote", "verdict", "comm"],
            )?,
            kernel: IntCounterVec::new(
                Opts::new(
                    "observer_kernel_events_total",
                    "Self-counters of the kernel programs: probe_hits, flows_created, flows_closed, \
                     ringbuf_drops, lru_evictions, read_errors, map_errors, owner_updates; and \
                     recursion_misses, program runs the kernel skipped because the program was \
                     already running on that CPU.",
                ),
                &["event"],
            )?,
            kernel_last: [0; Counter::COUNT as usize],
            recursion_misses_last: 0,
            map_fill: Gauge::new(
                "observer_flow_map_fill_ratio",
                "Tracked flows over the kernel flow map's max_entries.",
            )?,
            tracked: IntGauge::new("observer_tracked_flows", "Flows in the agent's flow table.")?,
            programs: IntGauge::new("observer_programs_attached", "eBPF programs attached.")?,
            poll_duration: Histogram::with_opts(
                HistogramOpts::new("observer_poll_duration_seconds", "Time one poll of the kernel maps took.")
                    .buckets(exp_buckets(0.0001, 4.0, 10)?),
            )?,
            label_overflow: IntCounter::new(
                "observer_label_sets_overflow_total",
                "Label sets folded into 'other' because the --max-label-sets cap was reached.",
            )?,
            agg,
            limiter: Limiter::new(label_cap),
            top_n,
            registry,
        };
        c.programs.set(programs);
        let build = IntGaugeVec::new(
            Opts::new("observer_build_info", "observer's version (value 1)."),
            &["version"],
        )?;
        build.with_label_values(&[env!("CARGO_PKG_VERSION")]).set(1);
        c.registry.register(Box::new(build))?;
        for m in c.collectors() {
            c.registry.register(m)?;
        }
        Ok(c)
    }

    fn collectors(&self) -> Vec<Box<dyn prometheus::core::Collector>> {
        vec![
            Box::new(self.flows_started.clone()),
            Box::new(self.flows_closed.clone()),
            Box::new(self.bytes_acked.clone()),
            Box::new(self.bytes_received.clone()),
            Box::new(self.limited_seconds.clone()),
            Box::new(self.retransmits.clone()),
            Box::new(self.active_flows.clone()),
            Box::new(self.srtt.clone()),
            Box::new(self.min_rtt.clone()),
            Box::new(self.queue_delay.clone()),
            Box::new(self.delivery_rate.clone()),
            Box::new(self.duration.clone()),
            Box::new(self.size.clone()),
            Box::new(self.top_rate.clone()),
            Box::new(self.top_srtt.clone()),
            Box::new(self.top_info.clone()),
            Box::new(self.kernel.clone()),
            Box::new(self.map_fill.clone()),
            Box::new(self.tracked.clone()),
            Box::new(self.programs.clone()),
            Box::new(self.poll_duration.clone()),
            Box::new(self.label_overflow.clone()),
        ]
    }

    /// Label values: `first` then the admitted aggregation values for `flow`.
    fn labels(&mut self, first: &[&str], flow: Option<&crate::model::flow::Flow>) -> Vec<String> {
        let agg = match flow {
            Some(f) => self.limiter.admit(self.agg.values(f)),
            None => self
                .agg
                .names()
                .iter()
                .map(|_| "unknown".to_string())
                .collect(),
        };
        first.iter().map(|s| s.to_string()).chain(agg).collect()
    }

    /// Moves the metrics by one poll.
    pub fn update(
        &mut self,
        events: &[Event],
        book: &Book,
        counters: &[u64; Counter::COUNT as usize],
        stats: &PollStats,
        max_flows: u32,
    ) {
        let overflow_before = self.limiter.overflowed;
        // rwnd, sndbuf, cwnd, other busy, idle (µs), as in Event::Progress.
        let mut limited = [0u64; 5];
        for e in events {
            match e {
                Event::Started { cookie } => {
                    let l = self.labels(&[], book.get(*cookie).map(|t| &t.flow));
                    self.flows_started.with_label_values(&l).inc();
                }
                Event::Progress {
                    cookie,
                    verdict,
                    bytes_acked,
                    bytes_received,
                    retransmits,
                    limited_us,
                } => {
                    // Summed over the poll, added once per reason below.
                    for (sum, us) in limited.iter_mut().zip(limited_us) {
                        *sum = sum.saturating_add(*us);
                    }
                    self.retransmits.inc_by(*retransmits);
                    if *bytes_acked == 0 && *bytes_received == 0 {
                        continue;
                    }
                    let tracked = book.get(*cookie);
                    let l = self.labels(&[verdict.name()], tracked.map(|t| &t.flow));
                    self.bytes_acked.with_label_values(&l).inc_by(*bytes_acked);
                    self.bytes_received
                        .with_label_values(&l)
                        .inc_by(*bytes_received);
                    if let Some(t) = tracked {
                        let f = &t.flow;
                        self.srtt.observe(f64::from(f.srtt_us) / 1e6);
                        self.min_rtt.observe(f64::from(f.min_rtt_us) / 1e6);
                        self.queue_delay
                            .observe(f64::from(f.srtt_us.saturating_sub(f.min_rtt_us)) / 1e6);
                        if let Some(h) = t.history.back() {
                            self.delivery_rate.observe(h.rate_bps / 8.0);
                        }
                    }
                }
                Event::Closed {
                    life,
                    flow,
                    duration_s,
                } => {
                    let l = self.labels(&[life.verdict.name()], Some(flow));
                    self.flows_closed.with_label_values(&l).inc();
                    let v = [life.verdict.name()];
                    self.duration.with_label_values(&v).observe(*duration_s);
                    self.size
                        .with_label_values(&v)
                        .observe(flow.bytes_acked as f64 + flow.bytes_received as f64);
                }
            }
        }
        for (reason, us) in REASONS.iter().zip(limited) {
            self.limited_seconds
                .with_label_values(&[reason])
                .inc_by(us as f64 / 1e6);
        }
        self.active(book);
        self.top(book);
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
        self.label_overflow
            .inc_by(self.limiter.overflowed - overflow_before);
    }

    fn active(&mut self, book: &Book) {
        self.active_flows.reset();
        if self.agg.names().is_empty() {
            // Count per verdict without building label sets per flow; every
            // verdict present, even at zero, so dashboards see the series.
            let mut n = [0i64; Verdict::ALL.len()];
            for t in book.flows().filter(|t| !t.is_closed()) {
                if let Some(i) = Verdict::ALL.iter().position(|v| *v == t.current.verdict) {
                    n[i] += 1;
                }
            }
            for (v, n) in Verdict::ALL.iter().zip(n) {
                self.active_flows.with_label_values(&[v.name()]).set(n);
            }
            return;
        }
        let open: Vec<_> = book.flows().filter(|t| !t.is_closed()).collect();
        for t in open {
            let l = self.labels(&[t.current.verdict.name()], Some(&t.flow));
            self.active_flows.with_label_values(&l).inc();
        }
    }

    fn top(&mut self, book: &Book) {
        self.top_rate.reset();
        self.top_srtt.reset();
        self.top_info.reset();
        if self.top_n == 0 {
            return;
        }
        let mut open: Vec<_> = book
            .flows()
            .filter(|t| !t.is_closed())
            .map(|t| (t.history.back().map_or(0.0, |h| h.rate_bps), t))
            .collect();
        open.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (rate, t) in open.into_iter().take(self.top_n) {
            let (local, remote) = (t.flow.local.to_string(), t.flow.remote.to_string());
            let lr = [local.as_str(), remote.as_str()];
            self.top_rate.with_label_values(&lr).set(rate / 8.0);
            self.top_srtt
                .with_label_values(&lr)
                .set(f64::from(t.flow.srtt_us) / 1e6);
            self.top_info
                .with_label_values(&[&local, &remote, t.current.verdict.name(), &t.flow.comm])
                .set(1);
        }
    }
}

#[cfg(test)]
#[path = "catalogue_tests.rs"]
mod tests;
