//! The live flows of a long-running view (`observer run`, `observer
//! top`): every tracked flow's latest sample, its current verdict over a
//! sliding window, its life verdict, an optional short history for
//! sparklines, and the events (started, closed) that sinks count.
//!
//! Pure code: it is fed samples and the time; it does no I/O.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use observer_common::FlowSample;

use super::event::Event;
use super::tracked::{TimedSample, TrackSettings, TrackedFlow, birth_step, close_event, settles};
use super::{
    pending::{ResolvedCgroup, Unresolved},
    phase::{FlowsByPhase, Phase},
};
use crate::{
    attribution::{self, Attribution, Verdict},
    model::clock::Clock,
};

/// Settings of a [`LiveFlows`].
#[derive(Clone, Copy, Debug)]
pub struct LiveConfig {
    /// Span the current verdict covers, at least (the verdict window).
    pub window: Duration,
    /// How long a closed flow stays tracked after its close record;
    /// zero: until [`LiveFlows::drop_closed`].
    pub linger: Duration,
    /// History points kept per flow for sparklines (0: none).
    pub history: usize,
    /// Attribution thresholds.
    pub attribution: attribution::Config,
    /// Whether each quiet flow's step is its own [`Event::Progress`] (a
    /// sink that labels or filters flow by flow needs them); else one
    /// [`Event::Quiet`] per poll sums them.
    pub idle_per_flow: bool,
    /// Whether a closing flow's life verdict is explained whatever
    /// `attribution.explain` says (a sink that writes each close's record,
    /// where the other verdicts need no words).
    pub explain_closes: bool,
}

impl Default for LiveConfig {
    fn default() -> Self {
        LiveConfig {
            window: Duration::from_secs(1),
            linger: Duration::from_secs(5),
            history: 0,
            attribution: attribution::Config::default(),
            idle_per_flow: false,
            explain_closes: false,
        }
    }
}

/// The flows the live views (`run`, `top`) track: each with its sliding
/// verdict window and life verdict, which of them are awake, quiet or
/// closed, and the open flows counted by verdict.
pub struct LiveFlows {
    cfg: LiveConfig,
    clock: Clock,
    start_ns: u64,
    /// Boxed: a `TrackedFlow` is over 2 KB, and a map never gives back its
    /// buckets, so inline values would hold a burst's peak forever.
    flows: HashMap<u64, Box<TrackedFlow>>,
    /// The flows by phase (awake, quiet, closed) and the open ones by
    /// verdict: every change of a flow's phase goes through it.
    by_phase: FlowsByPhase,
    /// Monotonic ns of the previous poll (0: none yet).
    last_poll_ns: u64,
    /// Flows whose workload may want resolving: new, their owner's cgroup
    /// changed, or not resolved yet.
    unresolved: Unresolved,
    /// Calls of [`LiveFlows::ingest_changes`].
    polls: u64,
}

