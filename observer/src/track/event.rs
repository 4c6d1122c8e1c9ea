//! What changed at a poll of the live flows ([`super::live::LiveFlows`]), as
//! the sinks count it: flows started, their progress, their close.

use crate::{
    attribution::{self, Attribution, LimitedTime},
    model::flow::Flow,
};

/// Something sinks count once.
#[derive(Clone, Debug)]
pub enum Event {
    /// A flow appeared.
    Started {
        /// Its cookie.
        cookie: u64,
    },
    /// Bytes and limited time moved since the previous poll, under the
    /// flow's current verdict.
    Progress {
        /// The flow's cookie.
        cookie: u64,
        /// Current verdict.
        verdict: attribution::Verdict,
        /// Bytes acked since the previous poll.
        bytes_acked: u64,
        /// Bytes received since the previous poll.
        bytes_received: u64,
        /// Segments retransmitted since the previous poll.
        retransmits: u64,
        /// Where the time since the previous poll went.
        limited: LimitedTime,
    },
    /// The open flows that are quiet (idle, their verdict settled; see
    /// [`crate::track::quiet`]) since the previous poll, summed: how many
    /// and where their time went. Each of them would be a
    /// [`Event::Progress`] with no bytes; with
    /// [`super::live::LiveConfig::idle_per_flow`] each is one.
    Quiet {
        /// Flows quiet over the whole step.
        flows: u64,
        /// Their time since the previous poll, summed, by chrono state.
        limited: LimitedTime,
    },
    /// A flow closed; its life verdict and totals.
    Closed {
        /// Life verdict.
        life: Box<Attribution>,
        /// Its last figures.
        flow: Box<Flow>,
        /// Observed life (first seen to close), seconds.
        duration_s: f64,
    },
}
