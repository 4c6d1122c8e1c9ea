//! What would help a group: the flows' what-ifs added up per limit (knob):
//! which knob held how many bytes below the rate the path has shown, and
//! what changing it would buy. Every number comes from the flows.

use serde::Serialize;

use super::{
    Figures, GroupBy,
    judge::{Limit, knob_words, owners},
    member::{Class, Knob, Member},
};
use crate::{
    attribution::{Config, Side, whatif::bdp},
    units,
};

/// What one limit held in a group, and what changing it would buy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KnobWhatIf {
    /// The limit: `host_window`, `peer_window`, `send_buffer`,
    /// `congestion_window`, `reader`, `policer`, `application`,
    /// `sending_host`, or `path` for flows at the path's bottleneck.
    pub knob: &'static str,
    /// Flows it held.
    pub flows: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Their share of the group's bytes (0 to 1).
    pub byte_share: f64,
    /// Their mean rate, each (bits/s).
    pub rate_bps: f64,
    /// For a window: the window (bytes), byte-weighted over the flows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_bytes: Option<f64>,
    /// For a window: the RTT it is held against (µs), byte-weighted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<f64>,
    /// For a window: what it allows one flow, window / RTT (bits/s).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ceiling_bps: Option<f64>,
    /// For a window: what the path's rate needs at that RTT (bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needed_bytes: Option<f64>,
    /// For a window: what the window that carries the path's rate would
    /// buy each flow (times): the path's rate shared by the flows open at
    /// once (`Figures::concurrent`), over the flows' mean rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speedup: Option<f64>,
    /// Whether changing this limit (its window, its reader) would raise
    /// their rate as far as the flows show.
    pub helps: bool,
    /// The answer in one line.
    pub summary: String,
}

