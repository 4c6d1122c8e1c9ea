//! The poll-time read's budget: the walk runs at each poll while it costs
//! less than its budget, and pauses itself when it does not.
//!
//! The walk visits every socket it reaches at each poll, moved or not:
//! about 1-1.4 µs per socket on this project's 6.18 machines (`iter/tcp`,
//! docs/benchmarks.md: 14 ms a poll at 10k sockets, 99-136 ms at 100k in
//! two runs). What
//! it saves is per packet: the full samples the hooks skip. On a host
//! with many idle sockets it costs more than it saves, so with a budget
//! (`--poll-read auto`, the default: 1% of the poll interval) a walk that
//! takes longer pauses it:
//! - the programs are told that no walk reaches any flow (`POLL_SCOPE`
//!   none), so from then on the hooks sample every segment that ends a
//!   burst, as without the walk (the read hook stays off: it is attached
//!   only where no walk was planned, so an idle flow shows its last
//!   segment's unread data until the walk resumes);
//! - one more walk then catches up the flows whose events the hooks held
//!   back before they were told, and another at the next poll catches a
//!   hook that read the old scope just before and applied its segment
//!   after the first passed its socket;
//! - a walk that fails counts as over budget;
//! - every [`RETRY_POLLS`] polls a trial walk measures again (it changes
//!   nothing while the hooks sample anyway); one within half the budget
//!   resumes the walk: the programs are told its scope again, and the
//!   next poll's walk catches up what they hold from then on.
//!
//! Budgeting needs the scope map; a set adopted from a pin made before it
//! was pinned walks at every poll.

use std::time::{Duration, Instant};

use aya::maps::{Array, MapData};
use observer_common::poll_scope;

use crate::kernel::read::poll_iter::PollIter;

/// What a failed walk leaves undone, as its warning says.
const LOST: &str = "idle flows may show the figures of a segment or read before their last";

/// Polls between trial walks while paused: one walk a minute at the
/// default 1 s interval.
pub const RETRY_POLLS: u32 = 60;

/// The share of the poll interval the walk may take under `--poll-read
/// auto` (1%).
pub const BUDGET_SHARE: f64 = 0.01;

/// Whether the walk runs at each poll.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Walking; the programs hold back what the walk catches up.
    Walking,
    /// Paused this many polls ago; the programs sample as without it.
    Paused(u32),
}

/// The poll-time read as a poll runs it: the iterator, the scope the
/// programs are told while it walks, and its budget.
pub struct BudgetedWalk {
    iter: PollIter,
    /// `POLL_SCOPE` (slot 0: which flows a walk reaches), where known.
    scope: Option<Array<MapData, u64>>,
    /// What slot 0 holds while walking (`poll_scope::ALL` or `ONE_NETNS`).
    reach: u64,
    /// Longest walk that keeps it running; `None`: walk at every poll.
    budget: Option<Duration>,
    state: State,
    /// How long the last walk took.
    last: Duration,
    /// Walk once more at the next poll though paused: a hook that read
    /// the old scope just before the pause may apply its segment after
    /// the catch-up walk passed its socket.
    catch_up: bool,
}

impl BudgetedWalk {
    /// The walk of `iter`, told to the programs through `scope` (whose
    /// slot 0 holds `reach` while it walks), paused past `budget`.
    pub fn new(
        iter: PollIter,
        scope: Option<Array<MapData, u64>>,
        reach: u64,
        budget: Option<Duration>,
    ) -> BudgetedWalk {
        BudgetedWalk {
            iter,
            scope,
            reach,
            budget,
            state: State::Walking,
            last: Duration::ZERO,
            catch_up: false,
        }
    }

