//! The pinned side of [`crate::kernel::probes::Probes`]: pinning a freshly
//! loaded set, adopting a set an earlier agent pinned, and reading what a
//! replaced set still held ([`ReplacedSet`]). See [`crate::kernel::load::pin`].

use std::path::Path;

use aya::{
    Ebpf,
    maps::{Array, HashMap, Map, MapData, PerCpuArray, RingBuf},
    programs::{BtfTracePoint, links::FdLink, links::PinnedLink},
};
use observer_common::{FlowSample, MAP_CLOSED, MAP_COUNTERS, MAP_FLOWS, MAP_LIVE, MAP_POLL_SCOPE};

use std::os::fd::AsFd as _;

use crate::kernel::{
    load::attach::PollAttached,
    load::degraded::{Absence, Degraded},
    load::hooks::{self, AttachedHook},
    load::pin::{self, LINK_PREFIX, PROGRAM_PREFIX, PinDir, PinError},
    load::probe_error::ProbeError,
    load::probe_set::{ProbeSet, Programs},
    read::budgeted_walk::BudgetedWalk,
    read::closed_ring::ClosedDrain,
    read::parked::Parked,
    read::poll_iter::PollIter,
};

/// The maps an agent reads, pinned by their own names.
const PINNED_MAPS: [&str; 4] = [MAP_FLOWS, MAP_CLOSED, MAP_COUNTERS, MAP_LIVE];

fn pin_failed(path: &Path, what: &'static str, e: impl std::fmt::Display) -> ProbeError {
    ProbeError::Pin(PinError::Io {
        path: path.to_path_buf(),
        what,
        error: std::io::Error::other(e.to_string()),
    })
}

/// Pins the maps an agent reads, each attached program and its link
/// (`links` as attached), and the poll-time
/// read's program and link when there is one, into `set`. Returns the
/// pinned links, whose fds the agent keeps.
///
/// # Errors
/// [`ProbeError::Pin`] for the first object that could not be pinned.
pub fn pin_all(
    ebpf: &mut Ebpf,
    set: &Path,
    links: Vec<AttachedHook>,
    poll: Option<&PollAttached>,
) -> Result<Vec<PinnedLink>, ProbeError> {
    for name in PINNED_MAPS {
        let path = set.join(name);
        ebpf.map(name)
            .ok_or_else(|| crate::kernel::load::attach::missing_map(name))?
            .pin(&path)
            .map_err(|e| pin_failed(&path, "cannot pin the map", e))?;
    }
    let mut pinned = Vec::new();
    for AttachedHook { hook, link: id } in links {
        let (prog, tp) = (hook.program, hook.tracepoint);
        let p: &mut BtfTracePoint = ebpf
            .program_mut(prog)
            .ok_or(ProbeError::NoProgram(prog))?
            .try_into()
            .map_err(|error| ProbeError::Attach { hook: tp, error })?;
        let path = set.join(format!("{PROGRAM_PREFIX}{prog}"));
        p.pin(&path)
            .map_err(|e| pin_failed(&path, "cannot pin the program", e))?;
        let link = p
            .take_link(id)
            .map_err(|error| ProbeError::Attach { hook: tp, error })?;
        let path = set.join(format!("{LINK_PREFIX}{tp}"));
        pinned.push(
            FdLink::from(link)
                .pin(&path)
                .map_err(|e| pin_failed(&path, "cannot pin the link", e))?,
        );
    }
    // Optional for an adopting agent (sets of older builds lack it).
    let path = set.join(observer_common::MAP_JOURNAL);
    ebpf.map(observer_common::MAP_JOURNAL)
        .ok_or_else(|| crate::kernel::load::attach::missing_map(observer_common::MAP_JOURNAL))?
        .pin(&path)
        .map_err(|e| pin_failed(&path, "cannot pin the map", e))?;
    crate::kernel::load::layout::pin(set, crate::kernel::load::layout::ours())
        .map_err(ProbeError::Pin)?;
    if let Some(poll) = poll {
        let prog = poll.hook.program;
        let path = set.join(format!("{PROGRAM_PREFIX}{prog}"));
        ebpf.program_mut(prog)
            .ok_or(ProbeError::NoProgram(prog))?
            .pin(&path)
            .map_err(|e| pin_failed(&path, "cannot pin the program", e))?;
        let path = set.join(poll_link_file(poll.hook.name));
        pin::obj_pin(poll.iter.as_fd(), &path)
            .map_err(|e| pin_failed(&path, "cannot pin the link", e))?;
        // Which flows the walk reaches: the next agent pauses and resumes
        // it through this map ([`crate::kernel::read::budgeted_walk`]).
        let path = set.join(MAP_POLL_SCOPE);
        ebpf.map(MAP_POLL_SCOPE)
            .ok_or_else(|| crate::kernel::load::attach::missing_map(MAP_POLL_SCOPE))?
            .pin(&path)
            .map_err(|e| pin_failed(&path, "cannot pin the map", e))?;
    }
    Ok(pinned)
}

