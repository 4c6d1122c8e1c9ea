//! Loads and attaches the kernel programs, and reads what they keep.
//!
//! Dropping [`Probes`] detaches and unloads everything it attached.

use aya::{
    EbpfLoader,
    maps::{Array, HashMap, MapData, PerCpuArray},
    programs::BtfTracePoint,
};
use observer_common::{
    Counter, FlowSample, GLOBAL_DIRECT, GLOBAL_MAX_FLOWS, GLOBAL_OFFSETS, GLOBAL_PACKET_STAGES,
    GLOBAL_POLL_ITER, MAP_CLOSED, MAP_COUNTERS, MAP_FLOWS, MAP_LIVE,
};

use crate::kernel::{
    load::attach::{Refusal, attach_hook, attach_poll, program_info_of, resolve, settings, take},
    load::degraded::Degraded,
    load::hooks,
    load::pin,
    load::probe_config::{ProbeConfig, VARIANTS, Variant},
    load::probe_error::ProbeError,
    load::probe_set::{ProbeSet, Programs},
    read::budgeted_walk::BudgetedWalk,
};

/// How much of the flow map a read hands over ([`Probes::read_changes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapRead {
    /// Every flow in the map.
    Whole,
    /// Only the flows sampled since the last read (the change journal's,
    /// [`super::read::journal`]): a flow left out is unchanged.
    Changes,
}

/// The loaded, attached kernel programs and their maps.
pub struct Probes {
    // Field order matters for drop: maps first, then the programs.
    flows: HashMap<MapData, u64, FlowSample>,
    batch: crate::kernel::read::flow_map::BatchReader,
    closed: crate::kernel::read::closed_ring::ClosedDrain,
    counters: PerCpuArray<MapData, u64>,
    parked: crate::kernel::read::parked::Parked,
    /// The poll-time read, where the kernel runs it.
    poll: Option<BudgetedWalk>,
    /// The owner walk, where the kernel runs it and no pin is in use.
    owners: Option<crate::kernel::read::owners::OwnerWalk>,
    /// The flows sampled since the last read ([`super::read::journal`]).
    changes: super::read::journal::Changes,
    programs: Programs,
    /// With `--pin`: the links pinned (their fds, which keep them counted
    /// as this agent's), the directory, locked while the agent runs, and
    /// what the sets of other builds still held when this one replaced
    /// them (read at the first poll).
    _pinned_links: Vec<aya::programs::links::PinnedLink>,
    pin_dir: Option<pin::PinDir>,
    stale: Vec<super::load::adopt::ReplacedSet>,
    /// What this kernel leaves out: figures it cannot provide, and the
    /// fallbacks that cost more per packet.
    pub degraded: Vec<Degraded>,
    /// Whether the programs read socket fields with direct BTF-checked loads
    /// (else with `bpf_probe_read_kernel`).
    pub direct: bool,
    /// The tracepoints a program is attached to, in attach order: one
    /// kernel link each (a hook this kernel lacks is not listed).
    attached: Vec<&'static str>,
}

impl Probes {
    /// Resolves offsets from the running kernel's BTF, loads the programs
    /// and attaches them. Nothing stays attached if this fails. With
    /// [`ProbeConfig::pin`], adopts the programs an earlier agent of this
    /// build pinned there, or pins its own ([`crate::kernel::load::pin`]).
    ///
    /// # Errors
    /// [`ProbeError`] naming the member, program or hook that failed.
    pub fn load(config: ProbeConfig) -> Result<Probes, ProbeError> {
        let Some(path) = config.pin.clone() else {
            return Probes::load_fresh(&config, None);
        };
        let dir = pin::PinDir::open(&path).map_err(ProbeError::Pin)?;
        // Before anything is loaded, attached or removed: sets of another
        // flow layout are never read (nor replaced) by this build.
        super::load::layout::check(&dir, super::load::layout::ours()).map_err(ProbeError::Pin)?;
        dir.remove_partial().map_err(ProbeError::Pin)?;
        let (resolved, _) = resolve()?;
        let sets = dir.sets().map_err(ProbeError::Pin)?;
        for Variant { poll, direct } in VARIANTS {
            // A set with the poll-time read relaxes the hooks: adopted only
            // by an agent that asks for it.
            if poll && !config.poll_read {
                continue;
            }
            let settings = settings(&config, &resolved.offsets, poll);
            let name = pin::set_name(config.object.0, settings.as_bytes(), direct);
            if sets.contains(&name) && super::load::adopt::complete(&dir.path().join(&name)) {
                return super::load::adopt::adopt(
                    dir,
                    &name,
                    direct,
                    &resolved.missing,
                    config.walk_budget,
                )
                .map(Probes::from_set);
            }
        }
        // A set of ours that lacks maps or links: replaced, and in the way
        // of the new one, so removed first.
        let mut broken = Vec::new();
        for name in &sets {
            let set = dir.path().join(name);
            if !super::load::adopt::complete(&set) {
                broken.push(super::load::adopt::ReplacedSet::open(&set));
                pin::remove_set(&set).map_err(ProbeError::Pin)?;
                log::warn!(
                    "removed {}: a pinned set missing maps or links",
                    set.display()
                );
            }
        }
        let sets = dir.sets().map_err(ProbeError::Pin)?;
        let mut p = Probes::load_fresh(&config, Some(&dir))?;
        p.stale = broken;
        // Sets of another build or other settings: read what they hold at
        // the first poll, and detach them now that this set runs.
        for old in sets {
            let set = dir.path().join(&old);
            p.stale.push(super::load::adopt::ReplacedSet::open(&set));
            if let Err(e) = pin::remove_set(&set) {
                log::warn!("{e}");
            }
            log::info!("replaced the programs pinned in {}", set.display());
        }
        p.pin_dir = Some(dir);
        Ok(p)
    }

