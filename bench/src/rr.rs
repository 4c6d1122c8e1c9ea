//! Request/response: what observer costs a host that serves small
//! requests. Each connection carries one transaction at a time (the
//! client writes [`MESSAGE`] bytes, the server answers with as many, the
//! client waits for the answer before the next), so every transaction is
//! a round trip of small segments and the per-segment work of the probes
//! is as large a share of the work as it gets. Transactions per second
//! with and without the agent, alternated over rounds with an A/A control
//! as in [`super::throughput`], and the programs' run time per segment.
//!
//! The generator is the project's own (threads over blocking sockets):
//! Debian's netperf, which has a TCP_RR test, is in non-free, and iperf3
//! has no request/response mode.

use std::{
    collections::BTreeMap,
    io::{Read as _, Write as _},
    net::{Ipv4Addr, TcpListener, TcpStream},
    sync::atomic::{AtomicU64, Ordering},
    time::{Duration, Instant},
};

use anyhow::Context as _;

use super::{
    Stat, alternate,
    env::{Agent, Netns},
    throughput::{ProgCost, ProgramShare, add_costs, prog_costs, shares},
};

/// Bytes in each request and each response.
pub const MESSAGE: usize = 64;

/// One run of the generator.
#[derive(Clone, Copy, Debug, Default)]
pub struct Transactions {
    /// Transactions completed per second, all connections together.
    pub per_s: f64,
    /// TCP segments the namespace received meanwhile (`Tcp: InSegs` of
    /// its /proc/net/snmp; on loopback every segment sent is received).
    pub segments: u64,
    /// Length of the run (s).
    pub secs: f64,
}

/// Runs `connections` connections over loopback in `ns` for `secs`, each
/// doing one transaction at a time with `TCP_NODELAY` on both ends.
///
/// # Errors
/// The namespace cannot be entered, or a socket cannot be set up.
pub fn run(ns: &Netns, connections: usize, secs: u64) -> anyhow::Result<Transactions> {
    run_at(ns, connections, secs, None)
}

/// [`run`], each connection's client starting a transaction at most
/// every `1 / pace` s (`pace` in transactions/s per connection; `None`:
/// back to back, as fast as the answers come).
///
/// # Errors
/// As [`run`].
pub fn run_at(
    ns: &Netns,
    connections: usize,
    secs: u64,
    pace: Option<f64>,
) -> anyhow::Result<Transactions> {
    let every = pace
        .filter(|p| *p > 0.0)
        .map(|p| Duration::from_secs_f64(1.0 / p));
    pathemu::run_in_netns(&ns.name, || -> anyhow::Result<Transactions> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let to = listener.local_addr()?;
        let mut pairs = Vec::with_capacity(connections);
        for _ in 0..connections {
            let c = TcpStream::connect(to)?;
            let (s, _) = listener.accept()?;
            c.set_nodelay(true)?;
            s.set_nodelay(true)?;
            pairs.push((c, s));
        }
        let done = AtomicU64::new(0);
        let segs0 = in_segments()?;
        let started = Instant::now();
        let end = started + Duration::from_secs(secs);
        std::thread::scope(|scope| {
            for (mut c, mut s) in pairs {
                scope.spawn(move || {
                    let mut buf = [0u8; MESSAGE];
                    while s.read_exact(&mut buf).is_ok() {
                        if s.write_all(&buf).is_err() {
                            break;
                        }
                    }
                });
                let done = &done;
                scope.spawn(move || {
                    let (req, mut resp) = ([7u8; MESSAGE], [0u8; MESSAGE]);
                    let mut n = 0u64;
                    let mut next = Instant::now();
                    while Instant::now() < end {
                        if let Some(every) = every {
                            // Paced: a fixed offered load, late starts
                            // not made up in a burst.
                            next += every;
                            let now = Instant::now();
                            if next > now {
                                std::thread::sleep(next - now);
                            } else {
                                next = now;
                            }
                        }
                        if c.write_all(&req).is_err() || c.read_exact(&mut resp).is_err() {
                            break;
                        }
                        n += 1;
                    }
                    done.fetch_add(n, Ordering::Relaxed);
                    // The server's read sees EOF and its thread ends.
                    let _ = c.shutdown(std::net::Shutdown::Write);
                });
            }
        });
        let secs = started.elapsed().as_secs_f64();
        let segments = in_segments()?.saturating_sub(segs0);
        Ok(Transactions {
            per_s: done.load(Ordering::Relaxed) as f64 / secs.max(1e-9),
            segments,
            secs,
        })
    })
    .context("running the request/response load in its namespace")?
}

