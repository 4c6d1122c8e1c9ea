//! The flow table: the latest sample of every flow seen, open or closed.

use std::collections::HashMap;

use observer_common::FlowSample;

/// Latest sample per socket cookie. A closed record is final: samples of the
/// same cookie read from the map afterwards (a race between the ring buffer
/// and the map walk) are ignored.
#[derive(Default)]
pub struct FlowTable {
    flows: HashMap<u64, FlowSample>,
}

impl FlowTable {
    /// An empty table.
    pub fn new() -> FlowTable {
        FlowTable::default()
    }

    /// Records a sample from the flow map (an open flow).
    pub fn update(&mut self, s: FlowSample) {
        match self.flows.get_mut(&s.cookie) {
            Some(old) if old.closed_ns != 0 => {}
            Some(old) if old.last_seen_ns > s.last_seen_ns => {}
            Some(old) => *old = s,
            None => {
                self.flows.insert(s.cookie, s);
            }
        }
    }

    /// Records a closed-flow record; it replaces whatever was known.
    pub fn close(&mut self, s: FlowSample) {
        self.flows.insert(s.cookie, s);
    }

    /// Every flow, ordered by first-seen time then cookie.
    pub fn flows(&self) -> Vec<&FlowSample> {
        let mut v: Vec<&FlowSample> = self.flows.values().collect();
        v.sort_by_key(|s| (s.first_seen_ns, s.cookie));
        v
    }

    /// Number of flows held.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(cookie: u64, seen: u64, closed: u64) -> FlowSample {
        let mut s = FlowSample::ZERO;
        s.cookie = cookie;
        s.first_seen_ns = cookie;
        s.last_seen_ns = seen;
        s.closed_ns = closed;
        s.bytes_acked = seen;
        s
    }

    #[test]
    fn newer_samples_replace_older_and_close_is_final() {
        let mut t = FlowTable::new();
        t.update(s(1, 10, 0));
        t.update(s(1, 20, 0));
        t.update(s(1, 15, 0));
        assert_eq!(t.flows()[0].bytes_acked, 20);
        t.close(s(1, 30, 30));
        t.update(s(1, 40, 0));
        assert_eq!(t.flows()[0].bytes_acked, 30);
        assert_eq!(t.flows()[0].closed_ns, 30);
        t.update(s(2, 5, 0));
        assert_eq!(t.len(), 2);
        let order: Vec<u64> = t.flows().iter().map(|f| f.cookie).collect();
        assert_eq!(order, vec![1, 2]);
    }
}
