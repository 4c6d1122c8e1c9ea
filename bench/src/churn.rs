//! Short flows: connection churn at increasing rates; every flow made must
//! be reported exactly once as closed, with no ring-buffer drops.

use std::{
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use anyhow::Context as _;

use super::{
    churn_load,
    env::Netns,
    throughput::{ProgramShare, add_costs, prog_costs, ran_between, shares},
};

/// One churn step.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ChurnStep {
    /// Connections per second asked for.
    pub target_per_s: u64,
    /// Connections per second made.
    pub made_per_s: f64,
    /// Connections made (each is two flows: both ends).
    pub made: u64,
    /// Connects that failed in `connect()` (one flow each).
    pub failed_connects: u64,
    /// Flows made: 2 x made + failed_connects.
    pub flows: u64,
    /// Flows the agent reported closed in the step.
    pub reported_closed: u64,
    /// reported / flows.
    pub reported_ratio: f64,
    /// Ring-buffer drops in the step.
    pub ringbuf_drops: u64,
    /// Kernel ns per program run (all observer programs) during the step.
    pub probe_ns_per_hit: f64,
    /// Every observer program's run time during the step.
    #[serde(default)]
    pub programs: Vec<ProgramShare>,
}

/// Runs each rate for `secs` with observer attached in this process,
/// counting the closed-flow records of the churn's own namespace, by cookie.
pub fn steps(rates: &[u64], secs: u64) -> anyhow::Result<Vec<ChurnStep>> {
    use std::collections::HashMap;

    use observer::{
        kernel::{load::probe_config::ProbeConfig, probes::Probes},
        model::clock::Clock,
        track::event::Event,
        track::live::LiveConfig,
        track::poller::Poller,
    };

    let ns = Netns::new("churn")?;
    churn_load::tune(&ns)?;
    let inode = {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::metadata(format!("/run/netns/{}", ns.name))?.ino() as u32
    };
    let probes = Probes::load(ProbeConfig::default()).context("loading the probes")?;
    let mut poller = Poller::new(
        probes,
        Clock::new(observer::kernel::load::tick::kernel_hz()?.hz),
        LiveConfig::default(),
        ProbeConfig::default().max_flows,
    );
    let mut out = Vec::new();
    for &rate in rates {
        let drops0 = poller.counters[observer_common::Counter::RingbufDrops as usize];
        let each0 = prog_costs("observer_");
        let started = Instant::now();
        let mut closed: HashMap<u64, u32> = HashMap::new();
        let done = AtomicBool::new(false);
        let made = std::thread::scope(|scope| -> anyhow::Result<churn_load::Made> {
            let generator = scope.spawn(|| {
                let r = churn_load::run(&ns, rate, secs);
                done.store(true, Ordering::Relaxed);
                r
            });
            let mut grace: Option<Instant> = None;
            loop {
                let (events, _) = poller.poll()?;
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
        let each1 = prog_costs("observer_");
        let ran = ran_between(&each0, &each1);
        let mut each = std::collections::BTreeMap::new();
        add_costs(&mut each, &each0, &each1);
        let reported = closed.len() as u64;
        let twice = closed.values().filter(|n| **n > 1).count();
        anyhow::ensure!(twice == 0, "{twice} flows reported closed more than once");
        out.push(ChurnStep {
            target_per_s: rate,
            made_per_s: made.connections as f64 / secs as f64,
            made: made.connections,
            failed_connects: made.failed_in_connect,
            flows: made.flows(),
            reported_closed: reported,
            reported_ratio: if made.flows() > 0 {
                reported as f64 / made.flows() as f64
            } else {
                0.0
            },
            ringbuf_drops: poller.counters[observer_common::Counter::RingbufDrops as usize]
                .saturating_sub(drops0),
            probe_ns_per_hit: if ran.hits > 0 {
                ran.ns as f64 / ran.hits as f64
            } else {
                0.0
            },
            programs: shares(each, started.elapsed().as_secs_f64()),
        });
    }
    Ok(out)
}
