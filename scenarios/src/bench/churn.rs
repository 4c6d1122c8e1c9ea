//! Short flows: connection churn at increasing rates; every flow made must
//! be reported exactly once as closed, with no ring-buffer drops.

use std::{
    io::{Read as _, Write as _},
    net::{TcpListener, TcpStream},
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
    time::{Duration, Instant},
};

use anyhow::Context as _;

use super::{env::Netns, throughput::prog_cost};

/// One churn step.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct ChurnStep {
    /// Connections per second asked for.
    pub target_per_s: u64,
    /// Connections per second made.
    pub made_per_s: f64,
    /// Connections made (each is two flows: both ends).
    pub made: u64,
    /// Flows the agent reported closed in the step.
    pub reported_closed: u64,
    /// reported / (2 x made).
    pub reported_ratio: f64,
    /// Ring-buffer drops in the step.
    pub ringbuf_drops: u64,
    /// Kernel ns per program run (all observer programs) during the step.
    pub probe_ns_per_hit: f64,
}

/// Makes `rate` connections per second for `secs` in `ns`, with two client
/// threads; returns the count made.
fn churn(ns: &Netns, rate: u64, secs: u64) -> anyhow::Result<u64> {
    let stop = AtomicBool::new(false);
    let made = AtomicU64::new(0);
    pathemu::run_in_netns(&ns.name, || -> anyhow::Result<()> {
        let l = TcpListener::bind("127.0.0.1:0")?;
        let addr = l.local_addr()?;
        l.set_nonblocking(true)?;
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let mut b = [0u8; 8];
                while !stop.load(Ordering::Relaxed) {
                    match l.accept() {
                        Ok((mut c, _)) => {
                            let _ = c.set_nonblocking(false);
                            let _ = c.read(&mut b);
                        }
                        Err(_) => std::thread::sleep(Duration::from_micros(100)),
                    }
                }
            });
            let per_thread = (rate / 2).max(1);
            let clients: Vec<_> = (0..2)
                .map(|_| {
                    let made = &made;
                    scope.spawn(move || {
                        let start = Instant::now();
                        let end = start + Duration::from_secs(secs);
                        let mut n = 0u64;
                        while Instant::now() < end {
                            let due = start + Duration::from_secs_f64(n as f64 / per_thread as f64);
                            let now = Instant::now();
                            if due > now {
                                std::thread::sleep(due - now);
                            }
                            if let Ok(mut c) = TcpStream::connect(addr) {
                                let _ = c.write_all(&[1]);
                                made.fetch_add(1, Ordering::Relaxed);
                            }
                            n += 1;
                        }
                    })
                })
                .collect();
            for c in clients {
                let _ = c.join();
            }
            std::thread::sleep(Duration::from_millis(500));
            stop.store(true, Ordering::Relaxed);
        });
        Ok(())
    })
    .context("running the churn in its namespace")??;
    Ok(made.load(Ordering::Relaxed))
}

/// Runs each rate for `secs` with observer attached in this process,
/// counting the closed-flow records of the churn's own namespace, by cookie.
pub fn steps(rates: &[u64], secs: u64) -> anyhow::Result<Vec<ChurnStep>> {
    use std::collections::HashMap;

    use observer::{
        book::BookConfig,
        book::Event,
        clock::{Clock, kernel_hz},
        monitor::Monitor,
        probes::{ProbeConfig, Probes},
    };

    let ns = Netns::new("churn")?;
    let inode = {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::metadata(format!("/run/netns/{}", ns.name))?.ino() as u32
    };
    let probes = Probes::load(ProbeConfig::default()).context("loading the probes")?;
    let mut monitor = Monitor::new(
        probes,
        Clock::new(kernel_hz()?),
        BookConfig::default(),
        ProbeConfig::default().max_flows,
    );
    let mut out = Vec::new();
    for &rate in rates {
        let drops0 = monitor.counters[observer_common::Counter::RingbufDrops as usize];
        let cost0 = prog_cost("observer_");
        let mut closed: HashMap<u64, u32> = HashMap::new();
        let done = AtomicBool::new(false);
        let made = std::thread::scope(|scope| -> anyhow::Result<u64> {
            let generator = scope.spawn(|| {
                let r = churn(&ns, rate, secs);
                done.store(true, Ordering::Relaxed);
                r
            });
            let mut grace: Option<Instant> = None;
            loop {
                let (events, _) = monitor.poll()?;
                for e in events {
                    if let Event::Closed { flow, .. } = e
                        && flow.netns == inode
                    {
                        *closed.entry(flow.cookie).or_default() += 1;
                    }
                }
                if done.load(Ordering::Relaxed) {
                    // Keep reading a little after the last connection.
                    let g = *grace.get_or_insert_with(Instant::now);
                    if g.elapsed() > Duration::from_secs(2) {
                        break;
                    }
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            generator
                .join()
                .map_err(|_| anyhow::anyhow!("churn thread panicked"))?
        })?;
        let cost1 = prog_cost("observer_");
        let hits = cost1.hits.saturating_sub(cost0.hits);
        let reported = closed.len() as u64;
        let twice = closed.values().filter(|n| **n > 1).count();
        anyhow::ensure!(twice == 0, "{twice} flows reported closed more than once");
        out.push(ChurnStep {
            target_per_s: rate,
            made_per_s: made as f64 / secs as f64,
            made,
            reported_closed: reported,
            reported_ratio: if made > 0 {
                reported as f64 / (2 * made) as f64
            } else {
                0.0
            },
            ringbuf_drops: monitor.counters[observer_common::Counter::RingbufDrops as usize]
                .saturating_sub(drops0),
            probe_ns_per_hit: if hits > 0 {
                cost1.ns.saturating_sub(cost0.ns) as f64 / hits as f64
            } else {
                0.0
            },
        });
    }
    Ok(out)
}
