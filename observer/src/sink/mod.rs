//! The last stage: where results go.
//!
//! In: flows with their [`crate::attribution::Attribution`]s (from
//! [`crate::track`]). Out: text for people and NDJSON for scripts
//! ([`records`]), Prometheus metrics over HTTP ([`metrics`]), and the
//! terminal view of `observer top` ([`tui`]).

pub mod metrics;
pub mod records;
pub mod tui;
