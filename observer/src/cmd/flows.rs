//! `observer flows`: collect for a duration, then print every flow seen.

use std::{io::Write as _, time::Duration};

use anyhow::Context as _;
use observer::{
    attribution,
    kernel::probes::{ProbeConfig, Probes},
    model::clock::monotonic_ns,
    sink::records,
    track::snapshot::FlowTable,
};
use observer_common::FlowSample;

pub use observer::args::{parse_positive, parse_rate};

use super::session;

/// Arguments of `observer flows`.
#[derive(clap::Args)]
pub struct Args {
    /// How long to collect before printing (e.g. 5s, 500ms, 1m, or a bare number of seconds).
    #[arg(long, default_value = "5s", value_parser = parse_positive, allow_hyphen_values = true)]
    duration: Duration,
    /// How often to read the kernel flow map while collecting.
    #[arg(long, default_value = "250ms", value_parser = parse_positive, allow_hyphen_values = true)]
    interval: Duration,
    /// Print NDJSON (one object per flow) instead of a table.
    #[arg(long)]
    json: bool,
    /// Target rate for the window what-if arithmetic, in bits/s with an
    /// optional k/M/G suffix (e.g. 35M). Default: twice the flow's rate.
    #[arg(long, value_parser = parse_rate, allow_hyphen_values = true)]
    target_rate: Option<u64>,
    /// Maximum flows tracked at once in the kernel (LRU map size).
    #[arg(long, default_value_t = observer_common::DEFAULT_MAX_FLOWS, value_parser = clap::value_parser!(u32).range(1..), allow_hyphen_values = true)]
    max_flows: u32,
}

/// Runs the subcommand.
///
/// # Errors
/// Preconditions, load failures, or a failed write to stdout.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let config = ProbeConfig {
        max_flows: args.max_flows,
        ..ProbeConfig::default()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .enable_io()
        .build()
        .context("cannot start the async runtime")?;
    // Signal handlers first: a stop during start-up still ends cleanly.
    let (mut term, mut int) = {
        let _ctx = rt.enter();
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::terminate()).context("cannot install a SIGTERM handler")?,
            signal(SignalKind::interrupt()).context("cannot install a SIGINT handler")?,
        )
    };
    let mut s = session::start(config)?;
    let run_start = monotonic_ns();
    let mut table = FlowTable::new();
    let mut buf = Buffers::default();
    rt.block_on(async {
        let deadline = tokio::time::Instant::now() + args.duration;
        loop {
            let next = (tokio::time::Instant::now() + args.interval).min(deadline);
            tokio::select! {
                _ = tokio::time::sleep_until(next) => {}
                _ = int.recv() => break,
                _ = term.recv() => break,
            }
            poll(&mut s.probes, &mut table, &mut buf);
            if tokio::time::Instant::now() >= deadline {
                break;
            }
        }
        anyhow::Ok(())
    })?;
    poll(&mut s.probes, &mut table, &mut buf);
    let cfg = attribution::Config {
        target_bps: args.target_rate.unwrap_or(0),
        ..attribution::Config::default()
    };
    let flows = table.reports(&s.clock, monotonic_ns(), run_start, &cfg);
    let mut out = std::io::stdout().lock();
    if args.json {
        records::write_json(&mut out, &flows)
    } else {
        records::write_table(&mut out, &flows)
    }
    .and_then(|()| out.flush())
    .context("cannot write to stdout")
}

/// One poll into `table`, in the read order every view shares.
fn poll(probes: &mut Probes, table: &mut FlowTable, buf: &mut Buffers) {
    probes.read(&mut buf.active, &mut buf.closed);
    table.ingest(&buf.active, &buf.closed, monotonic_ns());
}

/// The read buffers, kept between polls.
#[derive(Default)]
struct Buffers {
    active: Vec<FlowSample>,
    closed: Vec<FlowSample>,
}
