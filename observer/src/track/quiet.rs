//! Quiet flows: the open flows that did not move at the last polls and
//! whose verdict has settled (an idle flow's, [`super::tracked::TrackedFlow`]'s
//! `settled_idle`). While a flow stays so, a poll has nothing to do for it
//! but add the time since the previous poll to the chrono state it is in.
//!
//! On a host that holds many connections open, most are quiet at any poll
//! (the benchmark's 100k flows, 1% moving each second). Visiting each of
//! them at every poll cost about 0.6 µs a flow, nearly all of it cache
//! misses on the flow's record; the live flows list them here instead, out of
//! the flows a poll visits, and a poll adds their time in one step per
//! chrono state ([`Quiet::step`]). A flow leaves the list when a read
//! finds it moved or closed, or when the live flows forget it; they then
//! replays the verdict-window rotations it skipped, from the poll times
//! kept here ([`Quiet::missed_since`]).
//!
//! Pure bookkeeping over cookies, like [`super::pending`].

use std::collections::{HashMap, VecDeque};

use observer_common::chrono;

use super::event::Event;
use crate::attribution::{LimitedTime, Verdict};

/// How many poll times are kept for replaying a waking flow's window
/// rotations: enough for a verdict window of 8 poll intervals (a window
/// spans one to two windows); a flow quiet for longer starts its replay
/// at the oldest kept poll, with both anchors there.
pub const POLLS_KEPT: usize = 16;

/// The chrono state (`tcp_chrono`, include/net/tcp.h) a quiet flow's time
/// goes to, as a poll that found it unchanged would count it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// `TCP_CHRONO_RWND_LIMITED`.
    Rwnd,
    /// `TCP_CHRONO_SNDBUF_LIMITED`.
    Sndbuf,
    /// `TCP_CHRONO_BUSY`: busy, neither of the above.
    Busy,
    /// No chrono running: idle.
    Idle,
}

impl State {
    const ALL: [State; 4] = [State::Rwnd, State::Sndbuf, State::Busy, State::Idle];

