//! The host view: flows grouped by peer (or prefix, process, workload),
//! each group judged as a whole. A slow single stream with a much faster
//! sum is a per-flow limit (windows, a per-flow policer, an ECMP hash);
//! flows at one ceiling together are a shared limit (a link, a shaper).
//! observer sees every flow a host has, so it answers from the traffic
//! there is, from the flows' own verdicts ([`member::class`]), their sum
//! and what the path has shown (docs/attribution.md, "Groups").
//!
//! Pure code: in, each flow with its verdict over its judged interval; out,
//! one [`Group`] per peer and network namespace, with its judgement
//! ([`judge`]) and what would help ([`what_ifs`]; for one flow, in a few
//! words, [`advice`]).

pub mod advice;
pub mod judge;
pub mod member;
pub mod what_ifs;

use std::{collections::BTreeMap, net::IpAddr, str::FromStr};

use serde::Serialize;

use super::{Attribution, Config, Side};
use crate::model::flow::Flow;
use judge::Limit;
use member::Member;
use what_ifs::KnobWhatIf;

/// What flows are grouped by, always within their network namespace.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GroupBy {
    /// The remote address.
    #[default]
    Peer,
    /// The remote address's prefix: `v4` bits for IPv4, `v6` for IPv6.
    Prefix {
        /// IPv4 prefix length (0-32).
        v4: u8,
        /// IPv6 prefix length (0-128).
        v6: u8,
    },
    /// The owning process (command name and pid).
    Process,
    /// The owner's workload (pod, container, systemd unit or cgroup).
    Workload,
}

/// A `--by` value that is not one of `peer`, `prefix/V4[,V6]`, `process`,
/// `workload`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GroupByError {
    /// Not a grouping observer knows.
    #[error(
        "'{0}' is not a grouping: use peer, prefix/24 (prefix/V4[,V6], IPv6 64 by default), process or workload"
    )]
    Unknown(String),
    /// A prefix length that is not a number, or too long for its family.
    #[error("'{0}': a prefix length is 0-32 for IPv4 and 0-128 for IPv6 (prefix/24, prefix/24,64)")]
    BadPrefix(String),
}

impl FromStr for GroupBy {
    type Err = GroupByError;

    fn from_str(s: &str) -> Result<GroupBy, GroupByError> {
        match s.trim() {
            "peer" => Ok(GroupBy::Peer),
            "process" => Ok(GroupBy::Process),
            "workload" => Ok(GroupBy::Workload),
            t => {
                let lens = t
                    .strip_prefix("prefix/")
                    .ok_or_else(|| GroupByError::Unknown(s.to_string()))?;
                let bad = || GroupByError::BadPrefix(s.to_string());
                let (v4, v6) = lens.split_once(',').unwrap_or((lens, "64"));
                let v4: u8 = v4.trim().parse().map_err(|_| bad())?;
                let v6: u8 = v6.trim().parse().map_err(|_| bad())?;
                if v4 > 32 || v6 > 128 {
                    return Err(bad());
                }
                Ok(GroupBy::Prefix { v4, v6 })
            }
        }
    }
}

impl GroupBy {
    /// Its name in JSON: `peer`, `prefix`, `process` or `workload`.
    pub const fn name(self) -> &'static str {
        match self {
            GroupBy::Peer => "peer",
            GroupBy::Prefix { .. } => "prefix",
            GroupBy::Process => "process",
            GroupBy::Workload => "workload",
        }
    }

    /// The group `flow` belongs to, as text: the remote address, its
    /// prefix (`10.0.0.0/24`), `comm (pid N)` or the workload's name
    /// (`-` where unknown).
    pub fn key(self, flow: &Flow) -> String {
        match self {
            GroupBy::Peer => flow.remote.ip().to_string(),
            GroupBy::Prefix { v4, v6 } => prefix(flow.remote.ip(), v4, v6),
            GroupBy::Process if flow.pid == 0 => "-".to_string(),
            GroupBy::Process => format!("{} (pid {})", flow.comm, flow.pid),
            GroupBy::Workload => {
                let name = flow.workload.get().name();
                if name.is_empty() {
                    "-".to_string()
                } else {
                    name
                }
            }
        }
    }

    /// Whether the groups are of remote addresses (their key is a peer).
    pub const fn is_peer(self) -> bool {
        matches!(self, GroupBy::Peer | GroupBy::Prefix { .. })
    }
}

