//! The targets table of `docs/benchmarks.md`: each figure the benchmark
//! aims at, its target, and whether this run met it.

use super::report::Results;

/// Targets (issues "Overhead and scale benchmarks" and "Per-packet cost
/// near the floor"): bulk throughput with/without observer.
pub const TARGET_THROUGHPUT_RATIO: f64 = 0.98;
/// observer's own work per hit of the per-packet program above an empty
/// program on the same hook, averaged over a bulk transfer (ns).
pub const TARGET_OWN_NS: f64 = 50.0;
/// observer's own work per program run above the floor under connection churn (ns).
pub const TARGET_OWN_NS_CHURN: f64 = 100.0;
/// Request/response transactions/s with/without observer (median).
pub const TARGET_RR_RATIO: f64 = 0.97;
/// observer's programs during a bulk transfer, % of one CPU per Gbit/s.
pub const TARGET_BULK_CPU_PCT_PER_GBPS: f64 = 0.1;
/// observer's programs per segment, all of them, over a one-map bpftrace
/// counter's ns per run in the same run (bulk and request/response alike).
pub const TARGET_PEER_RATIO: f64 = 1.0;
/// CPU per request/response transaction at a fixed offered load, with
/// over without observer (median).
pub const TARGET_RR_CPU_RATIO: f64 = 1.02;
/// Agent CPU at 10k flows, % of one core.
pub const TARGET_CPU_PCT_10K: f64 = 1.0;
/// Poll of 100k flows, ms.
pub const TARGET_POLL_MS_100K: f64 = 15.0;

/// How a row of the targets table came out, against its target.
#[derive(Clone, Copy)]
enum Judgement {
    /// The part that measures it did not run (`--only`, or `--quick` for
    /// the 100k-flow step).
    NotRun(&'static str),
    /// Measured, with no target of its own.
    NoTarget,
    /// Measured against its target.
    Measured(bool),
}

impl Judgement {
    /// `Measured(ok)` where `ran`, else `NotRun(why)`.
    fn of(ran: bool, why: &'static str, ok: bool) -> Judgement {
        if ran {
            Judgement::Measured(ok)
        } else {
            Judgement::NotRun(why)
        }
    }

    /// `NoTarget` where `ran`, else `NotRun`.
    fn untargeted(ran: bool) -> Judgement {
        if ran {
            Judgement::NoTarget
        } else {
            Judgement::NotRun(NOT_RUN)
        }
    }

    fn text(self) -> &'static str {
        match self {
            Judgement::NotRun(why) => why,
            Judgement::NoTarget => "",
            Judgement::Measured(true) => "met",
            Judgement::Measured(false) => "MISSED",
        }
    }
}

/// What the table says of a part that did not run.
const NOT_RUN: &str = "not run";

impl Results {
    /// The targets table's rows as cells: measure, result (`-` where its
    /// part did not run), target, and met, MISSED or why not run.
    pub(super) fn target_table(&self) -> Vec<Vec<String>> {
        self.target_rows()
            .into_iter()
            .map(|(name, value, target, judged)| {
                let value = match judged {
                    Judgement::NotRun(_) => "-".to_string(),
                    _ => value,
                };
                vec![name.to_string(), value, target, judged.text().to_string()]
            })
            .collect()
    }

