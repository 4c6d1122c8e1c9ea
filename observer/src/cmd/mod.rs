//! One module per subcommand.

pub mod flows;
pub mod man;
pub mod poll_read;
pub mod run;
pub mod session;
pub mod top;
