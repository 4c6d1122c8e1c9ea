//! One live flow ([`super::live::LiveFlows`]): its latest sample,
//! its verdict window's anchors, its current and life verdicts, and how a
//! poll's read advances it.

use std::collections::VecDeque;
use std::sync::Arc;

use observer_common::FlowSample;

use super::event::Event;
use super::phase::Phase;
use super::{history, history::HistoryPoint, quiet};
use crate::{
    attribution::{self, Attribution, LimitedTime, Point},
    model::clock::Clock,
    model::flow::Flow,
};

/// The live flows' settings as [`TrackedFlow::advance`] takes them.
pub(super) struct TrackSettings {
    pub(super) window_ns: u64,
    pub(super) clock: Clock,
    pub(super) attribution: attribution::Config,
    pub(super) history: usize,
    /// [`super::live::LiveConfig::explain_closes`].
    pub(super) explain_closes: bool,
}

/// The verdict window (ns) of a flow whose path's round trip is
/// `min_rtt_us`: the live flows' `window_ns`, or `min_rtts` round trips of the
/// path where that is longer, so that every current verdict spans the
/// round trips a judgement needs (`attribution::Config::min_rtts`: a
/// 300 ms path needs 1.2 s for four, more than the 1 s default).
pub(super) fn window_for(window_ns: u64, min_rtts: f64, min_rtt_us: u32) -> u64 {
    let rtts_ns = min_rtts * f64::from(min_rtt_us) * 1_000.0;
    window_ns.max(rtts_ns as u64)
}

/// A sample and when it was read. The sample is shared: an idle flow's
/// reads, anchors and latest sample are one allocation, so a poll that
/// finds it unchanged copies a pointer, not its 560 bytes, per anchor.
#[derive(Clone, Debug)]
pub(super) struct TimedSample {
    pub(super) sample: Arc<FlowSample>,
    pub(super) at_ns: u64,
}

/// One tracked flow.
#[derive(Clone, Debug)]
pub struct TrackedFlow {
    /// The latest sample (a closed record once closed).
    pub latest: Arc<FlowSample>,
    /// The latest figures as a user reads them.
    pub flow: Flow,
    /// Verdict over the last window or so (for a closed flow: as of its
    /// last open sample).
    pub current: Attribution,
    /// Verdict over the flow's observed life, to its last movement (or
    /// its close).
    pub life: Attribution,
    /// Recent history, oldest first (empty unless configured).
    pub history: VecDeque<HistoryPoint>,
    /// Where it is in its life: awake, quiet or closed.
    pub phase: Phase,
    pub(super) first: TimedSample,
    pub(super) born_here: bool,
    pub(super) anchor_old: TimedSample,
    pub(super) anchor_new: TimedSample,
    pub(super) prev: TimedSample,
    /// The live flows' poll count when a read last reached it.
    pub(super) polled: u64,
}

impl TrackedFlow {
    /// A flow first read at `read`, by live flows started at `start_ns`
    /// (monotonic ns) that judges with `cfg`.
    pub(super) fn new(
        read: &TimedSample,
        clock: &Clock,
        start_ns: u64,
        cfg: &attribution::Config,
    ) -> TrackedFlow {
        let to = Point::new(&read.sample, clock, read.at_ns);
        let born_here = crate::model::flow::born_since(&read.sample, start_ns);
        // A flow older than the live flows (or first seen mid-life) has no span
        // yet: its first read is its start (an empty interval, so `unknown`).
        let from = (!born_here).then(|| to.clone());
        let life = attribution::attribute(from.as_ref(), &to, cfg);
        TrackedFlow {
            latest: Arc::clone(&read.sample),
            flow: to.flow,
            current: life.clone(),
            life,
            history: VecDeque::new(),
            phase: Phase::Awake,
            first: read.clone(),
            born_here,
            anchor_old: read.clone(),
            anchor_new: read.clone(),
            prev: read.clone(),
            polled: 0,
        }
    }

    /// Starts a new verdict window at `read` once the newest anchor is a
    /// window old ([`window_for`] the flow's path): the window then spans
    /// one to two windows. Says whether it did.
    fn rotate(&mut self, read: &TimedSample, window_ns: u64, min_rtts: f64) -> bool {
        let window = window_for(window_ns, min_rtts, read.sample.min_rtt_us);
        let rotate = read.at_ns.saturating_sub(self.anchor_new.at_ns) >= window;
        if rotate {
            self.anchor_old = std::mem::replace(&mut self.anchor_new, read.clone());
        }
        rotate
    }

