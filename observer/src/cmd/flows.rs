//! `observer flows`: collect for a duration, then print every flow seen; or,
//! with `--follow`, print each flow as it closes until stopped.

use std::{io::Write as _, time::Duration};

use anyhow::Context as _;
use observer::{
    attribution::{self, group::GroupBy},
    filter::Filter,
    kernel::{load::probe_config::ProbeConfig, probes::Probes},
    model::clock::monotonic_ns,
    sink::{
        groups,
        records::{self, TableStream},
    },
    track::{
        cgroups::Cgroups,
        netns::{FirstNames, NetnsNames, no_namespace_named},
        snapshot::{FlowTable, Report},
    },
};
use observer_common::FlowSample;

pub use observer::args::{parse_positive, parse_rate};

use super::session;

/// Arguments of `observer flows`.
#[derive(clap::Args)]
pub struct Args {
    /// How long to collect before printing (e.g. 5s, 500ms, 1m, or a bare
    /// number of seconds). Default 5s; with --follow, until interrupted.
    #[arg(long, value_name = "DURATION", value_parser = parse_positive, allow_hyphen_values = true)]
    duration: Option<Duration>,
    /// How often to read the kernel flow map while collecting.
    #[arg(long, value_name = "DURATION", default_value = "250ms", value_parser = parse_positive, allow_hyphen_values = true)]
    interval: Duration,
    /// Print NDJSON (one object per flow) instead of a table.
    #[arg(long)]
    json: bool,
    /// Print each flow as it closes, one line each, flushed at once, until
    /// SIGINT, SIGTERM, --duration or a closed pipe (all exit 0), like
    /// bcc's tcplife.
    #[arg(long)]
    follow: bool,
    /// With --follow: also print a record of every open flow this often
    /// (e.g. 10s); its `closed` is false.
    #[arg(long, value_name = "DURATION", value_parser = parse_positive, allow_hyphen_values = true, requires = "follow")]
    every: Option<Duration>,
    /// Print only the flows this expression selects, e.g. 'dport = :443',
    /// 'dst 10.0.0.0/8 and not state time-wait', 'comm iperf3'
    /// (FILTERS below lists every term).
    #[arg(long, value_name = "EXPR", allow_hyphen_values = true)]
    filter: Option<Filter>,
    /// Target rate for the window what-if arithmetic, in bits/s with an
    /// optional k/M/G suffix (e.g. 35M). Default: twice the flow's rate.
    #[arg(long, value_name = "RATE", value_parser = parse_rate, allow_hyphen_values = true)]
    target_rate: Option<u64>,
    /// Maximum flows tracked at once in the kernel (LRU map size).
    #[arg(long, value_name = "N", default_value_t = observer_common::DEFAULT_MAX_FLOWS, value_parser = clap::value_parser!(u32).range(1..), allow_hyphen_values = true)]
    max_flows: u32,
    /// Pin the programs and maps in this directory of a BPF filesystem
    /// (e.g. /sys/fs/bpf/observer), so they outlive this process: flows
    /// that close while no observer runs are reported by the next one
    /// started with the same --pin. They stay attached after exit, at their
    /// per-packet cost, until `rm -r DIR`.
    #[arg(long, value_name = "DIR")]
    pin: Option<std::path::PathBuf>,
    /// Group the flows and judge each group: a per-flow limit (each flow
    /// held by its own window, reader or policer, their sum well above any
    /// one) or a shared one (one bottleneck), each group within its
    /// network namespace. A prefix may have any lengths: prefix/V4[,V6],
    /// IPv6 /64 by default.
    #[arg(long, value_name = "GROUPING", conflicts_with = "follow", value_parser = super::grouping::Grouping)]
    by: Option<GroupBy>,
    /// Print the host view in words: one line per group (by --by, peer by
    /// default) and what would help it.
    #[arg(long, conflicts_with_all = ["follow", "json"])]
    summary: bool,
    #[command(flatten)]
    poll_read: super::poll_read::PollRead,
}

/// How a run of `observer flows` ends its loop.
enum Stop {
    /// --duration passed, or a signal came.
    Done,
    /// Whoever reads stdout has gone (`| head`): exit 0 at once.
    ReaderGone,
}

