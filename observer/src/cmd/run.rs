//! `observer run`: the long-running agent. It keeps the flow table and the
//! verdicts current and serves them as Prometheus metrics.

use std::{net::SocketAddr, time::Duration};

use anyhow::Context as _;
use observer::{
    args::{parse_prefixes, parse_ringbuf_bytes},
    kernel::load::probe_config::ProbeConfig,
    sink::{
        flow_log::Rotation,
        metrics::{
            Catalogue, CatalogueConfig, admission, agent::ProgramRuns, health::Health, http,
            labels::Aggregation, web::Web,
        },
    },
    track::{live::LiveConfig, poller::Poller},
};

use super::{flows::parse_positive, records, session, warn_rate::may_warn};

/// The default `--listen` address. The Prometheus default port allocations
/// fill 9100-9999; 19190 is not listed there.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:19190";

/// Arguments of `observer run`.
#[derive(clap::Args)]
pub struct Args {
    /// Address for /metrics and /healthz: ADDR:PORT, a bare ADDR (port
    /// 19190) or :PORT (every address). Loopback by default: expose it on
    /// purpose (e.g. the host's own address) for a remote Prometheus.
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_LISTEN, value_parser = observer::args::parse_listen)]
    listen: SocketAddr,
    /// How often to read the kernel maps and update the metrics.
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_positive, allow_hyphen_values = true)]
    interval: Duration,
    /// Export per-flow gauges for the N fastest flows (labelled by local and
    /// remote address). 0 turns them off.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = observer::args::parse_count, allow_hyphen_values = true)]
    top_flows: usize,
    /// Export per-peer gauges for the N peers (remote addresses, within
    /// their network namespace) whose open flows moved the most bytes,
    /// with their group's limit (per_flow, shared, mixed, unknown: as
    /// `flows --by peer`). 0 turns them off.
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = observer::args::parse_count, allow_hyphen_values = true)]
    top_peers: usize,
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
    #[arg(long, value_name = "V4[,V6]", value_parser = parse_prefixes)]
    label_remote_subnet: Option<(u8, u8)>,
    /// Remove an aggregation label set's series once no flow has used it
    /// for this long (e.g. 10m; 0 keeps them for ever), freeing its place
    /// under --max-label-sets.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = observer::args::parse_duration_or_zero, allow_hyphen_values = true)]
    label_idle: Duration,
    /// The cgroup v2 hierarchy to resolve workloads in (default: this
    /// process's cgroup2 mount). In a pod, mount the host's
    /// /sys/fs/cgroup read-only and point here, or only the pod's own
    /// cgroups resolve.
    #[arg(long, value_name = "PATH")]
    cgroup_root: Option<std::path::PathBuf>,
    /// Add a `workload` label to every flow metric: the pod, container,
    /// systemd unit or cgroup of the flow's owner (capped and expiring
    /// like the other aggregation labels).
    #[arg(long)]
    label_workload: bool,
    /// Count only the flows this expression selects in every flow metric
    /// (e.g. 'dport = :443', 'not dst 10.0.0.0/8'; FILTERS below; no
    /// `rate` term); `observer_filter_info` names it. The agent's own
    /// metrics still count every flow.
    #[arg(long, value_name = "EXPR", allow_hyphen_values = true, value_parser = observer::filter::Filter::parse_for_counters)]
    filter: Option<observer::filter::Filter>,
    /// Most distinct aggregation label sets; past it, new ones become `other`.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..), allow_hyphen_values = true)]
    max_label_sets: u64,
    /// How often to log a summary line (flows by verdict, closes, poll
    /// cost, probe health). Ring-buffer drops and flow-map evictions are
    /// logged at the poll that sees them, whatever this says.
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = parse_positive, allow_hyphen_values = true)]
    log_every: Duration,
    /// Span of the current verdict (the sliding window it is computed over).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = parse_positive, allow_hyphen_values = true)]
    window: Duration,
    /// Maximum flows tracked at once in the kernel (LRU map size).
    #[arg(long, value_name = "N", default_value_t = observer_common::DEFAULT_MAX_FLOWS, value_parser = clap::value_parser!(u32).range(1..), allow_hyphen_values = true)]
    max_flows: u32,
    /// Size of the closed-flow ring buffer in bytes (a power of two, at
    /// least a page). Hidden: for fault tests that fill it on purpose.
    #[arg(long, hide = true, default_value_t = observer_common::DEFAULT_RINGBUF_BYTES, value_parser = parse_ringbuf_bytes)]
    ringbuf_bytes: u32,
    /// Pin the programs and maps in this directory of a BPF filesystem
    /// (e.g. /sys/fs/bpf/observer), so they outlive this process: flows
    /// that close while no observer runs are reported by the next one
    /// started with the same --pin. They stay attached after exit, at their
    /// per-packet cost, until `rm -r DIR`.
    #[arg(long, value_name = "DIR")]
    pin: Option<std::path::PathBuf>,
    /// Serve /metrics over TLS and/or behind basic auth, as this YAML file
    /// says: Prometheus exporter-toolkit's web-config format (what
    /// node_exporter's --web.config.file reads): `tls_server_config`
    /// with `cert_file` and `key_file` (and `client_auth_type`,
    /// `client_ca_file` for client certificates), `basic_auth_users`
    /// mapping each user to a bcrypt hash. The certificate and key are
    /// re-read when they change; /healthz needs no password.
    #[arg(long, value_name = "FILE")]
    web_config: Option<std::path::PathBuf>,
    /// Most connections one client (an IPv4 address, an IPv6 /64) may hold
    /// open to the endpoint: 1 to 496 of its 512. Past it a connection is
    /// closed as soon as it is accepted, unread; with basic auth or
    /// verified client certificates in --web-config it may instead wait in
    /// one of 16 slots kept for scrapers that authenticate: served if its
    /// request authenticates within 2 s, else answered 429 and closed.
    #[arg(long, value_name = "N", default_value_t = admission::DEFAULT_PER_CLIENT, value_parser = admission::parse_per_client, allow_hyphen_values = true)]
    max_conns_per_client: usize,
    /// Append each flow's record to this file as it closes: the object
    /// `flows --json` prints, with its whole-life verdict and the `host`
    /// and `boot_id` that name it across a fleet; `-`
    /// writes to standard output. --filter selects which flows.
    #[arg(long, value_name = "PATH")]
    records: Option<std::path::PathBuf>,
    /// Rotate the --records file past this size (bytes; k, M and G
    /// suffixes, powers of 1024).
    #[arg(long, value_name = "BYTES", default_value = "100M", value_parser = observer::args::parse_bytes, requires = "records")]
    records_max_bytes: u64,
    /// Rotated --records files kept (PATH.1 the newest): the records take
    /// at most --records-max-bytes x (this + 1) of disk.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(0..=1000), requires = "records")]
    records_keep: u32,
    /// Also write an `update` record of each open flow that moved data
    /// since its last one, this often, once the flow is this old (its
    /// life verdict so far); its `final` record follows at its close.
    #[arg(long, value_name = "DURATION", value_parser = parse_positive, allow_hyphen_values = true, requires = "records")]
    records_every: Option<Duration>,
    #[command(flatten)]
    poll_read: super::poll_read::PollRead,
}

