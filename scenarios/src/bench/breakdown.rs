//! Where the per-packet program's time goes: a load (the one-stream
//! transfer, or one request/response connection) with an empty program on
//! the hook, then with `observer_tcp_probe` cut short after each of its
//! stages (`observer_common::packet_stages`), the probes loaded in this
//! process. Each stage's cost is the difference to the one before.

use anyhow::Context as _;
use observer::kernel::{load::probe_config::ProbeConfig, probes::Probes};
use observer_common::packet_stages;

use super::{
    env::Netns,
    throughput::{cost_during, prog_costs, ran_between},
};

/// One row of the breakdown.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct StageCost {
    /// What runs, cumulatively.
    pub stage: String,
    /// Mean kernel ns per hit with the program cut after this stage.
    pub ns_per_hit: f64,
    /// What this stage adds over the one before (ns).
    pub adds_ns: f64,
}

/// The load a breakdown runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// One bulk stream (iperf3), whose segments mostly pass the gate's
    /// hold.
    Bulk,
    /// One request/response connection, 64 bytes each way: every segment
    /// ends a burst.
    RequestResponse,
}

/// `program`'s kernel ns per hit over `secs` of `load` in `ns`.
fn cost(ns: &Netns, load: Load, secs: u64, program: &str) -> anyhow::Result<f64> {
    match load {
        Load::Bulk => cost_during(ns, secs, 1, program),
        Load::RequestResponse => {
            let before = prog_costs(program);
            super::rr::run(ns, 1, secs)?;
            let ran = ran_between(&before, &prog_costs(program));
            anyhow::ensure!(ran.hits > 0, "no runs of {program} during the transactions");
            Ok(ran.ns as f64 / ran.hits as f64)
        }
    }
}

/// Measures each stage over `secs` of `load` (kernel.bpf_stats_enabled
/// must be on), on top of `floor`, the empty program's ns per hit (for
/// the bulk load, what [`super::throughput::overhead`] measured for one
/// stream; None: measured here first, on the same load).
///
/// # Errors
/// A load, attach or transfer failed.
pub fn stages(load: Load, secs: u64, floor: Option<f64>) -> anyhow::Result<Vec<StageCost>> {
    let ns = Netns::new("stages")?;
    let floor = match floor {
        Some(f) => f,
        None => {
            let attached = super::floor::Floor::attach().context("attaching the floor")?;
            let f = cost(&ns, load, secs, super::floor::FLOOR_PROGRAM)?;
            drop(attached);
            f
        }
    };
    let mut rows = Vec::new();
    rows.push((
        "an empty program on tcp_probe (trampoline, run-time accounting)",
        floor,
    ));
    for (stage, what) in [
        (packet_stages::CAST, "+ self-counter, bpf_skc_to_tcp_sock"),
        (
            packet_stages::GATE,
            "+ socket cookie, segment flags, per-CPU sample gate",
        ),
        (
            packet_stages::LOOKUP,
            "+ flow-map (LRU hash) lookup, for hits the gate lets through",
        ),
        (
            packet_stages::REFRESH,
            "+ refresh: ~35 tcp_sock loads, bpf_ktime_get_ns, map-value writes",
        ),
        (
            packet_stages::ALL,
            "+ the segment's effect from TCP_SKB_CB (the agent's program)",
        ),
    ] {
        let probes = Probes::load(ProbeConfig {
            object: observer::kernel::load::objects::Object(
                observer::kernel::load::objects::BENCH_OBJECT,
            ),
            packet_stages: stage,
            ..ProbeConfig::default()
        })
        .context("loading the probes")?;
        rows.push((what, cost(&ns, load, secs, "observer_tcp_pr")?));
        drop(probes);
    }
    let mut out = Vec::new();
    let mut prev = 0.0;
    for (what, v) in rows {
        out.push(StageCost {
            stage: what.to_string(),
            ns_per_hit: v,
            adds_ns: v - prev,
        });
        prev = v;
    }
    Ok(out)
}

/// Measures each candidate flow-state lookup ([`super::floor::CANDIDATES`])
/// alone on `tcp_probe` over a `secs` one-stream transfer, against `floor`.
///
/// # Errors
/// A load, attach or transfer failed.
pub fn candidates(secs: u64, floor: f64) -> anyhow::Result<Vec<StageCost>> {
    let ns = Netns::new("candidates")?;
    let mut out = Vec::new();
    for (program, what) in super::floor::CANDIDATES {
        let attached = super::floor::Floor::attach_program(program)
            .with_context(|| format!("attaching {program}"))?;
        let ns_per_hit = cost_during(&ns, secs, 1, program)?;
        drop(attached);
        out.push(StageCost {
            stage: (*what).to_string(),
            ns_per_hit,
            adds_ns: ns_per_hit - floor,
        });
    }
    Ok(out)
}