    /// The targets table's rows: measure, result, target, judgement.
    fn target_rows(&self) -> Vec<(&'static str, String, String, Judgement)> {
        let ran = |part: &str| self.parts.iter().any(|p| p == part);
        let (tp, agent, churn) = (ran("throughput"), ran("agent"), ran("churn"));
        let big = agent && self.scale.iter().any(|a| a.flows >= 100_000);
        let big_why = if agent && self.quick {
            "not run (--quick)"
        } else {
            NOT_RUN
        };
        let rr = ran("rr");
        let peer = ran("peer");
        vec![
            (
                "observer's programs per segment over a one-map bpftrace counter, bulk (the worse of 1 and 4 streams)",
                format!("{:.2}", self.peer_ratio_bulk),
                format!("<= {TARGET_PEER_RATIO}"),
                Judgement::of(peer, NOT_RUN, self.peer_ratio_bulk <= TARGET_PEER_RATIO),
            ),
            (
                "observer's programs per segment over a one-map bpftrace counter, request/response (the worse of 1 and 16 connections)",
                format!("{:.2}", self.peer_ratio_rr),
                format!("<= {TARGET_PEER_RATIO}"),
                Judgement::of(peer, NOT_RUN, self.peer_ratio_rr <= TARGET_PEER_RATIO),
            ),
            (
                "CPU per request/response transaction at a fixed load, with/without",
                format!("{:.3}", self.rr_cpu_ratio),
                format!("<= {TARGET_RR_CPU_RATIO}"),
                Judgement::of(
                    rr && self.fixed_load.is_some(),
                    NOT_RUN,
                    self.rr_cpu_ratio <= TARGET_RR_CPU_RATIO,
                ),
            ),
            (
                "CPU per request/response transaction at a fixed load, the bpftrace counter \
                 attached/without",
                format!(
                    "{:.3}",
                    self.fixed_load
                        .as_ref()
                        .map_or(0.0, |f| f.peer_ratio.median)
                ),
                "-".into(),
                Judgement::untargeted(
                    rr && self.fixed_load.as_ref().is_some_and(|f| f.peer_ratio.n > 0),
                ),
            ),
            (
                "request/response transactions/s with/without, 1 connection",
                format!("{:.3}", self.rr_ratio_1),
                format!(">= {TARGET_RR_RATIO}"),
                Judgement::of(rr, NOT_RUN, self.rr_ratio_1 >= TARGET_RR_RATIO),
            ),
            (
                "request/response transactions/s with/without, 16 connections",
                format!("{:.3}", self.rr_ratio_16),
                format!(">= {TARGET_RR_RATIO}"),
                Judgement::of(rr, NOT_RUN, self.rr_ratio_16 >= TARGET_RR_RATIO),
            ),
            (
                "throughput with/without, 1 stream",
                format!("{:.3}", self.throughput_ratio),
                format!(">= {TARGET_THROUGHPUT_RATIO}"),
                Judgement::of(
                    tp,
                    NOT_RUN,
                    self.throughput_ratio >= TARGET_THROUGHPUT_RATIO,
                ),
            ),
            (
                "throughput with/without, 4 streams",
                format!("{:.3}", self.throughput_ratio_p4),
                format!(">= {TARGET_THROUGHPUT_RATIO}"),
                Judgement::of(
                    tp,
                    NOT_RUN,
                    self.throughput_ratio_p4 >= TARGET_THROUGHPUT_RATIO,
                ),
            ),
            (
                "kernel ns per packet (bulk)",
                format!("{:.0}", self.probe_ns_per_hit),
                "-".into(),
                Judgement::untargeted(tp),
            ),
            (
                "kernel ns per hit of an empty program on the same hook (the floor here)",
                format!("{:.0}", self.floor_ns_per_hit),
                "-".into(),
                Judgement::untargeted(tp),
            ),
            (
                "observer's own ns per packet, above the floor (bulk)",
                format!("{:.0}", self.own_ns_per_hit),
                format!("<= {TARGET_OWN_NS}"),
                Judgement::of(tp, NOT_RUN, self.own_ns_per_hit <= TARGET_OWN_NS),
            ),
            (
                "observer's programs per Gbit/s (bulk, 1 stream)",
                format!("{:.3}% of a CPU", self.bulk_cpu_pct_per_gbps),
                format!("<= {TARGET_BULK_CPU_PCT_PER_GBPS}%"),
                Judgement::of(
                    tp,
                    NOT_RUN,
                    self.bulk_cpu_pct_per_gbps <= TARGET_BULK_CPU_PCT_PER_GBPS,
                ),
            ),
            (
                "kernel ns per program run (churn)",
                format!("{:.0}", self.probe_ns_per_hit_churn),
                "-".into(),
                Judgement::untargeted(churn),
            ),
            (
                "observer's own ns per program run, above the floor (churn)",
                format!("{:.0}", self.own_ns_per_run_churn),
                format!("<= {TARGET_OWN_NS_CHURN}"),
                Judgement::of(
                    churn && tp,
                    "not run (needs throughput and churn)",
                    self.own_ns_per_run_churn <= TARGET_OWN_NS_CHURN,
                ),
            ),
            (
                "agent CPU at 10k flows, 1 s interval",
                format!("{:.2}% of a core", self.agent_cpu_pct_10k_flows),
                format!("<= {TARGET_CPU_PCT_10K}%"),
                Judgement::of(
                    agent,
                    NOT_RUN,
                    self.agent_cpu_pct_10k_flows <= TARGET_CPU_PCT_10K,
                ),
            ),
            (
                "poll of 100k flows",
                format!("{:.1} ms", self.poll_ms_100k_flows),
                format!("<= {TARGET_POLL_MS_100K} ms"),
                Judgement::of(
                    big,
                    big_why,
                    self.poll_ms_100k_flows > 0.0 && self.poll_ms_100k_flows <= TARGET_POLL_MS_100K,
                ),
            ),
            (
                "agent CPU at 10k flows with --poll-read on",
                format!("{:.2}% of a core", self.agent_cpu_pct_10k_flows_walk),
                format!("<= {TARGET_CPU_PCT_10K}%"),
                Judgement::of(
                    agent && self.agent_cpu_pct_10k_flows_walk > 0.0,
                    NOT_RUN,
                    self.agent_cpu_pct_10k_flows_walk <= TARGET_CPU_PCT_10K,
                ),
            ),
            (
                "poll of 100k flows with --poll-read on",
                format!("{:.1} ms", self.poll_ms_100k_flows_walk),
                format!("<= {TARGET_POLL_MS_100K} ms"),
                Judgement::of(
                    big && self.poll_ms_100k_flows_walk > 0.0,
                    if big { NOT_RUN } else { big_why },
                    self.poll_ms_100k_flows_walk > 0.0
                        && self.poll_ms_100k_flows_walk <= TARGET_POLL_MS_100K,
                ),
            ),
            (
                "agent RSS at 100k flows",
                format!("{:.0} MiB", self.rss_mib_100k_flows),
                "bounded, stated".into(),
                Judgement::of(big, big_why, self.rss_mib_100k_flows > 0.0),
            ),
            (
                "flows reported / made at 10k conn/s",
                format!("{:.4}", self.churn_reported_ratio),
                "1.0, no drops".into(),
                Judgement::of(
                    churn,
                    NOT_RUN,
                    (self.churn_reported_ratio - 1.0).abs() < 1e-9 && self.churn_drops_10k == 0,
                ),
            ),
            (
                "`ss -tin` at 100k flows",
                format!("{:.1} ms", self.ss_poll_ms_100k_flows),
                if big {
                    format!("slower than observer's {:.1} ms", self.poll_ms_100k_flows)
                } else {
                    "slower than observer's poll".to_string()
                },
                Judgement::of(
                    big,
                    big_why,
                    self.ss_poll_ms_100k_flows > self.poll_ms_100k_flows,
                ),
            ),
        ]
    }
}