/// One entry per limit that held judged bytes in the group of `members`
/// (figures `fig`, judged `limit`), most bytes first.
pub fn what_would_help(
    fig: &Figures,
    limit: Limit,
    members: &[Member<'_>],
    cfg: &Config,
) -> Vec<KnobWhatIf> {
    let mut classes: Vec<Class> = Vec::new();
    for m in members.iter().filter(|m| m.judged()) {
        if !classes.contains(&m.class) {
            classes.push(m.class);
        }
    }
    let mut out: Vec<KnobWhatIf> = classes
        .into_iter()
        .map(|c| {
            let set: Vec<&Member<'_>> = members.iter().filter(|m| m.class == c).collect();
            entry(fig, limit, c, &set, members, cfg)
        })
        .collect();
    out.sort_by_key(|b| std::cmp::Reverse(b.bytes));
    out
}

/// "4 of 5 downloads from 203.0.113.5": `set` of the group's `members`.
/// A flow that moved under `cfg.min_bytes` (iperf3's control connection)
/// is no upload or download, and is not counted unless in `set`.
fn who(fig: &Figures, set: &[&Member<'_>], members: &[Member<'_>], cfg: &Config) -> String {
    let side = set[0].att.side;
    let same = set.iter().all(|m| m.att.side == side);
    let transfers = |side: Option<Side>| {
        members
            .iter()
            .filter(|m| side.is_none_or(|s| m.att.side == s))
            .filter(|m| m.bytes >= cfg.min_bytes || set.iter().any(|x| std::ptr::eq(*x, *m)))
            .count()
    };
    let (noun, prep, of) = match (same, side) {
        (true, Side::Receiver) => ("downloads", "from", transfers(Some(side))),
        (true, Side::Sender) => ("uploads", "to", transfers(Some(side))),
        (false, _) => ("flows", "with", transfers(None)),
    };
    let prep = if fig.by.is_peer() { prep } else { "of" };
    let key = match fig.by {
        GroupBy::Prefix { .. } => format!("{} (a prefix)", fig.key),
        _ => fig.key.clone(),
    };
    format!("{} of {of} {noun} {prep} {key}", set.len())
}

/// Weights of `set` by bytes (equal where none moved).
fn weights(set: &[&Member<'_>]) -> Vec<f64> {
    let total: u64 = set.iter().map(|m| m.bytes).sum();
    set.iter()
        .map(|m| {
            if total == 0 {
                1.0 / set.len() as f64
            } else {
                m.bytes as f64 / total as f64
            }
        })
        .collect()
}

/// The what-if of the limit `class` over its flows `set`.
fn entry(
    fig: &Figures,
    limit: Limit,
    class: Class,
    set: &[&Member<'_>],
    members: &[Member<'_>],
    cfg: &Config,
) -> KnobWhatIf {
    let bytes: u64 = set.iter().map(|m| m.bytes).sum();
    let byte_share = bytes as f64 / fig.bytes.max(1) as f64;
    let rate_bps = set.iter().map(|m| m.rate_bps).sum::<f64>() / set.len() as f64;
    let head = format!(
        "{} ({} of bytes)",
        who(fig, set, members, cfg),
        units::share(byte_share)
    );
    let mut w = KnobWhatIf {
        knob: "path",
        flows: set.len(),
        bytes,
        byte_share,
        rate_bps,
        window_bytes: None,
        rtt_us: None,
        ceiling_bps: None,
        needed_bytes: None,
        speedup: None,
        helps: false,
        summary: String::new(),
    };
    let Class::Own(knob) = class else {
        w.summary = format!(
            "{head} ran at the path's bottleneck: more streams or bigger windows would not help; more capacity (or fewer competing flows) would"
        );
        return w;
    };
    w.knob = knob.name();
    let streams = if limit == Limit::PerFlow {
        format!(
            "; more streams would each bring their own (together the flows ran {})",
            units::rate(fig.rate_bps)
        )
    } else {
        String::new()
    };
    if matches!(knob, Knob::HostWindow | Knob::PeerWindow | Knob::SendBuffer) {
        return window(fig, knob, set, &head, w, cfg);
    }
    let (summary, helps) = own_summary(knob, &head, set, rate_bps, &streams);
    w.summary = summary;
    w.helps = helps;
    w
}

/// The summary of a limit of the flows' own other than a window (those
/// have their arithmetic, [`window`]): `head` names the flows, `set` the
/// members, `rate_bps` their mean rate (bits/s), `streams` what more
/// streams would bring; with whether relaxing it would help.
fn own_summary(
    knob: Knob,
    head: &str,
    set: &[&Member<'_>],
    rate_bps: f64,
    streams: &str,
) -> (String, bool) {
    match knob {
        Knob::CongestionWindow => {
            let (loss, what) = loss(set);
            let lost = if loss > 0 {
                format!(", {loss} {what}")
            } else {
                String::new()
            };
            (
                format!(
                    "{head} were held by the sender's congestion window ({} each on average{lost}): raising the window would not help{streams}",
                    units::rate(rate_bps)
                ),
                false,
            )
        }
        Knob::Reader => (
            format!(
                "{head} were held by this host's reader, {}: a faster reader would help, a bigger window would not",
                owners(set)
            ),
            true,
        ),
        Knob::Requests => (
            format!(
                "{head} were held by this host's requests, {}, each waiting a round trip for its answer: larger requests, or several at once, would help, a bigger window would not",
                owners(set)
            ),
            true,
        ),
        Knob::Policer => (
            format!(
                "{head} were held by a rate limit that drops without a queue (a policer), about {} each: a bigger window would not help{streams}",
                units::rate(rate_bps)
            ),
            false,
        ),
        Knob::Application => (
            format!(
                "{head} were held by the sending application, {}, about {} each: it did not supply data faster; no window would help",
                owners(set),
                units::rate(rate_bps)
            ),
            false,
        ),
        Knob::SendingHost => (
            format!(
                "{head} were held by the sending host, about {} each: it sent below what the window and the path allow; look at the server",
                units::rate(rate_bps)
            ),
            false,
        ),
        // Windows have their own arithmetic (`window`), taken before.
        Knob::HostWindow | Knob::PeerWindow | Knob::SendBuffer => (String::new(), false),
    }
}

/// Segments lost by `set`: retransmitted at the sender, out of order at
/// the receiver; with what they are.
fn loss(set: &[&Member<'_>]) -> (u64, &'static str) {
    let retrans: u64 = set
        .iter()
        .map(|m| u64::from(m.att.evidence.retransmits))
        .sum();
    let ooo: u64 = set
        .iter()
        .map(|m| u64::from(m.att.evidence.receive.ooo_packets))
        .sum();
    if retrans >= ooo {
        (retrans, "segments retransmitted")
    } else {
        (ooo, "out-of-order arrivals")
    }
}

/// The window what-if of `set`, held by `knob`: the flows' windows
/// against their RTT, and the window that would carry the path's rate.
fn window(
    fig: &Figures,
    knob: Knob,
    set: &[&Member<'_>],
    head: &str,
    mut w: KnobWhatIf,
    cfg: &Config,
) -> KnobWhatIf {
    let with: Vec<&Member<'_>> = set
        .iter()
        .copied()
        .filter(|m| m.att.what_if.is_some())
        .collect();
    let Some(first) = with.iter().max_by_key(|m| m.bytes) else {
        w.summary = format!(
            "{head} were held by {}: no window arithmetic (their rate outran the window's ceiling)",
            knob_words(knob)
        );
        return w;
    };
    let reader_bytes = reader_held(&with);
    let (win, rtt) = mean_window(&with);
    let ceiling = crate::attribution::whatif::ceiling(win, rtt);
    w.window_bytes = Some(win);
    w.rtt_us = Some(rtt);
    w.ceiling_bps = Some(ceiling);
    let (desc, _) = describe(knob, first.flow, win, 0.0);
    let allowed = format!(
        "their windows allowed about {} each at their {} RTT",
        units::rate(ceiling),
        units::time_us(rtt)
    );
    if reader_bytes * 2 > w.bytes {
        let fix = first
            .att
            .what_if
            .as_ref()
            .and_then(|x| x.other_fix.clone())
            .unwrap_or_default();
        w.summary = format!("{head} were held by {desc}: raising the window would not help: {fix}");
        return w;
    }
    let path = fig.path_bps;
    let at_once = fig.concurrent.max(1);
    let share = fig.share_bps();
    if w.rate_bps >= cfg.at_ceiling * share {
        let shared = if at_once > 1 {
            format!(", {} each with {at_once} at once", units::rate(share))
        } else {
            String::new()
        };
        w.summary = format!(
            "{head} were held by {desc}: {allowed}; {}{shared}, no more than they ran: what a bigger window would buy is not known from these flows",
            fig.path_words()
        );
        return w;
    }
    // The window one flow needs to reach the path's rate alone: the knob
    // (a buffer's maximum) is each flow's.
    let needed = bdp(path, rtt);
    let speedup = share / w.rate_bps.max(1.0);
    let (_, fix) = describe(knob, first.flow, win, needed);
    w.needed_bytes = Some(needed);
    w.speedup = Some(speedup);
    w.helps = true;
    let reach = if at_once > 1 {
        format!(
            "would let each reach the path's rate alone, and the {at_once} at once share it, about {} each: {speedup:.1}x faster",
            units::rate(share)
        )
    } else {
        format!("would let them reach the path's rate, about {speedup:.1}x faster")
    };
    w.summary = format!(
        "{head} were held by {desc}: {allowed} while {}; {fix} {reach}",
        fig.path_words()
    );
    w
}

/// Bytes of `with` whose peer window binds only through its reader (its
/// what-if names another fix and no window helps): past half the group's,
/// no window helps the group.
fn reader_held(with: &[&Member<'_>]) -> u64 {
    with.iter()
        .filter(|m| {
            m.att
                .what_if
                .as_ref()
                .is_some_and(|x| !x.window_helps && x.other_fix.is_some())
        })
        .map(|m| m.bytes)
        .sum()
}

/// The window (bytes) and RTT (µs) of the what-ifs of `with`, each a mean
/// weighted as [`weights`] weighs the flows.
fn mean_window(with: &[&Member<'_>]) -> (f64, f64) {
    let weights = weights(with);
    let mean = |f: &dyn Fn(&Member<'_>) -> f64| -> f64 {
        with.iter().zip(&weights).map(|(m, wt)| f(m) * wt).sum()
    };
    let win = mean(&|m| {
        m.att
            .what_if
            .as_ref()
            .map_or(0.0, |x| x.window_bytes as f64)
    });
    let rtt = mean(&|m| m.att.what_if.as_ref().map_or(0.0, |x| f64::from(x.rtt_us)));
    (win, rtt)
}

/// The window limit `knob` of `flow` in words with its size, and the fix
/// that would give a window of `needed` bytes (the buffer scaled as the
/// flow's buffer is to its window `win`).
fn describe(
    knob: Knob,
    flow: &crate::model::flow::Flow,
    win: f64,
    needed: f64,
) -> (String, String) {
    let scaled = |buffer: u32| units::bytes(f64::from(buffer) * needed / win.max(1.0));
    match knob {
        Knob::HostWindow if !flow.wscale_ok => (
            format!(
                "windows without window scaling (at most {})",
                units::bytes(65_535.0)
            ),
            format!(
                "window scaling (net.ipv4.tcp_window_scaling on both hosts) and a window of {}",
                units::bytes(needed)
            ),
        ),
        Knob::HostWindow if flow.rcvbuf_locked => (
            format!(
                "an SO_RCVBUF the application set ({})",
                units::bytes(f64::from(flow.rcvbuf))
            ),
            format!("an SO_RCVBUF of {}", scaled(flow.rcvbuf)),
        ),
        Knob::HostWindow if flow.at_rmem_max() => (
            format!(
                "this host's tcp_rmem max ({})",
                units::bytes(f64::from(flow.tcp_rmem_max))
            ),
            format!("a {} max", scaled(flow.tcp_rmem_max)),
        ),
        Knob::HostWindow => (
            format!(
                "this host's receive window, autotuning still growing ({})",
                units::bytes(win)
            ),
            format!("a window of {}", units::bytes(needed)),
        ),
        Knob::PeerWindow => (
            format!("the peer's receive window ({})", units::bytes(win)),
            format!(
                "a peer window of {} (the peer's receive buffer)",
                units::bytes(needed)
            ),
        ),
        _ => (
            format!("this host's send buffer (sk_sndbuf {})", units::bytes(win)),
            format!(
                "a send buffer of {} (SO_SNDBUF, or net.ipv4.tcp_wmem's max)",
                units::bytes(needed)
            ),
        ),
    }
}