    /// Loads and attaches the programs, pinned into a new set of `pin` if
    /// given: with the poll-time read and direct socket reads if the
    /// kernel takes them, else without what it refuses
    /// ([`super::load::probe_config::VARIANTS`], in order). The error is the
    /// last variant's.
    fn load_fresh(config: &ProbeConfig, pin: Option<&pin::PinDir>) -> Result<Probes, ProbeError> {
        let mut refused: Vec<Refusal> = Vec::new();
        for variant @ Variant { poll, direct } in VARIANTS {
            if (direct && config.helper_reads) || (poll && !config.poll_read) {
                continue;
            }
            match Probes::load_with(config, direct, poll, pin) {
                Ok(mut p) => {
                    // What the kernel refused, said once each.
                    p.degraded
                        .extend(super::load::attach::refusal_notes(&refused, poll));
                    return Ok(p);
                }
                // A verifier that will not check direct loads against BTF
                // (an older kernel, a missing helper), or a kernel without
                // socket storage in tracing programs: try the next variant.
                Err(e @ (ProbeError::Attach { .. } | ProbeError::PollIter(_))) => {
                    refused.push(Refusal { variant, error: e });
                }
                Err(e) => return Err(e),
            }
        }
        Err(refused
            .pop()
            .map(|r| r.error)
            .unwrap_or(ProbeError::NoProgram(hooks::TCP_PROBE.program)))
    }