/// `Tcp: InSegs` of this thread's network namespace.
fn in_segments() -> anyhow::Result<u64> {
    let snmp = std::fs::read_to_string("/proc/thread-self/net/snmp")
        .context("reading /proc/thread-self/net/snmp")?;
    in_segs_of(&snmp).context("no Tcp: InSegs in /proc/net/snmp")
}

/// `InSegs` from the two `Tcp:` lines (names, then values) of /proc/net/snmp.
fn in_segs_of(snmp: &str) -> Option<u64> {
    let mut tcp = snmp.lines().filter(|l| l.starts_with("Tcp:"));
    let (names, values) = (tcp.next()?, tcp.next()?);
    let i = names.split_whitespace().position(|n| n == "InSegs")?;
    values.split_whitespace().nth(i)?.parse().ok()
}

/// Results of the request/response comparison for one connection count.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct RrOverhead {
    /// Connections, each with one transaction at a time.
    pub connections: u32,
    /// Transactions/s with / without observer, per round.
    pub ratio: Stat,
    /// A/A control: a second run without observer / the first, per round.
    pub aa_ratio: Stat,
    /// Transactions/s without observer.
    pub without_tps: Stat,
    /// Transactions/s with observer.
    pub with_tps: Stat,
    /// Segments received per transaction during the with-rounds (two data
    /// segments, plus any pure ACKs).
    pub segments_per_transaction: f64,
    /// Every observer program's run time during the with-rounds per
    /// segment received (ns; numerically, ms of CPU per million segments).
    pub programs_ns_per_segment: f64,
    /// Every observer program's run time during the with-rounds.
    pub programs: Vec<ProgramShare>,
}

/// Alternates runs with and without the agent for `rounds` rounds of
/// `secs`, plus a second run without it in each round (the A/A control),
/// rotating the order so drift favours no side.
///
/// # Errors
/// The agent or a run failed.
pub fn overhead(connections: usize, rounds: usize, secs: u64) -> anyhow::Result<RrOverhead> {
    let ns = Netns::new(&format!("rr{connections}"))?;
    let mut totals = BTreeMap::<String, ProgCost>::new();
    let (mut segments, mut transactions, mut secs_with) = (0u64, 0.0, 0.0);
    let a = alternate(
        rounds,
        || {
            // In the load's namespace: see `Agent::start_in`.
            let agent = Agent::start_in(Some(&ns), &["--poll-read", "on"])?;
            let before = prog_costs("observer_");
            let t = run(&ns, connections, secs)?;
            add_costs(&mut totals, &before, &prog_costs("observer_"));
            drop(agent);
            segments += t.segments;
            transactions += t.per_s * t.secs;
            secs_with += t.secs;
            Ok(t.per_s)
        },
        || Ok(run(&ns, connections, secs)?.per_s),
    )?;
    let program_ns: u64 = totals.values().map(|c| c.ns).sum();
    Ok(RrOverhead {
        connections: connections as u32,
        ratio: Stat::of(&a.ratios),
        aa_ratio: Stat::of(&a.aa),
        without_tps: Stat::of(&a.without),
        with_tps: Stat::of(&a.with),
        segments_per_transaction: segments as f64 / transactions.max(1.0),
        programs_ns_per_segment: program_ns as f64 / (segments.max(1) as f64),
        programs: shares(totals, secs_with),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_segs_is_read_by_its_column() {
        let snmp = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
                    Tcp: RtoAlgorithm RtoMin ActiveOpens InSegs OutSegs\n\
                    Tcp: 1 200 5 123456 654321\nUdp: InDatagrams\nUdp: 9\n";
        assert_eq!(in_segs_of(snmp), Some(123_456));
        assert_eq!(in_segs_of("Tcp: InSegs\n"), None);
    }
}
