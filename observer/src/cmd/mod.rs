//! One module per subcommand.

pub mod completions;
pub mod flows;
pub mod grouping;
pub mod man;
pub mod poll_read;
mod records;
pub mod run;
pub mod session;
pub mod top;
pub mod usage;
mod warn_rate;

/// A bad value in a file an option names (`run --web-config`): reported
/// like clap's own errors, with exit status 2, before anything is loaded.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Usage(pub String);
