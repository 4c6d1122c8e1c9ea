//! The relay's delay line: packets waiting for their delivery times, handed
//! out in due-time order.
//!
//! Packets that were not held back by the reorder draw arrive with delivery
//! times that never go backwards (departures are ordered, jitter keeps
//! order, the delay is fixed), so they wait in a FIFO: pushing and popping
//! cost O(1), as the plain `VecDeque` of a line without reordering did.
//! Held-back packets, which later packets overtake, wait in a binary heap
//! beside it (O(log n) for those only). The next packet out is the earlier
//! of the two fronts by (due time, arrival sequence).

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};

/// One waiting item with its delivery time and arrival sequence number.
#[derive(Debug)]
struct Entry<T> {
    due_ns: u64,
    seq: u64,
    item: T,
}

impl<T> Entry<T> {
    fn key(&self) -> (u64, u64) {
        (self.due_ns, self.seq)
    }
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl<T> Eq for Entry<T> {}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

/// Items (packets) waiting for their delivery times (ns).
#[derive(Debug)]
pub(crate) struct DelayLine<T> {
    /// In-order items, sorted by (due, seq) by construction.
    fifo: VecDeque<Entry<T>>,
    /// Held-back items and any that would break the FIFO's order.
    held: BinaryHeap<Reverse<Entry<T>>>,
    /// Sequence number of the next pushed item (ties on due time go in arrival order).
    next_seq: u64,
}

impl<T> Default for DelayLine<T> {
    fn default() -> Self {
        DelayLine {
            fifo: VecDeque::new(),
            held: BinaryHeap::new(),
            next_seq: 0,
        }
    }
}

impl<T> DelayLine<T> {
    /// Adds `item`, due at `due_ns`; `held_back` marks one the reorder draw
    /// held back (later items may be due before it). An item that is not
    /// held back but due before the FIFO's last one goes to the heap too, so
    /// the order is right whatever the caller passes.
    pub(crate) fn push(&mut self, due_ns: u64, held_back: bool, item: T) {
        let entry = Entry {
            due_ns,
            seq: self.next_seq,
            item,
        };
        self.next_seq += 1;
        let in_order = self.fifo.back().is_none_or(|b| b.due_ns <= due_ns);
        if held_back || !in_order {
            self.held.push(Reverse(entry));
        } else {
            self.fifo.push_back(entry);
        }
    }

    /// Whether the heap's front comes out before the FIFO's.
    fn heap_first(&self) -> Option<bool> {
        match (self.fifo.front(), self.held.peek()) {
            (None, None) => None,
            (Some(_), None) => Some(false),
            (None, Some(_)) => Some(true),
            (Some(f), Some(Reverse(h))) => Some(h < f),
        }
    }

    /// The delivery time of the next item out (ns), if any.
    pub(crate) fn next_due(&self) -> Option<u64> {
        match self.heap_first()? {
            true => self.held.peek().map(|Reverse(e)| e.due_ns),
            false => self.fifo.front().map(|e| e.due_ns),
        }
    }

    /// Removes and returns the next item out with its delivery time, if it
    /// is due by `limit_ns`.
    pub(crate) fn pop_due(&mut self, limit_ns: u64) -> Option<(u64, T)> {
        if self.next_due()? > limit_ns {
            return None;
        }
        let entry = if self.heap_first()? {
            self.held.pop().map(|Reverse(e)| e)
        } else {
            self.fifo.pop_front()
        }?;
        Some((entry.due_ns, entry.item))
    }

    /// The number of waiting items.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.fifo.len() + self.held.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain<T>(line: &mut DelayLine<T>) -> Vec<(u64, T)> {
        std::iter::from_fn(|| line.pop_due(u64::MAX)).collect()
    }

    #[test]
    fn in_order_items_come_out_fifo_and_only_when_due() {
        let mut line = DelayLine::default();
        assert_eq!(line.next_due(), None);
        for (i, due) in [10, 20, 20, 30].into_iter().enumerate() {
            line.push(due, false, i);
        }
        assert!(line.held.is_empty(), "the common case stays in the FIFO");
        assert_eq!(line.next_due(), Some(10));
        assert_eq!(line.pop_due(9), None);
        assert_eq!(line.pop_due(10), Some((10, 0)));
        // Equal due times keep arrival order.
        assert_eq!(line.pop_due(25), Some((20, 1)));
        assert_eq!(line.pop_due(25), Some((20, 2)));
        assert_eq!(line.pop_due(25), None);
        assert_eq!(line.len(), 1);
        assert_eq!(drain(&mut line), vec![(30, 3)]);
        assert_eq!(line.len(), 0);
    }

    #[test]
    fn held_back_items_are_overtaken() {
        // Packets 1 ms apart; packet 1 held back by 3.5 ms.
        let mut line = DelayLine::default();
        line.push(0, false, 0);
        line.push(4_500, true, 1);
        for i in 2..7u64 {
            line.push(i * 1_000, false, i);
        }
        let order: Vec<u64> = drain(&mut line).into_iter().map(|(_, i)| i).collect();
        assert_eq!(order, vec![0, 2, 3, 4, 1, 5, 6]);
    }

    #[test]
    fn ties_between_heap_and_fifo_go_by_arrival() {
        let mut line = DelayLine::default();
        line.push(5, true, "held first");
        line.push(5, false, "fifo second");
        line.push(5, true, "held third");
        let order: Vec<_> = drain(&mut line).into_iter().map(|(_, s)| s).collect();
        assert_eq!(order, vec!["held first", "fifo second", "held third"]);
    }

    #[test]
    fn out_of_order_pushes_not_marked_still_come_out_sorted() {
        let mut line = DelayLine::default();
        for (i, due) in [50u64, 10, 40, 40, 0, 60, 5].into_iter().enumerate() {
            line.push(due, false, i);
        }
        let out = drain(&mut line);
        let dues: Vec<u64> = out.iter().map(|(d, _)| *d).collect();
        assert_eq!(dues, vec![0, 5, 10, 40, 40, 50, 60]);
        // The two due at 40 in arrival order.
        assert_eq!((out[3].1, out[4].1), (2, 3));
    }

    #[test]
    fn many_random_pushes_come_out_sorted() {
        use rand::rngs::Xoshiro256PlusPlus;
        use rand::{RngExt, SeedableRng};
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let mut line = DelayLine::default();
        let mut t = 0u64;
        let mut popped = Vec::new();
        for i in 0..20_000u64 {
            t += rng.random_range(0..100u64);
            let held = rng.random::<f64>() < 0.1;
            let due = if held { t + 1_000 } else { t };
            line.push(due, held, i);
            // Deliver what is due now, as the relay does between reads.
            while let Some((d, _)) = line.pop_due(t.saturating_sub(500)) {
                popped.push(d);
            }
        }
        popped.extend(drain(&mut line).into_iter().map(|(d, _)| d));
        assert_eq!(popped.len(), 20_000);
        assert!(popped.windows(2).all(|w| w[0] <= w[1]));
    }
}
