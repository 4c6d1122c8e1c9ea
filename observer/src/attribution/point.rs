//! What attribution reads: one flow's figures at one instant.

use observer_common::FlowSample;

use crate::model::{clock::Clock, flow::Flow};

/// One flow's figures at one moment: what the engine compares.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// When the figures hold (monotonic ns): the read time, or the close time
    /// of a closed flow.
    pub at_ns: u64,
    /// When the flow was first seen (monotonic ns).
    pub first_seen_ns: u64,
    /// The flow was first seen at its close: its counters cover a life
    /// observer did not watch.
    pub born_at_close: bool,
    /// The flow as read then.
    pub flow: Flow,
}

impl Point {
    /// The point for kernel sample `s` read at monotonic `now_ns`.
    pub fn new(s: &FlowSample, clock: &Clock, now_ns: u64) -> Point {
        Point {
            at_ns: if s.closed_ns != 0 {
                s.closed_ns
            } else {
                now_ns
            },
            first_seen_ns: s.first_seen_ns,
            born_at_close: s.born_at_close != 0,
            flow: Flow::from_sample(s, clock, now_ns),
        }
    }
}
