//! Agent stalls at random: SIGSTOP for 1 to 3 s, every 5 to 15 s, as a
//! starved or descheduled agent (a CPU limit, a loaded node) would be.

use std::time::{Duration, Instant};

use pathemu::ChildGuard;

/// Shortest and longest stall.
pub const STALL: (Duration, Duration) = (Duration::from_secs(1), Duration::from_secs(3));
/// Shortest and longest time between two stalls.
const GAP: (Duration, Duration) = (Duration::from_secs(5), Duration::from_secs(15));

/// When the next stall is due and how long each was.
pub struct Stalls {
    rng: fastrand::Rng,
    next: Instant,
    /// Each stall's length.
    pub done: Vec<Duration>,
}

fn between(rng: &mut fastrand::Rng, (lo, hi): (Duration, Duration)) -> Duration {
    lo + (hi - lo).mul_f64(rng.f64())
}

impl Stalls {
    /// A schedule from `seed` (printed by the soak, so a run can be
    /// repeated), the first stall after the first gap.
    pub fn new(seed: u64) -> Stalls {
        let mut rng = fastrand::Rng::with_seed(seed);
        let next = Instant::now() + between(&mut rng, GAP);
        Stalls {
            rng,
            next,
            done: Vec::new(),
        }
    }

    /// Stops `agent` for a random length if a stall is due (and ends before
    /// `end`); returns how long it was stopped.
    pub fn maybe(&mut self, agent: &ChildGuard, end: Instant) -> Option<Duration> {
        let now = Instant::now();
        if now < self.next {
            return None;
        }
        let len = between(&mut self.rng, STALL);
        self.next = now + len + between(&mut self.rng, GAP);
        if now + len >= end {
            return None;
        }
        agent.signal(libc::SIGSTOP).unwrap();
        std::thread::sleep(len);
        agent.signal(libc::SIGCONT).unwrap();
        self.done.push(len);
        Some(len)
    }

    /// The longest stall so far.
    pub fn longest(&self) -> Duration {
        self.done.iter().copied().max().unwrap_or_default()
    }
}
