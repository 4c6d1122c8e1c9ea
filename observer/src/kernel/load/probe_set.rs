//! What [`crate::kernel::probes::Probes`] is made of, whether this agent loaded
//! the programs or adopted a pinned set ([`crate::kernel::load::adopt`]): a leaf both
//! build, so neither imports the other.

use aya::{
    Ebpf,
    maps::{HashMap, MapData, PerCpuArray},
};
use observer_common::FlowSample;

use crate::kernel::{load::degraded::Degraded, load::pin, read::budgeted_walk::BudgetedWalk};

/// What [`crate::kernel::probes::Probes`] is made of, loaded or adopted.
pub(in crate::kernel) struct ProbeSet {
    pub flows: HashMap<MapData, u64, FlowSample>,
    pub closed: crate::kernel::read::closed_ring::ClosedDrain,
    pub counters: PerCpuArray<MapData, u64>,
    pub parked: crate::kernel::read::parked::Parked,
    pub poll: Option<BudgetedWalk>,
    pub owners: Option<crate::kernel::read::owners::OwnerWalk>,
    pub journal: Option<crate::kernel::read::journal::Journal>,
    pub programs: Programs,
    pub pinned_links: Vec<aya::programs::links::PinnedLink>,
    pub pin_dir: Option<pin::PinDir>,
    pub degraded: Vec<Degraded>,
    pub direct: bool,
    pub attached: Vec<&'static str>,
}

/// The programs: loaded by this agent, or adopted from a pinned set (by
/// name, with an fd each).
pub(in crate::kernel) enum Programs {
    /// Loaded here.
    Loaded(Ebpf),
    /// Pinned by an earlier agent.
    Adopted(Vec<(String, std::os::fd::OwnedFd)>),
}