/// Which way a group's data moves, as seen from this host. Uploads and
/// downloads to one peer are separate groups: their rates do not add, and
/// each end of a local transfer (loopback, or two namespaces judged from
/// one agent) would otherwise count the same bytes twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// This host receives the data (the flows' verdicts are from their
    /// receiving end, [`Side::Receiver`]).
    Download,
    /// This host sends the data ([`Side::Sender`]).
    Upload,
}

impl Direction {
    /// The direction of a flow judged from `side`.
    pub const fn of(side: Side) -> Direction {
        match side {
            Side::Receiver => Direction::Download,
            Side::Sender => Direction::Upload,
        }
    }

    /// Its name in JSON, the table and the metrics' `direction` label.
    pub const fn name(self) -> &'static str {
        match self {
            Direction::Download => "download",
            Direction::Upload => "upload",
        }
    }
}

/// `ip` masked to its prefix, as `net/len`.
fn prefix(ip: IpAddr, v4: u8, v6: u8) -> String {
    match ip {
        IpAddr::V4(a) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(v4)).unwrap_or(0);
            format!("{}/{v4}", std::net::Ipv4Addr::from(u32::from(a) & mask))
        }
        IpAddr::V6(a) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(v6)).unwrap_or(0);
            format!("{}/{v6}", std::net::Ipv6Addr::from(u128::from(a) & mask))
        }
    }
}

/// The figures of a group that its judgement and what-ifs read.
#[derive(Clone, Debug, PartialEq)]
pub struct Figures {
    /// What the group is of.
    pub by: GroupBy,
    /// Its key ([`GroupBy::key`]).
    pub key: String,
    /// Flows in the group, open and closed.
    pub flows: usize,
    /// Bytes moved by all of them over their judged intervals.
    pub bytes: u64,
    /// The judged flows' bytes over the time at least one of them was in
    /// its judged interval (bits/s; all flows' where none was judged): for
    /// concurrent flows, their sum.
    pub rate_bps: f64,
    /// The fastest flow's rate alone (bits/s).
    pub fastest_bps: f64,
    /// The most the path has shown any one of them (bits/s; 0: none):
    /// a fastest recent delivery-rate sample, or the rate within a
    /// download's bursts.
    pub shown_bps: f64,
    /// What the path has carried for them, at least: the larger of
    /// `shown_bps` and `rate_bps` (bits/s).
    pub path_bps: f64,
    /// The most judged flows in their judged intervals at one time: the
    /// flows that share the path at once.
    pub concurrent: usize,
}

impl Figures {
    /// Each flow's share of what the path has shown (bits/s): flows open at
    /// once share it, so a window that carries the path's rate buys each
    /// `path_bps` over `concurrent`.
    pub fn share_bps(&self) -> f64 {
        self.path_bps / self.concurrent.max(1) as f64
    }

    /// `path_bps` in words: "the path has shown X", or, where nothing
    /// showed more than the flows together, "at least X (the flows
    /// together)".
    pub fn path_words(&self) -> String {
        if self.shown_bps > self.rate_bps {
            format!("the path has shown {}", crate::units::rate(self.path_bps))
        } else {
            format!(
                "the path has shown at least {} (the flows together)",
                crate::units::rate(self.path_bps)
            )
        }
    }
}