/// The file the poll-time read's link `hook` is pinned as.
fn poll_link_file(hook: &str) -> String {
    format!("{LINK_PREFIX}{}", hook.replace(':', "-"))
}

/// Whether the set at `set` has what an agent needs: the maps it reads
/// and the links of the hooks the load fails without (the hook table's
/// required ones). A set that lacks them
/// (removed by hand in part) is replaced, not adopted.
pub fn complete(set: &Path) -> bool {
    PINNED_MAPS.iter().all(|m| set.join(m).exists())
        && crate::kernel::load::hooks::required()
            .all(|h| set.join(format!("{LINK_PREFIX}{}", h.tracepoint)).exists())
}

/// Map `name` of the set at `set`, as `T`.
fn pinned_map<T>(set: &Path, name: &'static str) -> Result<T, ProbeError>
where
    T: TryFrom<Map, Error = aya::maps::MapError>,
{
    MapData::from_pin(set.join(name))
        .and_then(Map::from_map_data)
        .and_then(T::try_from)
        .map_err(|error| ProbeError::Map { name, error })
}

/// Adopts set `name` of `dir`, which an earlier agent of this build
/// pinned with these settings (`direct` socket reads or not): its programs
/// go on running, this agent reads its maps. `missing` are the kernel
/// members the offsets lack (for the warnings a load would give);
/// `budget` the walk's ([`BudgetedWalk`]), where the set has the poll-time read.
///
/// # Errors
/// A pinned map or link that cannot be opened.
pub(in crate::kernel) fn adopt(
    dir: PinDir,
    name: &str,
    direct: bool,
    missing: &[String],
    budget: Option<std::time::Duration>,
) -> Result<ProbeSet, ProbeError> {
    let set = dir.path().join(name);
    let entries = || -> Result<Vec<String>, ProbeError> {
        Ok(std::fs::read_dir(&set)
            .map_err(|error| {
                ProbeError::Pin(PinError::Io {
                    path: set.clone(),
                    what: "cannot list the set",
                    error,
                })
            })?
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .collect())
    };
    let entries = entries()?;
    let mut programs = Vec::new();
    for e in &entries {
        if let Some(prog) = e.strip_prefix(PROGRAM_PREFIX) {
            let path = set.join(e);
            let fd = pin::obj_get(&path)
                .map_err(|e| pin_failed(&path, "cannot open the pinned program", e))?;
            programs.push((prog.to_string(), fd));
        }
    }
    let mut pinned_links = Vec::new();
    let mut attached = Vec::new();
    let mut poll = None;
    for hook in hooks::tracepoints() {
        let file = format!("{LINK_PREFIX}{hook}");
        if entries.contains(&file) {
            let path = set.join(&file);
            pinned_links.push(
                PinnedLink::from_pin(&path)
                    .map_err(|e| pin_failed(&path, "cannot open the pinned link", e))?,
            );
            attached.push(hook);
        }
    }
    for iter in hooks::POLL_ITERS {
        let hook = iter.name;
        if entries.contains(&poll_link_file(hook)) {
            let path = set.join(poll_link_file(hook));
            let fd = pin::obj_get(&path)
                .map_err(|e| pin_failed(&path, "cannot open the pinned link", e))?;
            let scope = match pinned_map::<Array<MapData, u64>>(&set, MAP_POLL_SCOPE) {
                Ok(m) => Some(m),
                Err(e) => {
                    log::warn!(
                        "the pinned set has no scope map for the poll-time read ({e}): it walks \
                         at every poll, whatever it costs"
                    );
                    None
                }
            };
            let netns = crate::kernel::read::poll_iter::own_netns().unwrap_or(0);
            poll = Some(BudgetedWalk::adopted(
                PollIter::from_link(fd),
                scope,
                iter.reach,
                netns,
                budget,
            ));
            attached.push(hook);
        }
    }
    let mut degraded: Vec<Degraded> = missing
        .iter()
        .map(|member| Degraded::Member {
            member: member.clone(),
        })
        .collect();
    let has = |hook: &str| attached.contains(&hook);
    for hook in hooks::ATTACH_ORDER {
        if !has(hook.tracepoint) {
            let covered = hook.fallback.is_some_and(|f| has(f.tracepoint));
            degraded.extend(Degraded::hook_missing(hook, Absence::NotPinned, covered));
        }
    }
    if !direct {
        degraded.push(Degraded::PinnedHelperReads);
    }
    log::info!(
        "adopted the programs pinned in {} ({} attached)",
        set.display(),
        attached.len()
    );
    let ring: RingBuf<MapData> = pinned_map(&set, MAP_CLOSED)?;
    Ok(ProbeSet {
        flows: pinned_map::<HashMap<MapData, u64, FlowSample>>(&set, MAP_FLOWS)?,
        closed: ClosedDrain::at_polls(ring),
        counters: pinned_map::<PerCpuArray<MapData, u64>>(&set, MAP_COUNTERS)?,
        parked: Parked::new(pinned_map::<Array<MapData, u64>>(&set, MAP_LIVE)?),
        poll,
        owners: None,
        journal: crate::kernel::read::journal::open(pinned_map(&set, observer_common::MAP_JOURNAL)),
        programs: Programs::Adopted(programs),
        pinned_links,
        pin_dir: Some(dir),
        degraded,
        direct,
        attached,
    })
}

/// What a replaced set still held: its ring buffer and flow map, opened
/// before its links were removed, and its counters, for what it lost.
pub struct ReplacedSet {
    name: String,
    ring: Option<RingBuf<MapData>>,
    flows: Option<HashMap<MapData, u64, FlowSample>>,
    counters: Option<PerCpuArray<MapData, u64>>,
    live: Option<Array<MapData, u64>>,
}

impl ReplacedSet {
    /// Opens the ring and flow map of the set at `set`. Maps of another
    /// record layout (an older build) cannot be read: said once, and left.
    pub fn open(set: &Path) -> ReplacedSet {
        let name = set.display().to_string();
        let ring = pinned_map::<RingBuf<MapData>>(set, MAP_CLOSED);
        let flows = pinned_map::<HashMap<MapData, u64, FlowSample>>(set, MAP_FLOWS);
        if let Err(e) = ring.as_ref().map(|_| ()).and(flows.as_ref().map(|_| ())) {
            log::warn!(
                "{name}: cannot read what the replaced programs recorded ({e}): the flows \
                 that closed while no agent ran are not reported"
            );
        }
        ReplacedSet {
            name,
            ring: ring.ok(),
            flows: flows.ok(),
            counters: pinned_map(set, MAP_COUNTERS).ok(),
            live: pinned_map(set, MAP_LIVE).ok(),
        }
    }

    /// Kernel counter `c` of the set, summed over CPUs (0 if unreadable).
    fn counter(&self, c: observer_common::Counter) -> u64 {
        self.counters
            .as_ref()
            .and_then(|m| m.get(&(c as u32), 0).ok())
            .map_or(0, |v| v.iter().copied().fold(0u64, u64::wrapping_add))
    }

    /// Appends the close records the set held, in its ring and parked in
    /// its flow map, to `out`; returns how many it lost: its ring drops,
    /// and its parked records neither read by an agent nor still there.
    pub fn drain(mut self, out: &mut Vec<FlowSample>) -> u64 {
        let start = out.len();
        if let Some(ring) = self.ring.as_mut() {
            while let Some(item) = ring.next() {
                if let Some(s) = crate::kernel::read::closed_ring::decode(&item) {
                    out.push(s);
                }
            }
        }
        if let Some(flows) = &self.flows {
            out.extend(
                flows
                    .iter()
                    .filter_map(Result::ok)
                    .map(|(_, v)| v)
                    .filter(|s| s.closed_ns != 0),
            );
        }
        let parked_now = out[start..].iter().filter(|s| s.closed_ns != 0).count() as u64;
        let read = self
            .live
            .as_ref()
            .and_then(|m| m.get(&observer_common::LIVE_AGENT_REMOVED, 0).ok())
            .unwrap_or(0);
        let lost = self.counter(observer_common::Counter::RingbufDrops)
            + self
                .counter(observer_common::Counter::ClosesParked)
                .saturating_sub(read + parked_now);
        log::info!(
            "{}: {} close records read from the replaced programs' maps, {lost} lost",
            self.name,
            out.len() - start
        );
        lost
    }
}
