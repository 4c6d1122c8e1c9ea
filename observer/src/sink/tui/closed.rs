//! The recently closed flows of `observer top` (`c` lists them): each
//! flow as it closed, judged over its whole observed life, kept while it
//! is among the last [`Retention::count`] closes and younger than
//! [`Retention::age`]. A flow of a few seconds otherwise leaves the live
//! table a few seconds after it closes (the live flows' linger).
//!
//! Pure code: fed close events and the time; no terminal here.

use std::{collections::VecDeque, time::Duration};

use super::row::Row;
use crate::track::{event::Event, live::LiveFlows};

/// Closes kept by default (`--closed`).
pub const DEFAULT_COUNT: usize = 50;

/// How long a close is kept by default (`--closed-for`): 10 minutes.
pub const DEFAULT_AGE: Duration = Duration::from_secs(600);

/// Most closes `--closed` may ask to keep: each holds a flow's figures
/// and its life verdict (a few KB).
pub const MAX_COUNT: usize = 10_000;

/// Which closes the list keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// At most this many, the newest (0: none, the list is off).
    pub count: usize,
    /// None older than this (since its close was read).
    pub age: Duration,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            count: DEFAULT_COUNT,
            age: DEFAULT_AGE,
        }
    }
}

/// One closed flow as the list shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ClosedFlow {
    /// The flow's last figures, its verdict over its observed life as
    /// `current` (so the row's RATE, VERDICT and ADVICE are its life's).
    pub row: Row,
    /// When its close was read (monotonic ns).
    pub at_ns: u64,
    /// Its observed life, first seen to close (seconds).
    pub life_s: f64,
}

impl ClosedFlow {
    /// The closed flow of a close event read at `at_ns` (monotonic ns);
    /// `None` for any other event.
    pub fn from_event(event: &Event, at_ns: u64) -> Option<ClosedFlow> {
        match event {
            Event::Closed {
                life,
                flow,
                duration_s,
            } => Some(ClosedFlow {
                row: Row {
                    flow: (**flow).clone(),
                    current: (**life).clone(),
                    history: Vec::new(),
                    closed: true,
                    average_bps: None,
                },
                at_ns,
                life_s: *duration_s,
            }),
            _ => None,
        }
    }
}

impl ClosedFlow {
    /// With the history `live` kept of the flow (none once it has gone).
    pub fn with_history(mut self, live: &LiveFlows) -> ClosedFlow {
        if let Some(t) = live.get(self.row.cookie()) {
            self.row.history = t.history.iter().copied().collect();
        }
        self
    }
}

/// The recently closed flows, newest first.
#[derive(Clone, Debug, Default)]
pub struct ClosedFlows {
    keep: Retention,
    /// Newest at the front.
    flows: VecDeque<ClosedFlow>,
    /// The time of the last [`ClosedFlows::expire`] (monotonic ns).
    now_ns: u64,
}

impl ClosedFlows {
    /// An empty list that keeps what `keep` says.
    pub fn new(keep: Retention) -> ClosedFlows {
        ClosedFlows {
            keep,
            flows: VecDeque::new(),
            now_ns: 0,
        }
    }

    /// What the list keeps.
    pub fn retention(&self) -> Retention {
        self.keep
    }

    /// Adds `flow`, the newest; the oldest beyond the count go.
    pub fn push(&mut self, flow: ClosedFlow) {
        if self.keep.count == 0 {
            return;
        }
        self.now_ns = self.now_ns.max(flow.at_ns);
        self.flows.push_front(flow);
        self.flows.truncate(self.keep.count);
    }

    /// Drops the closes older than the age kept, as of `now_ns`
    /// (monotonic ns).
    pub fn expire(&mut self, now_ns: u64) {
        self.now_ns = self.now_ns.max(now_ns);
        let age = u64::try_from(self.keep.age.as_nanos()).unwrap_or(u64::MAX);
        let now = self.now_ns;
        self.flows.retain(|f| now.saturating_sub(f.at_ns) <= age);
    }

    /// The closes kept, newest first.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &ClosedFlow> {
        self.flows.iter()
    }

    /// Number of closes kept.
    pub fn len(&self) -> usize {
        self.flows.len()
    }

    /// Whether none is kept.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// How long ago `flow` closed, as of the last [`ClosedFlows::expire`]
    /// or push.
    pub fn age(&self, flow: &ClosedFlow) -> Duration {
        Duration::from_nanos(self.now_ns.saturating_sub(flow.at_ns))
    }
}