/// Runs the subcommand.
///
/// # Errors
/// Preconditions, load failures, or a failed write to stdout (other than
/// a closed pipe under --follow).
pub fn run(args: &Args) -> anyhow::Result<()> {
    if let Some(every) = args.every
        && every < args.interval
    {
        // A usage error, as clap reports one (exit 2), before anything loads.
        clap::Error::raw(
            clap::error::ErrorKind::ArgumentConflict,
            format!(
                "--every {} is shorter than --interval {}: open flows are read once per interval; \
                 give --every at least --interval\n",
                humantime::format_duration(every),
                humantime::format_duration(args.interval)
            ),
        )
        .exit();
    }
    let config = args.poll_read.apply(
        ProbeConfig {
            max_flows: args.max_flows,
            pin: args.pin.clone(),
            ..ProbeConfig::default()
        },
        args.interval,
    );
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
    // A first read at once: losses counted before this run (by pinned
    // programs while no agent ran) are not this run's.
    poll(&mut s.probes, &mut table, &mut buf);
    let lost_at_start = s.probes.closes_lost();
    let cfg = attribution::Config {
        target_bps: args.target_rate.unwrap_or(0),
        ..attribution::Config::default()
    }
    .with_hz(s.clock.hz);
    let mut out = Output::new(args.json);
    let mut names = Names {
        cgroups: Cgroups::new(None),
        netns: NetnsNames::default(),
        first: FirstNames::default(),
    };
    names.note(&buf);
    warn_unnamed(args.filter.as_ref(), &mut names.netns);
    let stop = rt.block_on(async {
        let deadline = args.duration.map_or_else(
            || {
                if args.follow {
                    None
                } else {
                    Some(tokio::time::Instant::now() + Duration::from_secs(5))
                }
            },
            |d| Some(tokio::time::Instant::now() + d),
        );
        let mut next_every = args.every.map(|e| tokio::time::Instant::now() + e);
        let stop = loop {
            let mut next = tokio::time::Instant::now() + args.interval;
            if let Some(d) = deadline {
                next = next.min(d);
            }
            tokio::select! {
                _ = tokio::time::sleep_until(next) => {}
                _ = int.recv() => break Stop::Done,
                _ = term.recv() => break Stop::Done,
            }
            poll(&mut s.probes, &mut table, &mut buf);
            names.note(&buf);
            if args.follow {
                let now = monotonic_ns();
                let mut reports = table.drain_closed(&s.clock, now, run_start, &cfg);
                if next_every.is_some_and(|t| tokio::time::Instant::now() >= t) {
                    let span = u64::try_from(args.interval.as_nanos()).unwrap_or(u64::MAX);
                    reports.extend(table.open_reports(&s.clock, now, run_start, span, &cfg));
                    next_every = args.every.map(|e| tokio::time::Instant::now() + e);
                }
                let reports = select(reports, &mut names, args.filter.as_ref());
                if !out.write(&reports)? || reader_gone() {
                    break Stop::ReaderGone;
                }
            }
            if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
                break Stop::Done;
            }
        };
        anyhow::Ok(stop)
    });
    let stop = stop?;
    // Close records the kernel could not hand over are flows this run does
    // not print: say how many, never silently.
    let lost = s.probes.closes_lost().saturating_sub(lost_at_start);
    if lost > 0 {
        log::warn!(
            "{lost} closed-flow records were lost (the ring buffer was full between polls and \
             the flow map evicted the records kept for this run): those flows are missing from \
             the output; a shorter --interval or a larger --max-flows keeps them"
        );
    }
    if args.follow {
        if matches!(stop, Stop::Done) {
            // Flows that closed since the last poll.
            poll(&mut s.probes, &mut table, &mut buf);
            names.note(&buf);
            let reports = table.drain_closed(&s.clock, monotonic_ns(), run_start, &cfg);
            out.write(&select(reports, &mut names, args.filter.as_ref()))?;
        }
        return Ok(());
    }
    poll(&mut s.probes, &mut table, &mut buf);
    names.note(&buf);
    let flows = table.reports(&s.clock, monotonic_ns(), run_start, &cfg);
    let flows = select(flows, &mut names, args.filter.as_ref());
    let mut out = std::io::stdout().lock();
    if args.by.is_some() || args.summary {
        let pairs: Vec<_> = flows.iter().map(|r| (&r.flow, &r.attribution)).collect();
        // Flows that moved nothing are in no group (`groups::moving`).
        let (pairs, idle) = groups::moving(&pairs);
        let found = groups::group_named(&pairs, args.by.unwrap_or_default(), &cfg);
        if args.summary {
            groups::write_summary(&mut out, &found, idle)
        } else if args.json {
            groups::write_json(&mut out, &found)
        } else {
            groups::write_table(&mut out, &found)
        }
        .and_then(|()| out.flush())
        .context("cannot write to stdout")?;
        if found.is_empty() && !args.json && !args.summary {
            say_empty(args, run_start);
        }
        return Ok(());
    }
    if args.json {
        records::write_json(&mut out, &flows)
    } else {
        records::write_table(&mut out, &flows)
    }
    .and_then(|()| out.flush())
    .context("cannot write to stdout")?;
    if flows.is_empty() && !args.json {
        say_empty(args, run_start);
    }
    Ok(())
}

