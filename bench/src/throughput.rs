//! Throughput overhead: loopback bulk TCP with and without observer,
//! alternating over rounds; and the kernel cost per probe hit meanwhile.

use std::{collections::BTreeMap, time::Duration};

use anyhow::Context as _;
use pathemu::ChildGuard;
use scenarios::traffic::parse_iperf;

use super::{
    Stat,
    env::{Agent, Netns},
};

/// Per-program kernel cost readings (`kernel.bpf_stats_enabled`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ProgCost {
    /// run_time_ns summed.
    pub ns: u64,
    /// run_cnt summed.
    pub hits: u64,
}

/// One reading of the loaded programs whose name starts with a prefix:
/// each one's name and run-time totals, by program id.
pub type Readings = BTreeMap<u32, (String, ProgCost)>;

/// run_time/run_cnt of each loaded program whose name starts with
/// `prefix`, by id (`kernel.bpf_stats_enabled` must be on).
pub fn prog_costs(prefix: &str) -> Readings {
    aya::programs::loaded_programs()
        .filter_map(Result::ok)
        .filter_map(|p| {
            let name = p.name_as_str().filter(|n| n.starts_with(prefix))?;
            Some((
                p.id(),
                (
                    name.to_string(),
                    ProgCost {
                        ns: p.run_time().as_nanos() as u64,
                        hits: p.run_count(),
                    },
                ),
            ))
        })
        .collect()
}

/// Adds to `totals`, by program name, what each program ran between the
/// readings `before` and `after` ([`prog_costs`]). Only programs loaded
/// at both count: another agent's programs that load or unload in
/// between (an earlier round's, still unloading; another observer on the
/// host) would add a whole life's runs, or take them away.
pub fn add_costs(totals: &mut BTreeMap<String, ProgCost>, before: &Readings, after: &Readings) {
    for (id, (name, c)) in after {
        let Some((_, b)) = before.get(id) else {
            continue;
        };
        let t = totals.entry(name.clone()).or_default();
        t.ns += c.ns.saturating_sub(b.ns);
        t.hits += c.hits.saturating_sub(b.hits);
    }
}

/// What the programs of `before` and `after` ran in between, all of them
/// together ([`add_costs`]).
pub fn ran_between(before: &Readings, after: &Readings) -> ProgCost {
    let mut by_name = BTreeMap::new();
    add_costs(&mut by_name, before, after);
    by_name
        .into_values()
        .fold(ProgCost::default(), |a, c| ProgCost {
            ns: a.ns + c.ns,
            hits: a.hits + c.hits,
        })
}

/// Mean ns per run of the programs named `prefix*` during one `secs`
/// transfer of `streams` streams in `ns`.
///
/// # Errors
/// The transfer failed, or the programs did not run.
pub fn cost_during(ns: &Netns, secs: u64, streams: u32, prefix: &str) -> anyhow::Result<f64> {
    let before = prog_costs(prefix);
    transfer(ns, secs, streams)?;
    let ran = ran_between(&before, &prog_costs(prefix));
    anyhow::ensure!(ran.hits > 0, "no runs of {prefix} during the transfer");
    Ok(ran.ns as f64 / ran.hits as f64)
}

/// Each program's share of `secs` seconds, from its run-time totals
/// (programs that never ran are left out).
pub fn shares(totals: BTreeMap<String, ProgCost>, secs: f64) -> Vec<ProgramShare> {
    let secs = secs.max(1e-9);
    totals
        .into_iter()
        .filter(|(_, c)| c.hits > 0)
        .map(|(name, c)| ProgramShare {
            name,
            ns_per_hit: c.ns as f64 / c.hits as f64,
            hits_per_s: c.hits as f64 / secs,
            cpu_pct: c.ns as f64 / secs / 1e7,
        })
        .collect()
}

/// One program's share during the with-rounds.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ProgramShare {
    /// Program name (as the kernel keeps it: 15 characters).
    pub name: String,
    /// Mean ns per run.
    pub ns_per_hit: f64,
    /// Runs per second.
    pub hits_per_s: f64,
    /// Share of one CPU (%).
    pub cpu_pct: f64,
}

/// Turns `kernel.bpf_stats_enabled` on for its life, back to what it was after.
pub struct BpfStats(String);