    fn of(chrono_type: u8) -> State {
        match chrono_type {
            chrono::RWND_LIMITED => State::Rwnd,
            chrono::SNDBUF_LIMITED => State::Sndbuf,
            chrono::BUSY => State::Busy,
            _ => State::Idle,
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// `dt_us` spent in this state.
    fn time(self, dt_us: u64) -> LimitedTime {
        let mut t = LimitedTime::default();
        *match self {
            State::Rwnd => &mut t.rwnd_us,
            State::Sndbuf => &mut t.sndbuf_us,
            State::Busy => &mut t.other_busy_us,
            State::Idle => &mut t.idle_us,
        } = dt_us;
        t
    }
}

/// `dt_us` (µs) of a flow found unchanged in chrono state `chrono_type`
/// (the sample's `chrono_type`), as its limited time.
pub fn idle_time(chrono_type: u8, dt_us: u64) -> LimitedTime {
    State::of(chrono_type).time(dt_us)
}

/// One quiet flow: what its step would say.
#[derive(Clone, Copy, Debug)]
struct QuietFlow {
    verdict: Verdict,
    state: State,
}

/// The quiet flows, and the times of the last polls.
#[derive(Debug, Default)]
pub struct Quiet {
    flows: HashMap<u64, QuietFlow>,
    /// Quiet flows per chrono state, in [`State::ALL`] order.
    counts: [u64; 4],
    /// Monotonic ns of the last polls (at most [`POLLS_KEPT`]), oldest first.
    polls: VecDeque<u64>,
    /// The newest poll time no longer kept.
    dropped: Option<u64>,
}

impl Quiet {
    /// Lists flow `cookie` as quiet: current verdict `verdict`, chrono
    /// state `chrono_type` (its sample's).
    pub fn enter(&mut self, cookie: u64, verdict: Verdict, chrono_type: u8) {
        let state = State::of(chrono_type);
        if let Some(old) = self.flows.insert(cookie, QuietFlow { verdict, state }) {
            self.counts[old.state.index()] -= 1;
        }
        self.counts[state.index()] += 1;
    }

    /// Takes flow `cookie` off the list; says whether it was on it.
    pub fn leave(&mut self, cookie: u64) -> bool {
        match self.flows.remove(&cookie) {
            Some(q) => {
                self.counts[q.state.index()] -= 1;
                true
            }
            None => false,
        }
    }

    /// Number of quiet flows.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// Whether no flow is quiet.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// The step of every listed flow over `dt_us` (µs since the previous
    /// poll): one [`Event::Quiet`] with their sum, or with `per_flow` one
    /// [`Event::Progress`] each, as a poll visiting them would make.
    pub fn step(&self, dt_us: u64, per_flow: bool, events: &mut Vec<Event>) {
        if self.flows.is_empty() {
            return;
        }
        if per_flow {
            events.extend(self.flows.iter().map(|(cookie, q)| Event::Progress {
                cookie: *cookie,
                verdict: q.verdict,
                bytes_acked: 0,
                bytes_received: 0,
                retransmits: 0,
                limited: q.state.time(dt_us),
            }));
            return;
        }
        let mut limited = LimitedTime::default();
        for (state, n) in State::ALL.iter().zip(self.counts) {
            limited.add(&state.time(dt_us.saturating_mul(n)));
        }
        events.push(Event::Quiet {
            flows: self.flows.len() as u64,
            limited,
        });
    }

    /// Keeps the time of a poll (monotonic ns).
    pub fn polled(&mut self, at_ns: u64) {
        if self.polls.len() == POLLS_KEPT {
            self.dropped = self.polls.pop_front();
        }
        self.polls.push_back(at_ns);
    }

    /// The kept poll times after `at_ns`, oldest first, and whether they
    /// are all the polls since `at_ns` (false: older ones were dropped).
    pub fn missed_since(&self, at_ns: u64) -> (impl Iterator<Item = u64> + '_, bool) {
        let complete = self.dropped.is_none_or(|d| d <= at_ns);
        (
            self.polls.iter().copied().filter(move |&t| t > at_ns),
            complete,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_sums_the_quiet_flows_time_by_chrono_state() {
        let mut q = Quiet::default();
        q.enter(1, Verdict::Application, 0);
        q.enter(2, Verdict::Application, 0);
        q.enter(3, Verdict::Unknown, chrono::RWND_LIMITED);
        // Entered again in another state: counted once, in the new one.
        q.enter(2, Verdict::Application, chrono::BUSY);
        let mut ev = Vec::new();
        q.step(1_000_000, false, &mut ev);
        match &ev[..] {
            [Event::Quiet { flows, limited }] => {
                assert_eq!(*flows, 3);
                assert_eq!(limited.idle_us, 1_000_000);
                assert_eq!(limited.rwnd_us, 1_000_000);
                assert_eq!(limited.other_busy_us, 1_000_000);
                assert_eq!(limited.sndbuf_us, 0);
            }
            other => panic!("{other:?}"),
        }
        assert!(q.leave(1));
        assert!(!q.leave(1));
        let mut ev = Vec::new();
        q.step(500, true, &mut ev);
        assert_eq!(ev.len(), 2);
        for e in &ev {
            match e {
                Event::Progress {
                    cookie: 3,
                    verdict: Verdict::Unknown,
                    limited,
                    ..
                } => assert_eq!(limited.rwnd_us, 500),
                Event::Progress {
                    cookie: 2,
                    verdict: Verdict::Application,
                    limited,
                    ..
                } => assert_eq!(limited.other_busy_us, 500),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn the_polls_a_flow_missed_are_those_kept_after_it_went_quiet() {
        let mut q = Quiet::default();
        for t in 1..=20u64 {
            q.polled(t * 10);
        }
        let (missed, complete) = q.missed_since(180);
        assert_eq!(missed.collect::<Vec<_>>(), vec![190, 200]);
        assert!(complete);
        // Quiet since poll 2: polls 3 and 4 were dropped.
        let (missed, complete) = q.missed_since(20);
        assert_eq!(missed.count(), POLLS_KEPT);
        assert!(!complete);
        // Quiet since poll 4, the newest dropped: none missed is dropped.
        let (missed, complete) = q.missed_since(40);
        assert_eq!(missed.count(), POLLS_KEPT);
        assert!(complete);
    }
}
