//! A group's judgement: per-flow, shared, mixed or unknown, by an ordered
//! table of named rules ([`GROUP_RULES`]) over a context computed once
//! ([`GroupCtx`]): the flows' own verdicts, their sum, and what the path
//! has shown (docs/attribution.md, "Groups", lists them in the same
//! order).

use serde::Serialize;

use super::{
    Figures,
    member::{Class, Knob, Member},
};
use crate::{
    attribution::{Config, rule::Rule},
    units,
};

/// What limits a group as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// Each flow is held by something of its own while the flows together
    /// run well above any one of them: more streams (or bigger windows)
    /// would add rate.
    PerFlow,
    /// The flows meet one ceiling together (a link, a shaper): more
    /// streams would not help.
    Shared,
    /// Some bytes were held by the flows' own limits, some by the path.
    Mixed,
    /// Too little to say: too few flows or bytes, flows not concurrent, or
    /// a sum that does not tell.
    Unknown,
}

impl Limit {
    /// The snake_case name used in JSON and the table.
    pub const fn name(self) -> &'static str {
        match self {
            Limit::PerFlow => "per_flow",
            Limit::Shared => "shared",
            Limit::Mixed => "mixed",
            Limit::Unknown => "unknown",
        }
    }
}

/// What a group rule found: the group's limit, the rule and why (the
/// first rule's finding is the group's judgement, as a flow's is).
#[derive(Clone, Debug, PartialEq)]
pub struct GroupFinding {
    /// The limit.
    pub limit: Limit,
    /// The group rule that decided.
    pub rule: &'static str,
    /// One line with the numbers.
    pub explanation: String,
}

fn found(limit: Limit, rule: &'static str, explanation: String) -> GroupFinding {
    GroupFinding {
        limit,
        rule,
        explanation,
    }
}

/// The limit a knob names, in words.
pub fn knob_words(k: Knob) -> &'static str {
    match k {
        Knob::HostWindow => "this host's receive window",
        Knob::PeerWindow => "the peer's receive window",
        Knob::SendBuffer => "the send buffer",
        Knob::CongestionWindow => "the sender's congestion window",
        Knob::Reader => "this host's reader",
        Knob::Requests => "this host's requests, one at a time",
        Knob::Policer => "a rate limit that drops (a policer)",
        Knob::Application => "the sending application",
        Knob::SendingHost => "the sending host",
    }
}

