//! Runs one scenario with observer attached and judges its verdicts.

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use observer::{
    attribution::Verdict,
    model::clock::monotonic_ns,
    track::{poller::Poller, recording::Recorder},
};
use pathemu::{Path, Side};

use crate::{
    catalog::{HttpClient, HttpServer, Scenario, Traffic, View},
    http::{self, Download, TempDir},
    judge::{judge, majority, read_at_link, span_passes, tally},
    link::LinkMeter,
    report::{FlowReport, ScenarioReport},
    traffic::{self, Iperf, OwnFlow, Reading},
};

/// How often the runner polls observer.
pub const POLL: Duration = Duration::from_millis(500);
/// Flows that moved less than this are control connections, not data.
const MIN_DATA_BYTES: u64 = 200_000;

/// One flow's verdicts over time (seconds since it was first seen).
#[derive(Default, Debug)]
struct Timeline {
    born: Option<Instant>,
    samples: Vec<(f64, Verdict)>,
    /// The rule that decided each sample, in step with `samples`.
    rules: Vec<&'static str>,
    /// The bottleneck's use over each sample's verdict window, in step
    /// with `samples` (`LinkMeter::use_over`).
    link_use: Vec<Option<f64>>,
    /// The explanation at the last poll while the flow was open.
    explanation: String,
    /// Verdicts (current or life) that rested on a ceiling the rate
    /// outran (`Attribution::check_ceilings`), as they were found.
    outran: Vec<String>,
}

/// Widens the kernel's (global) list of congestion controls that a
/// namespace may make its default to every one available, as a namespace
/// cannot pick one outside that list (EPERM).
fn allow_every_cc() -> anyhow::Result<()> {
    let read = |k: &str| {
        std::fs::read_to_string(format!("/proc/sys/net/ipv4/{k}"))
            .map(|s| s.split_whitespace().map(str::to_string).collect::<Vec<_>>())
            .with_context(|| format!("reading net.ipv4.{k}"))
    };
    let available = read("tcp_available_congestion_control")?;
    let allowed = read("tcp_allowed_congestion_control")?;
    if available.iter().all(|c| allowed.contains(c)) {
        return Ok(());
    }
    let ok = std::process::Command::new("sysctl")
        .args([
            "-qw",
            &format!(
                "net.ipv4.tcp_allowed_congestion_control={}",
                available.join(" ")
            ),
        ])
        .status()
        .context("running sysctl")?;
    anyhow::ensure!(
        ok.success(),
        "sysctl net.ipv4.tcp_allowed_congestion_control failed"
    );
    Ok(())
}

/// Applies the scenario's namespace settings.
fn prepare(path: &Path, sc: &Scenario) -> anyhow::Result<()> {
    if sc.snd_cc_default.is_some() {
        allow_every_cc()?;
    }
    for (side, setting) in sc.sysctls() {
        let ok = path
            .command(side, "sysctl")
            .args(["-qw", &setting])
            .status()
            .with_context(|| format!("running sysctl in {side:?}"))?;
        anyhow::ensure!(ok.success(), "sysctl -w {setting} in {side:?} failed");
    }
    Ok(())
}

/// Clamps A's cwnd towards B with a route metric. The kernel reads the lock
/// through the tcp_metrics entry an earlier connection leaves, so a short
/// warm-up connection comes first.
fn clamp_cwnd(path: &Path, segments: u32) -> anyhow::Result<()> {
    let warm = path
        .command(Side::A, "iperf3")
        .args([
            "-c",
            &path.addr(Side::B).to_string(),
            "-p",
            "5201",
            "-n",
            "1K",
        ])
        .stdout(std::process::Stdio::null())
        .status()
        .context("warm-up connection")?;
    anyhow::ensure!(warm.success(), "warm-up iperf3 failed");
    let ok = path
        .command(Side::A, "ip")
        .args([
            "route",
            "replace",
            &path.addr(Side::B).to_string(),
            "dev",
            path.tun_name(),
        ])
        .args(["cwnd", "lock", &segments.to_string()])
        .status()
        .context("ip route ... cwnd lock")?;
    anyhow::ensure!(ok.success(), "ip route replace ... cwnd lock failed");
    Ok(())
}