impl LiveFlows {
    /// None tracked yet; flows born before `start_ns` get verdicts over what is
    /// observed from their first read.
    pub fn new(cfg: LiveConfig, clock: Clock, start_ns: u64) -> LiveFlows {
        LiveFlows {
            cfg,
            clock,
            start_ns,
            flows: HashMap::new(),
            by_phase: FlowsByPhase::default(),
            last_poll_ns: 0,
            unresolved: Unresolved::default(),
            polls: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &LiveConfig {
        &self.cfg
    }

    /// Every tracked flow (unordered).
    pub fn flows(&self) -> impl Iterator<Item = &TrackedFlow> {
        self.flows.values().map(|t| &**t)
    }

    /// `t`'s life verdict to its last movement, explained whatever the
    /// configuration says (a record's, where the metrics' need no words).
    pub fn explained_life(&self, t: &TrackedFlow) -> Attribution {
        t.life_explained(&self.clock, &self.cfg.attribution)
    }

    /// The flow with `cookie`.
    pub fn get(&self, cookie: u64) -> Option<&TrackedFlow> {
        self.flows.get(&cookie).map(|t| &**t)
    }

    /// Number of tracked flows.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// Whether no flow is tracked.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// Open flows by current verdict, every verdict in [`Verdict::ALL`]
    /// order (kept as flows open, change verdict and close: no visit).
    pub fn open_by_verdict(&self) -> impl Iterator<Item = (Verdict, u64)> + '_ {
        Verdict::ALL.into_iter().zip(self.by_phase.open_verdicts)
    }

    /// Number of open flows tracked.
    pub fn open_len(&self) -> u64 {
        self.by_phase.open_verdicts.iter().sum()
    }

    /// Number of open flows listed quiet ([`super::quiet`]).
    pub fn quiet_len(&self) -> usize {
        self.by_phase.quiet.len()
    }

    /// Gives each flow whose workload is not resolved yet the one
    /// `resolve` finds for its cgroup id ([`crate::track::cgroups`]).
    pub fn resolve_workloads(
        &mut self,
        mut resolve: impl FnMut(u64) -> Option<std::sync::Arc<crate::model::workload::Workload>>,
    ) {
        let flows = &self.flows;
        let done = self
            .unresolved
            .resolve(&mut resolve, |c, g| waits(flows, c, g));
        for ResolvedCgroup {
            cgroup_id,
            workload,
            cookies,
        } in done
        {
            for cookie in cookies {
                if let Some(t) = self.flows.get_mut(&cookie)
                    && waits_for(t, cgroup_id)
                {
                    t.flow.workload.0 = Some(Arc::clone(&workload));
                }
            }
        }
    }

    /// Gives flows their network namespace's `ip netns` name, from `name`
    /// ([`crate::track::netns`]): the flows `started` at this poll, or,
    /// with `all` (the names changed), every open flow. A closed flow
    /// keeps the name it had: its namespace may be gone, and the kernel
    /// gives a gone namespace's inode to the next one made, so the name
    /// the inode has now may be another namespace's.
    pub fn name_namespaces(
        &mut self,
        started: &[u64],
        all: bool,
        mut name: impl FnMut(u32) -> Option<Arc<str>>,
    ) {
        if all {
            for t in self.flows.values_mut().filter(|t| !t.is_closed()) {
                t.flow.netns_name = name(t.flow.netns);
            }
            return;
        }
        for cookie in started {
            if let Some(t) = self.flows.get_mut(cookie) {
                t.flow.netns_name = name(t.flow.netns);
            }
        }
    }

    /// Drops every closed flow: with a zero [`LiveConfig::linger`], once
    /// the sinks have read the poll's events (they look flows up in the
    /// live flows), so nothing is held until the next poll.
    pub fn drop_closed(&mut self) {
        for c in self.by_phase.closed.drain(..) {
            self.flows.remove(&c);
        }
    }

    /// Stops tracking flow `cookie`, with no event: for an open flow
    /// gone from the kernel map whose close record was lost to a full ring
    /// buffer (counted as `ringbuf_drops`). Returns whether it was tracked.
    pub fn forget(&mut self, cookie: u64) -> bool {
        let Some(t) = self.flows.remove(&cookie) else {
            return false;
        };
        self.by_phase.forget(cookie, t.phase, t.current.verdict);
        true
    }

    /// Feeds one poll: the flow map's samples and the closed records read
    /// at monotonic `now_ns`. Returns the events for sinks.
    pub fn ingest(
        &mut self,
        active: &[FlowSample],
        closed: &[FlowSample],
        now_ns: u64,
    ) -> Vec<Event> {
        self.ingest_changes(active, closed, now_ns, true)
    }

    /// [`LiveFlows::ingest`] of a read that holds the whole flow map when
    /// `whole`, else only the flows sampled since the last read (the
    /// change journal's, [`crate::kernel::read::journal`]): every open flow it
    /// does not hold is unchanged, and advances with its kept sample.
    pub fn ingest_changes(
        &mut self,
        active: &[FlowSample],
        closed: &[FlowSample],
        now_ns: u64,
        whole: bool,
    ) -> Vec<Event> {
        let mut events = Vec::new();
        self.polls += 1;
        let rules = self.rules();
        // The flows that settle at this poll: listed quiet after its step.
        let mut settled = Vec::new();
        for s in active {
            self.apply(s, now_ns, false, &rules, &mut events, &mut settled);
        }
        for s in closed {
            self.apply(s, now_ns, true, &rules, &mut events, &mut settled);
        }
        if !whole {
            self.advance_unchanged(now_ns, &rules, &mut events, &mut settled);
        }
        // The flows quiet since the previous poll, in one step.
        let dt_us = now_ns.saturating_sub(self.last_poll_ns) / 1000;
        self.by_phase
            .quiet
            .step(dt_us, self.cfg.idle_per_flow, &mut events);
        for cookie in settled {
            if let Some(t) = self.flows.get_mut(&cookie) {
                self.by_phase.settle(
                    cookie,
                    &mut t.phase,
                    t.current.verdict,
                    t.latest.chrono_type,
                );
            }
        }
        self.by_phase.quiet.polled(now_ns);
        self.last_poll_ns = now_ns;
        let linger = self.cfg.linger.as_nanos() as u64;
        if linger > 0 {
            let flows = &mut self.flows;
            self.by_phase.closed.retain(|c| {
                let keep = flows
                    .get(c)
                    .and_then(|t| t.closed_at_ns())
                    .is_some_and(|at| now_ns.saturating_sub(at) < linger);
                if !keep {
                    flows.remove(c);
                }
                keep
            });
        }
        events
    }

    /// Takes one sample of a flow (a close record when `is_close`) read at
    /// `now_ns`, and says what changed in `events`; a flow it leaves
    /// settled goes to `settled`.
    fn apply(
        &mut self,
        s: &FlowSample,
        now_ns: u64,
        is_close: bool,
        rules: &TrackSettings,
        events: &mut Vec<Event>,
        settled: &mut Vec<u64>,
    ) {
        let Some(t) = self.flows.get_mut(&s.cookie) else {
            let read = TimedSample {
                sample: Arc::new(*s),
                at_ns: now_ns,
            };
            // A flow first read at its close is judged once, for its record.
            let cfg = self
                .cfg
                .attribution
                .explaining(is_close && self.cfg.explain_closes);
            let mut t = TrackedFlow::new(&read, &self.clock, self.start_ns, &cfg);
            t.polled = self.polls;
            events.push(Event::Started { cookie: s.cookie });
            if s.seen_from_start != 0 && s.first_seen_ns >= self.start_ns {
                // Born in this run: what it did before this first read
                // (all of a short flow's life) counts too.
                events.push(birth_step(&read, &self.clock, t.current.verdict));
            }
            t.phase = self
                .by_phase
                .born(s.cookie, t.current.verdict, is_close.then_some(now_ns));
            if is_close {
                close_event(&t, events);
            }
            let wants = t.wants_workload().then_some(t.flow.cgroup_id);
            self.flows.insert(s.cookie, Box::new(t));
            if let Some(cgroup_id) = wants {
                self.wait_for_workload(cgroup_id, s.cookie);
            }
            return;
        };
        if t.is_closed() || (!is_close && s.last_seen_ns < t.latest.last_seen_ns) {
            return;
        }
        let moved =
            is_close || s.last_seen_ns != t.latest.last_seen_ns || s.samples != t.latest.samples;
        t.polled = self.polls;
        if t.phase == Phase::Quiet {
            if !moved {
                // Still quiet: its time is the quiet step's.
                return;
            }
            self.by_phase.wake(s.cookie, &mut t.phase);
            let (missed, complete) = self.by_phase.quiet.missed_since(t.prev.at_ns);
            t.wake(
                missed,
                complete,
                rules.window_ns,
                rules.attribution.min_rtts,
            );
        }
        // Unmoved, the entry holds the sample already kept: share it.
        let read = TimedSample {
            sample: if moved {
                Arc::new(*s)
            } else {
                Arc::clone(&t.latest)
            },
            at_ns: now_ns,
        };
        let cgroup_before = t.flow.cgroup_id;
        let verdict_before = t.current.verdict;
        t.advance(read, moved, is_close, rules, events);
        // Its owner's cgroup changed (or it has one now): the workload
        // went with it. Unchanged and unresolved, it is listed already.
        let newly_waiting =
            (t.flow.cgroup_id != cgroup_before && t.wants_workload()).then_some(t.flow.cgroup_id);
        if is_close {
            self.by_phase
                .close(s.cookie, &mut t.phase, verdict_before, now_ns);
            close_event(t, events);
        } else {
            self.by_phase
                .recount(Some(verdict_before), Some(t.current.verdict));
            if settles(rules.history, t, moved) {
                settled.push(s.cookie);
            }
        }
        if let Some(cgroup_id) = newly_waiting {
            self.wait_for_workload(cgroup_id, s.cookie);
        }
    }

    /// What [`TrackedFlow::advance`] needs of the live flows' settings.
    fn rules(&self) -> TrackSettings {
        TrackSettings {
            window_ns: self.cfg.window.as_nanos() as u64,
            clock: self.clock,
            attribution: self.cfg.attribution,
            history: self.cfg.history,
            explain_closes: self.cfg.explain_closes,
        }
    }

    /// Advances every open flow this poll's read did not hold (unchanged
    /// since the last read, which the change journal vouches for) to
    /// `now_ns`, as [`LiveFlows::apply`] would with its unchanged entry; the
    /// quiet ones are left to the quiet step.
    fn advance_unchanged(
        &mut self,
        now_ns: u64,
        rules: &TrackSettings,
        events: &mut Vec<Event>,
        settled: &mut Vec<u64>,
    ) {
        // Verdicts that moved, counted after the walk over the awake set.
        let mut moved: Vec<(Verdict, Verdict)> = Vec::new();
        for cookie in &self.by_phase.awake {
            let Some(t) = self.flows.get_mut(cookie) else {
                continue;
            };
            if t.polled == self.polls {
                continue;
            }
            t.polled = self.polls;
            let read = TimedSample {
                sample: Arc::clone(&t.latest),
                at_ns: now_ns,
            };
            let before = t.current.verdict;
            t.advance(read, false, false, rules, events);
            if before != t.current.verdict {
                moved.push((before, t.current.verdict));
            }
            if settles(rules.history, t, false) {
                settled.push(*cookie);
            }
        }
        for (before, after) in moved {
            self.by_phase.recount(Some(before), Some(after));
        }
    }

    /// Lists flow `cookie` as waiting for the workload of `cgroup_id`.
    fn wait_for_workload(&mut self, cgroup_id: u64, cookie: u64) {
        let flows = &self.flows;
        self.unresolved
            .wait_for_workload(cgroup_id, cookie, |c, g| waits(flows, c, g));
    }
}

/// Whether flow `cookie` of `flows` waits for the workload of `cgroup_id`.
fn waits(flows: &HashMap<u64, Box<TrackedFlow>>, cookie: u64, cgroup_id: u64) -> bool {
    flows.get(&cookie).is_some_and(|t| waits_for(t, cgroup_id))
}

/// Whether `t` waits for the workload of `cgroup_id`.
fn waits_for(t: &TrackedFlow, cgroup_id: u64) -> bool {
    t.wants_workload() && t.flow.cgroup_id == cgroup_id
}

#[cfg(test)]
#[path = "live_tests.rs"]
mod tests;
