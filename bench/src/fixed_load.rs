//! Overhead where users feel it: CPU time per request/response transaction
//! at a fixed offered load, with observer over without.
//!
//! Maximum transactions per second on two shared vCPUs swings by a third
//! between identical runs (the A/A control of [`super::rr`]); at a fixed
//! offered load that leaves the CPUs about half idle, the CPU the host
//! spends per transaction resolves a few percent. The load is
//! [`CONNECTIONS`] paced connections offering half of what an unpaced run
//! without observer managed; the CPU is the whole machine's busy time
//! (`/proc/stat`), so the agent's own wake-ups count on observer's side.

use anyhow::Context as _;

use super::{
    Stat,
    env::{Agent, Netns},
    peer::Peer,
    per_round, rotate, rr,
};

/// Connections carrying the fixed load.
pub const CONNECTIONS: usize = 16;

/// The offered load as a share of the unpaced rate without observer. At
/// half, pacing's own wake-ups left the CPUs nearly busy and the host did
/// not keep up with observer on (88% of the offered transactions made in
/// one quick run); at 0.3 about half of the CPU time stays idle.
pub const LOAD_SHARE: f64 = 0.3;

/// Results of the fixed-load comparison.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct FixedLoad {
    /// Connections, each paced.
    pub connections: u32,
    /// Transactions/s offered, all connections together.
    pub offered_per_s: f64,
    /// CPU per transaction with / without observer, per round.
    pub ratio: Stat,
    /// A/A control: a second run without observer / the first, per round.
    pub aa_ratio: Stat,
    /// CPU per transaction without observer (µs of CPU, all CPUs).
    pub without_us: Stat,
    /// CPU per transaction with observer (µs).
    pub with_us: Stat,
    /// Transactions made / offered in the with-rounds (below 1: the host
    /// did not keep up, and the load was not fixed).
    pub achieved: Stat,
    /// Busy share of all CPUs in the runs without observer (0 to 1).
    #[serde(default)]
    pub busy_without: Stat,
    /// CPU per transaction with the bench's peer attached instead (the
    /// one-map bpftrace counter, [`super::peer::PEER_SCRIPT`]) / without,
    /// per round: what the peer costs where users feel it. Its classic
    /// tracepoint copies the socket's fields into the trace record
    /// (`TP_fast_assign`) before its program runs, outside the run time
    /// the peer ratio counts; here that copy is counted on its side.
    #[serde(default)]
    pub peer_ratio: Stat,
    /// CPU per transaction with the peer attached (µs).
    #[serde(default)]
    pub peer_us: Stat,
}

/// The CPUs' busy share without observer (0 to 1) above which the load
/// was not fixed: pacing and the load's own work left no headroom, and
/// CPU per transaction no longer resolves what observer adds.
pub const BUSY_MAX: f64 = 0.8;

/// What the comparison can tell, in a sentence from its own figures:
/// whether observer's ratio and the counter's lie within the A/A
/// control's spread (this run cannot tell them from running neither),
/// and a warning where the CPUs were too busy for the load to be fixed.
pub fn reading(f: &FixedLoad) -> String {
    let (lo, hi) = (f.aa_ratio.min, f.aa_ratio.max);
    let place = |r: f64| {
        if (lo..=hi).contains(&r) {
            "inside"
        } else {
            "outside"
        }
    };
    let mut parts = vec![format!(
        "The A/A control spread {lo:.3}-{hi:.3} here: a median inside that range cannot be told \
         from running neither. observer's median {:.3} lies {} it",
        f.ratio.median,
        place(f.ratio.median)
    )];
    if f.peer_ratio.n > 0 {
        parts.push(format!(
            "the counter's {:.3} {}",
            f.peer_ratio.median,
            place(f.peer_ratio.median)
        ));
    }
    let mut text = parts.join("; ") + ".";
    if f.busy_without.median > BUSY_MAX {
        text.push_str(&format!(
            " The CPUs were {:.0}% busy without observer, over {:.0}%: the load was not fixed \
             (something else ran, or the machine is too small for this load), and this run's \
             CPU per transaction does not resolve what observer adds.",
            f.busy_without.median * 100.0,
            BUSY_MAX * 100.0
        ));
    }
    text
}

/// Busy CPU time of the whole machine so far (s): the aggregate `cpu` line
/// of /proc/stat (proc(5)) less its idle and iowait columns. Read by hand:
/// five numbers of one line do not warrant the procfs crate.
///
/// # Errors
/// /proc/stat unreadable or not in proc(5)'s format.
pub fn busy_cpu_s() -> anyhow::Result<f64> {
    let stat = std::fs::read_to_string("/proc/stat").context("reading /proc/stat")?;
    busy_of(&stat).context("no aggregate cpu line in /proc/stat")
}

