//! The long-running loop's state: attached probes feeding a [`Book`].

use observer_common::{Counter, FlowSample};

use crate::{
    book::{Book, BookConfig, Event},
    clock::{Clock, monotonic_ns},
    probes::{ProbeError, Probes},
};

/// What one poll did, for logs and self-metrics.
#[derive(Clone, Copy, Debug, Default)]
pub struct PollStats {
    /// Flow-map entries read.
    pub active: usize,
    /// Closed-flow records read.
    pub closed: usize,
    /// Time the poll took (µs).
    pub took_us: u64,
}

/// Probes plus the book they feed.
pub struct Monitor {
    probes: Probes,
    book: Book,
    active: Vec<FlowSample>,
    closed: Vec<FlowSample>,
    /// Kernel self-counters as of the last poll, in [`Counter::ALL`] order.
    pub counters: [u64; Counter::COUNT as usize],
    /// Max entries of the kernel flow map.
    pub max_flows: u32,
}

impl Monitor {
    /// Wraps attached probes; the book starts now.
    pub fn new(probes: Probes, clock: Clock, cfg: BookConfig, max_flows: u32) -> Monitor {
        Monitor {
            probes,
            book: Book::new(cfg, clock, monotonic_ns()),
            active: Vec::new(),
            closed: Vec::new(),
            counters: [0; Counter::COUNT as usize],
            max_flows,
        }
    }

    /// The flow book.
    pub fn book(&self) -> &Book {
        &self.book
    }

    /// The attached probes (for their notes on what this kernel lacks).
    pub fn probes(&self) -> &Probes {
        &self.probes
    }

    /// Reads the ring buffer, the flow map and the counters once.
    ///
    /// # Errors
    /// A failed read of the counter map.
    pub fn poll(&mut self) -> Result<(Vec<Event>, PollStats), ProbeError> {
        let start = monotonic_ns();
        self.active.clear();
        self.closed.clear();
        self.probes.drain_closed(&mut self.closed);
        self.probes.active(&mut self.active);
        self.probes.drain_closed(&mut self.closed);
        let now = monotonic_ns();
        let events = self.book.ingest(&self.active, &self.closed, now);
        self.counters = self.probes.counters()?;
        let stats = PollStats {
            active: self.active.len(),
            closed: self.closed.len(),
            took_us: monotonic_ns().saturating_sub(start) / 1000,
        };
        Ok((events, stats))
    }
}
