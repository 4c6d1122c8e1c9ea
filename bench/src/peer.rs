//! The peer in the same run: what observer's programs cost per segment,
//! all of them together, as a ratio to a one-map bpftrace counter on the
//! per-segment hook.
//!
//! Absolute nanoseconds on a shared VM move from run to run (the floor of
//! an empty program alone spread 67-106 ns across runs here); a ratio to a
//! peer measured in the same run, rounds alternated, does not. The peer is
//! the smallest program a network engineer would write to watch every
//! segment: Debian's bpftrace, [`PEER_SCRIPT`], one hash map keyed by the
//! ports, one increment per run. observer's side is the sum of every
//! observer program's run time over the load (the per-segment, per-read,
//! per-write, state-change and poll-time programs), divided by the
//! segments `tcp_probe` saw: what a segment costs with observer on, set
//! against what it costs with the peer on.

use std::{
    collections::{BTreeMap, BTreeSet},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::Context as _;
use pathemu::ChildGuard;

use super::{
    Stat,
    env::{Agent, Netns},
    throughput::{ProgCost, add_costs, prog_costs},
};

/// The peer: bpftrace's one-map counter of segments by port pair on the
/// per-segment tracepoint (the classic tracepoint `tcp:tcp_probe`, the
/// hook `observer_tcp_probe` takes as a BTF tracepoint).
pub const PEER_SCRIPT: &str = "tracepoint:tcp:tcp_probe { @[args->sport, args->dport] = count(); }";

/// Where bpftrace reads tracepoint formats; the bench mounts it when it
/// is not (a fresh VM has it empty).
const TRACEFS: &str = "/sys/kernel/tracing";

/// bpftrace running [`PEER_SCRIPT`]; killed (its programs detached) on drop.
pub struct Peer {
    _child: ChildGuard,
    /// The kernel ids of the programs it loaded.
    ids: BTreeSet<u32>,
}

/// `BPF_PROG_TYPE_TRACEPOINT` (include/uapi/linux/bpf.h), the type of
/// bpftrace's `tracepoint:` programs (aya does not re-export its enum).
const BPF_PROG_TYPE_TRACEPOINT: u32 = 5;

/// The ids of the loaded tracepoint programs.
fn tracepoint_programs() -> BTreeSet<u32> {
    aya::programs::loaded_programs()
        .filter_map(Result::ok)
        .filter(|p| p.program_type() as u32 == BPF_PROG_TYPE_TRACEPOINT)
        .map(|p| p.id())
        .collect()
}

/// Mounts tracefs at [`TRACEFS`] unless its events are there already.
fn mount_tracefs() -> anyhow::Result<()> {
    if std::path::Path::new(TRACEFS).join("events/tcp").exists() {
        return Ok(());
    }
    let ok = Command::new("mount")
        .args(["-t", "tracefs", "nodev", TRACEFS])
        .status()
        .context("running mount -t tracefs")?;
    anyhow::ensure!(ok.success(), "mount -t tracefs nodev {TRACEFS} failed");
    Ok(())
}

impl Peer {
    /// Starts bpftrace and waits (up to 20 s) until its program is loaded.
    ///
    /// # Errors
    /// bpftrace missing (`apt install bpftrace`), tracefs not mountable, or
    /// no new program within the wait.
    pub fn attach() -> anyhow::Result<Peer> {
        mount_tracefs()?;
        let before = tracepoint_programs();
        let mut c = Command::new("bpftrace");
        c.args(["-e", PEER_SCRIPT])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child = ChildGuard::spawn(&mut c)
            .context("starting bpftrace (the benchmark's peer; apt install bpftrace)")?;
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            let ids: BTreeSet<u32> = tracepoint_programs().difference(&before).copied().collect();
            if !ids.is_empty() {
                // Attached once loaded: bpftrace attaches right after.
                std::thread::sleep(Duration::from_millis(300));
                return Ok(Peer { _child: child, ids });
            }
            anyhow::ensure!(child.running(), "bpftrace exited before attaching");
            anyhow::ensure!(Instant::now() < end, "bpftrace loaded no program in 20 s");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Its programs' run time and runs so far.
    pub fn cost(&self) -> ProgCost {
        aya::programs::loaded_programs()
            .filter_map(Result::ok)
            .filter(|p| self.ids.contains(&p.id()))
            .fold(ProgCost::default(), |a, p| ProgCost {
                ns: a.ns + p.run_time().as_nanos() as u64,
                hits: a.hits + p.run_count(),
            })
    }
}

/// observer against the peer on one load.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct PeerComparison {
    /// What ran: `bulk` or `rr`.
    pub load: String,
    /// Streams (bulk) or connections (rr).
    pub flows: u32,
    /// observer's programs per segment over the peer's ns per run, per
    /// round.
    pub ratio: Stat,
    /// Every observer program's run time over the load divided by the runs
    /// of `observer_tcp_probe` (ns per segment), per round.
    pub observer_ns_per_segment: Stat,
    /// The peer's run time per run (ns), per round.
    pub peer_ns_per_run: Stat,
    /// Each observer program's share of `observer_ns_per_segment`: its run
    /// time over the load divided by the runs of `observer_tcp_probe` (ns
    /// per segment), median over the rounds, by the 15 characters of its
    /// name the kernel keeps. Empty in results written before it was kept.
    #[serde(default)]
    pub programs: BTreeMap<String, f64>,
    /// The floors under observer's side: empty programs on the hooks
    /// where observer ran a program in the same round (of
    /// [`super::floor::FLOORS`]: the per-packet hook, and the per-read one
    /// only where observer attached it), attached alone over the same
    /// load, their run time summed over the runs of the per-packet one
    /// (ns per segment), per round. What observer's programs would cost
    /// with nothing in them; 0 in results written before it was measured.
    /// Results before 2026-12-06 summed both hooks whatever observer ran.
    #[serde(default)]
    pub floors_ns_per_segment: Stat,
    /// Each empty program's run time per run of its own (ns), median over
    /// the rounds, by the name the kernel keeps.
    #[serde(default)]
    pub floor_ns_per_run: BTreeMap<String, f64>,
}

/// What each loaded program named `prefix*` ran during one `load`, by
/// the name the kernel keeps.
fn costs_over(
    prefix: &str,
    load: &mut dyn FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<BTreeMap<String, ProgCost>> {
    let before = prog_costs(prefix);
    load()?;
    let mut ran = BTreeMap::new();
    add_costs(&mut ran, &before, &prog_costs(prefix));
    Ok(ran)
}

/// One round of observer's side: every program's run time per segment
/// (ns), by program.
type Round = BTreeMap<String, f64>;

/// One load with observer's agent running: each of its programs' run time
/// over the segments `observer_tcp_probe` saw (ns per segment).
fn observer_side(
    ns: &Netns,
    load: &mut dyn FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<Round> {
    let agent = Agent::start_in(Some(ns), &["--poll-read", "on"])?;
    let ran = costs_over("observer_", load)?;
    drop(agent);
    let segments = ran
        .get(&super::floor::kept(super::floor::OBSERVER_PROBE))
        .map_or(0, |c| c.hits);
    anyhow::ensure!(
        segments > 0,
        "observer_tcp_probe did not run during the load"
    );
    Ok(ran
        .into_iter()
        .map(|(name, c)| (name, c.ns as f64 / segments as f64))
        .collect())
}

/// One load with only the empty programs of [`super::floor::FLOORS`]
/// attached: each one's run time over the per-packet floor's runs (ns per
/// segment), and its ns per run of its own, by the name the kernel keeps.
fn floors_side(
    load: &mut dyn FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<(BTreeMap<String, f64>, BTreeMap<String, f64>)> {
    let hooks: Vec<_> = super::floor::FLOORS.iter().map(|f| (f.0, f.1)).collect();
    let floors =
        super::floor::Floor::attach_programs(&hooks).context("attaching the empty programs")?;
    let ran = costs_over("bench_floor", load)?;
    drop(floors);
    let segments = ran.get(super::floor::FLOOR_PROGRAM).map_or(0, |c| c.hits);
    anyhow::ensure!(segments > 0, "the empty program on tcp_probe did not run");
    let per_segment = ran
        .iter()
        .map(|(name, c)| (name.clone(), c.ns as f64 / segments as f64))
        .collect();
    let per_run = ran
        .into_iter()
        .filter(|(_, c)| c.hits > 0)
        .map(|(name, c)| (name, c.ns as f64 / c.hits as f64))
        .collect();
    Ok((per_segment, per_run))
}

/// The floors under one round of observer's side `ours` (its programs' ns
/// per segment, by kept name): the empty programs' ns per segment summed
/// over the hooks where observer's side ran a program (by default no read
/// hook runs: the poll-time walks replace it).
fn floors_under(ours: &Round, floors: &BTreeMap<String, f64>) -> f64 {
    use super::floor::{hooks_observer_ran, kept};
    hooks_observer_ran(ours)
        .filter_map(|(floor, _, _)| floors.get(&kept(floor)))
        .sum()
}

/// One load with the peer attached: its ns per run.
fn peer_side(load: &mut dyn FnMut() -> anyhow::Result<()>) -> anyhow::Result<f64> {
    let peer = Peer::attach()?;
    let before = peer.cost();
    load()?;
    let after = peer.cost();
    let runs = after.hits.saturating_sub(before.hits);
    anyhow::ensure!(runs > 0, "the peer did not run during the load");
    Ok(after.ns.saturating_sub(before.ns) as f64 / runs as f64)
}

/// `rounds` rounds of one load with observer, one with the peer and one
/// with the empty programs alone, their order rotated each round so drift
/// favours none.
///
/// # Errors
/// The agent, the peer or a load failed.
pub fn compare(
    ns: &Netns,
    load_name: &str,
    flows: u32,
    rounds: usize,
    mut load: impl FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<PeerComparison> {
    let (mut ours, mut peers, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let mut by_program: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let (mut floors, mut by_floor) = (Vec::new(), BTreeMap::<String, Vec<f64>>::new());
    for round in 0..rounds {
        let (mut o, mut p, mut f) = (None, None, None);
        for side in 0..3 {
            match (side + round) % 3 {
                0 => o = Some(observer_side(ns, &mut load)?),
                1 => p = Some(peer_side(&mut load)?),
                _ => f = Some(floors_side(&mut load)?),
            }
        }
        let (Some(o), Some(p), Some((f, per_run))) = (o, p, f) else {
            anyhow::bail!("a side of round {round} did not run");
        };
        floors.push(floors_under(&o, &f));
        for (name, v) in per_run {
            by_floor.entry(name).or_default().push(v);
        }
        let total: f64 = o.values().sum();
        for (name, v) in o {
            by_program.entry(name).or_default().push(v);
        }
        ours.push(total);
        peers.push(p);
        ratios.push(if p > 0.0 { total / p } else { 0.0 });
    }
    Ok(PeerComparison {
        load: load_name.to_string(),
        flows,
        ratio: Stat::of(&ratios),
        observer_ns_per_segment: Stat::of(&ours),
        peer_ns_per_run: Stat::of(&peers),
        programs: by_program
            .into_iter()
            .map(|(name, v)| (name, Stat::of(&v).median))
            .collect(),
        floors_ns_per_segment: Stat::of(&floors),
        floor_ns_per_run: by_floor
            .into_iter()
            .map(|(name, v)| (name, Stat::of(&v).median))
            .collect(),
    })
}

/// The four comparisons: bulk at 1 and 4 streams, request/response at 1
/// and 16 connections, `rounds` rounds of `secs` each side.
///
/// # Errors
/// As [`compare`].
pub fn all(rounds: usize, secs: u64) -> anyhow::Result<Vec<PeerComparison>> {
    let mut out = Vec::new();
    for streams in [1u32, 4] {
        let ns = Netns::new(&format!("peer-bulk{streams}"))?;
        out.push(compare(&ns, "bulk", streams, rounds, || {
            super::throughput::transfer(&ns, secs, streams).map(drop)
        })?);
    }
    for connections in [1u32, 16] {
        let ns = Netns::new(&format!("peer-rr{connections}"))?;
        out.push(compare(&ns, "rr", connections, rounds, || {
            super::rr::run(&ns, connections as usize, secs).map(drop)
        })?);
    }
    Ok(out)
}

/// The worst (largest) median ratio over the comparisons of `load`; 0
/// when none ran.
pub fn worst(comparisons: &[PeerComparison], load: &str) -> f64 {
    comparisons
        .iter()
        .filter(|c| c.load == load)
        .map(|c| c.ratio.median)
        .fold(0.0, f64::max)
}
