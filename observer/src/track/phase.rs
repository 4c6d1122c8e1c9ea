//! Where each tracked flow is in its life ([`Phase`]), and the indexes the
//! live flows keep by phase: the awake set, the quiet list, the closed
//! list, and the open flows counted by verdict. Every change of phase goes
//! through [`FlowsByPhase`], so the four stay in step with each flow's phase.

use std::collections::HashSet;

use super::quiet::Quiet;
use crate::attribution::Verdict;

/// Where a tracked flow is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Open; each poll that reads it, or the change journal's vouching
    /// that it did not move, advances it.
    Awake,
    /// Open, idle with a settled verdict ([`super::quiet`]): polls pass it
    /// by, and the quiet step advances it with every other quiet flow.
    Quiet,
    /// Closed: its close record was read at `at_ns` (monotonic ns). Held
    /// for the sinks until it lingers out or the closed flows are dropped.
    Closed {
        /// When the close record was read (monotonic ns).
        at_ns: u64,
    },
}

impl Phase {
    /// Whether the flow is open (awake or quiet).
    pub const fn is_open(self) -> bool {
        !matches!(self, Phase::Closed { .. })
    }
}

/// The live flows' flows by phase, indexed.
#[derive(Default)]
pub(super) struct FlowsByPhase {
    /// The open flows that are not quiet: those a read of the changes
    /// alone advances.
    pub(super) awake: HashSet<u64>,
    /// The open flows idle with a settled verdict.
    pub(super) quiet: Quiet,
    /// The closed flows still held (lingering, or until dropped).
    pub(super) closed: Vec<u64>,
    /// Open flows by current verdict, in [`Verdict::ALL`] order.
    pub(super) open_verdicts: [u64; Verdict::ALL.len()],
}

impl FlowsByPhase {
    /// A new flow `cookie`, first read open with verdict `verdict` (or
    /// closed at `closed_at_ns`): its phase.
    pub(super) fn born(
        &mut self,
        cookie: u64,
        verdict: Verdict,
        closed_at_ns: Option<u64>,
    ) -> Phase {
        match closed_at_ns {
            Some(at_ns) => {
                self.closed.push(cookie);
                Phase::Closed { at_ns }
            }
            None => {
                self.recount(None, Some(verdict));
                self.awake.insert(cookie);
                Phase::Awake
            }
        }
    }

    /// Awake flow `cookie` settles (verdict `verdict`, chrono type
    /// `chrono_type`): it goes on the quiet list.
    pub(super) fn settle(
        &mut self,
        cookie: u64,
        phase: &mut Phase,
        verdict: Verdict,
        chrono_type: u8,
    ) {
        if *phase != Phase::Awake {
            return;
        }
        self.awake.remove(&cookie);
        self.quiet.enter(cookie, verdict, chrono_type);
        *phase = Phase::Quiet;
    }

    /// Quiet flow `cookie` moved: it is awake again.
    pub(super) fn wake(&mut self, cookie: u64, phase: &mut Phase) {
        if *phase != Phase::Quiet {
            return;
        }
        self.quiet.leave(cookie);
        self.awake.insert(cookie);
        *phase = Phase::Awake;
    }

    /// Open flow `cookie`, counted under `verdict`, closes at `at_ns`.
    pub(super) fn close(&mut self, cookie: u64, phase: &mut Phase, verdict: Verdict, at_ns: u64) {
        match *phase {
            Phase::Closed { .. } => return,
            Phase::Quiet => {
                self.quiet.leave(cookie);
            }
            Phase::Awake => {
                self.awake.remove(&cookie);
            }
        }
        self.recount(Some(verdict), None);
        self.closed.push(cookie);
        *phase = Phase::Closed { at_ns };
    }