    /// The walk of a set an earlier agent pinned: as [`BudgetedWalk::new`]. A
    /// walk of one namespace (`reach` `ONE_NETNS`) is told this agent's,
    /// which its iterator walks (`netns`, the inode). Where the earlier
    /// agent left it paused (`scope` slot 0 none), it stays paused with a
    /// trial at the first poll, or, without a budget (`--poll-read on`),
    /// walks from now on.
    pub fn adopted(
        iter: PollIter,
        scope: Option<Array<MapData, u64>>,
        reach: u64,
        netns: u64,
        budget: Option<Duration>,
    ) -> BudgetedWalk {
        let paused = scope
            .as_ref()
            .and_then(|m| m.get(&observer_common::SCOPE_REACH, 0).ok())
            .is_some_and(|s| s == poll_scope::NONE);
        let mut walk = BudgetedWalk::new(iter, scope, reach, budget);
        if reach == poll_scope::ONE_NETNS
            && let Some(map) = &mut walk.scope
            && let Err(e) = map.set(observer_common::SCOPE_NETNS, netns, 0)
        {
            log::warn!(
                "cannot tell the adopted programs this agent's network namespace ({e}): flows \
                 of the one that pinned them may show the figures of a segment or read before \
                 their last"
            );
        }
        if paused {
            if budget.is_none() && walk.publish_scope(reach) {
                // The next poll's walk catches up what they held.
                walk.state = State::Walking;
            } else {
                walk.state = State::Paused(RETRY_POLLS - 1);
            }
        }
        walk
    }

    /// Whether the walk is running (not paused by its budget).
    pub fn walking(&self) -> bool {
        self.state == State::Walking
    }

    /// How long the last walk took (zero before the first, and while
    /// paused between trials it is the last trial's).
    pub fn last(&self) -> Duration {
        self.last
    }

    /// One poll's walk, or none while paused: see the module docs.
    pub fn poll(&mut self) {
        let budget = match (&self.scope, self.budget) {
            (Some(_), Some(b)) => b,
            _ => {
                self.last = self.timed().unwrap_or(Duration::ZERO);
                return;
            }
        };
        if !walks_now(self.state) {
            if std::mem::take(&mut self.catch_up) {
                self.iter.walk("poll-time read", LOST);
            }
            self.state = next(self.state, None, budget);
            return;
        }
        // A walk that fails counts as over budget: it pauses, and a trial
        // that fails stays paused (the hooks then sample as without it).
        let took = self.timed();
        self.last = took.unwrap_or(Duration::ZERO);
        let then = next(self.state, Some(took.unwrap_or(Duration::MAX)), budget);
        match (self.state, then) {
            (State::Walking, State::Paused(_)) if self.publish_scope(poll_scope::NONE) => {
                // Catch up what the hooks held before they were told, now
                // and at the next poll.
                self.iter.walk("poll-time read", LOST);
                self.catch_up = true;
                self.state = then;
                let why = match took {
                    Some(t) => format!(
                        "took {:.2} ms of CPU, over its budget of {:.2} ms (1% of the \
                         interval)",
                        ms(t),
                        ms(budget)
                    ),
                    None => "failed".to_string(),
                };
                // The walk's designed fallback, not something to fix:
                // said at info, as its resumption is.
                log::info!(
                    "the poll-time read is paused: its walk {why}; the programs sample every \
                     segment that ends a burst, as without it (reads are not sampled: an idle \
                     flow shows its last segment's unread data), and a trial walk every \
                     {RETRY_POLLS} polls resumes it (--poll-read on walks always)"
                );
            }
            (State::Paused(_), State::Walking) if self.publish_scope(self.reach) => {
                self.state = then;
                log::info!(
                    "the poll-time read resumes: a trial walk took {:.1} ms of CPU, within half \
                     its budget of {:.1} ms",
                    ms(self.last),
                    ms(budget)
                );
            }
            (State::Paused(_), _) => self.state = State::Paused(0),
            _ => {}
        }
    }

    /// One walk, timed by this thread's CPU time (user and kernel: the
    /// iterator's programs run in the read call), or by the wall clock
    /// where that clock cannot be read; `None` if it failed. CPU time is
    /// what the budget bounds: on a host whose CPUs are saturated (four
    /// loopback streams on two vCPUs) the wall clock also counts the time
    /// the thread waited to run, and a walk of 20 sockets read 2.9-5.8 ms
    /// against a 2.5 ms budget, which paused it at the load where it
    /// saves most.
    fn timed(&mut self) -> Option<Duration> {
        let (cpu, wall) = (thread_cpu(), Instant::now());
        let ok = self.iter.walk("poll-time read", LOST);
        let took = match (cpu, thread_cpu()) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => wall.elapsed(),
        };
        ok.then_some(took)
    }

    /// Tells the programs which flows a walk reaches (`POLL_SCOPE` slot
    /// 0); false (said) if the map cannot be written, and nothing changes.
    fn publish_scope(&mut self, scope: u64) -> bool {
        let Some(map) = &mut self.scope else {
            return false;
        };
        match map.set(observer_common::SCOPE_REACH, scope, 0) {
            Ok(()) => true,
            Err(e) => {
                log::warn!(
                    "cannot tell the programs whether the poll-time read walks ({e}): it goes \
                     on as it was"
                );
                false
            }
        }
    }
}

