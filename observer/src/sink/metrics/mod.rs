//! The Prometheus exporter: the metric catalogue (metrics grouped by
//! concept: `flows`, `top`, `peers`, `agent`, `endpoint`), aggregation
//! labels with a cap, and the HTTP endpoint, with optional TLS and basic
//! auth (`web`), a cap on each client's connections (`admission`) and a
//! bound on an answer the client does not read (`stall`), and the counts
//! of the flow records `--records` writes (`flow_log`).
//!
//! In: each poll's [`crate::track::event::Event`]s, the live flows, the
//! kernel's self-counters and the poll's figures. Out: the registry that
//! `/metrics` encodes in the Prometheus text format.

pub mod admission;
pub mod agent;
pub mod auth;
pub mod catalogue;
mod endpoint;
mod flow_log;
mod flows;
pub mod health;
pub mod http;
pub mod labels;
mod peers;
pub mod process;
mod registrar;
pub mod stall;
pub mod tls;
mod top;
pub mod web;
pub mod web_config;

pub use catalogue::{Catalogue, CatalogueConfig};
pub use flow_log::FlowLogCounters;

/// The registry in the Prometheus text exposition format.
///
/// # Errors
/// Encoding failures (a malformed metric).
pub fn encode(registry: &prometheus::Registry) -> Result<String, prometheus::Error> {
    use prometheus::Encoder as _;
    let mut buf = Vec::new();
    prometheus::TextEncoder::new().encode(&registry.gather(), &mut buf)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}