    /// A poll that found the flow unchanged: the time since the previous
    /// poll goes to the chrono state the flow is in, with nothing moved.
    fn idle_poll(&mut self, read: &TimedSample, history: usize) -> Event {
        let s = &read.sample;
        let dt_us = read.at_ns.saturating_sub(self.prev.at_ns) / 1000;
        let limited = quiet::idle_time(s.chrono_type, dt_us);
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

    /// Takes the flow off the quiet list's terms: the polls it `missed`
    /// (their times, oldest first; `complete`: all since it went quiet)
    /// found it unchanged, and rotate its verdict window as they would
    /// have. Its time over them went to the quiet steps, and a flow with
    /// more than one history point is never quiet, so nothing else moved.
    pub(super) fn wake(
        &mut self,
        missed: impl Iterator<Item = u64>,
        complete: bool,
        window_ns: u64,
        min_rtts: f64,
    ) {
        let mut first = !complete;
        for at_ns in missed {
            let read = TimedSample {
                sample: Arc::clone(&self.latest),
                at_ns,
            };
            if first {
                // The oldest polls are not kept: start at the oldest kept.
                self.anchor_old = read.clone();
                self.anchor_new = read.clone();
                first = false;
            }
            self.rotate(&read, window_ns, min_rtts);
            self.prev = read;
        }
    }

    /// Whether the current verdict is an idle flow's, settled: over a
    /// window of some length in which nothing moved, `application` (idle),
    /// or `unknown` (a receiving end's "too little to say") with less
    /// waiting to be read than the reader rule needs, two of the peer's
    /// segments. While nothing moves such a verdict holds; judging it
    /// again would only restate the window's length in its explanation.
    pub(super) fn settled_idle(&self) -> bool {
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
    /// current verdict over the window (kept at a close); when the flow
    /// `moved` (or closed), the life verdict (explained at a close where
    /// `rules.explain_closes`), and the step since the previous poll as
    /// an event with its rate (bits/s, the larger direction). An unmoved flow's life verdict stays as of its last
    /// movement: judged again, it would only add idle time at its end.
    fn judge(
        &mut self,
        read: &TimedSample,
        (is_close, moved): (bool, bool),
        rules: &TrackSettings,
    ) -> Option<(Event, f64)> {
        let (clock, cfg) = (&rules.clock, &rules.attribution);
        self.latest = Arc::clone(&read.sample);
        let to = Point::new(&read.sample, clock, read.at_ns);
        // A closing flow keeps the current verdict of its last open sample:
        // the span up to the close is mostly the wind-down after the
        // transfer, not what limited it. Its life verdict covers it all.
        if !is_close {
            let from = Point::new(&self.anchor_old.sample, clock, self.anchor_old.at_ns);
            self.current = attribution::attribute(Some(&from), &to, cfg);
        }
        if moved || is_close {
            let life_cfg = cfg.explaining(is_close && rules.explain_closes);
            self.life = self.life_to(&to, clock, &life_cfg);
        }
        let step = moved.then(|| {
            let prev = Point::new(&self.prev.sample, clock, self.prev.at_ns);
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
        // A socket never changes namespace: its name stays.
        let netns_name = self.flow.netns_name.take();
        self.flow = to.flow;
        self.flow.netns_name = netns_name;
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
    pub(super) fn advance(
        &mut self,
        read: TimedSample,
        moved: bool,
        is_close: bool,
        rules: &TrackSettings,
        events: &mut Vec<Event>,
    ) {
        let rotated = self.rotate(&read, rules.window_ns, rules.attribution.min_rtts);
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
        if let Some((step, rate_bps)) = self.judge(&read, (is_close, moved), rules) {
            events.push(step);
            history::push(
                &mut self.history,
                rules.history,
                history::point(&read.sample, rate_bps),
            );
            self.prev = read;
        }
    }

    /// The life verdict to the flow's last judged read, judged again with
    /// `cfg` and its explanation written.
    pub(super) fn life_explained(&self, clock: &Clock, cfg: &attribution::Config) -> Attribution {
        let to = Point::new(&self.prev.sample, clock, self.prev.at_ns);
        self.life_to(&to, clock, &cfg.explaining(true))
    }

    /// The life verdict up to `to` under `cfg`: from the flow's first read
    /// where it was first seen mid-life, else from its birth.
    fn life_to(&self, to: &Point, clock: &Clock, cfg: &attribution::Config) -> Attribution {
        let from =
            (!self.born_here).then(|| Point::new(&self.first.sample, clock, self.first.at_ns));
        attribution::attribute(from.as_ref(), to, cfg)
    }

    /// Whether the flow's owner has a cgroup and its workload is not
    /// resolved yet.
    pub(super) fn wants_workload(&self) -> bool {
        !self.flow.workload.is_resolved() && self.flow.cgroup_id != 0
    }

    /// Whether the flow has closed.
    pub fn is_closed(&self) -> bool {
        !self.phase.is_open()
    }

    /// When the close record was read (monotonic ns), if closed.
    pub fn closed_at_ns(&self) -> Option<u64> {
        match self.phase {
            Phase::Closed { at_ns } => Some(at_ns),
            _ => None,
        }
    }
}

/// The close of `t` as an event.
pub(super) fn close_event(t: &TrackedFlow, events: &mut Vec<Event>) {
    let s = &t.latest;
    let duration_s = s.closed_ns.saturating_sub(s.first_seen_ns) as f64 / 1e9;
    events.push(Event::Closed {
        life: Box::new(t.life.clone()),
        flow: Box::new(t.flow.clone()),
        duration_s,
    });
}

/// Whether `t`, just advanced by a read (`moved`: a new sample), is to be
/// listed quiet: open, unmoved, its verdict settled idle, and no more than
/// one history point kept (`history`): a quiet flow's history does not
/// move, and with one point kept its last stays right.
pub(super) fn settles(history: usize, t: &TrackedFlow, moved: bool) -> bool {
    history <= 1 && !moved && t.phase == Phase::Awake && t.settled_idle()
}

/// The progress of a flow from its birth to its first read `read`,
/// under `verdict`.
pub(super) fn birth_step(
    read: &TimedSample,
    clock: &Clock,
    verdict: attribution::Verdict,
) -> Event {
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