    /// Flow `cookie`, in `phase` and counted under `verdict` while open,
    /// leaves the by_phase (the flow is no longer tracked).
    pub(super) fn forget(&mut self, cookie: u64, phase: Phase, verdict: Verdict) {
        match phase {
            Phase::Closed { .. } => self.closed.retain(|&c| c != cookie),
            Phase::Quiet => {
                self.quiet.leave(cookie);
                self.recount(Some(verdict), None);
            }
            Phase::Awake => {
                self.awake.remove(&cookie);
                self.recount(Some(verdict), None);
            }
        }
    }

    /// Moves an open flow from verdict `from` to `to` in the counts by
    /// verdict (`None`: not open).
    pub(super) fn recount(&mut self, from: Option<Verdict>, to: Option<Verdict>) {
        if from == to {
            return;
        }
        let index = |v: Verdict| Verdict::ALL.iter().position(|a| *a == v);
        if let Some(i) = from.and_then(index) {
            self.open_verdicts[i] = self.open_verdicts[i].saturating_sub(1);
        }
        if let Some(i) = to.and_then(index) {
            self.open_verdicts[i] += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_count(r: &FlowsByPhase) -> u64 {
        r.open_verdicts.iter().sum()
    }

    #[test]
    fn each_phase_is_on_exactly_its_roster() {
        let mut r = FlowsByPhase::default();
        let mut p = r.born(1, Verdict::Path, None);
        assert_eq!(p, Phase::Awake);
        assert!(r.awake.contains(&1) && r.closed.is_empty());
        assert_eq!(r.quiet.len(), 0);
        assert_eq!(open_count(&r), 1);
        r.settle(1, &mut p, Verdict::Path, 0);
        assert_eq!(p, Phase::Quiet);
        assert!(!r.awake.contains(&1) && r.quiet.len() == 1);
        r.wake(1, &mut p);
        assert_eq!(p, Phase::Awake);
        assert!(r.awake.contains(&1));
        assert_eq!(r.quiet.len(), 0);
        // A quiet flow that closes leaves the quiet list and the counts.
        r.settle(1, &mut p, Verdict::Path, 0);
        r.close(1, &mut p, Verdict::Path, 7);
        assert_eq!(p, Phase::Closed { at_ns: 7 });
        assert!(!p.is_open());
        assert!(!r.awake.contains(&1) && r.closed == vec![1]);
        assert_eq!(r.quiet.len(), 0);
        assert_eq!(open_count(&r), 0);
        // Closing twice, settling or waking a closed flow change nothing.
        r.close(1, &mut p, Verdict::Path, 9);
        r.settle(1, &mut p, Verdict::Path, 0);
        r.wake(1, &mut p);
        assert_eq!(p, Phase::Closed { at_ns: 7 });
        assert_eq!((r.closed.len(), open_count(&r)), (1, 0));
        r.forget(1, p, Verdict::Path);
        assert!(r.closed.is_empty());
    }

    #[test]
    fn a_flow_born_closed_is_never_counted_open() {
        let mut r = FlowsByPhase::default();
        let p = r.born(2, Verdict::Sender, Some(5));
        assert_eq!(p, Phase::Closed { at_ns: 5 });
        assert_eq!((r.closed.clone(), open_count(&r)), (vec![2], 0));
    }

    #[test]
    fn forgetting_an_open_flow_takes_it_off_the_counts() {
        let mut r = FlowsByPhase::default();
        let mut p = r.born(3, Verdict::ReceiveWindow, None);
        r.born(4, Verdict::ReceiveWindow, None);
        r.settle(3, &mut p, Verdict::ReceiveWindow, 0);
        r.forget(3, p, Verdict::ReceiveWindow);
        assert_eq!(r.quiet.len(), 0);
        assert_eq!(open_count(&r), 1);
        r.recount(Some(Verdict::ReceiveWindow), Some(Verdict::Path));
        let by: Vec<u64> = r.open_verdicts.to_vec();
        let path = Verdict::ALL
            .iter()
            .position(|v| *v == Verdict::Path)
            .unwrap();
        assert_eq!(by[path], 1);
    }
}