impl BpfStats {
    /// Enables the kernel's per-program run-time accounting.
    pub fn enable() -> anyhow::Result<BpfStats> {
        let path = "/proc/sys/kernel/bpf_stats_enabled";
        let was = std::fs::read_to_string(path).context("reading bpf_stats_enabled")?;
        std::fs::write(path, "1").context("enabling bpf_stats")?;
        Ok(BpfStats(was.trim().to_string()))
    }
}

impl Drop for BpfStats {
    fn drop(&mut self) {
        let _ = std::fs::write("/proc/sys/kernel/bpf_stats_enabled", &self.0);
    }
}

/// One iperf3 loopback transfer in `ns`: throughput in bits/s.
pub fn transfer(ns: &Netns, secs: u64, streams: u32) -> anyhow::Result<f64> {
    let mut server = ns.command("iperf3");
    server
        .args(["-s", "-1", "-p", "5399"])
        .stdout(std::process::Stdio::null());
    let _server = ChildGuard::spawn(&mut server)?;
    std::thread::sleep(Duration::from_millis(300));
    let out = ns
        .command("iperf3")
        .args([
            "-c",
            "127.0.0.1",
            "-p",
            "5399",
            "-J",
            "-t",
            &secs.to_string(),
        ])
        .args(["-P", &streams.to_string()])
        .output()
        .context("running iperf3")?;
    let r = parse_iperf(&String::from_utf8_lossy(&out.stdout))?;
    anyhow::ensure!(r.error.is_none(), "iperf3: {:?}", r.error);
    Ok(r.sum_bps)
}

/// Results of the throughput comparison for one stream count.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Overhead {
    /// Streams.
    pub streams: u32,
    /// with / without observer, per round.
    pub ratio: Stat,
    /// A/A control: a second transfer without observer / the first, per
    /// round (how far two identical sides differ on this machine).
    #[serde(default)]
    pub aa_ratio: Stat,
    /// Throughput without observer (bits/s).
    pub without_bps: Stat,
    /// Throughput with observer (bits/s).
    pub with_bps: Stat,
    /// Kernel ns per hit of the per-packet program during the with-rounds.
    pub probe_ns_per_hit: f64,
    /// Per-packet program hits per second during the with-rounds.
    pub probe_hits_per_s: f64,
    /// Every observer program's run time during the with-rounds.
    #[serde(default)]
    pub programs: Vec<ProgramShare>,
    /// Kernel ns per hit of an empty program on the same hook, measured in
    /// one more transfer without the agent: the floor on this machine.
    pub floor_ns_per_hit: f64,
}

/// Alternates transfers with and without the agent for `rounds` rounds,
/// plus a second transfer without it in each round: the A/A control, whose
/// ratio to the first shows how far two identical sides drift apart here.
pub fn overhead(streams: u32, rounds: usize, secs: u64) -> anyhow::Result<Overhead> {
    let ns = Netns::new(&format!("tp{streams}"))?;
    let mut secs_sum = 0.0;
    let mut totals = BTreeMap::<String, ProgCost>::new();
    let a = super::alternate(
        rounds,
        || {
            // In the load's namespace: see `Agent::start_in`.
            let agent = Agent::start_in(Some(&ns), &["--poll-read", "on"])?;
            let before = prog_costs("observer_");
            let w = transfer(&ns, secs, streams)?;
            add_costs(&mut totals, &before, &prog_costs("observer_"));
            secs_sum += secs as f64;
            drop(agent);
            Ok(w)
        },
        || transfer(&ns, secs, streams),
    )?;
    let probe = totals
        .get(&super::floor::kept(super::floor::OBSERVER_PROBE))
        .copied()
        .unwrap_or_default();
    let floor = {
        let _floor = super::floor::Floor::attach().context("attaching the empty program")?;
        cost_during(&ns, secs, streams, super::floor::FLOOR_PROGRAM)?
    };
    Ok(Overhead {
        programs: shares(totals, secs_sum),
        floor_ns_per_hit: floor,
        streams,
        ratio: Stat::of(&a.ratios),
        aa_ratio: Stat::of(&a.aa),
        without_bps: Stat::of(&a.without),
        with_bps: Stat::of(&a.with),
        probe_ns_per_hit: if probe.hits > 0 {
            probe.ns as f64 / probe.hits as f64
        } else {
            0.0
        },
        probe_hits_per_s: probe.hits as f64 / secs_sum.max(1e-9),
    })
}
