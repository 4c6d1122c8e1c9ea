//! One module per subcommand.

pub mod flows;
pub mod man;
pub mod run;
pub mod session;
pub mod top;
