//! The agent's rate limit on repeated warnings: one of a kind per
//! [`WARN_EVERY`], so that a condition that lasts does not flood the log.

use std::time::{Duration, Instant};

/// Least time between two warnings of one kind (drops, evictions, dropped
/// records): the first comes at the poll that sees it, later ones carry
/// the increase.
pub const WARN_EVERY: Duration = Duration::from_secs(10);

/// Whether a warning last logged at `last` may be logged now (at most one
/// per [`WARN_EVERY`]); notes that it is.
pub fn may_warn(last: &mut Option<Instant>) -> bool {
    let now = Instant::now();
    let ok = last.is_none_or(|t| now.duration_since(t) >= WARN_EVERY);
    if ok {
        *last = Some(now);
    }
    ok
}
