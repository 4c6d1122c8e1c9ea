//! One module per subcommand.

pub mod flows;
pub mod run;
pub mod session;
pub mod top;