/// What the traffic measured, from the traffic generator's own figures.
struct Measured {
    /// Throughput per data flow (bits/s), keyed by the port of the flow's
    /// end in `key_side` (None: the only data flow).
    streams: Vec<(Option<u16>, f64)>,
    /// Where the ports in `streams` are.
    key_side: Side,
    /// Total (bits/s).
    total_bps: f64,
    /// The generator's own error.
    error: Option<String>,
}

impl Measured {
    fn iperf(r: traffic::IperfResult, client: Side) -> Measured {
        // The client's JSON names its own ports; a -R client (in B) measured
        // what it received.
        let (streams, total_bps) = match client {
            Side::A => (r.streams, r.sum_bps),
            Side::B => (r.received, r.sum_received_bps),
        };
        Measured {
            streams: streams.into_iter().map(|(p, b)| (Some(p), b)).collect(),
            key_side: client,
            total_bps,
            error: r.error,
        }
    }
}

/// The timelines of the flows of one scenario, both ends, as observer's
/// polls show them.
struct Watch<'r> {
    /// The judged end's network namespace, and the other end's (followed
    /// too, to compare the two judgements of one flow).
    netns: (u32, u32),
    lines: HashMap<u64, Timeline>,
    /// Where each poll's samples of both ends are recorded (`--record`),
    /// under the scenario's name.
    record: Option<(&'r mut Recorder, &'static str)>,
    /// The path, and its bottleneck's use marked at each poll.
    link: (&'r Path, LinkMeter),
}

impl Watch<'_> {
    /// Polls observer and adds each open flow's verdict to its timeline,
    /// with the bottleneck's use over the verdict window.
    fn poll(&mut self, poller: &mut Poller) -> anyhow::Result<()> {
        poller.poll().context("polling observer")?;
        let now = Instant::now();
        let (path, meter) = &mut self.link;
        meter.mark(path);
        let link_use = meter.use_over(poller.live().config().window);
        let (netns, other_netns) = self.netns;
        if let Some((recorder, name)) = self.record.as_mut() {
            let ours = poller
                .live()
                .flows()
                .filter(|t| t.latest.netns == netns || t.latest.netns == other_netns)
                .map(|t| &*t.latest);
            recorder
                .poll(name, monotonic_ns(), ours)
                .context("recording the poll")?;
        }
        for t in poller.live().flows().filter(|t| {
            (t.latest.netns == netns || t.latest.netns == other_netns) && !t.is_closed()
        }) {
            let line = self.lines.entry(t.latest.cookie).or_default();
            let born = *line.born.get_or_insert(now);
            line.samples
                .push((now.duration_since(born).as_secs_f64(), t.current.verdict));
            line.rules.push(t.current.rule);
            line.link_use.push(link_use);
            line.explanation.clone_from(&t.current.explanation);
            let cfg = observer::attribution::Config::default();
            for a in [&t.current, &t.life] {
                if let Err(e) = a.check_ceilings(&cfg).and(a.check_binds(&cfg)) {
                    line.outran.push(format!("{e} ({})", a.explanation));
                }
            }
        }
        Ok(())
    }

    /// Polls every [`POLL`] until `done`.
    fn until(&mut self, poller: &mut Poller, mut done: impl FnMut() -> bool) -> anyhow::Result<()> {
        while !done() {
            std::thread::sleep(POLL);
            self.poll(poller)?;
        }
        Ok(())
    }
}

/// Runs `sc` with `poller` attached; `secs` overrides its length. Each
/// poll's samples of both ends go to `record`, where given.
///
/// # Errors
/// The path could not be built, the traffic failed, or the recording could
/// not be written.
pub fn run(
    poller: &mut Poller,
    sc: &Scenario,
    secs: u64,
    record: Option<&mut Recorder>,
) -> anyhow::Result<ScenarioReport> {
    let path =
        Path::new(sc.path.clone()).with_context(|| format!("building the path of {}", sc.name))?;
    prepare(&path, sc)?;
    let (side, other) = match sc.view {
        View::Sender => (Side::A, Side::B),
        View::Receiver => (Side::B, Side::A),
    };
    let mut watch = Watch {
        netns: (
            path.netns_inode(side) as u32,
            path.netns_inode(other) as u32,
        ),
        lines: HashMap::new(),
        record: record.map(|r| (r, sc.name)),
        link: (&path, LinkMeter::new(&sc.path)),
    };
    watch.poll(poller)?;
    let measured = match &sc.traffic {
        Traffic::Iperf { args } | Traffic::IperfReverse { args } => {
            iperf_transfer(&path, sc, args, secs, poller, &mut watch)?
        }
        Traffic::Http { server, clients } => {
            http_transfer(&path, sc, (server, clients), secs, poller, &mut watch)?
        }
        Traffic::SmallSndbuf { .. }
        | Traffic::Phases { .. }
        | Traffic::ChunkReader { .. }
        | Traffic::StallReader { .. } => own_transfer(&path, sc, secs, poller, &mut watch)?,
    };
    // Let the close records arrive.
    std::thread::sleep(POLL);
    watch.poll(poller)?;
    Ok(report(
        poller,
        sc,
        watch.netns,
        path.addr(other).into(),
        &watch.lines,
        &measured,
    ))
}

