//! The live flow book of a long-running view (`observer run`, `observer
//! top`): every tracked flow's latest sample, its current verdict over a
//! sliding window, its life verdict, an optional short history for
//! sparklines, and the events (started, closed) that sinks count.
//!
//! Pure code: it is fed samples and the time; it does no I/O.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use observer_common::{FlowSample, chrono};

pub use super::history::HistoryPoint;
use super::{history, pending::Unresolved};
use crate::{
    attribution::{self, Attribution, LimitedTime, Point},
    model::clock::Clock,
    model::flow::Flow,
};

/// Settings of a [`Book`].
#[derive(Clone, Copy, Debug)]
pub struct BookConfig {
    /// Span the current verdict covers, at least (the verdict window).
    pub window: Duration,
    /// How long a closed flow stays in the book after its close record;
    /// zero: until [`Book::drop_closed`].
    pub linger: Duration,
    /// History points kept per flow for sparklines (0: none).
    pub history: usize,
    /// Attribution thresholds.
    pub attribution: attribution::Config,
}

impl Default for BookConfig {
    fn default() -> Self {
        BookConfig {
            window: Duration::from_secs(1),
            linger: Duration::from_secs(5),
            history: 0,
            attribution: attribution::Config::default(),
        }
    }
}

/// The book's settings as [`Tracked::advance`] takes them.
struct Rules {
    window_ns: u64,
    clock: Clock,
    attribution: attribution::Config,
    history: usize,
}

/// A sample and when it was read. The sample is shared: an idle flow's
/// reads, anchors and latest sample are one allocation, so a poll that
/// finds it unchanged copies a pointer, not its 528 bytes, per anchor.
#[derive(Clone, Debug)]
struct Read {
    sample: Arc<FlowSample>,
    at_ns: u64,
}

/// One tracked flow.
#[derive(Clone, Debug)]
pub struct Tracked {
    /// The latest sample (a closed record once closed).
    pub latest: Arc<FlowSample>,
    /// The latest figures as a user reads them.
    pub flow: Flow,
    /// Verdict over the last window or so (for a closed flow: as of its
    /// last open sample).
    pub current: Attribution,
    /// Verdict over the flow's observed life.
    pub life: Attribution,
    /// Recent history, oldest first (empty unless configured).
    pub history: VecDeque<HistoryPoint>,
    /// When the close record was read (monotonic ns), if closed.
    pub closed_at_ns: Option<u64>,
    first: Read,
    born_here: bool,
    anchor_old: Read,
    anchor_new: Read,
    prev: Read,
    /// The book's poll count when a read last reached it.
    polled: u64,
}

impl Tracked {
    /// Starts a new verdict window at `read` once the newest anchor is
    /// `window_ns` old: the window then spans one to two windows. Says
    /// whether it did.
    fn rotate(&mut self, read: &Read, window_ns: u64) -> bool {
        let rotate = read.at_ns.saturating_sub(self.anchor_new.at_ns) >= window_ns;
        if rotate {
            self.anchor_old = std::mem::replace(&mut self.anchor_new, read.clone());
        }
        rotate
    }

    /// A poll that found the flow unchanged: the time since the previous
    /// poll goes to the chrono state the flow is in, with nothing moved.
    fn idle_poll(&mut self, read: &Read, history: usize) -> Event {
        let s = &read.sample;
        let dt_us = read.at_ns.saturating_sub(self.prev.at_ns) / 1000;
        let mut limited = LimitedTime::default();
        *match s.chrono_type {
            chrono::RWND_LIMITED => &mut limited.rwnd_us,
            chrono::SNDBUF_LIMITED => &mut limited.sndbuf_us,
            chrono::BUSY => &mut limited.other_busy_us,
            _ => &mut limited.idle_us,
        } = dt_us;
        history::push(
            &mut self.history,
            history,
            history::point(&read.sample, 0.0),
        );
        self.prev = read.clone();
        Event::Progress {
            cookie: s.cookie,
            verdict: self.current.verdict,
            bytes_acked: 0,
            bytes_received: 0,
            retransmits: 0,
            limited,
        }
    }

    /// Whether the current verdict is an idle flow's, settled: over a
    /// window of some length in which nothing moved, `application` (idle),
    /// or `unknown` (a receiving end's "too little to say") with less
    /// waiting to be read than the reader rule needs, two of the peer's
    /// segments. While nothing moves such a verdict holds; judging it
    /// again would only restate the window's length in its explanation.
    fn settled_idle(&self) -> bool {
        let ev = &self.current.evidence;
        ev.bytes_acked == 0
            && ev.bytes_received == 0
            && ev.interval_us > 0
            && match self.current.verdict {
                attribution::Verdict::Application => true,
                attribution::Verdict::Unknown => {
                    self.latest.unread < 2 * self.latest.rcv_mss.max(536)
                }
                _ => false,
            }
    }