/// [`busy_cpu_s`] of the text of /proc/stat.
fn busy_of(stat: &str) -> Option<f64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal (guest time is in user).
    let total: u64 = ticks.iter().take(8).sum();
    let idle = ticks.get(3)? + ticks.get(4)?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Some(total.saturating_sub(idle) as f64 / hz)
}

/// One paced run.
struct Paced {
    /// µs of CPU (all CPUs) per transaction.
    us: f64,
    /// Transactions per second made.
    per_s: f64,
    /// Busy share of all CPUs (0 to 1).
    busy: f64,
}

/// One paced run of `secs` at `pace` transactions/s per connection.
fn paced(ns: &Netns, secs: u64, pace: f64) -> anyhow::Result<Paced> {
    let cpu0 = busy_cpu_s()?;
    let t = rr::run_at(ns, CONNECTIONS, secs, Some(pace))?;
    let cpu = busy_cpu_s()? - cpu0;
    let done = t.per_s * t.secs;
    anyhow::ensure!(done > 0.0, "no transaction in the paced run");
    let cpus = std::thread::available_parallelism().map_or(1, usize::from) as f64;
    Ok(Paced {
        us: cpu * 1e6 / done,
        per_s: t.per_s,
        busy: cpu / (t.secs.max(1e-9) * cpus),
    })
}

/// Calibrates the load (one unpaced run without observer), then rotates
/// four paced runs over `rounds` rounds of `secs`: with the agent, without
/// it twice (the second is the A/A control), and with the bench's peer.
///
/// # Errors
/// The agent, the peer or a run failed.
pub fn overhead(rounds: usize, secs: u64) -> anyhow::Result<FixedLoad> {
    let ns = Netns::new("fixed")?;
    let max = rr::run(&ns, CONNECTIONS, secs)?.per_s;
    let offered = max * LOAD_SHARE;
    let pace = offered / CONNECTIONS as f64;
    let (mut achieved, mut busy) = (Vec::new(), Vec::new());
    let sides = rotate(rounds, 4, |side| match side {
        0 => {
            let agent = Agent::start_in(Some(&ns), &["--poll-read", "on"])?;
            let p = paced(&ns, secs, pace)?;
            drop(agent);
            achieved.push(p.per_s / offered);
            Ok(p.us)
        }
        3 => {
            let peer = Peer::attach()?;
            let p = paced(&ns, secs, pace)?;
            drop(peer);
            Ok(p.us)
        }
        _ => {
            let p = paced(&ns, secs, pace)?;
            busy.push(p.busy);
            Ok(p.us)
        }
    })?;
    let [with, without, again, peer] = [&sides[0], &sides[1], &sides[2], &sides[3]];
    Ok(FixedLoad {
        connections: CONNECTIONS as u32,
        offered_per_s: offered,
        ratio: Stat::of(&per_round(with, without)),
        aa_ratio: Stat::of(&per_round(again, without)),
        without_us: Stat::of(without),
        with_us: Stat::of(with),
        achieved: Stat::of(&achieved),
        busy_without: Stat::of(&busy),
        peer_ratio: Stat::of(&per_round(peer, without)),
        peer_us: Stat::of(peer),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed(ratio: f64, peer: Option<f64>, busy: f64) -> FixedLoad {
        FixedLoad {
            ratio: Stat::of(&[ratio]),
            aa_ratio: Stat::of(&[0.95, 1.06]),
            peer_ratio: peer.map_or_else(Stat::default, |p| Stat::of(&[p])),
            busy_without: Stat::of(&[busy]),
            ..FixedLoad::default()
        }
    }

    #[test]
    fn the_reading_says_what_the_a_a_spread_can_tell() {
        let r = reading(&fixed(0.996, Some(1.038), 0.49));
        assert_eq!(
            r,
            "The A/A control spread 0.950-1.060 here: a median inside that range cannot be told \
             from running neither. observer's median 0.996 lies inside it; the counter's 1.038 \
             inside."
        );
        let r = reading(&fixed(1.070, None, 0.49));
        assert!(
            r.ends_with("observer's median 1.070 lies outside it."),
            "{r}"
        );
        let r = reading(&fixed(1.0, Some(0.9), 0.98));
        assert!(r.contains("the counter's 0.900 outside"), "{r}");
        assert!(
            r.contains("The CPUs were 98% busy without observer, over 80%"),
            "{r}"
        );
        // Just under the bar: no warning.
        assert!(!reading(&fixed(1.0, None, 0.79)).contains("busy"));
    }

    #[test]
    fn busy_time_is_the_cpu_line_less_idle_and_iowait() {
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        let stat = "cpu  100 5 50 1000 20 3 2 1 0 0\ncpu0 50 2 25 500 10 1 1 0 0 0\n";
        let busy = busy_of(stat).unwrap();
        assert!((busy - 161.0 / hz).abs() < 1e-9, "{busy}");
        assert_eq!(busy_of("cpu0 1 2 3\n"), None);
    }
}