/// Says on stderr why a table has no rows: a table of headers alone reads
/// like a failure, and stdout stays the table (`--summary` says it on
/// stdout, in its own words).
fn say_empty(args: &Args, run_start: u64) {
    let secs = Duration::from_nanos(monotonic_ns().saturating_sub(run_start)).as_secs_f64();
    eprintln!(
        "observer: no TCP flows {} in {secs:.1} s",
        if args.filter.is_some() {
            "matched the filter"
        } else {
            "seen"
        }
    );
}

/// What each flow's figures are named by: its cgroup's workload, its
/// namespace's `ip netns` name.
struct Names {
    cgroups: Cgroups,
    netns: NetnsNames,
    /// Each flow's namespace name when first read, which a closed flow
    /// keeps (its inode may name a newer namespace by print time).
    first: FirstNames,
}

impl Names {
    /// Notes the namespace names of the flows of the last poll's read.
    fn note(&mut self, buf: &Buffers) {
        let read = buf.active.iter().chain(&buf.closed);
        self.first
            .note(&mut self.netns, read.map(|s| (s.cookie, s.netns)));
    }
}

/// Says on stderr, once at start, which `netns = NAME` terms of `filter`
/// name no namespace now: they select nothing until one is named so.
fn warn_unnamed(filter: Option<&Filter>, netns: &mut NetnsNames) {
    for name in filter.map(Filter::netns_names).unwrap_or_default() {
        if netns.inode_of(name).is_none() {
            eprintln!("observer: warning: {}", no_namespace_named(name));
        }
    }
}

/// The reports `filter` selects (all without one), each with its
/// workload and its namespace's name resolved (one read of the names at
/// most: a call is a poll's).
fn select(mut reports: Vec<Report>, names: &mut Names, filter: Option<&Filter>) -> Vec<Report> {
    names.netns.next_poll();
    for r in &mut reports {
        if r.flow.cgroup_id != 0 {
            r.flow.workload.0 = names.cgroups.resolve(r.flow.cgroup_id);
        }
        r.flow.netns_name = names
            .first
            .name(&mut names.netns, r.flow.cookie, r.flow.netns);
        if r.flow.closed {
            names.first.forget(r.flow.cookie);
        }
    }
    match filter {
        None => reports,
        Some(f) => reports
            .into_iter()
            .filter(|r| f.matches(&r.flow, Some(&r.attribution)))
            .collect(),
    }
}

/// One poll into `table`, in the read order every view shares.
fn poll(probes: &mut Probes, table: &mut FlowTable, buf: &mut Buffers) {
    probes.read(&mut buf.active, &mut buf.closed);
    table.ingest(&buf.active, &buf.closed, monotonic_ns());
}

/// Whether stdout is a pipe whose reader has closed it. Checked every
/// poll, so `observer flows --follow | head -n 3` ends as soon as `head`
/// does, not at the next flow to close: `poll(2)` reports `POLLERR` on
/// the write end of a pipe with no reader (fs/pipe.c `pipe_poll()`).
fn reader_gone() -> bool {
    let mut fd = libc::pollfd {
        fd: libc::STDOUT_FILENO,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    let n = unsafe { libc::poll(&mut fd, 1, 0) };
    n == 1 && fd.revents & (libc::POLLERR | libc::POLLHUP) != 0
}

/// Where `--follow` writes: NDJSON or the streamed table, flushed after
/// each batch.
struct Output {
    json: bool,
    table: TableStream,
}

impl Output {
    fn new(json: bool) -> Output {
        Output {
            json,
            table: TableStream::default(),
        }
    }

    /// Writes `flows`; `Ok(false)` when the reader has gone (a broken
    /// pipe: Rust ignores SIGPIPE, so the write fails with EPIPE instead).
    fn write(&mut self, flows: &[Report]) -> anyhow::Result<bool> {
        if flows.is_empty() {
            return Ok(true);
        }
        // The batch goes out in one write: an agent killed meanwhile leaves
        // whole records behind, not a line cut at stdout's 1 KiB buffer.
        let mut batch = Vec::new();
        let written = if self.json {
            records::write_json(&mut batch, flows)
        } else {
            self.table.write(&mut batch, flows)
        }
        .and_then(|()| {
            let mut out = std::io::stdout().lock();
            out.write_all(&batch)?;
            out.flush()
        });
        match written {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
            Err(e) => Err(e).context("cannot write to stdout"),
        }
    }
}

/// The read buffers, kept between polls.
#[derive(Default)]
struct Buffers {
    active: Vec<FlowSample>,
    closed: Vec<FlowSample>,
}
