//! The long-running loop's state: attached probes feeding a [`LiveFlows`].

use observer_common::{Counter, FlowSample};

use crate::{
    kernel::{
        load::probe_error::ProbeError,
        probes::{MapRead, Probes},
    },
    model::clock::{Clock, monotonic_ns},
    track::cgroups::Cgroups,
    track::event::Event,
    track::live::{LiveConfig, LiveFlows},
    track::netns::NetnsNames,
};

/// What one poll did, for logs and self-metrics.
#[derive(Clone, Copy, Debug, Default)]
pub struct PollStats {
    /// Flow-map entries read.
    pub active: usize,
    /// Closed-flow records read.
    pub closed: usize,
    /// Time the poll took (µs).
    pub took_us: u64,
    /// Program runs the kernel skipped since load (see
    /// [`crate::kernel::probes::Probes::recursion_misses`]).
    pub recursion_misses: u64,
    /// Closed-flow records parked in the flow map (the ring was full) that
    /// the LRU evicted before a poll read them, since load (see
    /// [`crate::kernel::read::parked`]).
    pub parked_evicted: u64,
    /// The poll-time read, where it runs: whether it walks (not paused by
    /// its budget) and how long its last walk took (µs).
    pub walk: Option<(bool, u64)>,
}

/// Probes plus the live flows they feed.
pub struct Poller {
    probes: Probes,
    live: LiveFlows,
    active: Vec<FlowSample>,
    closed: Vec<FlowSample>,
    /// Kernel self-counters as of the last poll, in [`Counter::ALL`] order.
    pub counters: [u64; Counter::COUNT as usize],
    /// Max entries of the kernel flow map.
    pub max_flows: u32,
    /// Close records lost (ring-buffer drops and parked records evicted) as
    /// of the last poll.
    drops_seen: u64,
    /// Polls left in which open flows missing from the map are suspects.
    sweeps: u8,
    /// Open flows missing from the map at the last sweep.
    suspects: Vec<u64>,
    /// Cgroup id to workload.
    cgroups: Cgroups,
    /// Namespace inode to `ip netns` name.
    netns: NetnsNames,
    /// The names' generation the live flows were last all named with.
    netns_named: u64,
    /// Polls so far.
    polls: u64,
}

/// Every this many polls the whole flow map is read even where the change
/// journal vouches for the changes: what no program journals (an entry the
/// LRU evicted without counting it, a sample written after its journal
/// entry was read) is caught within a minute at a 1 s interval, at 1/64th
/// of a whole read's cost per poll.
const WHOLE_READ_EVERY: u64 = 64;

impl Poller {
    /// Wraps attached probes; the live flows start now.
    pub fn new(probes: Probes, clock: Clock, cfg: LiveConfig, max_flows: u32) -> Poller {
        Poller {
            probes,
            live: LiveFlows::new(cfg, clock, monotonic_ns()),
            active: Vec::new(),
            closed: Vec::new(),
            counters: [0; Counter::COUNT as usize],
            max_flows,
            drops_seen: 0,
            sweeps: 0,
            suspects: Vec::new(),
            polls: 0,
            cgroups: Cgroups::new(None),
            netns: NetnsNames::default(),
            netns_named: 0,
        }
    }

    /// Resolves workloads in the cgroup hierarchy at `root` instead of
    /// this process's cgroup2 mount (`--cgroup-root`).
    pub fn cgroup_root(&mut self, root: std::path::PathBuf) {
        self.cgroups = Cgroups::new(Some(root));
    }

    /// The live flows.
    pub fn live(&self) -> &LiveFlows {
        &self.live
    }

    /// Drops the closed flows (see [`LiveFlows::drop_closed`]).
    pub fn drop_closed(&mut self) {
        self.live.drop_closed();
    }

    /// The attached probes (for their notes on what this kernel lacks).
    pub fn probes(&self) -> &Probes {
        &self.probes
    }

    /// The attached probes, to change (a test's fault injection).
    pub fn probes_mut(&mut self) -> &mut Probes {
        &mut self.probes
    }

