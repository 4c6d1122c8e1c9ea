//! The `observer` command: parses arguments and dispatches to a subcommand.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cmd;

/// observer: a passive TCP flow observer. It watches every TCP connection on
/// this host through eBPF and reports each flow's state.
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Collect for a while, then print one row per flow seen (open and closed).
    Flows(cmd::flows::Args),
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Flows(args) => cmd::flows::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let chain: Vec<String> = e.chain().map(ToString::to_string).collect();
            eprintln!("observer: error: {}", chain.join(": "));
            ExitCode::FAILURE
        }
    }
}