    /// Takes `read` as the latest sample and judges the flow again: the
    /// current verdict over the window (kept at a close), the life verdict.
    /// When the flow `moved`, the step since the previous poll as an event,
    /// and its rate (bits/s, the larger direction).
    fn judge(
        &mut self,
        read: &Read,
        is_close: bool,
        moved: bool,
        clock: &Clock,
        cfg: &attribution::Config,
    ) -> Option<(Event, f64)> {
        let prev = Point::new(&self.prev.sample, clock, self.prev.at_ns);
        self.latest = Arc::clone(&read.sample);
        let to = Point::new(&read.sample, clock, read.at_ns);
        // A closing flow keeps the current verdict of its last open sample:
        // the span up to the close is mostly the wind-down after the
        // transfer, not what limited it. Its life verdict covers it all.
        if !is_close {
            let from = Point::new(&self.anchor_old.sample, clock, self.anchor_old.at_ns);
            self.current = attribution::attribute(Some(&from), &to, cfg);
        }
        let life_from =
            (!self.born_here).then(|| Point::new(&self.first.sample, clock, self.first.at_ns));
        self.life = attribution::attribute(life_from.as_ref(), &to, cfg);
        let step = moved.then(|| {
            let step = attribution::Evidence::between(Some(&prev), &to);
            let event = Event::Progress {
                cookie: read.sample.cookie,
                verdict: self.current.verdict,
                bytes_acked: step.bytes_acked,
                bytes_received: step.bytes_received,
                retransmits: u64::from(step.retransmits),
                limited: LimitedTime::of(&step),
            };
            (event, step.rate_bps.max(step.recv_rate_bps))
        });
        // The workload stays resolved while the owner's cgroup does.
        let workload = std::mem::take(&mut self.flow.workload);
        let same = self.flow.cgroup_id == to.flow.cgroup_id;
        self.flow = to.flow;
        if same {
            self.flow.workload = workload;
        }
        step
    }

    /// Takes `read` of the flow (`moved`: a new sample; `is_close`: its
    /// close record): rotates the verdict window; an unmoved flow's time
    /// goes to the chrono state it is in, and its verdict is judged again
    /// only when the window moved on and it is not settled idle; a moved
    /// flow is judged and its step is an event.
    fn advance(
        &mut self,
        read: Read,
        moved: bool,
        is_close: bool,
        rules: &Rules,
        events: &mut Vec<Event>,
    ) {
        let rotated = self.rotate(&read, rules.window_ns);
        if !moved {
            // Nothing happened to the flow since the last poll (most flows on
            // a busy host): account the time by the chrono state it is in and
            // skip the arithmetic, unless the window moved on and the verdict
            // may change (an idle flow's verdict settles and then holds).
            events.push(self.idle_poll(&read, rules.history));
            if !rotated || self.settled_idle() {
                return;
            }
        }
        if let Some((step, rate_bps)) =
            self.judge(&read, is_close, moved, &rules.clock, &rules.attribution)
        {
            events.push(step);
            history::push(
                &mut self.history,
                rules.history,
                history::point(&read.sample, rate_bps),
            );
            self.prev = read;
        }
    }

    /// Whether the flow's owner has a cgroup and its workload is not
    /// resolved yet.
    fn wants_workload(&self) -> bool {
        !self.flow.workload.is_resolved() && self.flow.cgroup_id != 0
    }

    /// Whether the flow has closed.
    pub fn is_closed(&self) -> bool {
        self.closed_at_ns.is_some()
    }
}

/// Something sinks count once.
#[derive(Clone, Debug)]
pub enum Event {
    /// A flow appeared.
    Started {
        /// Its cookie.
        cookie: u64,
    },
    /// Bytes and limited time moved since the previous poll, under the
    /// flow's current verdict.
    Progress {
        /// The flow's cookie.
        cookie: u64,
        /// Current verdict.
        verdict: attribution::Verdict,
        /// Bytes acked since the previous poll.
        bytes_acked: u64,
        /// Bytes received since the previous poll.
        bytes_received: u64,
        /// Segments retransmitted since the previous poll.
        retransmits: u64,
        /// Where the time since the previous poll went.
        limited: LimitedTime,
    },
    /// A flow closed; its life verdict and totals.
    Closed {
        /// Life verdict.
        life: Box<Attribution>,
        /// Its last figures.
        flow: Box<Flow>,
        /// Observed life (first seen to close), seconds.
        duration_s: f64,
    },
}

