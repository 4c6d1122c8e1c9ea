//! `observer run`: the long-running agent. It keeps the flow table and the
//! verdicts current and serves them as Prometheus metrics.

use std::{net::SocketAddr, time::Duration};

use anyhow::Context as _;
use observer::{
    args::{parse_prefixes, parse_ringbuf_bytes},
    kernel::probes::ProbeConfig,
    sink::metrics::{Catalogue, CatalogueConfig, http, labels::Aggregation},
    track::live::BookConfig,
    track::poller::Poller,
};

use super::{flows::parse_positive, session};

/// The default `--listen` address. The Prometheus default port allocations
/// fill 9100-9999; 19190 is not listed there.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:19190";

/// Arguments of `observer run`.
#[derive(clap::Args)]
pub struct Args {
    /// Address for /metrics and /healthz. Loopback by default: expose it on
    /// purpose (e.g. 0.0.0.0:19190) for a remote Prometheus.
    #[arg(long, default_value = DEFAULT_LISTEN)]
    listen: SocketAddr,
    /// How often to read the kernel maps and update the metrics.
    #[arg(long, default_value = "1s", value_parser = parse_positive, allow_hyphen_values = true)]
    interval: Duration,
    /// Export per-flow gauges for the N fastest flows (labelled by local and
    /// remote address). 0 turns them off.
    #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
    top_flows: usize,
    /// Add a `comm` label (process name) to the flow and byte counters.
    #[arg(long)]
    label_comm: bool,
    /// Add a `cgroup` label (cgroup v2 id) to the flow and byte counters.
    #[arg(long)]
    label_cgroup: bool,
    /// Add a `local_port` label to the flow and byte counters.
    #[arg(long)]
    label_local_port: bool,
    /// Add a `remote_subnet` label: IPv4 prefix length, optionally with the
    /// IPv6 one (e.g. 24 or 24,48; IPv6 defaults to 64).
    #[arg(long, value_parser = parse_prefixes)]
    label_remote_subnet: Option<(u8, u8)>,
    /// Most distinct aggregation label sets; past it, new ones become `other`.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..), allow_hyphen_values = true)]
    max_label_sets: u64,
    /// Span of the current verdict (the sliding window it is computed over).
    #[arg(long, default_value = "1s", value_parser = parse_positive, allow_hyphen_values = true)]
    window: Duration,
    /// Maximum flows tracked at once in the kernel (LRU map size).
    #[arg(long, default_value_t = observer_common::DEFAULT_MAX_FLOWS, value_parser = clap::value_parser!(u32).range(1..), allow_hyphen_values = true)]
    max_flows: u32,
    /// Size of the closed-flow ring buffer in bytes (a power of two, at
    /// least a page). Hidden: for fault tests that fill it on purpose.
    #[arg(long, hide = true, default_value_t = observer_common::DEFAULT_RINGBUF_BYTES, value_parser = parse_ringbuf_bytes)]
    ringbuf_bytes: u32,
}

/// Runs the agent until SIGINT or SIGTERM.
///
/// # Errors
/// A taken port, a failed precondition or load, or a failed poll.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(agent(args))
}

async fn agent(args: &Args) -> anyhow::Result<()> {
    // Handle signals from the start: a stop during start-up still detaches.
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("cannot install a SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot install a SIGINT handler")?;
    // Bind first: a taken port fails before anything is loaded.
    let listener = http::bind(args.listen).await?;
    let s = session::start(ProbeConfig {
        max_flows: args.max_flows,
        ringbuf_bytes: args.ringbuf_bytes,
        ..ProbeConfig::default()
    })?;
    let agg = Aggregation {
        comm: args.label_comm,
        cgroup: args.label_cgroup,
        local_port: args.label_local_port,
        remote_prefix: args.label_remote_subnet,
    };
    let mut catalogue = Catalogue::new(CatalogueConfig {
        aggregation: agg,
        max_label_sets: args.max_label_sets as usize,
        top_flows: args.top_flows,
        programs_attached: i64::try_from(s.probes.attached().len())
            .context("counting the attached programs")?,
    })
    .context("cannot define the metrics")?;
    let cfg = BookConfig {
        window: args.window,
        history: 1,
        // Nothing reads a closed flow after the poll that counted its
        // close: keep it until the next poll only. (Five seconds, as for
        // `top`, held ~40,000 closed flows and ~340 MB at 8,000 closes/s.)
        linger: args.interval,
        ..BookConfig::default()
    };
    let mut poller = Poller::new(s.probes, s.clock, cfg, args.max_flows);
    let server = tokio::spawn(http::serve(listener, catalogue.registry.clone()));
    log::info!("serving http://{}/metrics", args.listen);
    let mut tick = tokio::time::interval(args.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = int.recv() => break,
            _ = term.recv() => break,
        }
        let (events, stats) = poller.poll().context("reading the kernel maps")?;
        catalogue.update(
            &events,
            poller.book(),
            &poller.counters,
            &stats,
            poller.max_flows,
        );
        log::info!("{}", summary(&poller, &stats));
    }
    server.abort();
    log::info!("stopping: detaching probes");
    Ok(())
}

/// One line per interval: flows by verdict, closes, poll cost, probe health.
fn summary(m: &Poller, stats: &observer::track::poller::PollStats) -> String {
    use observer::attribution::Verdict;
    use observer_common::Counter;
    let mut by: Vec<(Verdict, usize)> = Verdict::ALL.iter().map(|v| (*v, 0)).collect();
    for t in m.book().flows().filter(|t| !t.is_closed()) {
        if let Some(e) = by.iter_mut().find(|(v, _)| *v == t.current.verdict) {
            e.1 += 1;
        }
    }
    let verdicts: Vec<String> = by
        .iter()
        .filter(|(_, n)| *n > 0)
        .map(|(v, n)| format!("{v}={n}"))
        .collect();
    format!(
        "{} open flows [{}], {} closed this poll, poll {:.1} ms, ringbuf drops {}, lru evictions {}",
        stats.active,
        verdicts.join(" "),
        stats.closed,
        stats.took_us as f64 / 1000.0,
        m.counters[Counter::RingbufDrops as usize],
        m.counters[Counter::LruEvictions as usize]
    )
}
