//! Reading what the kernel programs keep, each poll. Imports nothing from
//! [`super::load`] or [`super::probes`]: a reader is handed its maps.
//!
//! - [`flow_map`]: batched reads of the flow map;
//! - [`closed_ring`]: the closed-flow ring buffer, drained on its own
//!   thread;
//! - [`journal`]: the change journal, the cookies of the flows that moved;
//! - [`parked`]: closes the kernel kept in the flow map while the ring was
//!   full, and those the LRU took before a poll read them;
//! - [`owners`]: the owner walk, which gives flows accepted by a
//!   listener the process holding their socket;
//! - [`poll_iter`]: the poll-time read, which re-samples the flows that
//!   moved since the last poll; [`budgeted_walk`]: its budget, which pauses it
//!   where it costs more than its share of the interval.

pub mod budgeted_walk;
pub mod closed_ring;
pub mod flow_map;
pub mod journal;
pub mod owners;
pub mod parked;
pub mod poll_iter;
