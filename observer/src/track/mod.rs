//! Stage 3: tracking flows across polls.
//!
//! In: the samples [`crate::kernel::probes::Probes::read`] returns per poll
//! (open flows from the map, closed ones from the ring). It hands each
//! flow's two points of an interval to [`crate::attribution`] and keeps the
//! verdicts it returns. Out, to [`crate::sink`]: the judged flows
//! ([`snapshot::Report`], [`tracked::TrackedFlow`]) and what changed at a poll
//! ([`event::Event`]).
//!
//! - [`snapshot`]: `observer flows`: per flow the first sample of the run
//!   and the latest; judged once at the end.
//! - [`live`]: `observer run` and `observer top`: every flow's latest
//!   sample, a sliding verdict window, history and events (started, closed).
//! - [`poller`]: the long-running loop's state: the probes feeding a
//!   [`live::LiveFlows`], and the sweep that forgets flows whose close was lost.
//! - [`tracked`]: one live flow, and how a poll advances it.
//! - [`event`]: what changed at a poll, as the sinks count it.
//! - [`quiet`]: the open flows idle with a settled verdict, which a poll
//!   passes by and steps in one sum.
//! - [`history`]: a flow's last few points, for sparklines.
//! - [`pending`]: the flows waiting for their workload, by cgroup.
//! - [`cgroups`]: each flow's workload (unit, container, pod) from its
//!   cgroup id, for every view.
//! - [`netns`]: each flow's network namespace name (`ip netns`), from its
//!   inode, for every view.
//! - [`recording`]: the samples of each poll written to a file, and read
//!   back; [`replay`]: a recording judged as the live flows and the flow
//!   table judge (the scenario suite records, the golden test replays).

pub mod cgroups;
pub mod event;
pub mod history;
pub mod live;
pub mod netns;
pub mod pending;
pub mod phase;
pub mod poller;
pub mod quiet;
pub mod recording;
pub mod replay;
pub mod snapshot;
pub mod tracked;

#[cfg(test)]
mod replay_mirror_tests;
