//! Metrics about the observed flows: how many start and close, the bytes
//! they move and the time they spend limited, by verdict, and the
//! distributions of their RTTs, rates, durations and sizes.

use prometheus::{CounterVec, Histogram, HistogramVec, IntCounterVec, IntGaugeVec};

use super::{
    labels::Labeller,
    registrar::{Registrar, exp_buckets},
};
use crate::{
    attribution::{Attribution, LimitedTime, Verdict},
    model::flow::Flow,
    track::tracked::TrackedFlow,
};

/// The per-flow metrics; each aggregated by the opt-in labels after its own.
pub(super) struct FlowMetrics {
    started: IntCounterVec,
    closed: IntCounterVec,
    bytes_acked: IntCounterVec,
    bytes_received: IntCounterVec,
    limited_seconds: CounterVec,
    retransmits: IntCounterVec,
    active: IntGaugeVec,
    srtt: Histogram,
    min_rtt: Histogram,
    queue_delay: Histogram,
    throughput: Histogram,
    duration: HistogramVec,
    size: HistogramVec,
}

impl FlowMetrics {
    /// Defines and registers the flow metrics.
    pub fn new(r: &Registrar) -> Result<FlowMetrics, prometheus::Error> {
        let rtt = exp_buckets(0.0001, 2.0, 16)?; // 100 µs .. 3.3 s
        let m = FlowMetrics {
            started: r.counter_vec(
                "observer_flows_started_total",
                "TCP flows seen starting (or first seen, for flows older than the agent).",
                &r.with(&[]),
            )?,
            closed: r.counter_vec(
                "observer_flows_closed_total",
                "TCP flows closed, by the verdict over their observed life.",
                &r.with(&["verdict"]),
            )?,
            bytes_acked: r.counter_vec(
                "observer_bytes_acked_total",
                "Bytes acknowledged by peers (sent by this host), by the flow's current verdict.",
                &r.with(&["verdict"]),
            )?,
            bytes_received: r.counter_vec(
                "observer_bytes_received_total",
                "Bytes received by this host, by the flow's current verdict.",
                &r.with(&["verdict"]),
            )?,
            limited_seconds: r.seconds_vec(
                "observer_limited_seconds_total",
                "Flow-seconds by what held the sender, in the verdicts' names: receive_window \
                 (the peer's window), send_buffer, congestion_window (in-flight >= cwnd), path \
                 (busy otherwise: pacing, a full bottleneck), application (idle: nothing to send).",
                &r.with(&["reason"]),
            )?,
            retransmits: r.counter_vec(
                "observer_retransmitted_segments_total",
                "TCP segments retransmitted by observed flows.",
                &r.with(&[]),
            )?,
            active: r.int_gauge_vec(
                "observer_active_flows",
                "Open TCP flows, by current verdict.",
                &r.with(&["verdict"]),
            )?,
            srtt: r.histogram(
                "observer_flow_srtt_seconds",
                "Smoothed RTT of flows that moved data, sampled once per poll per flow.",
                rtt.clone(),
            )?,
            min_rtt: r.histogram(
                "observer_flow_min_rtt_seconds",
                "Minimum RTT of flows that moved data, sampled once per poll per flow.",
                rtt.clone(),
            )?,
            queue_delay: r.histogram(
                "observer_flow_queue_delay_seconds",
                "Standing queue (srtt - min_rtt) of flows that moved data, once per poll per flow.",
                rtt,
            )?,
            throughput: r.histogram(
                "observer_flow_throughput_bytes_per_second",
                "Bytes a flow moved over the last poll (the larger of acked and received) per \
                 second, once per poll per flow that moved data: counts scale with --interval, \
                 and at a fixed interval each observation weighs one poll of one flow. Not the \
                 kernel's delivery-rate sample (the JSON's delivery_rate_bps).",
                exp_buckets(1_000.0, 4.0, 12)?, // 1 kB/s .. 4 GB/s
            )?,
            duration: r.histogram_vec(
                "observer_flow_duration_seconds",
                "Observed life of closed flows.",
                exp_buckets(0.001, 4.0, 12)?,
                &["verdict"],
            )?,
            size: r.histogram_vec(
                "observer_flow_size_bytes",
                "Bytes moved (acked plus received) by closed flows.",
                exp_buckets(1_024.0, 4.0, 14)?,
                &["verdict"],
            )?,
        };
        if r.aggregation.is_empty() {
            // Without aggregation labels, the unlabelled counters are there
            // (at 0) from the start, as a plain counter would be.
            m.started.with_label_values(&[] as &[&str]);
            m.retransmits.with_label_values(&[] as &[&str]);
        }
        Ok(m)
    }

    /// A flow was first seen.
    pub fn started(&self, labels: &mut Labeller, flow: Option<&Flow>) {
        let l = labels.values(&[], flow);
        self.started.with_label_values(&l).inc();
    }