/// One group of flows and what limits it as a whole.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    /// Network namespace inode.
    pub netns: u32,
    /// Whether this host receives (`download`) or sends (`upload`) the
    /// group's data.
    pub direction: Direction,
    /// What the flows are grouped by (`peer`, `prefix`, `process`,
    /// `workload`).
    pub by: &'static str,
    /// The group's key ([`GroupBy::key`]); in JSON under the name of `by`
    /// (a prefix under `peer`).
    #[serde(skip)]
    pub key: String,
    /// The remote address or prefix, for groups of peers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// `comm (pid N)`, for groups of processes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process: Option<String>,
    /// The workload's name, for groups of workloads.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// Flows seen, open and closed.
    pub flows: usize,
    /// Of them, still open.
    pub open: usize,
    /// Of them, judged (a verdict other than `unknown`).
    pub judged: usize,
    /// The most judged flows open at one time.
    pub concurrent: usize,
    /// Bytes moved over the flows' judged intervals (acked by the peer
    /// for uploads, received for downloads).
    pub bytes: u64,
    /// The time at least one of the flows was in its judged interval
    /// (µs): the window `bytes` covers.
    pub span_us: u64,
    /// The judged flows' bytes over the time at least one of them was
    /// open (bits/s): [`Figures::rate_bps`].
    pub rate_bps: f64,
    /// The fastest flow's rate alone (bits/s).
    pub fastest_bps: f64,
    /// What the path has carried for them, at least (bits/s):
    /// [`Figures::path_bps`].
    pub path_bps: f64,
    /// Per-flow, shared, mixed or unknown.
    pub limit: Limit,
    /// The group rule that decided (docs/attribution.md, "Groups").
    pub rule: &'static str,
    /// Bytes by the flows' verdicts.
    pub verdicts: BTreeMap<&'static str, u64>,
    /// The judgement in one line, with its numbers.
    pub explanation: String,
    /// What would help, one entry per limit that held bytes.
    pub what_if: Vec<KnobWhatIf>,
}

/// Groups `flows` (each with its verdict) by `by` within their network
/// namespace and direction ([`Direction`]) and judges each group; sorted
/// by namespace, then bytes, most first.
pub fn group(flows: &[(&Flow, &Attribution)], by: GroupBy, cfg: &Config) -> Vec<Group> {
    let mut sets: BTreeMap<(u32, String, Direction), Vec<Member<'_>>> = BTreeMap::new();
    for (flow, att) in flows {
        sets.entry((flow.netns, by.key(flow), Direction::of(att.side)))
            .or_default()
            .push(Member::new(flow, att, cfg));
    }
    let mut groups: Vec<Group> = sets
        .into_iter()
        .map(|((netns, key, direction), mut members)| {
            member::join_bottleneck(&mut members, cfg);
            judged_group(netns, direction, key, by, &members, cfg)
        })
        .collect();
    groups.sort_by(|a, b| a.netns.cmp(&b.netns).then(b.bytes.cmp(&a.bytes)));
    groups
}