    fn load_with(
        config: &ProbeConfig,
        direct: bool,
        poll: bool,
        pin: Option<&pin::PinDir>,
    ) -> Result<Probes, ProbeError> {
        let (resolved, kernel_btf) = resolve()?;
        let mut degraded: Vec<Degraded> = resolved
            .missing
            .iter()
            .map(|member| Degraded::Member {
                member: member.clone(),
            })
            .collect();

        let (direct_flag, poll_flag) = (u8::from(direct), u8::from(poll));
        let mut loader = EbpfLoader::new();
        loader
            .btf(Some(&kernel_btf))
            .override_global(GLOBAL_OFFSETS, &resolved.offsets, true)
            .override_global(GLOBAL_MAX_FLOWS, &config.max_flows, true)
            .override_global(GLOBAL_DIRECT, &direct_flag, true)
            .override_global(GLOBAL_POLL_ITER, &poll_flag, true)
            .override_global(observer_common::GLOBAL_RX_GAP_NS, &config.rx_gap_ns, true)
            .map_max_entries(MAP_FLOWS, config.max_flows)
            .map_max_entries(MAP_CLOSED, config.ringbuf_bytes)
            .map_max_entries(
                observer_common::MAP_JOURNAL,
                observer_common::journal::max_entries(
                    super::read::journal::possible_cpus().unwrap_or(1),
                ),
            );
        // Only the benchmark's object has the global (and stops early).
        if config.packet_stages != observer_common::packet_stages::ALL {
            loader.override_global(GLOBAL_PACKET_STAGES, &config.packet_stages, true);
        }
        let mut ebpf = loader.load(config.object.0).map_err(ProbeError::Load)?;

        // In the table's order (the hooks that end flows first); a
        // required hook that fails fails the load, any other says what is
        // lost and tries its fallback. The read hook waits for the walks:
        // where both run, it is not attached at all.
        let walks = poll && pin.is_none();
        let mut links = Vec::new();
        let mut waiting = Vec::new();
        for hook in hooks::ATTACH_ORDER {
            if walks && hook.when == hooks::When::WithoutWalks {
                waiting.push(hook);
                continue;
            }
            attach_hook(&mut ebpf, hook, &kernel_btf, &mut links, &mut degraded)?;
        }

        let poll_iter = if poll {
            let p = attach_poll(&mut ebpf, &kernel_btf)?;
            degraded.extend(p.partial.clone());
            Some(p)
        } else {
            None
        };

        // The owner walk is this agent's alone: a pinned set's flows keep
        // the owner a read gives them.
        let owners = if pin.is_none() {
            match super::load::attach::attach_owners(&mut ebpf, &kernel_btf) {
                Ok(iter) => Some(crate::kernel::read::owners::OwnerWalk::new(iter)),
                Err(e) => {
                    let error = match &e {
                        ProbeError::PollIter(io) => io.to_string(),
                        e => super::load::attach::brief(e),
                    };
                    degraded.push(Degraded::NoOwnerWalk { error });
                    None
                }
            }
        } else {
            None
        };
        // Without the owner walk, accepted flows get their owner from reads.
        if owners.is_none() {
            for hook in waiting {
                attach_hook(&mut ebpf, hook, &kernel_btf, &mut links, &mut degraded)?;
            }
        }
        let mut attached: Vec<&'static str> = links.iter().map(|l| l.hook.tracepoint).collect();
        attached.extend(poll_iter.as_ref().map(|p| p.hook.name));
        if owners.is_some() {
            attached.push(hooks::OWNERS.name);
        }

        let pinned_links = match pin {
            None => Vec::new(),
            Some(dir) => {
                let name = pin::set_name(
                    config.object.0,
                    settings(config, &resolved.offsets, poll).as_bytes(),
                    direct,
                );
                let set = dir.create_set(&name).map_err(ProbeError::Pin)?;
                match super::load::adopt::pin_all(&mut ebpf, &set, links, poll_iter.as_ref())
                    .and_then(|l| {
                        dir.commit_set(&set, &name)
                            .map_err(ProbeError::Pin)
                            .map(|()| l)
                    }) {
                    Ok(l) => l,
                    Err(e) => {
                        // Nothing half-pinned stays: links go first.
                        let _ = pin::remove_set(&set);
                        return Err(e);
                    }
                }
            }
        };
        let ring = take(&mut ebpf, MAP_CLOSED)?;
        let poll = match poll_iter {
            Some(p) => Some(BudgetedWalk::new(
                p.iter,
                Some(take(&mut ebpf, observer_common::MAP_POLL_SCOPE)?),
                p.hook.reach,
                config.walk_budget,
            )),
            None => None,
        };
        Ok(Probes::from_set(ProbeSet {
            flows: take(&mut ebpf, MAP_FLOWS)?,
            // Pinned, records stay in the kernel until a poll takes them,
            // so an agent killed between polls loses none (a full ring
            // parks closes in the flow map meanwhile).
            closed: if pin.is_some() {
                crate::kernel::read::closed_ring::ClosedDrain::at_polls(ring)
            } else {
                crate::kernel::read::closed_ring::ClosedDrain::new(ring)
            },
            counters: take(&mut ebpf, MAP_COUNTERS)?,
            parked: crate::kernel::read::parked::Parked::new(take::<Array<MapData, u64>>(
                &mut ebpf, MAP_LIVE,
            )?),
            poll,
            owners,
            journal: super::read::journal::open(take(&mut ebpf, observer_common::MAP_JOURNAL)),
            programs: Programs::Loaded(ebpf),
            pinned_links,
            pin_dir: None,
            degraded,
            direct,
            attached,
        }))
    }

    /// Probes made of `set`.
    pub(super) fn from_set(set: ProbeSet) -> Probes {
        Probes {
            flows: set.flows,
            batch: crate::kernel::read::flow_map::BatchReader::default(),
            closed: set.closed,
            counters: set.counters,
            parked: set.parked,
            poll: set.poll,
            owners: set.owners,
            changes: super::read::journal::Changes::new(set.journal),
            programs: set.programs,
            _pinned_links: set.pinned_links,
            pin_dir: set.pin_dir,
            stale: Vec::new(),
            degraded: set.degraded,
            direct: set.direct,
            attached: set.attached,
        }
    }