/// Runs the agent until SIGINT or SIGTERM.
///
/// # Errors
/// A bad `--web-config` file ([`super::Usage`]: exit status 2, before
/// anything is loaded), a taken port, a failed precondition or load, or a
/// failed poll.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let web = match &args.web_config {
        Some(path) => Web::load(path).map_err(|e| super::Usage(e.to_string()))?,
        None => Web::plain(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(agent(args, std::sync::Arc::new(web)))
}

async fn agent(args: &Args, web: std::sync::Arc<Web>) -> anyhow::Result<()> {
    // Handle signals from the start: a stop during start-up still detaches.
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("cannot install a SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot install a SIGINT handler")?;
    // Bind first: a taken port fails before anything is loaded.
    http::raise_fd_limit();
    let listener = http::bind(args.listen).await?;
    // The address bound (a port 0 becomes the one the kernel chose).
    let serving = listener.local_addr().unwrap_or(args.listen);
    // And an unwritable --records path.
    let flow_log = records::open(&records::Options {
        path: args.records.as_deref(),
        rotation: Rotation {
            max_bytes: args.records_max_bytes,
            keep: args.records_keep,
        },
    })?;
    let s = session::start(args.poll_read.apply(
        ProbeConfig {
            max_flows: args.max_flows,
            ringbuf_bytes: args.ringbuf_bytes,
            pin: args.pin.clone(),
            ..ProbeConfig::default()
        },
        args.interval,
    ))?;
    let agg = Aggregation {
        comm: args.label_comm,
        cgroup: args.label_cgroup,
        local_port: args.label_local_port,
        remote_prefix: args.label_remote_subnet,
        workload: args.label_workload,
    };
    // The metrics count verdicts; nothing here shows an explanation.
    let attribution = observer::attribution::Config {
        explain: false,
        ..observer::attribution::Config::default()
    }
    .with_hz(s.clock.hz);
    let mut catalogue = Catalogue::new(CatalogueConfig {
        aggregation: agg,
        max_label_sets: args.max_label_sets as usize,
        top_flows: args.top_flows,
        top_peers: args.top_peers,
        attribution,
        programs_attached: i64::try_from(s.probes.attached().len())
            .context("counting the attached programs")?,
        filter: args.filter.clone(),
        label_idle: args.label_idle,
    })
    .context("cannot define the metrics")?;
    let cfg = LiveConfig {
        window: args.window,
        history: 1,
        // Nothing reads a closed flow after the metrics have counted its
        // close: dropped then (`drop_closed` below). (Five seconds, as for
        // `top`, held ~40,000 closed flows and ~340 MB at 8,000 closes/s;
        // until the next poll, every close of a stall, 30,000 after 3 s at
        // 10,000 a second.)
        linger: Duration::ZERO,
        // A filter or aggregation labels count each idle flow's step.
        idle_per_flow: catalogue.idle_per_flow(),
        attribution,
        // A record explains its flow's life verdict; the metrics need no
        // words.
        explain_closes: args.records.is_some(),
    };
    let mut poller = Poller::new(s.probes, s.clock, cfg, args.max_flows);
    if let Some(root) = &args.cgroup_root {
        poller.cgroup_root(root.clone());
    }
    let health = Health::new(poller.probes().attached(), args.interval);
    let server = tokio::spawn(http::serve(
        listener,
        http::Endpoint {
            registry: catalogue.registry.clone(),
            health: health.clone(),
            web: web.clone(),
            gate: admission::Gate::new(
                args.max_conns_per_client,
                web.authenticates(),
                catalogue.refusals(),
            ),
            timeouts: http::Timeouts::default(),
        },
    ));
    log::info!(
        "serving {}://{serving}/metrics ({})",
        web.scheme(),
        web.describe()
    );
    if args.web_config.is_some() && web.auth.is_none() && web.tls.is_none() {
        // As exporter-toolkit, an empty file is allowed; whoever passed
        // one expected protection.
        log::warn!(
            "--web-config sets neither TLS nor basic auth: /metrics is served in plain HTTP \
             to anyone; add tls_server_config or basic_auth_users"
        );
    }
    if web.auth.is_some() && web.tls.is_none() {
        log::warn!(
            "--web-config sets basic auth without TLS: passwords cross the network in the \
             clear; add tls_server_config"
        );
    }
    // Under systemd (deploy/observer.service, Type=notify): ready now that
    // the programs are attached and /metrics is served; a no-op elsewhere.
    if let Err(e) = sd_notify::notify(&[sd_notify::NotifyState::Ready]) {
        log::warn!("cannot tell systemd the agent is ready: {e}");
    }
    if let Some(f) = &args.filter {
        log::info!(
            "counting only the flows that --filter '{}' selects",
            f.text()
        );
    }
    let mut records =
        flow_log.map(|log| records::Records::new(log, catalogue.flow_log(), args.records_every));
    let mut log = LogState::new(&poller, args.filter.clone());
    let unload = observer::kernel::load::env::program_to_unload();
    let mut polls = 0u64;
    let mut tick = tokio::time::interval(args.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = int.recv() => break,
            _ = term.recv() => break,
        }
        let (events, stats) = poller.poll().context("reading the kernel maps")?;
        catalogue.advance_to(observer::model::clock::monotonic_ns());
        catalogue.update(
            &events,
            poller.live(),
            &poller.counters,
            &stats,
            poller.max_flows,
        );
        if let Some(r) = &mut records {
            r.closed(&events, &catalogue);
            r.updates(poller.live(), &catalogue);
        }
        poller.drop_closed();
        polls += 1;
        if polls == 3
            && let Some(p) = &unload
        {
            // Test-only fault (kernel::load::env): a program gone mid-run.
            log::warn!("unloading {p} for a test");
            poller.probes_mut().unload(p);
        }
        // One read of the programs' statistics for both uses.
        let prog_stats = poller.probes().program_stats();
        let programs: Vec<ProgramRuns> = prog_stats
            .iter()
            .map(|(name, info)| ProgramRuns {
                name: name.clone(),
                runs: info.run_cnt,
                run_time_ns: info.run_time_ns,
            })
            .collect();
        catalogue.programs(&programs);
        let ids = prog_stats.iter().map(|(_, info)| info.id).collect();
        match observer::kernel::load::links::attached(&ids) {
            Ok(n) => {
                health.attached_now(n);
                catalogue.attached(n);
            }
            Err(e) => log::warn!("cannot count the attached programs: {e}"),
        }
        health.polled();
        log.poll(&poller, &stats, args.log_every);
        drop(events);
        if stats.closed >= TRIM_AFTER_CLOSES {
            trim_heap();
        }
    }
    log.summary(&poller);
    server.abort();
    if poller.probes().pinned() {
        log::info!("stopping: the pinned programs go on recording for the next agent");
    } else {
        log::info!("stopping: detaching probes");
    }
    Ok(())
}

