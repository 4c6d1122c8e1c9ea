//! Metrics about `observer run --records` ([`crate::sink::flow_log`]):
//! the records written, and those dropped, by reason.

use prometheus::{IntCounter, IntCounterVec};

use super::registrar::Registrar;

/// The reasons a record is dropped, as `FlowLogError::reason` names them.
pub const REASONS: [&str; 3] = ["disk_full", "write", "serialise"];

/// The flow log's counters (cheap to clone: they share their values).
#[derive(Clone)]
pub struct FlowLogCounters {
    written: IntCounter,
    dropped: IntCounterVec,
}

impl FlowLogCounters {
    /// Defines and registers `observer_records_written_total` and
    /// `observer_records_dropped_total`, every reason's series at 0.
    ///
    /// # Errors
    /// A malformed definition (a programming error caught by the tests).
    pub(super) fn new(r: &Registrar) -> Result<FlowLogCounters, prometheus::Error> {
        let written = r.counter_vec(
            "observer_records_written_total",
            "Flow records --records wrote whole (0 without --records).",
            &[],
        )?;
        let dropped = r.counter_vec(
            "observer_records_dropped_total",
            "Flow records --records could not write, by reason: disk_full (ENOSPC, EDQUOT), \
             write (any other failure to write, rotate or open), serialise. A dropped record \
             leaves no partial line.",
            &["reason"],
        )?;
        for reason in REASONS {
            dropped.with_label_values(&[reason]);
        }
        Ok(FlowLogCounters {
            written: written.with_label_values::<&str>(&[]),
            dropped,
        })
    }

    /// Counts a record written.
    pub fn written(&self) {
        self.written.inc();
    }

    /// Counts a record dropped for `reason` (one of [`REASONS`]).
    pub fn dropped(&self, reason: &str) {
        self.dropped.with_label_values(&[reason]).inc();
    }
}
