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

    /// Whether a `verdict` or `side` term occurs.
    pub(super) fn needs_attribution(&self) -> bool {
        match self {
            Expr::Term(t) => matches!(t, Term::Verdict(_) | Term::Side(_)),
            Expr::Not(e) => e.needs_attribution(),
            Expr::And(list) | Expr::Or(list) => list.iter().any(Expr::needs_attribution),
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
            Term::Verdict(v) => attribution.is_some_and(|a| a.verdict == *v),
            Term::Side(s) => attribution.is_some_and(|a| a.side == *s),
        }
    }
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