/// The group of `members`, judged.
fn judged_group(
    netns: u32,
    direction: Direction,
    key: String,
    by: GroupBy,
    members: &[Member<'_>],
    cfg: &Config,
) -> Group {
    let bytes: u64 = members.iter().map(|m| m.bytes).sum();
    let rate_bps = group_rate(members, cfg);
    let fastest_bps = members.iter().map(|m| m.rate_bps).fold(0.0, f64::max);
    let shown_bps = members.iter().map(|m| m.shown_bps).fold(0.0, f64::max);
    let concurrent = peak(members.iter().filter(|m| m.judged()));
    let fig = Figures {
        by,
        key: key.clone(),
        flows: members.len(),
        bytes,
        rate_bps,
        fastest_bps,
        shown_bps,
        path_bps: shown_bps.max(rate_bps),
        concurrent,
    };
    let judged = judge::judge(&fig, members, cfg);
    let what_if = what_ifs::what_would_help(&fig, judged.limit, members, cfg);
    let mut verdicts = BTreeMap::new();
    for m in members {
        *verdicts.entry(m.att.verdict.name()).or_insert(0) += m.bytes;
    }
    Group {
        netns,
        direction,
        by: by.name(),
        peer: by.is_peer().then(|| key.clone()),
        process: (by == GroupBy::Process).then(|| key.clone()),
        workload: (by == GroupBy::Workload).then(|| key.clone()),
        key,
        flows: members.len(),
        open: members.iter().filter(|m| !m.flow.closed).count(),
        judged: members.iter().filter(|m| m.judged()).count(),
        concurrent,
        bytes,
        span_us: union_us(members.iter()).round() as u64,
        rate_bps,
        fastest_bps,
        path_bps: fig.path_bps,
        limit: judged.limit,
        rule: judged.rule,
        verdicts,
        explanation: judged.explanation,
        what_if,
    }
}

/// The group's rate (bits/s): of its judged flows (all, where none
/// is), and of those the ones that moved data.
fn group_rate(members: &[Member<'_>], cfg: &Config) -> f64 {
    // The rate is the judged flows' (all, where none is): a control
    // connection open around the transfers (iperf3's) would stretch the
    // span without adding bytes.
    let judged: Vec<&Member<'_>> = members.iter().filter(|m| m.judged()).collect();
    let counted: Vec<&Member<'_>> = if judged.is_empty() {
        members.iter().collect()
    } else {
        judged
    };
    // Flows that ran together: the sum of their rates, each over its own
    // interval. Intervals of different lengths (`top` judges each flow
    // over its last window, 1 to 2 s long by default) would otherwise spread
    // the shorter ones' bytes over the longest: four windowed uploads
    // that ran 24.4 Mbit/s together read 12.2. Flows one after another:
    // their bytes over the time at least one of them was open. A flow
    // that moved nothing adds no rate and no time (iperf3's idle control
    // connection, judged `application` over a window that ended seconds
    // before the streams').
    let moving: Vec<&Member<'_>> = counted.iter().copied().filter(|m| m.bytes > 0).collect();
    let counted = if moving.is_empty() { counted } else { moving };
    let together = all_together(&counted, cfg);
    let span_us = union_us(counted.iter().copied());
    if together {
        counted.iter().map(|m| m.rate_bps).sum()
    } else if span_us > 0.0 {
        counted.iter().map(|m| m.bytes).sum::<u64>() as f64 * 8e6 / span_us
    } else {
        0.0
    }
}

/// Whether `members` were all in their judged intervals together for at
/// least `cfg.group_concurrent_share` of the shortest interval and
/// `cfg.min_rtts` round trips of the path (the longest base RTT): the
/// pairwise test of [`Member::concurrent_with`] put on the intervals'
/// common stretch, in one pass (a peer can have thousands of flows, and
/// `top` groups them at every poll).
fn all_together(members: &[&Member<'_>], cfg: &Config) -> bool {
    let start = members.iter().map(|m| m.start_us).fold(f64::MIN, f64::max);
    let end = members.iter().map(|m| m.end_us).fold(f64::MAX, f64::min);
    let shortest = members
        .iter()
        .map(|m| m.end_us - m.start_us)
        .fold(f64::MAX, f64::min);
    let rtt = members.iter().map(|m| m.base_rtt_us).max().unwrap_or(0);
    let common = end - start;
    common > 0.0
        && common >= cfg.group_concurrent_share * shortest
        && common >= cfg.min_rtts * f64::from(rtt)
}

/// The time (µs) at least one of `members` was in its judged interval.
fn union_us<'m, 'a: 'm>(members: impl Iterator<Item = &'m Member<'a>>) -> f64 {
    let mut spans: Vec<(f64, f64)> = members.map(|m| (m.start_us, m.end_us)).collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut total = 0.0;
    let mut current: Option<(f64, f64)> = None;
    for (s, e) in spans {
        current = match current {
            Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
            Some((cs, ce)) => {
                total += ce - cs;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    total + current.map_or(0.0, |(s, e)| e - s)
}

/// The most of `members` in their judged intervals at one time.
fn peak<'m, 'a: 'm>(members: impl Iterator<Item = &'m Member<'a>>) -> usize {
    // Ends sort before starts at the same instant: back to back is not
    // at once.
    let mut edges: Vec<(f64, i32)> = members
        .flat_map(|m| [(m.start_us, 1), (m.end_us, -1)])
        .collect();
    edges.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut open: i32 = 0;
    let mut most: i32 = 0;
    for (_, d) in edges {
        open += d;
        most = most.max(open);
    }
    usize::try_from(most).unwrap_or(0)
}

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod grouping_tests;
#[cfg(test)]
mod one_flow_tests;
#[cfg(test)]
mod shared_tests;
#[cfg(test)]
mod tests;