    /// Reads the ring buffer, the flow map and the counters once.
    ///
    /// # Errors
    /// A failed read of the counter map.
    pub fn poll(&mut self) -> Result<(Vec<Event>, PollStats), ProbeError> {
        let start = monotonic_ns();
        // The forgetting of lost flows needs the whole map: which open
        // flows are missing from it.
        self.polls += 1;
        let sweeping = self.sweeps > 0
            || !self.suspects.is_empty()
            || self.polls.is_multiple_of(WHOLE_READ_EVERY);
        let wanted = if sweeping {
            MapRead::Whole
        } else {
            MapRead::Changes
        };
        let whole = self
            .probes
            .read_changes(&mut self.active, &mut self.closed, wanted)
            == MapRead::Whole;
        let now = monotonic_ns();
        let mut events = self
            .live
            .ingest_changes(&self.active, &self.closed, now, whole);
        let cgroups = &mut self.cgroups;
        self.live.resolve_workloads(|id| cgroups.resolve(id));
        // A flow that started and closed in this poll: its close event
        // was made before the live flows resolved it.
        for e in &mut events {
            if let Event::Closed { flow, .. } = e
                && !flow.workload.is_resolved()
                && flow.cgroup_id != 0
            {
                flow.workload.0 = cgroups.resolve(flow.cgroup_id);
            }
        }
        self.name_namespaces(&mut events);
        self.counters = self.probes.counters()?;
        self.forget_lost(whole);
        let stats = PollStats {
            active: self.active.len(),
            closed: self.closed.len(),
            took_us: monotonic_ns().saturating_sub(start) / 1000,
            recursion_misses: self.probes.recursion_misses(),
            parked_evicted: self.probes.parked_evicted(),
            walk: self
                .probes
                .walk()
                .map(|w| (w.walking(), w.last().as_micros() as u64)),
        };
        Ok((events, stats))
    }

    /// Gives the flows started at this poll (and those in its close
    /// events) their namespace's name, and every flow a new one where a
    /// read of the names changed them: a walk of all flows only then.
    fn name_namespaces(&mut self, events: &mut [Event]) {
        let names = &mut self.netns;
        names.next_poll();
        let started: Vec<u64> = events
            .iter()
            .filter_map(|e| match e {
                Event::Started { cookie } => Some(*cookie),
                _ => None,
            })
            .collect();
        self.live
            .name_namespaces(&started, false, |ino| names.name(ino));
        if names.generation() != self.netns_named {
            self.live.name_namespaces(&[], true, |ino| names.name(ino));
            self.netns_named = names.generation();
        }
        // A flow that started and closed in this poll: its close event
        // was made before the live flows named it. It takes the name its
        // live flow was given; an older flow's close keeps the name it had
        // (its namespace's inode may be another's by now).
        for e in events {
            if let Event::Closed { flow, .. } = e
                && started.contains(&flow.cookie)
            {
                flow.netns_name = self
                    .live
                    .get(flow.cookie)
                    .and_then(|t| t.flow.netns_name.clone());
            }
        }
    }

    /// A flow whose close record was lost (the ring buffer and the flow map
    /// both full, or its parked record evicted) leaves the kernel map with
    /// no record, so the live flows would keep it open forever. After such losses
    /// rise, open flows missing from the map at two polls in a
    /// row (a close record is always drained by the poll that no longer
    /// finds its entry) are forgotten. An idle flow the LRU evicted in that
    /// span is forgotten too, and comes back as new at its next packet.
    fn forget_lost(&mut self, whole: bool) {
        // LRU evictions too: an evicted idle flow leaves no record, and a
        // read of the changes alone would keep it open.
        let drops = self.counters[Counter::RingbufDrops as usize]
            + self.counters[Counter::LruEvictions as usize]
            + self.probes.parked_evicted();
        if drops > self.drops_seen {
            self.sweeps = 3;
        }
        self.drops_seen = drops;
        // A read of the changes alone cannot tell a flow missing; the next
        // poll reads the whole map.
        if (self.sweeps == 0 && self.suspects.is_empty()) || !whole {
            return;
        }
        let present: std::collections::HashSet<u64> =
            self.active.iter().map(|s| s.cookie).collect();
        for c in std::mem::take(&mut self.suspects) {
            if !present.contains(&c) && self.live.get(c).is_some_and(|t| !t.is_closed()) {
                self.live.forget(c);
            }
        }
        if self.sweeps > 0 {
            self.sweeps -= 1;
            self.suspects = self
                .live
                .flows()
                .filter(|t| !t.is_closed() && !present.contains(&t.latest.cookie))
                .map(|t| t.latest.cookie)
                .collect();
        }
    }
}
