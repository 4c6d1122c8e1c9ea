//! Runs one situation: its path and settings, its traffic, and each
//! end's verdict over its data flows' lives as observer gives them.

use std::{
    collections::{HashMap, HashSet},
    time::Duration,
};

use accuracy::{
    outcome::EndVerdict,
    replayed::Ends,
    space::{Disorder, RcvLimit, Situation, SndLimit, Stall},
    stack::{TCP_RMEM, TCP_WMEM},
};
use anyhow::Context as _;
use observer::{
    attribution::Attribution,
    model::clock::monotonic_ns,
    track::{live::LiveFlows, poller::Poller, recording::Recorder},
};
use pathemu::{Link, Path, PathConfig, Side};

use crate::traffic;

/// How often observer is polled during a run.
pub const POLL: Duration = Duration::from_millis(500);
/// Flows that moved less than this are left out where others moved more
/// (bytes): observer's own `min_bytes`, under which it says `unknown`
/// (the last object of short transfers, cut at the deadline).
const MIN_DATA_BYTES: u64 = 32 * 1024;

/// The emulated path of `s`: a veth pair on a LAN, else pathemu's relay
/// with the situation's stages in each direction.
pub fn path_config(s: &Situation, seed: u64) -> anyhow::Result<PathConfig> {
    if s.link_bps == 0 {
        return Ok(PathConfig::veth().ipv6(false));
    }
    let one_way = Duration::from_micros(s.rtt_us / 2);
    let mut fwd = Link::with_delay_only(one_way)
        .rate(s.link_bps)
        .queue(s.queue_bytes)
        .loss(s.loss_fwd);
    if let Some((bps, bucket)) = s.police {
        fwd = fwd.police_each_flow(bps, bucket);
    }
    if let Some((bps, queue)) = s.shaper {
        fwd = fwd.shaper(bps, queue);
    }
    match s.disorder {
        Some(Disorder::Reorder { share, delay_ms }) => {
            fwd = fwd.reorder(share, Duration::from_millis(delay_ms));
        }
        Some(Disorder::Jitter { ms }) => fwd = fwd.jitter(Duration::from_millis(ms)),
        None => {}
    }
    let mut rev = Link::with_delay_only(one_way).loss(s.loss_rev);
    if let Some((bps, queue)) = s.reverse {
        rev = rev.rate(bps).queue(queue);
    }
    match s.stall {
        Some(Stall::Outage { for_ms, every_ms }) => {
            let (every, length) = (
                Duration::from_millis(every_ms),
                Duration::from_millis(for_ms),
            );
            fwd = fwd.outage(every, length);
            rev = rev.outage(every, length);
        }
        Some(Stall::BlackHole { bytes }) => fwd = fwd.drop_over(bytes),
        None => {}
    }
    Ok(PathConfig::new(fwd, rev)
        .seed(seed ^ u64::from(s.index))
        .ipv6(false))
}

/// The sysctls of both namespaces: the kernel's default buffers, or the
/// situation's maximum. (The sender sets its congestion control on its
/// socket.)
fn sysctls(s: &Situation) -> Vec<(Side, String)> {
    let rmem_max = match s.rcv {
        Some(RcvLimit::RmemMax(b)) => b,
        _ => TCP_RMEM[2],
    };
    let wmem_max = match s.snd {
        Some(SndLimit::WmemMax(b)) => b,
        _ => TCP_WMEM[2],
    };
    let rmem = |max: u64| {
        format!(
            "net.ipv4.tcp_rmem={} {} {max}",
            TCP_RMEM[0],
            TCP_RMEM[1].min(max)
        )
    };
    let wmem = |max: u64| {
        format!(
            "net.ipv4.tcp_wmem={} {} {max}",
            TCP_WMEM[0],
            TCP_WMEM[1].min(max)
        )
    };
    vec![
        (Side::A, rmem(TCP_RMEM[2])),
        (Side::A, wmem(wmem_max)),
        (Side::B, rmem(rmem_max)),
        (Side::B, wmem(TCP_WMEM[2])),
    ]
}

fn apply(path: &Path, settings: &[(Side, String)]) -> anyhow::Result<()> {
    for (side, setting) in settings {
        let ok = path
            .command(*side, "sysctl")
            .args(["-qw", setting])
            .status()
            .with_context(|| format!("running sysctl in {side:?}"))?;
        anyhow::ensure!(ok.success(), "sysctl -w {setting} in {side:?} failed");
    }
    Ok(())
}

/// What observer said of one flow, as last seen.
pub struct Seen {
    end: Side,
    bytes: u64,
    life: Attribution,
}

/// Notes in `seen` the life verdict of each flow of `live` at either of
/// `ends`, but those in `earlier` (an earlier run's).
pub fn note(live: &LiveFlows, ends: Ends, earlier: &HashSet<u64>, seen: &mut HashMap<u64, Seen>) {
    for t in live.flows().filter(|t| !earlier.contains(&t.latest.cookie)) {
        let end = if t.latest.netns == ends.a {
            Side::A
        } else if t.latest.netns == ends.b {
            Side::B
        } else {
            continue;
        };
        let bytes = t.flow.bytes_acked.max(t.flow.bytes_received);
        seen.insert(
            t.latest.cookie,
            Seen {
                end,
                bytes,
                life: t.life.clone(),
            },
        );
    }
}

