//! Where the per-packet program's time goes: a load (bulk streams, or one
//! request/response connection) with an empty program on the hook, then
//! with `observer_tcp_probe` cut short after each of its stages
//! (`observer_common::packet_stages`), the probes loaded in this process
//! as the agent loads them. Each stage's cost is the difference to the one
//! before.

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
    /// Bulk streams (iperf3), whose segments mostly meet the gate's hold.
    Bulk(u32),
    /// One request/response connection, 64 bytes each way: every segment
    /// ends a burst.
    RequestResponse,
}

/// The stages, cumulatively, in the program's order: what each adds.
const STAGES: [(u32, &str); 9] = [
    (packet_stages::CAST, "+ self-counter, bpf_skc_to_tcp_sock"),
    (
        packet_stages::COOKIE,
        "+ socket cookie, the segment's flags, ACK and length",
    ),
    (
        packet_stages::SLOT,
        "+ this CPU's per-packet slot of the flow",
    ),
    (
        packet_stages::ARRIVAL,
        "+ arrival spacing (bpf_ktime_get_ns)",
    ),
    (packet_stages::NOTES, "+ delivery-rate note"),
    (
        packet_stages::GATE,
        "+ reader and end-of-burst checks, sample gate, stored clocks",
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
];

/// `program`'s kernel ns per hit over `secs` of `load` in `ns`, with
/// `probes` (if any) read once a second meanwhile as the agent reads them:
/// the poll-time read's walk is what lets the gate hold the ends of bursts.
fn cost(
    ns: &Netns,
    load: Load,
    secs: u64,
    program: &str,
    mut probes: Option<&mut Probes>,
) -> anyhow::Result<f64> {
    let before = prog_costs(program);
    std::thread::scope(|scope| {
        let run = scope.spawn(|| match load {
            Load::Bulk(streams) => super::throughput::transfer(ns, secs, streams).map(|_| ()),
            Load::RequestResponse => super::rr::run(ns, 1, secs).map(|_| ()),
        });
        let (mut active, mut closed) = (Vec::new(), Vec::new());
        while !run.is_finished() {
            if let Some(p) = probes.as_deref_mut() {
                p.read(&mut active, &mut closed);
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        run.join()
            .map_err(|_| anyhow::anyhow!("the load's thread panicked"))?
    })?;
    let ran = ran_between(&before, &prog_costs(program));
    anyhow::ensure!(ran.hits > 0, "no runs of {program} during the load");
    Ok(ran.ns as f64 / ran.hits as f64)
}

/// Measures each stage over `secs` of `load` (kernel.bpf_stats_enabled
/// must be on), as the agent loads the programs (the poll-time read on,
/// read every 200 ms from inside the load's namespace), after an empty
/// program on the hook. `passes`
/// passes over the stages, in turn (so that drift over the run falls on
/// every stage alike); each stage's figure is its median over them.
///
/// # Errors
/// A load, attach or transfer failed.
pub fn stages(load: Load, secs: u64, passes: usize) -> anyhow::Result<Vec<StageCost>> {
    let ns = Netns::new("stages")?;
    let _inside = ns.enter()?;
    let mut runs: Vec<Vec<f64>> = vec![Vec::new(); STAGES.len() + 1];
    for _ in 0..passes.max(1) {
        let attached = super::floor::Floor::attach().context("attaching the floor")?;
        runs[0].push(cost(&ns, load, secs, super::floor::FLOOR_PROGRAM, None)?);
        drop(attached);
        for (i, (stage, _)) in STAGES.iter().enumerate() {
            let mut probes = Probes::load(ProbeConfig {
                object: observer::kernel::load::objects::Object(
                    observer::kernel::load::objects::BENCH_OBJECT,
                ),
                packet_stages: *stage,
                poll_read: true,
                ..ProbeConfig::default()
            })
            .context("loading the probes")?;
            runs[i + 1].push(cost(&ns, load, secs, "observer_tcp_pr", Some(&mut probes))?);
            drop(probes);
        }
    }
    let names = std::iter::once("an empty program on tcp_probe (trampoline, run-time accounting)")
        .chain(STAGES.iter().map(|(_, what)| *what));
    let mut out = Vec::new();
    let mut prev = 0.0;
    for (what, mut v) in names.zip(runs) {
        v.sort_by(f64::total_cmp);
        let median = v[v.len() / 2];
        out.push(StageCost {
            stage: what.to_string(),
            ns_per_hit: median,
            adds_ns: median - prev,
        });
        prev = median;
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