    /// A flow moved data since the previous poll, under `verdict`.
    pub fn moved(
        &self,
        labels: &mut Labeller,
        verdict: Verdict,
        (bytes_acked, bytes_received): (u64, u64),
        tracked: Option<&TrackedFlow>,
    ) {
        let l = labels.values(&[verdict.name()], tracked.map(|t| &t.flow));
        self.bytes_acked.with_label_values(&l).inc_by(bytes_acked);
        self.bytes_received
            .with_label_values(&l)
            .inc_by(bytes_received);
        if let Some(t) = tracked {
            let f = &t.flow;
            self.srtt.observe(f64::from(f.srtt_us) / 1e6);
            self.min_rtt.observe(f64::from(f.min_rtt_us) / 1e6);
            self.queue_delay
                .observe(f64::from(f.srtt_us.saturating_sub(f.min_rtt_us)) / 1e6);
            if let Some(h) = t.history.back() {
                self.throughput.observe(h.rate_bps / 8.0);
            }
        }
    }

    /// Segments `flow` retransmitted since the previous poll.
    pub fn retransmitted(&self, labels: &mut Labeller, flow: Option<&Flow>, segments: u64) {
        if segments == 0 {
            return;
        }
        let l = labels.values(&[], flow);
        self.retransmits.with_label_values(&l).inc_by(segments);
    }

    /// A flow closed with life verdict `life`.
    pub fn closed(&self, labels: &mut Labeller, life: &Attribution, flow: &Flow, duration_s: f64) {
        let l = labels.values(&[life.verdict.name()], Some(flow));
        self.closed.with_label_values(&l).inc();
        let v = [life.verdict.name()];
        self.duration.with_label_values(&v).observe(duration_s);
        self.size
            .with_label_values(&v)
            .observe(flow.bytes_acked as f64 + flow.bytes_received as f64);
    }

    /// Adds limited time `t`: one flow's (`flow`), or, without
    /// aggregation labels, one poll's summed over flows (`flow` `None`).
    pub fn limited(&self, labels: &mut Labeller, flow: Option<&Flow>, t: &LimitedTime) {
        for (reason, us) in [
            (Verdict::ReceiveWindow, t.rwnd_us),
            (Verdict::SendBuffer, t.sndbuf_us),
            (Verdict::CongestionWindow, t.cwnd_us),
            (Verdict::Path, t.other_busy_us),
            (Verdict::Application, t.idle_us),
        ] {
            if us == 0 && flow.is_some() {
                continue;
            }
            let l = labels.values(&[reason.name()], flow);
            self.limited_seconds
                .with_label_values(&l)
                .inc_by(us as f64 / 1e6);
        }
    }

    /// Removes every series whose aggregation labels are `agg` (a label
    /// set the limiter forgot): counters restart from zero if it comes
    /// back, as a new series.
    pub fn forget(&self, agg: &[String]) {
        fn with<'a>(first: &'a str, agg: &'a [String]) -> Vec<&'a str> {
            std::iter::once(first)
                .chain(agg.iter().map(String::as_str))
                .collect()
        }
        let bare: Vec<&str> = agg.iter().map(String::as_str).collect();
        // Errors say the series did not exist: nothing to remove.
        let _ = self.started.remove_label_values(&bare);
        let _ = self.retransmits.remove_label_values(&bare);
        for v in Verdict::ALL {
            let l = with(v.name(), agg);
            let _ = self.closed.remove_label_values(&l);
            let _ = self.bytes_acked.remove_label_values(&l);
            let _ = self.bytes_received.remove_label_values(&l);
            let _ = self.active.remove_label_values(&l);
            let _ = self.limited_seconds.remove_label_values(&l);
        }
    }

    /// Sets the open-flow gauge, without aggregation labels or a filter,
    /// from the count of open flows per verdict (every verdict, even at
    /// zero, so dashboards see the series).
    pub fn active_by_verdict(&self, open: impl Iterator<Item = (Verdict, u64)>) {
        for (v, n) in open {
            self.active
                .with_label_values(&[v.name()])
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// Sets the open-flow gauge from the open flows `open` (those the
    /// agent's filter selects).
    pub fn active(&self, labels: &mut Labeller, open: &[&TrackedFlow]) {
        self.active.reset();
        if labels.names().is_empty() {
            // Count per verdict without building label sets per flow, in
            // one pass.
            let mut n = [0u64; Verdict::ALL.len()];
            for t in open {
                if let Some(i) = Verdict::ALL.iter().position(|v| *v == t.current.verdict) {
                    n[i] += 1;
                }
            }
            self.active_by_verdict(Verdict::ALL.into_iter().zip(n));
            return;
        }
        for t in open {
            let l = labels.values(&[t.current.verdict.name()], Some(&t.flow));
            self.active.with_label_values(&l).inc();
        }
    }
}
