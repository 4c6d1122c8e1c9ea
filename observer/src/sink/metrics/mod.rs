//! The Prometheus exporter: the metric catalogue, aggregation labels with a
//! cap, and the HTTP endpoint.

pub mod catalogue;
pub mod http;
pub mod labels;

pub use catalogue::Catalogue;

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
