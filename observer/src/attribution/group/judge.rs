//! A group's judgement: per-flow, shared, mixed or unknown, by an ordered
//! list of named rules over the flows' own verdicts, their sum, and what
//! the path has shown (docs/attribution.md, "Groups", lists them in the
//! same order).

use serde::Serialize;

use super::{
    Figures,
    member::{Class, Knob, Member},
};
use crate::{attribution::Config, units};

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

/// A group's judgement: its limit, the rule that decided and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Judged {
    /// The limit.
    pub limit: Limit,
    /// The group rule that decided.
    pub rule: &'static str,
    /// One line with the numbers.
    pub explanation: String,
}

fn judged(limit: Limit, rule: &'static str, explanation: String) -> Judged {
    Judged {
        limit,
        rule,
        explanation,
    }
}

/// The rules' names, in the order they are tried (docs/attribution.md
/// lists them so).
pub const GROUP_RULES: [&str; 9] = [
    "too_little",
    "one_flow",
    "not_concurrent",
    "own_and_path",
    "different_queues",
    "one_bottleneck",
    "fills_path",
    "no_gain",
    "own_limits",
];

/// The limit a knob names, in words.
pub fn knob_words(k: Knob) -> &'static str {
    match k {
        Knob::HostWindow => "this host's receive window",
        Knob::PeerWindow => "the peer's receive window",
        Knob::SendBuffer => "the send buffer",
        Knob::CongestionWindow => "the sender's congestion window",
        Knob::Reader => "this host's reader",
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

/// Judges a group of `members` whose figures are `fig`.
pub fn judge(fig: &Figures, members: &[Member<'_>], cfg: &Config) -> Judged {
    let judged_members: Vec<&Member<'_>> = members.iter().filter(|m| m.judged()).collect();
    let judged_bytes: u64 = judged_members.iter().map(|m| m.bytes).sum();
    if judged_members.is_empty() || fig.bytes < cfg.min_bytes {
        return judged(
            Limit::Unknown,
            "too_little",
            format!(
                "unknown: too little to say: {} moved {}, {} judged",
                flows_word(fig.flows),
                units::bytes(fig.bytes as f64),
                judged_members.len()
            ),
        );
    }
    if let [m] = judged_members[..] {
        return one_flow(m);
    }
    // By start: a flow can overlap only those that start before it ends,
    // so a host's thousands of short requests cost a sort, not all pairs.
    let mut by_start = judged_members.clone();
    by_start.sort_by(|a, b| a.start_us.total_cmp(&b.start_us));
    let concurrent = by_start.iter().enumerate().any(|(i, a)| {
        by_start[i + 1..]
            .iter()
            .take_while(|b| b.start_us < a.end_us)
            .any(|b| a.concurrent_with(b, cfg))
    });
    if !concurrent {
        return judged(
            Limit::Unknown,
            "not_concurrent",
            format!(
                "unknown: {} judged, never concurrent: their sum says nothing of a shared limit; each flow's own verdict stands",
                flows_word(judged_members.len())
            ),
        );
    }
    let (own, shared): (Vec<&Member<'_>>, Vec<&Member<'_>>) = judged_members
        .iter()
        .partition(|m| matches!(m.class, Class::Own(_)));
    let share = |set: &[&Member<'_>]| {
        set.iter().map(|m| m.bytes).sum::<u64>() as f64 / judged_bytes.max(1) as f64
    };
    let (own_share, shared_share) = (share(&own), share(&shared));
    if own_share < cfg.group_dominant_share && shared_share < cfg.group_dominant_share {
        return judged(
            Limit::Mixed,
            "own_and_path",
            format!(
                "mixed: {} of the judged bytes held by limits of their own ({}: {} of {}), {} at the path's bottleneck ({} of {})",
                units::share(own_share),
                own_words(&own),
                flows_word(own.len()),
                owners(&own),
                units::share(shared_share),
                flows_word(shared.len()),
                owners(&shared)
            ),
        );
    }
    if shared_share >= cfg.group_dominant_share {
        return at_the_path(fig, &shared, cfg);
    }
    own_limits(fig, &own, cfg)
}

/// The one judged flow's own verdict answers. A window, a congestion
/// window or a policer is the flow's alone, so a parallel stream brings
/// its own; a limit in an end host (its application, its reader, the
/// sending host) may be one process's or the whole host's, which one
/// flow cannot show.
fn one_flow(m: &Member<'_>) -> Judged {
    match m.class {
        Class::Own(k) => judged(
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
        _ => judged(
            Limit::Shared,
            "one_flow",
            format!(
                "shared limit: one flow, at the path's bottleneck ({}, {}): more streams would share the same bottleneck",
                m.att.verdict,
                units::rate(m.rate_bps)
            ),
        ),
    }
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

/// Flows at the path: one bottleneck when their standing queues agree.
fn at_the_path(fig: &Figures, shared: &[&Member<'_>], cfg: &Config) -> Judged {
    // Only senders' queues compare ([`Member::queue_comparable`]).
    let standing: Vec<u32> = shared
        .iter()
        .filter(|m| m.queue_comparable() && m.queue_stands(cfg))
        .map(|m| m.queue_us)
        .collect();
    let shortest = standing.iter().copied().min().unwrap_or(0);
    let longest = standing.iter().copied().max().unwrap_or(0);
    let queues = if standing.is_empty() {
        no_queue_words(shared)
    } else {
        format!(
            "queue delay {} to {} on {} of them",
            units::time_us(f64::from(shortest)),
            units::time_us(f64::from(longest)),
            standing.len()
        )
    };
    if standing.len() >= 2 && f64::from(shortest) < cfg.group_queue_agreement * f64::from(longest) {
        return judged(
            Limit::Mixed,
            "different_queues",
            format!(
                "mixed: {} at the path, but their queues differ ({queues}): not one bottleneck (different paths, an ECMP hash?)",
                flows_word(shared.len())
            ),
        );
    }
    // The rate is the group's: where some of its flows are not at the
    // path (held by their own limits with under a fifth of the bytes, or
    // not judged), the text says how many are.
    let who = if shared.len() < fig.flows {
        format!(
            "{} of {} at the path's bottleneck; the group ran",
            shared.len(),
            flows_word(fig.flows)
        )
    } else {
        format!(
            "{} at the path's bottleneck together ran",
            flows_word(shared.len())
        )
    };
    judged(
        Limit::Shared,
        "one_bottleneck",
        format!(
            "shared limit: {who} {} (the fastest alone {}), {queues}: one bottleneck; more streams would share it",
            units::rate(fig.rate_bps),
            units::rate(fig.fastest_bps)
        ),
    )
}

/// Flows held by their own limits: per-flow while their sum is well above
/// the fastest alone and short of what the path has shown.
fn own_limits(fig: &Figures, own: &[&Member<'_>], cfg: &Config) -> Judged {
    let words = own_words(own);
    // At what the path has shown counts too, up to `group_shown_margin`
    // above it: two downloads that share a shaper show its rate, and
    // together run at it. Well above it, what was shown is one flow's own
    // limit (a policer's rate), not the path's.
    let shown = fig.shown_bps;
    if fig.rate_bps >= cfg.group_fills_path * shown
        && fig.rate_bps <= cfg.group_shown_margin * shown
    {
        return judged(
            Limit::Shared,
            "fills_path",
            format!(
                "shared limit: {} each held by its own limit ({words}), but together they ran {}, {} of the {} the path has shown: more streams would not add rate",
                flows_word(own.len()),
                units::rate(fig.rate_bps),
                units::share(fig.rate_bps / fig.shown_bps),
                units::rate(fig.shown_bps)
            ),
        );
    }
    if fig.rate_bps < cfg.group_gain * fig.fastest_bps {
        return judged(
            Limit::Unknown,
            "no_gain",
            format!(
                "unknown: {} each held by its own limit ({words}), but together they ran {}, {:.1} times the fastest alone ({}): the sum does not show that more streams add rate",
                flows_word(own.len()),
                units::rate(fig.rate_bps),
                fig.rate_bps / fig.fastest_bps.max(1.0),
                units::rate(fig.fastest_bps)
            ),
        );
    }
    // Bigger windows help only where every flow's own what-if says so (not
    // a peer window its reader holds, not a path with no headroom), and
    // the path has shown more than each flow's share of it ran (as the
    // window advice, `knobs::window`, reckons).
    let share = fig.share_bps();
    let windows = own.iter().all(|m| {
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
    judged(
        Limit::PerFlow,
        "own_limits",
        format!(
            "per-flow limit: {} each held by its own limit ({words}) together ran {}, {:.1} times the fastest alone ({}); {}: {helps}",
            flows_word(own.len()),
            units::rate(fig.rate_bps),
            fig.rate_bps / fig.fastest_bps.max(1.0),
            units::rate(fig.fastest_bps),
            fig.path_words()
        ),
    )
}