    /// The tracepoints with a program attached (one kernel link each), in
    /// attach order ([`hooks::ATTACH_ORDER`]): `tcp_destroy_sock` where
    /// the kernel has it, `inet_sock_set_state` and `tcp_probe` always,
    /// then `sock_recv_length` where it has it (else its fallback
    /// `tcp_rcv_space_adjust`); then the poll-time read's
    /// iterator (one of [`hooks::POLL_ITERS`]), where the kernel
    /// runs it; last the owner walk's ([`hooks::OWNERS`]),
    /// where the kernel runs it and no pin is in use.
    pub fn attached(&self) -> &[&'static str] {
        &self.attached
    }

    /// The poll-time read, where the kernel runs it: whether it walks and
    /// how long it took ([`BudgetedWalk`]).
    pub fn walk(&self) -> Option<&BudgetedWalk> {
        self.poll.as_ref()
    }

    /// One poll's read, in the one order every view uses: `closed` gets
    /// the close records queued so far; the poll-time read re-samples the
    /// flows that moved since the last poll; `active` gets the flow map, then
    /// `closed` the records that arrived while the map was walked (so a
    /// flow that closed mid-walk is never missed: its entry is either in
    /// the map or its record in the ring). Both vectors are cleared first.
    /// Closes parked in the map (the ring was full) move from `active` to
    /// `closed`, and their entries are deleted ([`crate::kernel::read::parked`]).
    pub fn read(&mut self, active: &mut Vec<FlowSample>, closed: &mut Vec<FlowSample>) {
        self.read_changes(active, closed, MapRead::Whole);
    }

    /// [`Probes::read`], but with `wanted` [`MapRead::Changes`], `active`
    /// gets only the flows sampled since the last read, where the change
    /// journal can say which ([`super::read::journal`]). Returns what
    /// `active` holds: with [`MapRead::Changes`], a flow not in it is
    /// unchanged since the last read.
    pub fn read_changes(
        &mut self,
        active: &mut Vec<FlowSample>,
        closed: &mut Vec<FlowSample>,
        wanted: MapRead,
    ) -> MapRead {
        active.clear();
        closed.clear();
        let parked_before = self.counter(Counter::ClosesParked);
        let started_ns = crate::model::clock::monotonic_ns();
        self.drain_closed(closed);
        if let Some(poll) = &mut self.poll {
            poll.poll();
        }
        if let Some(owners) = &mut self.owners {
            owners.at_poll(started_ns);
        }
        let got = if self
            .changes
            .read(&self.flows, parked_before, wanted == MapRead::Whole, active)
        {
            MapRead::Changes
        } else {
            self.active(active);
            MapRead::Whole
        };
        self.parked
            .collect(&mut self.flows, active, closed, parked_before, started_ns);
        self.drain_closed(closed);
        if let Some(owners) = &mut self.owners {
            owners.note_read(active, closed);
        }
        if !self.stale.is_empty() {
            self.read_stale(closed);
        }
        got
    }

    /// The first read after replacing a pinned set: its records first. A
    /// flow that closed while both sets ran has a record in each; the old
    /// one, which saw the whole flow, is kept.
    fn read_stale(&mut self, closed: &mut Vec<FlowSample>) {
        let mut old = Vec::new();
        for s in self.stale.drain(..) {
            let lost = s.drain(&mut old);
            self.parked.add_evicted(lost);
        }
        let seen: std::collections::HashSet<u64> = old.iter().map(|s| s.cookie).collect();
        closed.retain(|s| !seen.contains(&s.cookie));
        old.append(closed);
        *closed = old;
    }

    /// Closed-flow records parked in the flow map that the LRU evicted
    /// before a poll read them: lost (see [`crate::kernel::read::parked`]).
    pub fn parked_evicted(&self) -> u64 {
        self.parked.evicted()
    }

    /// Closed-flow records lost so far: ring-buffer drops (neither the ring
    /// nor the flow map could take them) plus parked records evicted before
    /// a poll read them. 0 for the drops if the counters cannot be read.
    pub fn closes_lost(&self) -> u64 {
        self.counter(Counter::RingbufDrops).unwrap_or(0) + self.parked.evicted()
    }

    /// Parked closed-flow records read from the flow map so far.
    pub fn parked_read(&self) -> u64 {
        self.parked.read()
    }

