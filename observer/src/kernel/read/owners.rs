//! The owner walk: the kernel program `observer_owners`, an
//! `iter/task_file` iterator that gives each flow still without an owner
//! the process holding its socket (observer-ebpf/src/owner.rs). A
//! connecting flow has its owner from `connect()`; a flow accepted by a
//! listener has none until then, whether or not its owner ever reads.
//!
//! The walk visits every open file of every process, so it runs only at
//! polls that may find something: when flows were made since the last
//! walk, and at the [`WALKS_AFTER_NEW`] polls after that (an accepted
//! socket gets its file only when the process calls `accept()`, which a
//! busy server may do a while after the handshake).

use crate::kernel::read::poll_iter::PollIter;

/// Polls that walk after the flow count last moved: the one it moved at
/// and two more (2 s at the default 1 s interval).
pub const WALKS_AFTER_NEW: u8 = 3;

/// Which polls walk: those within [`WALKS_AFTER_NEW`] polls of one
/// where the kernel's count of flows made moved.
#[derive(Debug, Default)]
struct Schedule {
    /// `flows_created` (the kernel's count) at the last poll.
    created: Option<u64>,
    /// Polls left that walk.
    due: u8,
}

impl Schedule {
    /// Whether the poll that reads `created` walks (None, unread: it
    /// does).
    fn walks(&mut self, created: Option<u64>) -> bool {
        if created.is_none() || created != self.created {
            self.created = created;
            self.due = WALKS_AFTER_NEW;
        }
        if self.due == 0 {
            return false;
        }
        self.due -= 1;
        true
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

    /// At a poll where the kernel has made `created` flows so far
    /// (`Counter::FlowsCreated`; None if unread, which walks): walks if
    /// flows were made since the last poll or within
    /// [`WALKS_AFTER_NEW`] polls of that. Returns whether it walked. A
    /// failed walk is said at most once a minute; the flows keep the
    /// owner a read gives them.
    pub fn at_poll(&mut self, created: Option<u64>) -> bool {
        self.schedule.walks(created)
            && self.iter.walk(
                "owner walk",
                "flows accepted by a listener show no pid or comm until they read",
            )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_while_flows_are_new_and_rests_after() {
        let mut s = Schedule::default();
        // The first poll walks (the flows older than the agent).
        let walked: Vec<bool> = [5, 5, 5, 5, 5, 6, 6, 6, 6]
            .into_iter()
            .map(|n| s.walks(Some(n)))
            .collect();
        assert_eq!(
            walked,
            [true, true, true, false, false, true, true, true, false]
        );
        // An unread count walks.
        assert!(s.walks(None));
    }
}
