//! `observer man`: the manual pages, generated from the same argument
//! definitions as `--help` (clap_mangen), so they never drift from it,
//! with sections of observer's own ([`page`]) made from the tables the
//! program uses ([`sections`], [`json_fields`]): each page stands alone,
//! with no pointer into a source tree an installed binary lacks.

mod json_fields;
mod metrics;
mod page;
mod sections;
mod synopsis;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use anyhow::Context as _;

/// Arguments of `observer man`.
#[derive(clap::Args)]
pub struct Args {
    /// Write one page per command into DIR (observer.1, observer-flows.1,
    /// observer-run.1, ...), e.g. /usr/local/share/man/man1; without it,
    /// print observer.1 to standard output.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Writes `bytes` to standard output. A reader that stopped early
/// (`observer man | head`) is done with them: no error, as for `observer
/// flows`.
///
/// # Errors
/// Standard output fails otherwise.
pub fn print(bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// What `--dir` says it did, in one line: `wrote 6 manual pages to DIR:
/// observer-flows.1, ..., observer.1`.
fn written(dir: &std::path::Path, pages: &[page::Page]) -> String {
    let names: Vec<&str> = pages.iter().map(|p| p.file_name.as_str()).collect();
    format!(
        "wrote {} manual pages to {}: {}",
        pages.len(),
        dir.display(),
        names.join(", ")
    )
}

/// Prints the top page, or writes every page into `--dir` and says so
/// in one line.
///
/// # Errors
/// The folder cannot be written, or standard output fails (a reader
/// closing it early is not an error).
pub fn run(args: &Args, cmd: clap::Command) -> anyhow::Result<()> {
    let mut pages = page::all(cmd).context("cannot render the manual pages")?;
    match &args.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            for p in &pages {
                let path = dir.join(&p.file_name);
                std::fs::write(&path, &p.roff)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            let line = written(dir, &pages);
            print(format!("{line}\n").as_bytes()).context("cannot write to standard output")
        }
        None => {
            // The command's own page comes last.
            let top = pages.pop().context("no manual page to print")?;
            print(&top.roff).context("cannot write the manual page")
        }
    }
}
