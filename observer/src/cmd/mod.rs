//! One module per subcommand.

pub mod flows;
pub mod session;