/// The distinct knobs of `members` held by their own limits, most bytes
/// first, in words, joined by ", ".
fn own_words(members: &[&Member<'_>]) -> String {
    let mut by: Vec<(Knob, u64)> = Vec::new();
    for m in members {
        if let Class::Own(k) = m.class {
            match by.iter_mut().find(|(kk, _)| *kk == k) {
                Some((_, b)) => *b += m.bytes,
                None => by.push((k, m.bytes)),
            }
        }
    }
    by.sort_by_key(|b| std::cmp::Reverse(b.1));
    by.iter()
        .map(|(k, _)| knob_words(*k))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The distinct owners of `members` (`comm (pid N)`), joined by ", ".
pub fn owners(members: &[&Member<'_>]) -> String {
    let mut names: Vec<String> = Vec::new();
    for m in members {
        let name = if m.flow.pid == 0 {
            "an unknown process".to_string()
        } else {
            format!("{} (pid {})", m.flow.comm, m.flow.pid)
        };
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names.join(", ")
}

/// "N flow(s)".
pub fn flows_word(n: usize) -> String {
    if n == 1 {
        "1 flow".to_string()
    } else {
        format!("{n} flows")
    }
}

/// What the group rules read, computed once per judgement: the judged
/// flows, split into those held by their own limits and those at the
/// path, the share of the judged bytes each set moved, and whether any
/// two of them ran at once.
pub struct GroupCtx<'a> {
    /// The group's figures.
    pub fig: &'a Figures,
    /// The thresholds.
    pub cfg: &'a Config,
    /// The members with a verdict over enough of their interval.
    pub judged: Vec<&'a Member<'a>>,
    /// Of those, the ones held by a limit of their own.
    pub own: Vec<&'a Member<'a>>,
    /// The others: at the path's bottleneck.
    pub shared: Vec<&'a Member<'a>>,
    /// The share of the judged bytes `own` moved (0 to 1).
    pub own_share: f64,
    /// The share of the judged bytes `shared` moved (0 to 1).
    pub shared_share: f64,
    /// Two of the judged flows ran at once.
    pub concurrent: bool,
}

impl<'a> GroupCtx<'a> {
    /// The context of a group of `members` whose figures are `fig`.
    pub fn new(fig: &'a Figures, members: &'a [Member<'a>], cfg: &'a Config) -> GroupCtx<'a> {
        let judged: Vec<&Member<'_>> = members.iter().filter(|m| m.judged()).collect();
        let judged_bytes: u64 = judged.iter().map(|m| m.bytes).sum();
        // By start: a flow can overlap only those that start before it
        // ends, so a host's thousands of short requests cost a sort, not
        // all pairs.
        let mut by_start = judged.clone();
        by_start.sort_by(|a, b| a.start_us.total_cmp(&b.start_us));
        let concurrent = by_start.iter().enumerate().any(|(i, a)| {
            by_start[i + 1..]
                .iter()
                .take_while(|b| b.start_us < a.end_us)
                .any(|b| a.concurrent_with(b, cfg))
        });
        let (own, shared): (Vec<&Member<'_>>, Vec<&Member<'_>>) = judged
            .iter()
            .partition(|m| matches!(m.class, Class::Own(_)));
        let share = |set: &[&Member<'_>]| {
            set.iter().map(|m| m.bytes).sum::<u64>() as f64 / judged_bytes.max(1) as f64
        };
        let (own_share, shared_share) = (share(&own), share(&shared));
        GroupCtx {
            fig,
            cfg,
            judged,
            own,
            shared,
            own_share,
            shared_share,
            concurrent,
        }
    }

    /// The flows at the path moved `group_dominant_share` of the judged
    /// bytes or more.
    fn shared_dominant(&self) -> bool {
        self.shared_share >= self.cfg.group_dominant_share
    }

    /// The standing queues of the flows at the path that can be compared
    /// ([`Member::queue_comparable`]: senders' only), µs.
    fn standing(&self) -> Vec<u32> {
        self.shared
            .iter()
            .filter(|m| m.queue_comparable() && m.queue_stands(self.cfg))
            .map(|m| m.queue_us)
            .collect()
    }
}

/// A group rule's test.
pub type GroupJudge = fn(&GroupCtx<'_>) -> Option<GroupFinding>;

/// The group's table: the first rule that finds decides
/// (docs/attribution.md, "Groups", lists them in this order).
pub const GROUP_RULES: &[Rule<GroupJudge>] = &[
    Rule {
        name: "too_little",
        recognises: "no judged flow, or under min_bytes moved: too little to say",
        judge: too_little,
    },
    Rule {
        name: "one_flow",
        recognises: "one judged flow: its own verdict answers",
        judge: one_flow,
    },
    Rule {
        name: "not_concurrent",
        recognises: "judged flows never concurrent: their sum says nothing",
        judge: not_concurrent,
    },
    Rule {
        name: "own_and_path",
        recognises: "neither own limits nor the path hold group_dominant_share of the bytes",
        judge: own_and_path,
    },
    Rule {
        name: "different_queues",
        recognises: "flows at the path whose standing queues disagree: not one bottleneck",
        judge: different_queues,
    },
    Rule {
        name: "one_bottleneck",
        recognises: "flows at the path, their queues agreeing: one shared bottleneck",
        judge: one_bottleneck,
    },
    Rule {
        name: "fills_path",
        recognises: "flows held by their own limits whose sum is at what the path has shown",
        judge: fills_path,
    },
    Rule {
        name: "no_gain",
        recognises: "flows held by their own limits whose sum is under group_gain times the fastest",
        judge: no_gain,
    },
    Rule {
        name: "own_limits",
        recognises: "flows held by their own limits whose sum is well above the fastest alone",
        judge: own_limits,
    },
];

/// Judges a group of `members` whose figures are `fig`: the first rule of
/// [`GROUP_RULES`] that finds (the last always does; a test holds it).
pub fn judge(fig: &Figures, members: &[Member<'_>], cfg: &Config) -> GroupFinding {
    let c = GroupCtx::new(fig, members, cfg);
    GROUP_RULES
        .iter()
        .find_map(|r| (r.judge)(&c))
        .unwrap_or_else(|| found(Limit::Unknown, "none", String::new()))
}

fn too_little(c: &GroupCtx<'_>) -> Option<GroupFinding> {
    (c.judged.is_empty() || c.fig.bytes < c.cfg.min_bytes).then(|| {
        found(
            Limit::Unknown,
            "too_little",
            format!(
                "unknown: too little to say: {} moved {}, {} judged",
                flows_word(c.fig.flows),
                units::bytes(c.fig.bytes as f64),
                c.judged.len()
            ),
        )
    })
}

fn not_concurrent(c: &GroupCtx<'_>) -> Option<GroupFinding> {
    (!c.concurrent).then(|| {
        found(
            Limit::Unknown,
            "not_concurrent",
            format!(
                "unknown: {} judged, never concurrent: their sum says nothing of a shared limit; each flow's own verdict stands",
                flows_word(c.judged.len())
            ),
        )
    })
}

fn own_and_path(c: &GroupCtx<'_>) -> Option<GroupFinding> {
    let dominant = c.cfg.group_dominant_share;
    (c.own_share < dominant && c.shared_share < dominant).then(|| {
        found(
            Limit::Mixed,
            "own_and_path",
            format!(
                "mixed: {} of the judged bytes held by limits of their own ({}: {} of {}), {} at the path's bottleneck ({} of {})",
                units::share(c.own_share),
                own_words(&c.own),
                flows_word(c.own.len()),
                owners(&c.own),
                units::share(c.shared_share),
                flows_word(c.shared.len()),
                owners(&c.shared)
            ),
        )
    })
}

/// The one judged flow's own verdict answers. A window, a congestion
/// window or a policer is the flow's alone, so a parallel stream brings
/// its own; a limit in an end host (its application, its reader, the
/// sending host) may be one process's or the whole host's, which one
/// flow cannot show.
fn one_flow(c: &GroupCtx<'_>) -> Option<GroupFinding> {
    let [m] = c.judged[..] else {
        return None;
    };
    Some(match m.class {
        Class::Own(k) => found(
            Limit::PerFlow,
            "one_flow",
            format!(
                "per-flow limit: one flow, held by {} ({}, {}): {}",
                knob_words(k),
                m.att.verdict,
                units::rate(m.rate_bps),
                if matches!(k, Knob::Application | Knob::Reader | Knob::SendingHost) {
                    "a limit in an end host; parallel streams would add rate only where that host has room for them (one process's CPU or pacing, not the whole host's), which one flow cannot show"
                } else {
                    "a limit of its own; parallel streams would each bring their own"
                }
            ),
        ),
        _ => found(
            Limit::Shared,
            "one_flow",
            format!(
                "shared limit: one flow, at the path's bottleneck ({}, {}): more streams would share the same bottleneck",
                m.att.verdict,
                units::rate(m.rate_bps)
            ),
        ),
    })
}

/// Why no queue compares among the path's flows `shared`: downloads,
/// whose receiving end cannot see the sender's queue, or senders with
/// none standing (BBR paces to keep little).
fn no_queue_words(shared: &[&Member<'_>]) -> String {
    if !shared.iter().any(|m| m.queue_comparable()) {
        return "no sender's queue to compare (a receiver's RTT estimate does not compare)"
            .to_string();
    }
    if shared.iter().any(|m| m.flow.cc == "bbr") {
        "no queue standing on their senders (BBR paces to keep little)".to_string()
    } else {
        "no queue standing on their senders".to_string()
    }
}

/// The standing queues of the flows at the path, in words: their range,
/// or why none compares.
fn queue_words(c: &GroupCtx<'_>, standing: &[u32]) -> String {
    match (standing.iter().min(), standing.iter().max()) {
        (Some(&shortest), Some(&longest)) => format!(
            "queue delay {} to {} on {} of them",
            units::time_us(f64::from(shortest)),
            units::time_us(f64::from(longest)),
            standing.len()
        ),
        _ => no_queue_words(&c.shared),
    }
}

// Flows at the path whose queues disagree are not at one bottleneck: a
// bottleneck's queue delays every flow through it by the same time.
fn different_queues(c: &GroupCtx<'_>) -> Option<GroupFinding> {
    let standing = c.standing();
    let shortest = standing.iter().copied().min().unwrap_or(0);
    let longest = standing.iter().copied().max().unwrap_or(0);
    (c.shared_dominant()
        && standing.len() >= 2
        && f64::from(shortest) < c.cfg.group_queue_agreement * f64::from(longest))
    .then(|| {
        found(
            Limit::Mixed,
            "different_queues",
            format!(
                "mixed: {} at the path, but their queues differ ({}): not one bottleneck (different paths, an ECMP hash?)",
                flows_word(c.shared.len()),
                queue_words(c, &standing)
            ),
        )
    })
}

fn one_bottleneck(c: &GroupCtx<'_>) -> Option<GroupFinding> {
    if !c.shared_dominant() {
        return None;
    }
    let fig = c.fig;
    // The rate is the group's: where some of its flows are not at the
    // path (held by their own limits with under a fifth of the bytes, or
    // not judged), the text says how many are.
    let who = if c.shared.len() < fig.flows {
        format!(
            "{} of {} at the path's bottleneck; the group ran",
            c.shared.len(),
            flows_word(fig.flows)
        )
    } else {
        format!(
            "{} at the path's bottleneck together ran",
            flows_word(c.shared.len())
        )
    };
    Some(found(
        Limit::Shared,
        "one_bottleneck",
        format!(
            "shared limit: {who} {} (the fastest alone {}), {}: one bottleneck; more streams would share it",
            units::rate(fig.rate_bps),
            units::rate(fig.fastest_bps),
            queue_words(c, &c.standing())
        ),
    ))
}

// Reached with the flows held by their own limits moving most of the
// bytes (the rules above take the rest). At what the path has shown
// counts too, up to `group_shown_margin` above it: two downloads that
// share a shaper show its rate, and together run at it. Well above it,
// what was shown is one flow's own limit (a policer's rate), not the
// path's.
fn fills_path(c: &GroupCtx<'_>) -> Option<GroupFinding> {
    let (fig, cfg) = (c.fig, c.cfg);
    let shown = fig.shown_bps;
    (fig.rate_bps >= cfg.group_fills_path * shown && fig.rate_bps <= cfg.group_shown_margin * shown)
        .then(|| {
            found(
                Limit::Shared,
                "fills_path",
                format!(
                    "shared limit: {} each held by its own limit ({}), but together they ran {}, {} of the {} the path has shown: more streams would not add rate",
                    flows_word(c.own.len()),
                    own_words(&c.own),
                    units::rate(fig.rate_bps),
                    units::share(fig.rate_bps / fig.shown_bps),
                    units::rate(fig.shown_bps)
                ),
            )
        })
}

fn no_gain(c: &GroupCtx<'_>) -> Option<GroupFinding> {
    let fig = c.fig;
    (fig.rate_bps < c.cfg.group_gain * fig.fastest_bps).then(|| {
        found(
            Limit::Unknown,
            "no_gain",
            format!(
                "unknown: {} each held by its own limit ({}), but together they ran {}, {:.1} times the fastest alone ({}): the sum does not show that more streams add rate",
                flows_word(c.own.len()),
                own_words(&c.own),
                units::rate(fig.rate_bps),
                fig.rate_bps / fig.fastest_bps.max(1.0),
                units::rate(fig.fastest_bps)
            ),
        )
    })
}

// Per-flow: the sum is well above the fastest alone and short of what the
// path has shown. Bigger windows help only where every flow's own what-if
// says so (not a peer window its reader holds, not a path with no
// headroom), and the path has shown more than each flow's share of it
// ran (as the window advice, `what_ifs::window`, reckons).
fn own_limits(c: &GroupCtx<'_>) -> Option<GroupFinding> {
    let (fig, cfg) = (c.fig, c.cfg);
    let share = fig.share_bps();
    let windows = c.own.iter().all(|m| {
        matches!(
            m.class,
            Class::Own(Knob::HostWindow | Knob::PeerWindow | Knob::SendBuffer)
        ) && m.att.what_if.as_ref().is_none_or(|w| w.window_helps)
            && m.rate_bps < cfg.at_ceiling * share
    });
    let helps = if windows {
        "more streams or bigger windows would add rate"
    } else {
        "more streams would add rate"
    };
    Some(found(
        Limit::PerFlow,
        "own_limits",
        format!(
            "per-flow limit: {} each held by its own limit ({}) together ran {}, {:.1} times the fastest alone ({}); {}: {helps}",
            flows_word(c.own.len()),
            own_words(&c.own),
            units::rate(fig.rate_bps),
            fig.rate_bps / fig.fastest_bps.max(1.0),
            units::rate(fig.fastest_bps),
            fig.path_words()
        ),
    ))
}