/// Closes read in one poll past which the heap is trimmed after it.
const TRIM_AFTER_CLOSES: usize = 4096;

/// Hands the heap's free memory back to the kernel (glibc `malloc_trim`).
/// A poll after a stall reads every close of the stall at once (30,000 at
/// 10,000 closes a second for 3 s, a few KiB each while they are judged);
/// glibc keeps what that burst freed, so without this the agent's RSS
/// would stay at the largest burst it ever read.
fn trim_heap() {
    // SAFETY: malloc_trim has no preconditions.
    unsafe { libc::malloc_trim(0) };
}

/// What the agent logs between summaries: closes and the slowest poll
/// since the last summary, and the kernel's loss counters as last logged.
struct LogState {
    since: std::time::Instant,
    /// When drops were last warned of: at most one warning per
    /// [`super::warn_rate::WARN_EVERY`], carrying the increase since the last one.
    drops_warned: Option<std::time::Instant>,
    /// When evictions were last warned of, likewise.
    evictions_warned: Option<std::time::Instant>,
    polls: u64,
    closed: usize,
    slowest_us: u64,
    drops: u64,
    evictions: u64,
    /// The agent's `--filter`: the summary counts the flows it selects.
    filter: Option<observer::filter::Filter>,
}

impl LogState {
    fn new(m: &Poller, filter: Option<observer::filter::Filter>) -> LogState {
        use observer_common::Counter;
        LogState {
            filter,
            since: std::time::Instant::now(),
            polls: 0,
            closed: 0,
            slowest_us: 0,
            drops_warned: None,
            evictions_warned: None,
            drops: m.probes().closes_lost(),
            evictions: m.counters[Counter::LruEvictions as usize],
        }
    }

