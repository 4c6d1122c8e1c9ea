//! Metrics about the `/metrics` endpoint itself: the connections it
//! refused, by reason ([`super::admission`]).

use prometheus::IntCounter;

use super::{
    admission::{Reason, Refusals},
    registrar::Registrar,
};

/// Defines and registers `observer_endpoint_connections_refused_total`,
/// every reason's series at 0, and returns its counters for the gate.
///
/// # Errors
/// A malformed definition (a programming error caught by the tests).
pub(super) fn refusals(r: &Registrar) -> Result<Refusals, prometheus::Error> {
    let by_reason = r.counter_vec(
        "observer_endpoint_connections_refused_total",
        "Connections to this endpoint closed unserved, by reason: client_cap and total_cap \
         closed at accept (the client's --max-conns-per-client, or every slot, taken), \
         unauthenticated and displaced waited in the slots kept for scrapers that authenticate \
         and did not, or gave theirs to a newer connection.",
        &["reason"],
    )?;
    let counters: [IntCounter; Reason::ALL.len()] =
        Reason::ALL.map(|reason| by_reason.with_label_values(&[reason.label()]));
    Ok(Refusals::new(counters))
}