    /// Appends the current sample of every flow in the kernel map to `out`:
    /// batched reads where the kernel has them, else a key-by-key walk
    /// (entries that vanish while the map is walked are skipped).
    pub fn active(&mut self, out: &mut Vec<FlowSample>) {
        if self.batch.supported {
            use std::os::fd::{AsFd as _, AsRawFd as _};
            let fd = aya::maps::IterableMap::map(&self.flows)
                .fd()
                .as_fd()
                .as_raw_fd();
            let start = out.len();
            match self.batch.read_all(fd, out) {
                Ok(()) => return,
                Err(e) => {
                    out.truncate(start);
                    log::debug!("batched flow-map read failed ({e}); walking key by key");
                }
            }
        }
        out.extend(self.flows.iter().filter_map(Result::ok).map(|(_, v)| v));
    }

    /// Appends every closed-flow record written so far (queued by the drain
    /// thread or still in the ring buffer) to `out`, in the kernel's order.
    pub fn drain_closed(&mut self, out: &mut Vec<FlowSample>) {
        self.closed.take(out);
    }

    /// Runs of observer's programs the kernel skipped because the program
    /// was already running on that CPU (`recursion_misses`, summed over
    /// the programs; 0 before Linux 5.12). A skipped `inet_sock_set_state`
    /// CLOSE is caught again by `tcp_destroy_sock`; a skipped packet only
    /// delays a flow's figures to its next packet.
    pub fn recursion_misses(&self) -> u64 {
        // Called every poll: no names collected, nothing allocated.
        let mut n = 0u64;
        self.each_program(|_, fd| {
            if let Ok(i) = crate::kernel::load::program_info::read(fd) {
                n = n.wrapping_add(i.recursion_misses);
            }
        });
        n
    }

    /// Calls `f` with the name and fd of each loaded program.
    fn each_program(&self, mut f: impl FnMut(&str, std::os::fd::BorrowedFd<'_>)) {
        use std::os::fd::AsFd as _;
        match &self.programs {
            Programs::Loaded(ebpf) => {
                for (name, p) in ebpf.programs() {
                    if let Ok(fd) = p.fd() {
                        f(name, fd.as_fd());
                    }
                }
            }
            Programs::Adopted(progs) => {
                for (name, fd) in progs {
                    f(name, fd.as_fd());
                }
            }
        }
    }

    /// The kernel's statistics of each loaded program, by program name
    /// (those it cannot read are left out).
    pub fn program_stats(&self) -> Vec<(String, crate::kernel::load::program_info::ProgInfoHead)> {
        let mut out = Vec::new();
        self.each_program(|name, fd| {
            if let Ok(i) = crate::kernel::load::program_info::read(fd) {
                out.push((name.to_string(), i));
            }
        });
        out
    }

    /// Detaches and unloads program `prog` (its link goes with it): the
    /// fault the health check must notice, for the tests
    /// ([`crate::kernel::load::env::program_to_unload`]). Returns whether there
    /// was such a loaded program (never for adopted or pinned ones).
    pub fn unload(&mut self, prog: &str) -> bool {
        let Programs::Loaded(ebpf) = &mut self.programs else {
            return false;
        };
        let Some(p) = ebpf.program_mut(prog) else {
            return false;
        };
        let p: Result<&mut BtfTracePoint, _> = p.try_into();
        p.is_ok_and(|p| p.unload().is_ok())
    }

    /// The aya view of each loaded program, by name (for tests that
    /// cross-check [`Probes::program_stats`]).
    pub fn program_info(&self) -> Vec<(String, aya::programs::ProgramInfo)> {
        let mut out = Vec::new();
        self.each_program(|name, fd| {
            if let Ok(i) = program_info_of(fd) {
                out.push((name.to_string(), i));
            }
        });
        out
    }

    /// Whether the programs run from a pinned set (`--pin`): they outlive
    /// this agent.
    pub fn pinned(&self) -> bool {
        self.pin_dir.is_some()
    }

    /// Kernel self-counter `c` summed over CPUs; `None` if the map read fails.
    fn counter(&self, c: Counter) -> Option<u64> {
        let per_cpu = self.counters.get(&(c as u32), 0).ok()?;
        Some(per_cpu.iter().copied().fold(0u64, u64::wrapping_add))
    }

    /// The kernel self-counters summed over CPUs, in [`Counter::ALL`] order.
    ///
    /// # Errors
    /// A map read failure.
    pub fn counters(&self) -> Result<[u64; Counter::COUNT as usize], ProbeError> {
        let mut out = [0u64; Counter::COUNT as usize];
        for c in Counter::ALL {
            let per_cpu = self
                .counters
                .get(&(c as u32), 0)
                .map_err(|error| ProbeError::Map {
                    name: MAP_COUNTERS,
                    error,
                })?;
            out[c as usize] = per_cpu.iter().copied().fold(0u64, u64::wrapping_add);
        }
        Ok(out)
    }
}
