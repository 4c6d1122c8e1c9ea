//! The owner walk: the kernel program `observer_owners`, an
//! `iter/task_file` iterator that gives each flow still without an owner
//! the process holding its socket (observer-ebpf/src/owner.rs). A
//! connecting flow has its owner from `connect()`; a flow accepted by a
//! listener has none until then, whether or not its owner ever reads.
//!
//! The walk visits every open file of every process (about 1 µs a file;
//! a host holding 100k sockets pays over 100 ms a walk), so it runs only
//! at polls that may find something: the first (the flows older than the
//! agent), and those after a read that found a flow made in the last
//! [`WALKS_AFTER_NEW`] polls still without an owner. A flow whose owner
//! read from it before the poll has its owner from the read hook and
//! walks nothing; one accepted and never read (a server that only sends,
//! or a process yet to call `accept()`, which a busy server may do a while
//! after the handshake) is walked for at most [`WALKS_AFTER_NEW`] polls.
//! Walking whenever flows were made instead walked at every poll on a host
//! that makes connections all the time: 49 ms a poll at 100k flows in the
//! benchmark of 2026-12-05, against 9.6 before the walk existed.

use std::collections::HashMap;

use observer_common::{FlowSample, tcp_state};

use crate::kernel::read::poll_iter::PollIter;

/// Polls in which a new flow without an owner is walked for: the one after
/// the read that found it and two more (2 s at the default 1 s interval).
pub const WALKS_AFTER_NEW: usize = 3;

/// Which polls walk: the first, and those while a flow made within the
/// last [`WALKS_AFTER_NEW`] polls is still known without an owner.
#[derive(Debug, Default)]
struct Schedule {
    /// Whether a poll has walked or been asked yet.
    started: bool,
    /// The flows found without an owner, by cookie: when the kernel first
    /// saw each (`first_seen_ns`, monotonic ns).
    pending: HashMap<u64, u64>,
    /// When the last [`WALKS_AFTER_NEW`] polls and the one before them
    /// started (monotonic ns), oldest first.
    polls: std::collections::VecDeque<u64>,
}

impl Schedule {
    /// Whether the poll starting at `now_ns` walks. Forgets the pending
    /// flows made before the poll that came before the last
    /// [`WALKS_AFTER_NEW`] (this one included): a flow the read after that
    /// poll found has had its walks.
    fn walks(&mut self, now_ns: u64) -> bool {
        self.polls.push_back(now_ns);
        if self.polls.len() > WALKS_AFTER_NEW + 1 {
            self.polls.pop_front();
        }
        if self.polls.len() == WALKS_AFTER_NEW + 1 {
            let cutoff = self.polls[0];
            self.pending.retain(|_, first_seen| *first_seen >= cutoff);
        }
        let first = !self.started;
        self.started = true;
        first || !self.pending.is_empty()
    }

    /// Takes what a read found: flows open and connected without an owner
    /// become pending, flows with one or closed leave the pending set.
    fn note(&mut self, active: &[FlowSample], closed: &[FlowSample]) {
        for s in active {
            if s.pid == 0 && tcp_state::is_connected(s.state) {
                self.pending.entry(s.cookie).or_insert(s.first_seen_ns);
            } else if !self.pending.is_empty() {
                self.pending.remove(&s.cookie);
            }
        }
        if !self.pending.is_empty() {
            for s in closed {
                self.pending.remove(&s.cookie);
            }
        }
    }
}

/// The owner walk as a poll runs it.
pub struct OwnerWalk {
    iter: PollIter,
    schedule: Schedule,
}

impl OwnerWalk {
    /// The walk of the attached iterator `iter`.
    pub fn new(iter: PollIter) -> OwnerWalk {
        OwnerWalk {
            iter,
            schedule: Schedule::default(),
        }
    }

    /// At a poll that starts at `now_ns` (monotonic ns), before its read:
    /// walks if this is the first poll or the reads since
    /// [`WALKS_AFTER_NEW`] polls ago found a new flow still without an
    /// owner. Returns whether it walked. A failed walk is said at most
    /// once a minute; the flows keep the owner a read gives them.
    pub fn at_poll(&mut self, now_ns: u64) -> bool {
        self.schedule.walks(now_ns)
            && self.iter.walk(
                "owner walk",
                "flows accepted by a listener show no pid or comm until they read",
            )
    }

    /// After the poll's read: the flows it read open (`active`, the whole
    /// map or the changes) and closed.
    pub fn note_read(&mut self, active: &[FlowSample], closed: &[FlowSample]) {
        self.schedule.note(active, closed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(cookie: u64, pid: u32, state: u8, first_seen_ns: u64) -> FlowSample {
        FlowSample {
            cookie,
            pid,
            state,
            first_seen_ns,
            ..FlowSample::ZERO
        }
    }

    #[test]
    fn walks_first_then_only_while_a_new_flow_has_no_owner() {
        let mut s = Schedule::default();
        // The first poll walks (the flows older than the agent).
        assert!(s.walks(100));
        // Flows made with an owner (connect(), or read before the poll)
        // walk nothing.
        s.note(&[flow(1, 7, tcp_state::ESTABLISHED, 150)], &[]);
        assert!(!s.walks(200));
        // An accepted flow without one walks the next polls ...
        s.note(&[flow(2, 0, tcp_state::ESTABLISHED, 250)], &[]);
        assert!(s.walks(300));
        assert!(s.walks(400));
        assert!(s.walks(500));
        // ... until it is older than the last three polls.
        assert!(!s.walks(600));
        // One that gets its owner stops the walks at once.
        s.note(&[flow(3, 0, tcp_state::ESTABLISHED, 650)], &[]);
        assert!(s.walks(700));
        s.note(&[flow(3, 9, tcp_state::ESTABLISHED, 650)], &[]);
        assert!(!s.walks(800));
        // So does a close, and a socket that is no connected flow (a
        // listener's, a connect still in progress) never starts any.
        s.note(&[flow(4, 0, tcp_state::ESTABLISHED, 850)], &[]);
        s.note(&[], &[flow(4, 0, tcp_state::CLOSE, 850)]);
        s.note(&[flow(5, 0, tcp_state::SYN_SENT, 860)], &[]);
        assert!(!s.walks(900));
    }

    #[test]
    fn an_old_flow_without_an_owner_walks_nothing_when_it_moves() {
        let mut s = Schedule::default();
        for t in [100, 200, 300, 400] {
            s.walks(t);
        }
        // Made before the last three polls, seen again as it moves: a
        // socket no walk could give a process (held by the kernel, say)
        // does not make every poll walk.
        s.note(&[flow(8, 0, tcp_state::ESTABLISHED, 50)], &[]);
        assert!(!s.walks(500));
    }
}