/// An iperf3 transfer (`IperfReverse`: -R, the server in A sends, the
/// client in B receives), watched until the client is done.
fn iperf_transfer(
    path: &Path,
    sc: &Scenario,
    args: &[String],
    secs: u64,
    poller: &mut Poller,
    watch: &mut Watch,
) -> anyhow::Result<Measured> {
    let reverse = matches!(sc.traffic, Traffic::IperfReverse { .. });
    let (server_side, client_side) = if reverse {
        (Side::A, Side::B)
    } else {
        (Side::B, Side::A)
    };
    let server = Iperf::server(path, server_side)?;
    if let Some(n) = sc.cwnd_lock {
        clamp_cwnd(path, n)?;
    }
    let mut args = args.to_vec();
    if reverse {
        args.push("-R".to_string());
    }
    let mut client = Iperf::start(path, server, client_side, secs, sc.cc, &args)?;
    watch.until(poller, || client.done())?;
    Ok(Measured::iperf(client.finish()?, client_side))
}

/// HTTP downloads from `server` in A by `clients` in B, started
/// together, watched until every one is done.
fn http_transfer(
    path: &Path,
    sc: &Scenario,
    (server, clients): (&HttpServer, &[HttpClient]),
    secs: u64,
    poller: &mut Poller,
    watch: &mut Watch,
) -> anyhow::Result<Measured> {
    let dir = TempDir::new(sc.name)?;
    let size = clients
        .iter()
        .map(|c| http::file_size(c, sc.path.forward.rate_bps, secs))
        .max()
        .unwrap_or(0);
    let _server = http::serve(path, server, &dir, size)?;
    let mut downloads = clients
        .iter()
        .map(|c| Download::start(path, c, secs))
        .collect::<anyhow::Result<Vec<_>>>()?;
    watch.until(poller, || downloads.iter_mut().all(Download::done))?;
    let results = downloads
        .into_iter()
        .map(Download::finish)
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Measured {
        streams: results.iter().map(|r| (r.local_port, r.bps)).collect(),
        key_side: Side::B,
        total_bps: results.iter().map(|r| r.bps).sum(),
        error: results.iter().find_map(|r| r.error.clone()),
    })
}

/// observer's own sender in A and reader in B (a small SO_SNDBUF, paced
/// phases or a chunked reader), watched until the sender is done.
fn own_transfer(
    path: &Path,
    sc: &Scenario,
    secs: u64,
    poller: &mut Poller,
    watch: &mut Watch,
) -> anyhow::Result<Measured> {
    let (sndbuf, rate, paced) = match &sc.traffic {
        Traffic::SmallSndbuf { sndbuf } => (Some(*sndbuf), 0, 0),
        Traffic::Phases {
            app_rate_bps,
            app_secs,
        } => (None, *app_rate_bps, *app_secs),
        _ => (None, 0, 0),
    };
    let reading = match &sc.traffic {
        Traffic::ChunkReader { period_ms } => Reading::Chunks(Duration::from_millis(*period_ms)),
        Traffic::StallReader { read_ms, stall_ms } => Reading::Stalls {
            read: Duration::from_millis(*read_ms),
            stall: Duration::from_millis(*stall_ms),
        },
        _ => Reading::Continuous,
    };
    let flow = OwnFlow::connect(path, sndbuf, sc.cc)?;
    let a_port = flow.sender.local_addr()?.port();
    std::thread::scope(|scope| {
        let rx = scope.spawn(move || traffic::drain(flow.receiver, reading));
        let tx = scope.spawn(move || traffic::send(flow.sender, secs, rate, paced));
        watch.until(poller, || tx.is_finished())?;
        let (bytes, span) = rx
            .join()
            .map_err(|_| anyhow::anyhow!("receiver thread panicked"))?;
        let bps = bytes as f64 * 8.0 / span.max(1e-3);
        Ok(Measured {
            streams: vec![(Some(a_port), bps)],
            key_side: Side::A,
            total_bps: bps,
            error: None,
        })
    })
}

