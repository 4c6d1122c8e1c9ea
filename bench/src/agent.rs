//! Agent cost at scale: many open loopback flows with light traffic, the
//! agent polling them every second; and what `ss -tin` costs for the same
//! flows.

use std::{
    io::{BufRead as _, BufReader, Write as _},
    net::{TcpListener, TcpStream},
    process::Stdio,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use pathemu::ChildGuard;

use super::{
    Stat,
    env::{Agent, Netns, children_cpu_s},
};

/// Connections one holder process keeps (two fds each, under the 20k fd limit).
const PER_HOLDER: usize = 9_000;

/// A holder writes a byte on one in this many of its connections each
/// second: both ends of each move, so 1% of the flows move a second.
pub const MOVE_ONE_IN: usize = 100;

/// `bench hold N`: opens N loopback connections (both ends here), prints
/// `ready`, then writes a byte on 1% of them each second until stdin closes.
pub fn hold(n: usize) -> anyhow::Result<()> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    let addr = l.local_addr()?;
    let mut pairs = Vec::with_capacity(n);
    for _ in 0..n {
        let c = TcpStream::connect(addr).context("connect")?;
        let (s, _) = l.accept().context("accept")?;
        pairs.push((c, s));
    }
    println!("ready");
    std::io::stdout().flush()?;
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
        let _ = tx.send(());
    });
    let mut i = 0usize;
    loop {
        if rx.recv_timeout(Duration::from_secs(1)).is_ok() {
            return Ok(());
        }
        for _ in 0..(n / MOVE_ONE_IN).max(1) {
            let _ = pairs[i % n].0.write_all(&[1]);
            i += 1;
        }
    }
}

/// Agent cost with `flows` open flows.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Scale {
    /// Open flows (sockets, both ends).
    pub flows: usize,
    /// Whether the agent ran with `--poll-read on` (else `off`): its walk
    /// re-samples the flows that moved (1% here) and visits every socket
    /// at each poll.
    #[serde(default)]
    pub poll_read: bool,
    /// Agent CPU, % of one core, at a 1 s interval.
    pub cpu_pct: f64,
    /// Agent CPU per poll (ms).
    pub cpu_ms_per_poll: f64,
    /// Poll latency (ms), from the agent's own histogram.
    pub poll_ms: f64,
    /// Agent resident memory (MiB).
    pub rss_mib: f64,
    /// `ss -tin` over the same flows: wall time per run (ms).
    pub ss_ms: Stat,
    /// `ss -tin` CPU per run (ms).
    pub ss_cpu_ms: f64,
}

/// Holds `flows` flows in a namespace and measures the agent over `secs`,
/// with the poll-time read's walk when `poll_read`.
pub fn scale(flows: usize, secs: u64, poll_read: bool) -> anyhow::Result<Scale> {
    let ns = Netns::new(&format!("scale{flows}"))?;
    let bench = std::env::current_exe()?;
    // In the flows' namespace, so the poll-time read reaches them on any
    // kernel (see `Agent::start_in`) and its walk is part of each poll.
    // `on` and `off`, not the default `auto`, which pauses the walk where
    // it costs over 1% of the interval (about 7,000 sockets here).
    let args: &[&str] = if poll_read {
        &["--interval", "1s", "--poll-read", "on"]
    } else {
        &["--interval", "1s", "--poll-read", "off"]
    };
    // The agent starts first, so it tracks every flow from its birth: an
    // agent started after them would learn of each only when it next moves
    // (1% a second here), and its polls would measure a fraction of them.
    let agent = Agent::start_in(Some(&ns), args)?;
    let conns = flows / 2;
    let mut holders = Vec::new();
    let mut left = conns;
    while left > 0 {
        let n = left.min(PER_HOLDER);
        let mut cmd = ns.command(&bench.to_string_lossy());
        cmd.args(["hold", &n.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut h = ChildGuard::spawn(&mut cmd)?;
        let out = h
            .child_mut()
            .and_then(|c| c.stdout.take())
            .context("holder has no stdout")?;
        let mut line = String::new();
        BufReader::new(out).read_line(&mut line)?;
        anyhow::ensure!(line.trim() == "ready", "holder said {line:?}");
        holders.push(h);
        left -= n;
    }
    // Every flow in the live flows before the measured polls (the listeners'
    // sockets are not flows).
    let deadline = Instant::now() + Duration::from_secs(60);
    let tracked = loop {
        let tracked = agent.metric("observer_tracked_flows");
        if tracked >= flows as f64 || Instant::now() > deadline {
            break tracked;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    anyhow::ensure!(
        tracked >= flows as f64,
        "the agent tracked {tracked} of {flows} flows after 60 s"
    );
    std::thread::sleep(Duration::from_secs(3));
    let cpu0 = agent.cpu_s();
    let sum0 = agent.metric("observer_poll_duration_seconds_sum");
    let n0 = agent.metric("observer_poll_duration_seconds_count");
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(secs));
    let wall = t0.elapsed().as_secs_f64();
    let cpu = agent.cpu_s() - cpu0;
    let polls = agent.metric("observer_poll_duration_seconds_count") - n0;
    let poll_s = agent.metric("observer_poll_duration_seconds_sum") - sum0;
    let rss = agent.rss_mib();
    drop(agent);
    // What a user would run instead, over the same flows.
    let mut ss_ms = Vec::new();
    let cpu_before = children_cpu_s();
    let runs = 5;
    for _ in 0..runs {
        let t = Instant::now();
        let out = ns
            .command("ss")
            .arg("-tin")
            .stdout(Stdio::null())
            .status()?;
        anyhow::ensure!(out.success(), "ss -tin failed");
        ss_ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let ss_cpu_ms = (children_cpu_s() - cpu_before) * 1000.0 / f64::from(runs);
    for mut h in holders {
        if let Some(c) = h.child_mut()
            && let Some(mut stdin) = c.stdin.take()
        {
            let _ = stdin.write_all(b"\n");
        }
    }
    Ok(Scale {
        flows,
        poll_read,
        cpu_pct: cpu / wall * 100.0,
        cpu_ms_per_poll: if polls > 0.0 {
            cpu * 1000.0 / polls
        } else {
            0.0
        },
        poll_ms: if polls > 0.0 {
            poll_s * 1000.0 / polls
        } else {
            0.0
        },
        rss_mib: rss,
        ss_ms: Stat::of(&ss_ms),
        ss_cpu_ms,
    })
}