    /// Takes one poll: warns at once of new ring-buffer drops or flow-map
    /// evictions, and logs the summary once `every` has passed.
    fn poll(&mut self, m: &Poller, stats: &observer::track::poller::PollStats, every: Duration) {
        use observer_common::Counter;
        self.polls += 1;
        self.closed += stats.closed;
        self.slowest_us = self.slowest_us.max(stats.took_us);
        let drops = m.probes().closes_lost();
        if drops > self.drops && may_warn(&mut self.drops_warned) {
            log::warn!(
                "closes lost {drops} (+{}): the ring buffer was full between polls and the flow \
                 map evicted the close records kept in it; a larger --max-flows or --ringbuf-bytes \
                 keeps them",
                drops - self.drops
            );
            self.drops = drops;
        }
        let evictions = m.counters[Counter::LruEvictions as usize];
        if evictions > self.evictions && may_warn(&mut self.evictions_warned) {
            log::warn!(
                "lru evictions {evictions} (+{}): the flow map was full and the kernel dropped \
                 the least recently seen flows; raise --max-flows (now {})",
                evictions - self.evictions,
                m.max_flows
            );
            self.evictions = evictions;
        }
        if self.since.elapsed() >= every {
            self.summary(m);
        }
    }

    /// Logs the summary line and starts the next period.
    fn summary(&mut self, m: &Poller) {
        log::info!(
            "{} (over {:.0} s: {} polls, {} closed, slowest poll {:.1} ms)",
            summary(m, self.filter.as_ref()),
            self.since.elapsed().as_secs_f64(),
            self.polls,
            self.closed,
            self.slowest_us as f64 / 1000.0
        );
        self.since = std::time::Instant::now();
        self.polls = 0;
        self.closed = 0;
        self.slowest_us = 0;
    }
}

/// Flows by verdict now, and the kernel's loss counters since start.
fn summary(m: &Poller, filter: Option<&observer::filter::Filter>) -> String {
    use observer::attribution::Verdict;
    use observer_common::Counter;
    let mut by: Vec<(Verdict, usize)> = Verdict::ALL.iter().map(|v| (*v, 0)).collect();
    let mut open = 0;
    let selected = |t: &&observer::track::tracked::TrackedFlow| {
        filter.is_none_or(|f| f.matches(&t.flow, Some(&t.current)))
    };
    for t in m.live().flows().filter(|t| !t.is_closed()).filter(selected) {
        open += 1;
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
        "{open} open flows{} [{}], closes parked {}, closes lost {}, lru evictions {}",
        if filter.is_some() { " selected" } else { "" },
        verdicts.join(" "),
        m.counters[Counter::ClosesParked as usize],
        m.probes().closes_lost(),
        m.counters[Counter::LruEvictions as usize]
    )
}
