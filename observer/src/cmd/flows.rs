//! `observer flows`: collect for a duration, then print every flow seen.

use std::{io::Write as _, time::Duration};

use anyhow::Context as _;
use observer::{clock::monotonic_ns, flow::Flow, output, probes::ProbeConfig, table::FlowTable};

use super::session;

/// Arguments of `observer flows`.
#[derive(clap::Args)]
pub struct Args {
    /// How long to collect before printing (e.g. 5s, 500ms, 1m).
    #[arg(long, default_value = "5s", value_parser = parse_positive)]
    duration: Duration,
    /// How often to read the kernel flow map while collecting.
    #[arg(long, default_value = "250ms", value_parser = parse_positive)]
    interval: Duration,
    /// Print NDJSON (one object per flow) instead of a table.
    #[arg(long)]
    json: bool,
    /// Maximum flows tracked at once in the kernel (LRU map size).
    #[arg(long, default_value_t = observer_common::DEFAULT_MAX_FLOWS, value_parser = clap::value_parser!(u32).range(1..))]
    max_flows: u32,
}

/// Parses a duration that must be above zero.
pub fn parse_positive(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| format!("{e} (use e.g. 5s, 250ms, 1m)"))?;
    if d.is_zero() {
        return Err("must be greater than zero".to_string());
    }
    Ok(d)
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
    let mut s = session::start(config)?;
    let mut table = FlowTable::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .enable_io()
        .build()
        .context("cannot start the async runtime")?;
    let mut buf = Vec::new();
    rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("cannot install a SIGTERM handler")?;
        let deadline = tokio::time::Instant::now() + args.duration;
        loop {
            let next = (tokio::time::Instant::now() + args.interval).min(deadline);
            tokio::select! {
                _ = tokio::time::sleep_until(next) => {}
                _ = tokio::signal::ctrl_c() => break,
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
    let now = monotonic_ns();
    let flows: Vec<Flow> = table
        .flows()
        .into_iter()
        .map(|f| Flow::from_sample(f, &s.clock, now))
        .collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        output::write_json(&mut out, &flows)
    } else {
        output::write_table(&mut out, &flows)
    }
    .and_then(|()| out.flush())
    .context("cannot write to stdout")
}

fn poll(
    probes: &mut observer::probes::Probes,
    table: &mut FlowTable,
    buf: &mut Vec<observer_common::FlowSample>,
) {
    buf.clear();
    probes.drain_closed(buf);
    for s in buf.drain(..) {
        table.close(s);
    }
    probes.active(buf);
    for s in buf.drain(..) {
        table.update(s);
    }
    // Records that closed while the map was walked.
    probes.drain_closed(buf);
    for s in buf.drain(..) {
        table.close(s);
    }
}
