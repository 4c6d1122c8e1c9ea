//! The flow table: per flow, the first sample seen in this run and the
//! latest, open or closed.

use std::collections::HashMap;

use observer_common::FlowSample;

use crate::{
    attribution::{self, Attribution, Point},
    model::clock::Clock,
    model::flow::Flow,
};

/// What the table keeps of one flow.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// The first sample read in this run, and when it was read (monotonic ns).
    pub first: FlowSample,
    /// When `first` was read (monotonic ns).
    pub first_read_ns: u64,
    /// The latest sample; a closed record once the flow has closed.
    pub latest: FlowSample,
}

/// Latest sample per socket cookie. A closed record is final: samples of the
/// same cookie read from the map afterwards (a race between the ring buffer
/// and the map walk) are ignored.
#[derive(Default)]
pub struct FlowTable {
    flows: HashMap<u64, Entry>,
    /// Flows [`FlowTable::drain_closed`] has handed out, with when their
    /// close record was read (monotonic ns): a map sample of one read later
    /// (the race above) must not bring it back as a new open flow.
    drained: HashMap<u64, u64>,
}

/// How long a drained flow's cookie is remembered (ns): many polls longer
/// than the race between the ring buffer and the map walk it guards.
const DRAINED_KEPT_NS: u64 = 10_000_000_000;

/// A flow as reported: its figures and the verdict over the observed span.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Report {
    /// The flow's latest figures.
    #[serde(flatten)]
    pub flow: Flow,
    /// What limits it, with the evidence.
    #[serde(flatten)]
    pub attribution: Attribution,
}

impl FlowTable {
    /// An empty table.
    pub fn new() -> FlowTable {
        FlowTable::default()
    }

    fn insert(&mut self, s: FlowSample, read_ns: u64) {
        self.flows.insert(
            s.cookie,
            Entry {
                first: s,
                first_read_ns: read_ns,
                latest: s,
            },
        );
    }

    /// Records a sample read from the flow map at monotonic `read_ns`.
    pub fn update(&mut self, s: FlowSample, read_ns: u64) {
        if self.drained.contains_key(&s.cookie) {
            return;
        }
        match self.flows.get_mut(&s.cookie) {
            Some(e) if e.latest.closed_ns != 0 => {}
            Some(e) if e.latest.last_seen_ns > s.last_seen_ns => {}
            Some(e) => e.latest = s,
            None => self.insert(s, read_ns),
        }
    }

    /// Records a closed-flow record; it replaces the latest sample.
    pub fn close(&mut self, s: FlowSample, read_ns: u64) {
        if self.drained.contains_key(&s.cookie) {
            return;
        }
        match self.flows.get_mut(&s.cookie) {
            Some(e) => e.latest = s,
            None => self.insert(s, read_ns),
        }
    }

    /// Takes one poll's read ([`crate::kernel::probes::Probes::read`]) at
    /// monotonic `read_ns`: the map's samples, then the close records, as
    /// [`crate::track::live::LiveFlows::ingest`] does.
    pub fn ingest(&mut self, active: &[FlowSample], closed: &[FlowSample], read_ns: u64) {
        for s in active {
            self.update(*s, read_ns);
        }
        for s in closed {
            self.close(*s, read_ns);
        }
    }

    /// Every flow, ordered by first-seen time then cookie.
    pub fn entries(&self) -> Vec<&Entry> {
        let mut v: Vec<&Entry> = self.flows.values().collect();
        v.sort_by_key(|e| (e.latest.first_seen_ns, e.latest.cookie));
        v
    }

    /// Every flow's latest sample, ordered as [`FlowTable::entries`].
    pub fn flows(&self) -> Vec<&FlowSample> {
        self.entries().into_iter().map(|e| &e.latest).collect()
    }

    /// Reports for every flow as of monotonic `now_ns`. The verdict covers
    /// the flow's life when observer saw it set up after `run_start_ns`
    /// ([`crate::model::flow::born_since`]), else the span from its first read in
    /// this run.
    pub fn reports(
        &self,
        clock: &Clock,
        now_ns: u64,
        run_start_ns: u64,
        cfg: &attribution::Config,
    ) -> Vec<Report> {
        self.entries()
            .into_iter()
            .map(|e| report(e, clock, now_ns, run_start_ns, cfg))
            .collect()
    }

    /// Reports for the open flows only, as [`FlowTable::reports`] makes
    /// them, leaving out the flows first seen mid-life less than
    /// `min_span_ns` ago: their span is too short to judge (two samples
    /// microseconds apart read as idle); they come in a later report.
    pub fn open_reports(
        &self,
        clock: &Clock,
        now_ns: u64,
        run_start_ns: u64,
        min_span_ns: u64,
        cfg: &attribution::Config,
    ) -> Vec<Report> {
        self.entries()
            .into_iter()
            .filter(|e| e.latest.closed_ns == 0)
            .filter(|e| {
                crate::model::flow::born_since(&e.latest, run_start_ns)
                    || now_ns.saturating_sub(e.first_read_ns) >= min_span_ns
            })
            .map(|e| report(e, clock, now_ns, run_start_ns, cfg))
            .collect()
    }