/// Each end's verdict over the flows in `seen`: (sender, receiver).
pub fn end_verdicts(seen: &HashMap<u64, Seen>) -> (Option<EndVerdict>, Option<EndVerdict>) {
    (
        end_verdict(seen.values().filter(|f| f.end == Side::A)),
        end_verdict(seen.values().filter(|f| f.end == Side::B)),
    )
}

/// The result of one run: the goodput and each end's verdict.
pub struct Run {
    /// Goodput the receiving application measured (bits/s).
    pub bps: f64,
    /// The sending end's verdict.
    pub sender: Option<EndVerdict>,
    /// The receiving end's verdict.
    pub receiver: Option<EndVerdict>,
}

/// Runs `s` over its path with `poller` attached, and where `record` is
/// given, records each poll's samples of the run's flows there (one
/// label, [`Ends::label`], at the host's jiffy rate `record.1`) for
/// `crate::rejudge`.
///
/// # Errors
/// The path could not be built, a setting was refused, the traffic
/// failed, or the recording could not be written.
pub fn run(
    poller: &mut Poller,
    s: &Situation,
    seed: u64,
    record: Option<(&std::path::Path, u32)>,
) -> anyhow::Result<Run> {
    let path = Path::new(path_config(s, seed)?).context("building the path")?;
    apply(&path, &sysctls(s))?;
    let netns = |side| path.netns_inode(side) as u32;
    let ends = Ends {
        a: netns(Side::A),
        b: netns(Side::B),
    };
    // Flows seen before the traffic starts are an earlier run's, in a
    // namespace whose inode this path's reuses.
    poller.poll().context("polling observer")?;
    let earlier: HashSet<u64> = poller.live().flows().map(|t| t.latest.cookie).collect();
    let mut recorder = record
        .map(|(file, hz)| Recorder::create(file, hz))
        .transpose()
        .context("creating the recording")?;
    let label = ends.label();
    let mut seen: HashMap<u64, Seen> = HashMap::new();
    let mut watch = |poller: &mut Poller| -> anyhow::Result<()> {
        poller.poll().context("polling observer")?;
        if let Some(r) = recorder.as_mut() {
            let ours = poller
                .live()
                .flows()
                .filter(|t| {
                    !earlier.contains(&t.latest.cookie)
                        && (t.latest.netns == ends.a || t.latest.netns == ends.b)
                })
                .map(|t| &*t.latest);
            r.poll(&label, monotonic_ns(), ours)
                .context("recording the poll")?;
        }
        note(poller.live(), ends, &earlier, &mut seen);
        Ok(())
    };
    watch(poller)?;
    let got = traffic::run(&path, s, POLL, || watch(poller))?;
    // Let the close records arrive.
    std::thread::sleep(POLL);
    watch(poller)?;
    std::thread::sleep(POLL);
    watch(poller)?;
    if let Some(r) = recorder {
        r.finish().context("finishing the recording")?;
    }
    let (sender, receiver) = end_verdicts(&seen);
    Ok(Run {
        bps: got.bps(),
        sender,
        receiver,
    })
}

/// One end's verdict over its data flows: the most common life verdict
/// (ties to the one that covers more bytes), its mean confidence, and the
/// rule, explanation and what-if of the largest flow that gave it.
fn end_verdict<'a>(flows: impl Iterator<Item = &'a Seen>) -> Option<EndVerdict> {
    let all: Vec<&Seen> = flows.collect();
    // A stalled flow (a black hole) moves nothing: then every flow counts.
    let data: Vec<&Seen> = if all.iter().any(|f| f.bytes >= MIN_DATA_BYTES) {
        all.into_iter()
            .filter(|f| f.bytes >= MIN_DATA_BYTES)
            .collect()
    } else {
        all
    };
    let mut by: HashMap<&str, (u32, u64, f64)> = HashMap::new();
    for f in &data {
        let e = by.entry(f.life.verdict.name()).or_default();
        e.0 += 1;
        e.1 += f.bytes;
        e.2 += f.life.confidence;
    }
    let (&name, &(n, _, conf)) = by.iter().max_by_key(|(_, (n, bytes, _))| (*n, *bytes))?;
    let top = data
        .iter()
        .filter(|f| f.life.verdict.name() == name)
        .max_by_key(|f| f.bytes)?;
    let what_if = top.life.what_if.as_ref().filter(|w| w.window_helps);
    Some(EndVerdict {
        verdict: name.to_string(),
        confidence: conf / f64::from(n),
        rule: top.life.rule.to_string(),
        explanation: top.life.explanation.clone(),
        what_if_window: what_if.map(|w| w.needed_bytes as u64),
        what_if_bps: what_if.map(|w| w.target_bps),
        what_if_from: what_if.map(|w| w.window_bytes),
        also: top.life.also.as_ref().map(|a| a.verdict.name().to_string()),
        flows: data.len() as u32,
    })
}
