//! The error type returned at the crate's API boundary.

use std::io;

/// Everything that can go wrong while building, running or tearing down a path.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A system call or file operation failed; `context` says which one.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, e.g. "open /dev/net/tun in pe-123-0-a".
        context: String,
        /// The underlying operating-system error.
        #[source]
        source: io::Error,
    },
    /// An external command (`ip ...`) ran but reported failure.
    #[error("command `{command}` failed ({status}): {stderr}")]
    Command {
        /// The command line, for the message.
        command: String,
        /// Its exit status, as printed by the standard library.
        status: String,
        /// What it wrote on standard error (trimmed).
        stderr: String,
    },
    /// A [`crate::PathConfig`] or [`crate::Link`] value is out of range.
    #[error("invalid path configuration: {0}")]
    InvalidConfig(String),
}

impl Error {
    /// Wraps an [`io::Error`] with a short description of the failed step.
    pub(crate) fn io(context: impl Into<String>, source: io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

/// Shorthand for `Result<T, pathemu::Error>`.
pub type Result<T> = std::result::Result<T, Error>;
