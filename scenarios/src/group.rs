//! The host view in a scenario: the judged end's flows grouped by peer
//! (`observer::attribution::group`, as `observer flows --by peer` groups
//! them), each flow judged over its whole life, against what the scenario
//! expects of the group ([`GroupExpect`]).

use observer::attribution::{
    Attribution, Config,
    group::{self, GroupBy, judge::Limit},
};
use observer::model::flow::Flow;
use serde::Serialize;

use crate::catalog::GroupExpect;

/// Limits whose what-if is a window's: a bigger window is their fix.
const WINDOW_KNOBS: [&str; 3] = ["host_window", "peer_window", "send_buffer"];

/// The group of the judged end's flows to the other end, and whether it
/// is what the scenario expects.
#[derive(Clone, Debug, Serialize)]
pub struct GroupReport {
    /// The expected judgement.
    pub expected: Limit,
    /// observer's judgement (`unknown` where no group was found).
    pub limit: Limit,
    /// The group rule that decided.
    pub rule: &'static str,
    /// Flows in the group, open and closed.
    pub flows: usize,
    /// Their rate together (bits/s).
    pub rate_bps: f64,
    /// The judgement in one line.
    pub explanation: String,
    /// The advice, one line per limit that held bytes, as `knob: summary`.
    pub what_if: Vec<String>,
    /// Whether some window entry of the advice says a bigger window helps.
    pub window_helps: bool,
    /// The expected limits the advice does not name.
    pub missing_knobs: Vec<&'static str>,
    /// The judgement is the expected one, every expected limit is named,
    /// and the advice says of a bigger window what the scenario expects.
    pub pass: bool,
}

/// Groups `flows` (the judged end's, with their life verdicts) by peer
/// and checks the group of `peer` against `expect`.
pub fn check(
    expect: &GroupExpect,
    flows: &[(&Flow, &Attribution)],
    peer: std::net::IpAddr,
    cfg: &Config,
) -> GroupReport {
    let groups = group::group(flows, GroupBy::Peer, cfg);
    let key = peer.to_string();
    let Some(g) = groups.iter().find(|g| g.key == key) else {
        return GroupReport {
            expected: expect.limit,
            limit: Limit::Unknown,
            rule: "",
            flows: 0,
            rate_bps: 0.0,
            explanation: format!("no flow to {key} was seen"),
            what_if: Vec::new(),
            window_helps: false,
            missing_knobs: expect.knobs.to_vec(),
            pass: false,
        };
    };
    let window_helps = g
        .what_if
        .iter()
        .any(|w| WINDOW_KNOBS.contains(&w.knob) && w.helps);
    let missing_knobs: Vec<&'static str> = expect
        .knobs
        .iter()
        .copied()
        .filter(|k| !g.what_if.iter().any(|w| w.knob == *k && w.bytes > 0))
        .collect();
    let pass = g.limit == expect.limit
        && missing_knobs.is_empty()
        && expect.window_helps.is_none_or(|h| h == window_helps);
    GroupReport {
        expected: expect.limit,
        limit: g.limit,
        rule: g.rule,
        flows: g.flows,
        rate_bps: g.rate_bps,
        explanation: g.explanation.clone(),
        what_if: g
            .what_if
            .iter()
            .map(|w| format!("{}: {}", w.knob, w.summary))
            .collect(),
        window_helps,
        missing_knobs,
        pass,
    }
}

impl GroupReport {
    /// The report in a few lines for the suite's text output.
    pub fn text(&self) -> String {
        let mut s = format!(
            "     group: expected {} got {} ({}, {} flows, {}){}{}\n       {}\n",
            self.expected.name(),
            self.limit.name(),
            self.rule,
            self.flows,
            observer::units::rate(self.rate_bps),
            if self.missing_knobs.is_empty() {
                String::new()
            } else {
                format!("; advice MISSING {}", self.missing_knobs.join(", "))
            },
            if self.pass { "" } else { " FAIL" },
            self.explanation
        );
        for w in &self.what_if {
            s.push_str(&format!("       what if: {w}\n"));
        }
        s
    }
}
