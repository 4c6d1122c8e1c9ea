//! `observer man`: the manual pages, generated from the same argument
//! definitions as `--help` (clap_mangen), so they never drift from it.

use std::path::PathBuf;

use anyhow::Context as _;

/// Arguments of `observer man`.
#[derive(clap::Args)]
pub struct Args {
    /// Write one page per command into DIR (observer.1, observer-flows.1,
    /// observer-run.1, ...), e.g. /usr/local/share/man/man1; without it,
    /// print observer.1 to standard output.
    #[arg(long)]
    dir: Option<PathBuf>,
}

/// Prints the top page, or writes every page into `--dir`.
///
/// # Errors
/// The folder cannot be written, or standard output is closed.
pub fn run(args: &Args, cmd: clap::Command) -> anyhow::Result<()> {
    match &args.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            clap_mangen::generate_to(cmd, dir)
                .with_context(|| format!("cannot write the manual pages into {}", dir.display()))?;
            Ok(())
        }
        None => clap_mangen::Man::new(cmd)
            .render(&mut std::io::stdout())
            .context("cannot write the manual page"),
    }
}
