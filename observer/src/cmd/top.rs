//! `observer top`: a live terminal view of flows and their bottlenecks.

use std::{io::IsTerminal as _, time::Duration};

use anyhow::Context as _;
use clap::builder::{PossibleValuesParser, TypedValueParser as _};
use observer::{
    kernel::load::probe_config::ProbeConfig,
    sink::tui::{self, select::Selection, sort::SortKey, state::Options},
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
    #[arg(long, default_value = "1s", value_parser = parse_positive, allow_hyphen_values = true)]
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
    #[arg(long, default_value_t = observer_common::DEFAULT_MAX_FLOWS, value_parser = clap::value_parser!(u32).range(1..), allow_hyphen_values = true)]
    max_flows: u32,
    #[command(flatten)]
    poll_read: super::poll_read::PollRead,
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
    };
    tui::run(poller, opts).context("observer top stopped")
}
