//! `observer top`: a live terminal view of flows and their bottlenecks.

use std::{
    io::{IsTerminal as _, Write as _},
    path::PathBuf,
    time::Duration,
};

use anyhow::Context as _;
use clap::builder::{PossibleValuesParser, TypedValueParser as _};
use observer::{
    args::parse_count,
    kernel::load::probe_config::ProbeConfig,
    sink::tui::{
        self,
        closed::{self, Retention},
        select::Selection,
        sort::SortKey,
        state::Options,
    },
    track::live::LiveConfig,
    track::poller::Poller,
};

use super::{flows::parse_positive, session};

/// History points kept per flow for the detail pane's sparklines.
const HISTORY: usize = 60;

/// Arguments of `observer top`.
#[derive(clap::Args)]
pub struct Args {
    /// How often to read the kernel flow map and refresh (e.g. 1s, 500ms).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_positive, allow_hyphen_values = true)]
    interval: Duration,
    /// Show only the flows an expression selects (e.g. 'dport = :5201',
    /// 'comm iperf3 and verdict receive_window'; FILTERS below),
    /// or whose process, pid, addresses or verdict contain every word of
    /// a TEXT that is not one (e.g. "iperf3 :5201").
    #[arg(long, value_name = "EXPR|TEXT", allow_hyphen_values = true, value_parser = parse_filter)]
    filter: Option<String>,
    /// Column to sort by (figures largest first, names A to Z).
    #[arg(
        long,
        value_name = "COLUMN",
        default_value = "rate",
        value_parser = PossibleValuesParser::new(SortKey::NAMES)
            .map(|s| SortKey::from_name(&s).unwrap_or(SortKey::Rate)),
    )]
    sort: SortKey,
    /// Maximum flows tracked at once in the kernel (LRU map size).
    #[arg(long, value_name = "N", default_value_t = observer_common::DEFAULT_MAX_FLOWS, value_parser = clap::value_parser!(u32).range(1..), allow_hyphen_values = true)]
    max_flows: u32,
    /// How many recently closed flows `c` lists, the newest (0 turns the
    /// list off; at most 10000).
    #[arg(long, value_name = "N", default_value_t = closed::DEFAULT_COUNT, value_parser = parse_closed, allow_hyphen_values = true)]
    closed: usize,
    /// How long a closed flow stays in the `c` list after it closes
    /// (e.g. 10m, 30s, or a bare number of seconds).
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_positive, allow_hyphen_values = true)]
    closed_for: Duration,
    /// Show the first line of this file above the table, re-read every
    /// interval (absent or empty: nothing); another program writes it,
    /// as `cargo xtask demo` names the step it runs.
    #[arg(long, value_name = "PATH")]
    caption_file: Option<PathBuf>,
    #[command(flatten)]
    poll_read: super::poll_read::PollRead,
}

/// Parses `--closed`: a count ([`parse_count`]) of at most
/// [`closed::MAX_COUNT`].
fn parse_closed(s: &str) -> Result<usize, String> {
    let n = parse_count(s)?;
    if n > closed::MAX_COUNT {
        return Err(format!(
            "{n} is more closed flows than top keeps: give at most {}",
            closed::MAX_COUNT
        ));
    }
    Ok(n)
}

/// Checks a `--filter` as the view will read it ([`Selection::parse`]);
/// the text, trimmed.
fn parse_filter(text: &str) -> Result<String, observer::filter::ParseError> {
    Selection::parse(text).map(|_| text.trim().to_string())
}

/// Runs the subcommand.
///
/// # Errors
/// No terminal on stdout (checked before any probe loads), preconditions,
/// load failures, or a terminal or kernel-map failure while running.
pub fn run(args: &Args) -> anyhow::Result<()> {
    if !std::io::stdout().is_terminal() {
        anyhow::bail!(
            "observer top needs a terminal and stdout is not one; for a table or JSON use `observer flows`"
        );
    }
    let config = args.poll_read.apply(
        ProbeConfig {
            max_flows: args.max_flows,
            ..ProbeConfig::default()
        },
        args.interval,
    );
    let s = session::start(config)?;
    let live_cfg = LiveConfig {
        history: HISTORY,
        attribution: observer::attribution::Config::default().with_hz(s.clock.hz),
        ..LiveConfig::default()
    };
    let poller = Poller::new(s.probes, s.clock, live_cfg, args.max_flows);
    let opts = Options {
        interval: args.interval,
        filter: args.filter.clone().unwrap_or_default(),
        sort: args.sort,
        closed: Retention {
            count: args.closed,
            age: args.closed_for,
        },
        caption_file: args.caption_file.clone(),
    };
    let summary = tui::run(poller, opts).context("observer top stopped")?;
    // On the restored terminal, below the shell's last lines: one screen.
    if let Some(summary) = summary {
        let (cols, rows) = crossterm::terminal::size().unwrap_or((80, 24));
        let mut out = std::io::stdout().lock();
        summary
            .write(
                &mut out,
                usize::from(rows.saturating_sub(2)).max(8),
                usize::from(cols).max(40),
            )
            .and_then(|()| out.flush())
            .context("cannot write the summary")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser as _;

    /// `observer top` with `args`, as clap parses it.
    #[derive(clap::Parser)]
    struct Top {
        #[command(flatten)]
        args: Args,
    }

    fn error(args: &[&str]) -> String {
        let argv = std::iter::once("top").chain(args.iter().copied());
        match Top::try_parse_from(argv) {
            Ok(_) => panic!("{args:?} parsed"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn closed_options_default_and_parse() {
        let t = Top::try_parse_from(["top"]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.args.closed, 50);
        assert_eq!(t.args.closed_for, Duration::from_secs(600));
        assert_eq!(t.args.caption_file, None);
        let t = Top::try_parse_from([
            "top",
            "--closed",
            "0",
            "--closed-for",
            "90",
            "--caption-file",
            "/tmp/c",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.args.closed, 0);
        assert_eq!(t.args.closed_for, Duration::from_secs(90));
        assert_eq!(t.args.caption_file, Some(PathBuf::from("/tmp/c")));
    }

    #[test]
    fn bad_closed_values_are_refused_in_one_line() {
        for (args, says) in [
            (&["--closed", "-3"][..], "'-3' is not a count"),
            (&["--closed", "lots"][..], "'lots' is not a count"),
            (&["--closed", "20000"][..], "give at most 10000"),
            (&["--closed-for", "0s"][..], "must be greater than zero"),
            (&["--closed-for", "soon"][..], "not a duration"),
        ] {
            let e = error(args);
            let first = e.lines().next().unwrap_or_default();
            assert!(first.contains(says), "{args:?}: {e}");
            assert!(
                first.contains(&format!("for '{}", args[0])),
                "{args:?}: {e}"
            );
        }
    }
}
