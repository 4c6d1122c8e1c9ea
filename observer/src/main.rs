//! The `observer` command: parses arguments and dispatches to a subcommand.

use std::process::ExitCode;

use clap::{CommandFactory as _, Parser, Subcommand};

mod cmd;

/// A passive TCP flow observer. It watches every TCP connection on this
/// host through eBPF and says what keeps each flow from going faster.
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Collect for a while, then print one row per flow seen (open and closed).
    #[command(after_long_help = observer::filter::SYNTAX)]
    Flows(cmd::flows::Args),
    /// Run the agent: keep every flow's verdict current and serve Prometheus
    /// metrics on /metrics (and /healthz).
    #[command(after_long_help = observer::filter::SYNTAX)]
    Run(cmd::run::Args),
    /// Watch flows live in the terminal, with each one's bottleneck (like top).
    #[command(after_long_help = observer::filter::SYNTAX)]
    Top(cmd::top::Args),
    /// Print a shell completion script: `observer completions bash >
    /// /etc/bash_completion.d/observer` (or zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (`observer man | man -l -`), or write one per
    /// command with `--dir /usr/local/share/man/man1`.
    Man(cmd::man::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and version go out as clap writes them, and so does the
        // help a bare `observer` prints.
        Err(e)
            if !e.use_stderr()
                || e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand =>
        {
            e.exit()
        }
        Err(e) => {
            eprintln!("{}", cmd::usage::one_line(&e.render().to_string()));
            return ExitCode::from(2);
        }
    };
    // The agent logs a summary per interval at info; one-shot views only warnings.
    let level = if matches!(cli.command, Command::Run(_)) {
        "info"
    } else {
        "warn"
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level)).init();
    let result = match cli.command {
        Command::Flows(args) => cmd::flows::run(&args),
        Command::Run(args) => cmd::run::run(&args),
        Command::Top(args) => cmd::top::run(&args),
        Command::Completions { shell } => cmd::completions::run(shell, &Cli::command()),
        Command::Man(args) => cmd::man::run(&args, Cli::command()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.downcast_ref::<cmd::Usage>().is_some() => {
            eprintln!("observer: error: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            let chain: Vec<String> = e.chain().map(ToString::to_string).collect();
            eprintln!("observer: error: {}", chain.join(": "));
            ExitCode::FAILURE
        }
    }
}
