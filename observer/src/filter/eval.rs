//! Judging a flow by a parsed filter.

use super::ast::{Cmp, End, Expr, Field, StateSel, Term};
use crate::{attribution::Attribution, model::flow::Flow};

impl Expr {
    /// Whether `flow` is selected.
    pub(super) fn matches(&self, flow: &Flow, attribution: Option<&Attribution>) -> bool {
        match self {
            Expr::Term(t) => t.matches(flow, attribution),
            Expr::Not(e) => !e.matches(flow, attribution),
            Expr::And(list) => list.iter().all(|e| e.matches(flow, attribution)),
            Expr::Or(list) => list.iter().any(|e| e.matches(flow, attribution)),
        }
    }

    /// Whether a `verdict`, `side` or `rate` term occurs.
    pub(super) fn needs_attribution(&self) -> bool {
        self.any_term(&|t| matches!(t, Term::Verdict(_) | Term::Side(_) | Term::Rate { .. }))
    }

    /// Whether a `rate` term occurs.
    pub(super) fn reads_rate(&self) -> bool {
        self.any_term(&|t| matches!(t, Term::Rate { .. }))
    }

    /// The names of the `netns = NAME` terms, in order.
    pub(super) fn netns_names<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Expr::Term(Term::NetnsName(name)) => out.push(name),
            Expr::Term(_) => {}
            Expr::Not(e) => e.netns_names(out),
            Expr::And(list) | Expr::Or(list) => list.iter().for_each(|e| e.netns_names(out)),
        }
    }

    /// Whether any term is `found`.
    fn any_term(&self, found: &dyn Fn(&Term) -> bool) -> bool {
        match self {
            Expr::Term(t) => found(t),
            Expr::Not(e) => e.any_term(found),
            Expr::And(list) | Expr::Or(list) => list.iter().any(|e| e.any_term(found)),
        }
    }
}

impl Term {
    fn matches(&self, flow: &Flow, attribution: Option<&Attribution>) -> bool {
        match self {
            Term::Num { field, op, value } => {
                let have = match field {
                    Field::Port => return either_port(flow, *op, *value),
                    Field::Sport => u64::from(flow.local.port()),
                    Field::Dport => u64::from(flow.remote.port()),
                    Field::Pid => u64::from(flow.pid),
                    Field::Cgroup => flow.cgroup_id,
                    Field::Netns => u64::from(flow.netns),
                };
                op.holds(have, *value)
            }
            Term::Host { end, host } => {
                let addr = match end {
                    End::Local => flow.local,
                    End::Remote => flow.remote,
                };
                host.prefix
                    .is_none_or(|p| p.contains(addr.ip(), flow.family == "inet6"))
                    && host.port.is_none_or(|port| port == addr.port())
            }
            Term::State(sel) => sel.selects(if flow.closed { "close" } else { flow.state }),
            Term::Comm(pattern) => glob(pattern, &flow.comm),
            Term::NetnsName(name) => flow.netns_name.as_deref() == Some(name.as_str()),
            Term::Verdict(v) => attribution.is_some_and(|a| a.verdict == *v),
            Term::Side(s) => attribution.is_some_and(|a| a.side == *s),
            Term::Rate { op, bps } => attribution.is_some_and(|a| op.holds(rate_bps(a), *bps)),
        }
    }
}

/// The rate the `flows` and `top` tables show in RATE (bits/s, whole):
/// the larger of sent (acked) and received over the attribution's span,
/// the run for `flows`, the verdict window for `top`.
fn rate_bps(a: &Attribution) -> u64 {
    let ev = &a.evidence;
    // `as` saturates: a NaN is 0, an infinity u64::MAX.
    ev.rate_bps.max(ev.recv_rate_bps).round() as u64
}

/// `port OP value`: either end's port holds `OP`, as tcpdump's `port`;
/// but `!=` is neither end's (`port != 22` is `not port 22`, tcpdump's
/// reading), since an either-end `!=` would hold for nearly every flow,
/// by its other end.
fn either_port(flow: &Flow, op: Cmp, value: u64) -> bool {
    let [local, remote] = [flow.local.port(), flow.remote.port()].map(u64::from);
    match op {
        Cmp::Ne => local != value && remote != value,
        _ => op.holds(local, value) || op.holds(remote, value),
    }
}

/// The states `ss` names; a flow in any other (`unknown`) is only in `all`.
pub(super) const KNOWN: [&str; 11] = [
    "established",
    "syn-sent",
    "syn-recv",
    "fin-wait-1",
    "fin-wait-2",
    "time-wait",
    "close",
    "close-wait",
    "last-ack",
    "listen",
    "closing",
];

impl StateSel {
    /// Whether a flow in `state` (as [`Flow::state`] names it, `close` once
    /// closed) is selected.
    fn selects(self, state: &str) -> bool {
        let known = KNOWN.contains(&state);
        let bucket = matches!(state, "syn-recv" | "time-wait");
        let connected = known && !matches!(state, "listen" | "close");
        match self {
            StateSel::One(name) => state == name,
            StateSel::All => true,
            StateSel::Connected => connected,
            StateSel::Synchronized => connected && state != "syn-sent",
            StateSel::Bucket => bucket,
            StateSel::Big => known && !bucket,
        }
    }
}

/// Whether `text` matches `pattern`, in which `*` is any run of
/// characters and `?` any one; everything else is itself. Linear
/// backtracking to the last `*`, so no pattern takes exponential time.
pub(super) fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    // The last `*` seen and the text position it is trying to cover up to.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(&c) if c == '?' || c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                // Let the last star swallow one more character.
                Some((sp, st)) => {
                    star = Some((sp, st + 1));
                    pi = sp + 1;
                    ti = st + 1;
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}