/// Whether a poll in `state` walks: always while walking, and the
/// [`RETRY_POLLS`]th poll of a pause (a trial).
fn walks_now(state: State) -> bool {
    match state {
        State::Walking => true,
        State::Paused(n) => n + 1 >= RETRY_POLLS,
    }
}

/// The state after a poll in `state` whose walk took `took` (`None`: it
/// did not walk) against `budget`: a walk over budget pauses, a trial
/// within half of it resumes (the gap keeps a walk near the budget from
/// pausing and resuming at every trial), a trial over it starts the
/// pause's count again.
fn next(state: State, took: Option<Duration>, budget: Duration) -> State {
    match (state, took) {
        (State::Walking, Some(t)) if t > budget => State::Paused(0),
        (State::Walking, _) => State::Walking,
        (State::Paused(n), None) => State::Paused(n + 1),
        (State::Paused(_), Some(t)) if t <= budget / 2 => State::Walking,
        (State::Paused(_), Some(_)) => State::Paused(0),
    }
}

/// The calling thread's CPU time so far (`CLOCK_THREAD_CPUTIME_ID`,
/// clock_gettime(2)); `None` where it cannot be read.
fn thread_cpu() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes only the timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// A duration in milliseconds.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUDGET: Duration = Duration::from_millis(10);

    fn ms(n: u64) -> Option<Duration> {
        Some(Duration::from_millis(n))
    }

    #[test]
    fn the_walk_is_timed_by_this_threads_cpu_not_the_wall_clock() {
        // Busy until the thread's CPU clock has moved 2 ms: it moves, and
        // never faster than the wall clock; a sleep moves only the wall.
        let wall = Instant::now();
        let cpu = thread_cpu().expect("readable");
        let mut spent = Duration::ZERO;
        while spent < Duration::from_millis(2) && wall.elapsed() < Duration::from_secs(10) {
            std::hint::black_box((0..1000u64).sum::<u64>());
            spent = thread_cpu().expect("readable") - cpu;
        }
        assert!(spent >= Duration::from_millis(2), "{spent:?}");
        // Within a millisecond: the two clocks are read at different grains.
        let elapsed = wall.elapsed();
        assert!(
            spent <= elapsed + Duration::from_millis(1),
            "{spent:?} of CPU in {elapsed:?}"
        );
        let before = thread_cpu().expect("readable");
        std::thread::sleep(Duration::from_millis(20));
        let slept = thread_cpu().expect("readable") - before;
        assert!(slept < Duration::from_millis(5), "{slept:?} of CPU asleep");
    }

    #[test]
    fn a_walk_over_budget_pauses_and_one_within_it_walks_on() {
        assert_eq!(next(State::Walking, ms(11), BUDGET), State::Paused(0));
        assert_eq!(next(State::Walking, ms(10), BUDGET), State::Walking);
        assert!(walks_now(State::Walking));
    }

    #[test]
    fn a_pause_tries_once_every_retry_polls_and_resumes_within_half_the_budget() {
        // Paused: no walk for RETRY_POLLS - 1 polls, then a trial.
        let mut s = State::Paused(0);
        let mut polls = 0;
        while !walks_now(s) {
            s = next(s, None, BUDGET);
            polls += 1;
        }
        assert_eq!(polls, RETRY_POLLS - 1);
        // A trial at 6 ms (over half of 10 ms) pauses again from zero...
        assert_eq!(next(s, ms(6), BUDGET), State::Paused(0));
        // ...one at 5 ms resumes.
        assert_eq!(next(s, ms(5), BUDGET), State::Walking);
    }
}