    /// Removes every closed flow and returns their reports (final records,
    /// ordered as [`FlowTable::entries`]), for a stream that prints each
    /// flow once as it closes. A drained flow stays out of the table: a
    /// later sample or record of its cookie is ignored for ten seconds
    /// after `now_ns`, longer than any race between the ring buffer and
    /// the map walk.
    pub fn drain_closed(
        &mut self,
        clock: &Clock,
        now_ns: u64,
        run_start_ns: u64,
        cfg: &attribution::Config,
    ) -> Vec<Report> {
        self.drained
            .retain(|_, at| now_ns.saturating_sub(*at) < DRAINED_KEPT_NS);
        let mut closed: Vec<Entry> = self
            .flows
            .values()
            .filter(|e| e.latest.closed_ns != 0)
            .copied()
            .collect();
        closed.sort_by_key(|e| (e.latest.first_seen_ns, e.latest.cookie));
        for e in &closed {
            self.flows.remove(&e.latest.cookie);
            self.drained.insert(e.latest.cookie, now_ns);
        }
        closed
            .iter()
            .map(|e| report(e, clock, now_ns, run_start_ns, cfg))
            .collect()
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

/// The report of one flow as of monotonic `now_ns`: the verdict covers its
/// life when observer saw it set up after `run_start_ns`, else the span
/// from its first read in this run.
fn report(
    e: &Entry,
    clock: &Clock,
    now_ns: u64,
    run_start_ns: u64,
    cfg: &attribution::Config,
) -> Report {
    let to = Point::new(&e.latest, clock, now_ns);
    let from = (!crate::model::flow::born_since(&e.latest, run_start_ns))
        .then(|| Point::new(&e.first, clock, e.first_read_ns));
    let attribution = attribution::attribute(from.as_ref(), &to, cfg);
    Report {
        flow: to.flow,
        attribution,
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
        s.seen_from_start = 1;
        s
    }

    #[test]
    fn newer_samples_replace_older_and_close_is_final() {
        let mut t = FlowTable::new();
        t.update(s(1, 10, 0), 11);
        t.update(s(1, 20, 0), 21);
        t.update(s(1, 15, 0), 22);
        assert_eq!(t.flows()[0].bytes_acked, 20);
        t.close(s(1, 30, 30), 31);
        t.update(s(1, 40, 0), 41);
        assert_eq!(t.flows()[0].bytes_acked, 30);
        assert_eq!(t.flows()[0].closed_ns, 30);
        let e = t.entries()[0];
        assert_eq!((e.first.bytes_acked, e.first_read_ns), (10, 11));
        t.update(s(2, 5, 0), 6);
        assert_eq!(t.len(), 2);
        let order: Vec<u64> = t.flows().iter().map(|f| f.cookie).collect();
        assert_eq!(order, vec![1, 2]);
    }

    #[test]
    fn reports_span_life_or_run() {
        let clock = Clock::fixed(0, 250);
        let mut t = FlowTable::new();
        // Flow 1 was born (ns 1) before the run started (ns 5): its verdict
        // covers its first read (ns 11) to now; flow 7, born at 7, its life.
        t.update(s(1, 10, 0), 11);
        t.update(s(1, 20, 0), 21);
        t.update(s(7, 9, 0), 9);
        // Flow 8 was first seen after the run started, but mid-life (no
        // setup seen): its counters are older than the run, so its span
        // starts at its first read too.
        let mut old = s(8, 50, 0);
        old.seen_from_start = 0;
        t.update(old, 12);
        old.bytes_acked = 58;
        t.update(old, 30);
        let cfg = attribution::Config::default();
        let r = t.reports(&clock, 100, 5, &cfg);
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].attribution.evidence.interval_us, 0); // (100 - 11) ns rounds to 0 µs
        assert_eq!(r[0].attribution.evidence.bytes_acked, 10);
        assert_eq!(r[1].attribution.evidence.bytes_acked, 9);
        assert_eq!(r[2].attribution.evidence.bytes_acked, 8);
    }

    #[test]
    fn drained_flows_are_reported_once_and_stay_out() {
        let clock = Clock::fixed(0, 250);
        let cfg = attribution::Config::default();
        let mut t = FlowTable::new();
        t.ingest(&[s(1, 10, 0), s(2, 10, 0)], &[s(3, 12, 12)], 15);
        let first: Vec<u64> = t
            .drain_closed(&clock, 20, 0, &cfg)
            .iter()
            .map(|r| r.flow.cookie)
            .collect();
        assert_eq!(first, vec![3]);
        // Flow 1 closes; a stale map sample of flow 3 and a repeat of its
        // record come in the same poll (the ring/map race).
        t.ingest(&[s(3, 11, 0)], &[s(1, 30, 30), s(3, 12, 12)], 35);
        let second: Vec<u64> = t
            .drain_closed(&clock, 40, 0, &cfg)
            .iter()
            .map(|r| r.flow.cookie)
            .collect();
        assert_eq!(second, vec![1]);
        assert!(t.drain_closed(&clock, 50, 0, &cfg).is_empty());
        let open: Vec<u64> = t
            .open_reports(&clock, 50, 0, 0, &cfg)
            .iter()
            .map(|r| r.flow.cookie)
            .collect();
        assert_eq!(open, vec![2]);
        // Ten seconds on, cookie 3 may be a new flow (cookies are not
        // reused within a boot, but nothing else is assumed).
        t.drain_closed(&clock, 40 + DRAINED_KEPT_NS, 0, &cfg);
        t.update(s(3, 50, 0), 41 + DRAINED_KEPT_NS);
        assert_eq!(t.len(), 2);
    }
}