/// The flow book.
pub struct Book {
    cfg: BookConfig,
    clock: Clock,
    start_ns: u64,
    /// Boxed: a `Tracked` is over 2 KB, and a map never gives back its
    /// buckets, so inline values would hold a burst's peak forever.
    flows: HashMap<u64, Box<Tracked>>,
    /// Flows whose workload may want resolving: new, their owner's cgroup
    /// changed, or not resolved yet.
    unresolved: Unresolved,
    /// Calls of [`Book::ingest_changes`].
    polls: u64,
}

impl Book {
    /// An empty book; flows born before `start_ns` get verdicts over what is
    /// observed from their first read.
    pub fn new(cfg: BookConfig, clock: Clock, start_ns: u64) -> Book {
        Book {
            cfg,
            clock,
            start_ns,
            flows: HashMap::new(),
            unresolved: Unresolved::default(),
            polls: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &BookConfig {
        &self.cfg
    }

    /// Every tracked flow (unordered).
    pub fn flows(&self) -> impl Iterator<Item = &Tracked> {
        self.flows.values().map(|t| &**t)
    }

    /// The flow with `cookie`.
    pub fn get(&self, cookie: u64) -> Option<&Tracked> {
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
        for (cgroup_id, workload, cookies) in done {
            for cookie in cookies {
                if let Some(t) = self.flows.get_mut(&cookie)
                    && waits_for(t, cgroup_id)
                {
                    t.flow.workload.0 = Some(Arc::clone(&workload));
                }
            }
        }
    }

    /// Drops every closed flow: with a zero [`BookConfig::linger`], once
    /// the sinks have read the poll's events (they look flows up in the
    /// book), so nothing is held until the next poll.
    pub fn drop_closed(&mut self) {
        self.flows.retain(|_, t| !t.is_closed());
    }

    /// Drops flow `cookie` from the book with no event: for an open flow
    /// gone from the kernel map whose close record was lost to a full ring
    /// buffer (counted as `ringbuf_drops`). Returns whether it was tracked.
    pub fn forget(&mut self, cookie: u64) -> bool {
        self.flows.remove(&cookie).is_some()
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

    /// [`Book::ingest`] of a read that holds the whole flow map when
    /// `whole`, else only the flows sampled since the last read (the
    /// change journal's, [`crate::kernel::journal`]): every open flow it
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
        for s in active {
            self.apply(s, now_ns, false, &rules, &mut events);
        }
        for s in closed {
            self.apply(s, now_ns, true, &rules, &mut events);
        }
        if !whole {
            self.advance_unchanged(now_ns, &rules, &mut events);
        }
        let linger = self.cfg.linger.as_nanos() as u64;
        if linger > 0 {
            self.flows.retain(|_, t| {
                t.closed_at_ns
                    .is_none_or(|c| now_ns.saturating_sub(c) < linger)
            });
        }
        events
    }

    /// Takes one sample of a flow (a close record when `is_close`) read at
    /// `now_ns`, and says what changed in `events`.
    fn apply(
        &mut self,
        s: &FlowSample,
        now_ns: u64,
        is_close: bool,
        rules: &Rules,
        events: &mut Vec<Event>,
    ) {
        let Some(t) = self.flows.get_mut(&s.cookie) else {
            let read = Read {
                sample: Arc::new(*s),
                at_ns: now_ns,
            };
            let mut t = self.track(&read);
            t.polled = self.polls;
            events.push(Event::Started { cookie: s.cookie });
            if s.seen_from_start != 0 && s.first_seen_ns >= self.start_ns {
                // Born in this run: what it did before this first read
                // (all of a short flow's life) counts too.
                events.push(birth_step(&read, &self.clock, t.current.verdict));
            }
            if is_close {
                t.closed_at_ns = Some(now_ns);
                self.close_event(&t, events);
            }
            let wants = t.wants_workload().then_some(t.flow.cgroup_id);
            self.flows.insert(s.cookie, Box::new(t));
            if let Some(cgroup_id) = wants {
                self.pend(cgroup_id, s.cookie);
            }
            return;
        };
        if t.is_closed() || (!is_close && s.last_seen_ns < t.latest.last_seen_ns) {
            return;
        }
        let moved =
            is_close || s.last_seen_ns != t.latest.last_seen_ns || s.samples != t.latest.samples;
        // Unmoved, the entry holds the sample already kept: share it.
        let read = Read {
            sample: if moved {
                Arc::new(*s)
            } else {
                Arc::clone(&t.latest)
            },
            at_ns: now_ns,
        };
        t.polled = self.polls;
        let cgroup_before = t.flow.cgroup_id;
        t.advance(read, moved, is_close, rules, events);
        // Its owner's cgroup changed (or it has one now): the workload
        // went with it. Unchanged and unresolved, it is listed already.
        let pend =
            (t.flow.cgroup_id != cgroup_before && t.wants_workload()).then_some(t.flow.cgroup_id);
        if is_close {
            t.closed_at_ns = Some(now_ns);
            let t = t.clone();
            self.close_event(&t, events);
        }
        if let Some(cgroup_id) = pend {
            self.pend(cgroup_id, s.cookie);
        }
    }

    /// What [`Tracked::advance`] needs of the book's settings.
    fn rules(&self) -> Rules {
        Rules {
            window_ns: self.cfg.window.as_nanos() as u64,
            clock: self.clock,
            attribution: self.cfg.attribution,
            history: self.cfg.history,
        }
    }

    /// Advances every open flow this poll's read did not hold (unchanged
    /// since the last read, which the change journal vouches for) to
    /// `now_ns`, as [`Book::apply`] would with its unchanged entry.
    fn advance_unchanged(&mut self, now_ns: u64, rules: &Rules, events: &mut Vec<Event>) {
        for t in self.flows.values_mut() {
            if t.polled == self.polls || t.is_closed() {
                continue;
            }
            t.polled = self.polls;
            let read = Read {
                sample: Arc::clone(&t.latest),
                at_ns: now_ns,
            };
            t.advance(read, false, false, rules, events);
        }
    }

    /// Lists flow `cookie` as waiting for the workload of `cgroup_id`.
    fn pend(&mut self, cgroup_id: u64, cookie: u64) {
        let flows = &self.flows;
        self.unresolved
            .pend(cgroup_id, cookie, |c, g| waits(flows, c, g));
    }

    fn track(&self, read: &Read) -> Tracked {
        let to = Point::new(&read.sample, &self.clock, read.at_ns);
        let born_here = crate::model::flow::born_since(&read.sample, self.start_ns);
        // A flow older than the book (or first seen mid-life) has no span
        // yet: its first read is its start (an empty interval, so `unknown`).
        let from = (!born_here).then(|| to.clone());
        let life = attribution::attribute(from.as_ref(), &to, &self.cfg.attribution);
        Tracked {
            latest: Arc::clone(&read.sample),
            flow: to.flow,
            current: life.clone(),
            life,
            history: VecDeque::new(),
            closed_at_ns: None,
            first: read.clone(),
            born_here,
            anchor_old: read.clone(),
            anchor_new: read.clone(),
            prev: read.clone(),
            polled: 0,
        }
    }

    fn close_event(&self, t: &Tracked, events: &mut Vec<Event>) {
        let s = &t.latest;
        let duration_s = s.closed_ns.saturating_sub(s.first_seen_ns) as f64 / 1e9;
        events.push(Event::Closed {
            life: Box::new(t.life.clone()),
            flow: Box::new(t.flow.clone()),
            duration_s,
        });
    }
}

/// The progress of a flow from its birth to its first read `read`,
/// under `verdict`.
fn birth_step(read: &Read, clock: &Clock, verdict: attribution::Verdict) -> Event {
    let to = Point::new(&read.sample, clock, read.at_ns);
    let step = attribution::Evidence::between(None, &to);
    Event::Progress {
        cookie: read.sample.cookie,
        verdict,
        bytes_acked: step.bytes_acked,
        bytes_received: step.bytes_received,
        retransmits: u64::from(step.retransmits),
        limited: LimitedTime::of(&step),
    }
}

/// Whether flow `cookie` of `flows` waits for the workload of `cgroup_id`.
fn waits(flows: &HashMap<u64, Box<Tracked>>, cookie: u64, cgroup_id: u64) -> bool {
    flows.get(&cookie).is_some_and(|t| waits_for(t, cgroup_id))
}

/// Whether `t` waits for the workload of `cgroup_id`.
fn waits_for(t: &Tracked, cgroup_id: u64) -> bool {
    t.wants_workload() && t.flow.cgroup_id == cgroup_id
}

#[cfg(test)]
#[path = "live_tests.rs"]
mod tests;
