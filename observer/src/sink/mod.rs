//! The last stage: where results go.
//!
//! In: flows with their [`crate::attribution::Attribution`]s (from
//! [`crate::track`]). Out: text for people and NDJSON for scripts
//! ([`records`]; groups of them, the host view, [`groups`]), Prometheus metrics over HTTP ([`metrics`]), and the
//! terminal view of `observer top` ([`tui`]).

pub mod columns;
pub mod figures;
pub mod flow_log;
pub mod groups;
pub mod metrics;
pub mod records;
pub mod tui;