fn report(
    poller: &Poller,
    sc: &Scenario,
    (netns, other_netns): (u32, u32),
    peer: std::net::IpAddr,
    lines: &HashMap<u64, Timeline>,
    measured: &Measured,
) -> ScenarioReport {
    let mut flows: Vec<FlowReport> = Vec::new();
    let mut data: Vec<_> = poller
        .live()
        .flows()
        .filter(|t| t.latest.netns == netns)
        .filter(|t| t.flow.bytes_acked.max(t.flow.bytes_received) >= MIN_DATA_BYTES)
        .collect();
    data.sort_by_key(|t| t.latest.first_seen_ns);
    let single = data.len() == 1;
    for t in data {
        // The flow's port in the namespace the generator's figures name.
        let port = match (sc.view, measured.key_side) {
            (View::Sender, Side::A) | (View::Receiver, Side::B) => t.flow.local.port(),
            _ => t.flow.remote.port(),
        };
        let stream = measured
            .streams
            .iter()
            .position(|(p, _)| p.map_or(single, |p| p == port));
        let throughput = stream.map(|i| measured.streams[i].1);
        let expect = stream
            .and_then(|i| sc.expect_each.get(i))
            .unwrap_or(&sc.expect);
        let line = lines.get(&t.latest.cookie);
        let samples = line.map(|l| l.samples.as_slice()).unwrap_or(&[]);
        let link_use = line.map(|l| l.link_use.as_slice()).unwrap_or(&[]);
        let spans = expect
            .iter()
            .map(|e| {
                // Passed on the samples as read against the link's use;
                // reported as observer gave them.
                let (read, idle_link_right) =
                    read_at_link(samples, link_use, (e.from_s, e.to_s), e.verdict);
                let judged = judge(&read, e.from_s, e.to_s, e.verdict);
                let (right, n) = tally(&read, e.from_s, e.to_s, e.verdict, e.also);
                let (verdict, share, _) = judge(samples, e.from_s, e.to_s, e.verdict);
                let settled = judged.2;
                crate::report::Span {
                    from_s: e.from_s,
                    to_s: if e.to_s.is_finite() {
                        Some(e.to_s)
                    } else {
                        None
                    },
                    expected: e.verdict,
                    also: e.also,
                    verdict,
                    share,
                    settled_after_s: settled,
                    right,
                    idle_link_right,
                    samples: n,
                    pass: span_passes(sc.view, e, judged, (right, n)),
                }
            })
            .collect();
        let other_end = poller
            .live()
            .flows()
            .find(|o| {
                o.latest.netns == other_netns
                    && o.flow.local == t.flow.remote
                    && o.flow.remote == t.flow.local
            })
            .and_then(|o| lines.get(&o.latest.cookie))
            .zip(expect.last())
            .and_then(|(l, e)| majority(&l.samples, &l.rules, e.from_s, e.to_s));
        let own_rule = line
            .zip(expect.last())
            .and_then(|(l, e)| majority(&l.samples, &l.rules, e.from_s, e.to_s))
            .map_or("", |(_, rule)| rule);
        let outran = line.map(|l| l.outran.clone()).unwrap_or_default();
        let mut f = FlowReport::new(sc, t, throughput, spans)
            .with_other_end(other_end, own_rule)
            .with_outran(outran);
        if expect.is_empty() {
            f = f.unasserted();
        }
        f.timeline = samples.to_vec();
        f.link_use = link_use.to_vec();
        if let Some(l) = line.filter(|l| !l.explanation.is_empty()) {
            f.explanation.clone_from(&l.explanation);
        }
        flows.push(f);
    }
    // Every flow of the judged end, control connections too, as `observer
    // flows --by peer` would group them.
    let group = sc.group.as_ref().map(|expect| {
        let ours: Vec<_> = poller
            .live()
            .flows()
            .filter(|t| t.latest.netns == netns)
            .map(|t| (&t.flow, &t.life))
            .collect();
        crate::group::check(
            expect,
            &ours,
            peer,
            &observer::attribution::Config::default(),
        )
    });
    ScenarioReport::new(sc, flows, measured.total_bps, measured.error.clone(), group)
}
