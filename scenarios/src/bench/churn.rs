//! Short flows: connection churn at increasing rates; every flow made must
//! be reported exactly once as closed, with no ring-buffer drops.

use std::{
    io::{Read as _, Write as _},
    net::{TcpListener, TcpStream},
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
    time::{Duration, Instant},
};

use anyhow::Context as _;

use super::{
    env::{Agent, Netns},
    throughput::prog_cost,
};

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

/// Runs each rate for `secs` against a fresh agent.
pub fn steps(rates: &[u64], secs: u64) -> anyhow::Result<Vec<ChurnStep>> {
    let ns = Netns::new("churn")?;
    let agent = Agent::start(&["--interval", "500ms"])?;
    let mut out = Vec::new();
    for &rate in rates {
        let closed0 = agent.metric("observer_flows_closed_total");
        let drops0 = kernel_event(&agent, "ringbuf_drops");
        let cost0 = prog_cost("observer_");
        let made = churn(&ns, rate, secs)?;
        // Let the agent read the last close records.
        std::thread::sleep(Duration::from_secs(2));
        let cost1 = prog_cost("observer_");
        let reported = (agent.metric("observer_flows_closed_total") - closed0).max(0.0) as u64;
        let hits = cost1.hits.saturating_sub(cost0.hits);
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
            ringbuf_drops: (kernel_event(&agent, "ringbuf_drops") - drops0).max(0.0) as u64,
            probe_ns_per_hit: if hits > 0 {
                cost1.ns.saturating_sub(cost0.ns) as f64 / hits as f64
            } else {
                0.0
            },
        });
    }
    Ok(out)
}

fn kernel_event(agent: &Agent, event: &str) -> f64 {
    let text = agent.get("/metrics").unwrap_or_default();
    super::env::metric_sum(
        &text,
        &format!("observer_kernel_events_total{{event=\"{event}\"}}"),
    )
}
