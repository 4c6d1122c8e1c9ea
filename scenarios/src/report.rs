//! What a scenario run reports: per flow, the measured throughput, observer's
//! figures and verdicts, and the constraint the scenario imposed.

use observer::{
    attribution::{Verdict, ends_agree_by_rule},
    track::tracked::TrackedFlow,
    units,
};
use serde::Serialize;

use crate::{
    catalog::{EMULATOR_TOLERANCE, Scenario, View},
    group::GroupReport,
};

/// A judged span of a flow's life.
#[derive(Clone, Debug, Serialize)]
pub struct Span {
    /// Start (s from the flow's start).
    pub from_s: f64,
    /// End (s), or the flow's end.
    pub to_s: Option<f64>,
    /// The imposed constraint.
    pub expected: Verdict,
    /// A second verdict also counted right (a shared limit), if any.
    pub also: Option<Verdict>,
    /// observer's majority verdict over the span.
    pub verdict: Verdict,
    /// Share of samples with that verdict.
    pub share: f64,
    /// When the expected verdict settled (s after `from_s`).
    pub settled_after_s: Option<f64>,
    /// Samples in the span that were right: the expected verdict, the
    /// second fair reading, or a limit before an idle link.
    pub right: usize,
    /// Of those, the samples right only because the bottleneck stood idle
    /// (`crate::judge::read_at_link`).
    pub idle_link_right: usize,
    /// Samples in the span.
    pub samples: usize,
    /// Sender side: expected verdict, held by most samples, settled within
    /// 3 s. Receiver side: at least 80% of the samples are the expected one.
    pub pass: bool,
}

/// Share of right verdicts over `spans` (0 without samples).
fn accuracy<'a>(spans: impl IntoIterator<Item = &'a Span>) -> f64 {
    let (right, n) = spans
        .into_iter()
        .fold((0, 0), |(r, n), s| (r + s.right, n + s.samples));
    if n == 0 { 0.0 } else { right as f64 / n as f64 }
}

/// Local and remote endpoints.
#[derive(Clone, Debug, Serialize)]
pub struct Endpoints {
    /// Local `ip:port`.
    pub local: String,
    /// Remote `ip:port`.
    pub remote: String,
}

/// One data flow of a scenario.
#[derive(Clone, Debug, Serialize)]
pub struct FlowReport {
    /// Scenario name.
    pub scenario: &'static str,
    /// The flow.
    pub flow: Endpoints,
    /// The end observed.
    pub side: View,
    /// Measured throughput of this flow (bits/s), from the traffic generator.
    pub throughput_bps: Option<f64>,
    /// Published per-flow figure where one exists (bits/s).
    pub reference_bps: Option<f64>,
    /// The imposed constraint (the last span's).
    pub expected: Verdict,
    /// observer's verdict over that span.
    pub verdict: Verdict,
    /// Every judged span.
    pub spans: Vec<Span>,
    /// Share of right verdicts over the judged spans (from 3 s into the flow).
    pub flow_accuracy: f64,
    /// observer's explanation at the end of the flow (current window).
    pub explanation: String,
    /// Smoothed and minimum RTT (µs), windows (bytes), cwnd (segments).
    pub srtt_us: u32,
    /// Minimum RTT (µs).
    pub min_rtt_us: u32,
    /// Peer's window (bytes).
    pub snd_wnd: u32,
    /// Congestion window (segments).
    pub snd_cwnd: u32,
    /// Retransmitted segments.
    pub retransmits: u32,
    /// The receiving end's RTT estimate (µs, `rcv_rtt`).
    pub rcv_rtt_us: u32,
    /// The window this end advertises (bytes, `rcv_wnd`).
    pub rcv_wnd: u32,
    /// Data segments that arrived out of order (`rcv_ooopack`).
    pub rcv_ooopack: u32,
    /// Whether the scenario expects a verdict of it: not where its
    /// `expect_each` entry is empty (a flow whose end cannot tell its
    /// limit, which the scenario's group judgement covers instead).
    pub asserted: bool,
    /// Every span passed (or nothing was asserted).
    pub pass: bool,
    /// The other end of the same flow (judged from the other namespace):
    /// its majority verdict over the last span, when observer saw it.
    pub other_end: Option<Verdict>,
    /// Whether the two ends name the same limit
    /// (`observer::attribution::ends_agree_by_rule`); None without the
    /// other end. A contradiction fails the flow.
    pub ends_agree: Option<bool>,
    /// Every verdict sampled, as (seconds since the flow was first seen,
    /// verdict): what the spans were judged on.
    pub timeline: Vec<(f64, Verdict)>,
    /// The bottleneck's use (share of its rate) over each sample's verdict
    /// window, in step with `timeline`; `None` where unmeasured.
    pub link_use: Vec<Option<f64>>,
    /// Verdicts that rested on a ceiling the measured rate outran (issue
    /// 14's property); any fails the flow.
    pub outran: Vec<String>,
}

impl FlowReport {
    /// The headline figures of the judged end: a sender's srtt, cwnd,
    /// snd_wnd and retransmits; a receiver's own (its srtt, cwnd and
    /// snd_wnd are of the ACKs it sends): rcv_rtt, rcv_wnd and
    /// out-of-order arrivals.
    fn figures(&self) -> String {
        let ms = |us: u32| f64::from(us) / 1000.0;
        match self.side {
            View::Sender => format!(
                "srtt {:.1} ms min_rtt {:.1} ms cwnd {} snd_wnd {} retrans {}",
                ms(self.srtt_us),
                ms(self.min_rtt_us),
                self.snd_cwnd,
                self.snd_wnd,
                self.retransmits
            ),
            View::Receiver => format!(
                "rcv_rtt {:.1} ms min_rtt {:.1} ms rcv_wnd {} out-of-order {}",
                ms(self.rcv_rtt_us),
                ms(self.min_rtt_us),
                self.rcv_wnd,
                self.rcv_ooopack
            ),
        }
    }

    /// Builds the report of tracked flow `t`.
    pub fn new(
        sc: &Scenario,
        t: &TrackedFlow,
        throughput_bps: Option<f64>,
        spans: Vec<Span>,
    ) -> FlowReport {
        let last = spans.last();
        let per_flow_ref = sc.reference_bps.map(|r| r / sc.flows as f64);
        FlowReport {
            scenario: sc.name,
            flow: Endpoints {
                local: t.flow.local.to_string(),
                remote: t.flow.remote.to_string(),
            },
            side: sc.view,
            throughput_bps,
            reference_bps: per_flow_ref,
            expected: last.map_or(Verdict::Unknown, |s| s.expected),
            verdict: last.map_or(Verdict::Unknown, |s| s.verdict),
            asserted: true,
            pass: !spans.is_empty() && spans.iter().all(|s| s.pass),
            flow_accuracy: accuracy(&spans),
            spans,
            explanation: t.current.explanation.clone(),
            srtt_us: t.flow.srtt_us,
            min_rtt_us: t.flow.min_rtt_us,
            snd_wnd: t.flow.snd_wnd,
            snd_cwnd: t.flow.snd_cwnd,
            retransmits: t.flow.retransmits,
            rcv_rtt_us: t.flow.rcv_rtt_us,
            rcv_wnd: t.flow.rcv_wnd,
            rcv_ooopack: t.flow.rcv_ooopack,
            other_end: None,
            ends_agree: None,
            timeline: Vec::new(),
            link_use: Vec::new(),
            outran: Vec::new(),
        }
    }

    /// What the bottleneck carried over the last span's samples, for a
    /// failure's diagnosis: `None` where unmeasured.
    fn link_line(&self) -> Option<String> {
        let span = self.spans.last()?;
        let to = span.to_s.unwrap_or(f64::INFINITY);
        let uses: Vec<f64> = self
            .timeline
            .iter()
            .zip(&self.link_use)
            .filter(|((t, _), _)| *t >= span.from_s && *t < to)
            .filter_map(|(_, u)| *u)
            .collect();
        let lowest = uses.iter().copied().reduce(f64::min)?;
        let highest = uses.iter().copied().reduce(f64::max)?;
        let mean = uses.iter().sum::<f64>() / uses.len() as f64;
        Some(format!(
            "bottleneck: carried {:.0}-{:.0}% of its rate over the span's samples (mean {:.0}%)",
            lowest * 100.0,
            highest * 100.0,
            mean * 100.0
        ))
    }

    /// Marks a flow the scenario expects no verdict of: neither its spans
    /// nor its two ends' agreement are asserted, and the report says so.
    /// A verdict that rested on a ceiling the rate outran still fails it:
    /// that holds of every flow.
    pub fn unasserted(mut self) -> FlowReport {
        self.asserted = false;
        self.pass = self.outran.is_empty();
        self
    }

    /// Records the verdicts that rested on a ceiling the rate outran;
    /// any fails the flow.
    pub fn with_outran(mut self, outran: Vec<String>) -> FlowReport {
        self.pass &= outran.is_empty();
        self.outran = outran;
        self
    }

    /// Records the other end's majority verdict and the rule that decided
    /// most of it (`other`), against this end's majority verdict, decided
    /// mostly by `own_rule`; two ends that contradict each other fail the
    /// flow.
    pub fn with_other_end(
        mut self,
        other: Option<(Verdict, &'static str)>,
        own_rule: &'static str,
    ) -> FlowReport {
        self.other_end = other.map(|(v, _)| v);
        self.ends_agree = other.map(|(o, other_rule)| match self.side {
            View::Sender => ends_agree_by_rule((self.verdict, own_rule), o),
            View::Receiver => ends_agree_by_rule((o, other_rule), self.verdict),
        });
        self.pass &= self.ends_agree != Some(false);
        self
    }
}

/// A whole scenario.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioReport {
    /// Scenario name.
    pub scenario: &'static str,
    /// What it shows.
    pub about: &'static str,
    /// Total measured throughput (bits/s).
    pub throughput_bps: f64,
    /// The throughput the emulator must reproduce, if any (bits/s).
    pub emulator_reference_bps: Option<f64>,
    /// Within 15% of it (true when there is none).
    pub emulator_ok: bool,
    /// Data flows found.
    pub flows: Vec<FlowReport>,
    /// Share of right verdicts over every flow's judged spans.
    pub accuracy: f64,
    /// Found the expected number of flows and every flow passed.
    pub verdicts_ok: bool,
    /// The traffic generator's own error, if any.
    pub error: Option<String>,
    /// The judged end's flows as a group of one peer, where the scenario
    /// expects something of it.
    pub group: Option<GroupReport>,
}

impl ScenarioReport {
    /// Assembles the scenario's verdict.
    pub fn new(
        sc: &Scenario,
        flows: Vec<FlowReport>,
        throughput_bps: f64,
        error: Option<String>,
        group: Option<GroupReport>,
    ) -> ScenarioReport {
        let emulator_ok = sc
            .emulator_check_bps
            .is_none_or(|r| (throughput_bps - r).abs() <= EMULATOR_TOLERANCE * r);
        let verdicts_ok =
            error.is_none() && flows.len() == sc.flows && flows.iter().all(|f| f.pass);
        ScenarioReport {
            scenario: sc.name,
            about: sc.about,
            throughput_bps,
            emulator_reference_bps: sc.emulator_check_bps,
            emulator_ok,
            accuracy: accuracy(flows.iter().flat_map(|f| &f.spans)),
            flows,
            verdicts_ok,
            error,
            group,
        }
    }

    /// Whether everything checked passed.
    pub fn ok(&self) -> bool {
        self.emulator_ok && self.verdicts_ok && self.group.as_ref().is_none_or(|g| g.pass)
    }

    /// A human summary: one line for the scenario, one per flow.
    pub fn text(&self) -> String {
        let mut s = format!(
            "{} {:<16} {} total, accuracy {:.0}%{}{}\n",
            if self.ok() { "PASS" } else { "FAIL" },
            self.scenario,
            units::rate(self.throughput_bps),
            self.accuracy * 100.0,
            self.emulator_reference_bps
                .map(|r| format!(
                    " (emulator reference {}{})",
                    units::rate(r),
                    if self.emulator_ok {
                        ""
                    } else {
                        ", OFF BY MORE THAN 15%"
                    }
                ))
                .unwrap_or_default(),
            self.error
                .as_ref()
                .map(|e| format!(" traffic error: {e}"))
                .unwrap_or_default()
        );
        for f in &self.flows {
            let spans: Vec<String> = f
                .spans
                .iter()
                .map(|sp| {
                    format!(
                        "{}s..{}: expected {}{} got {} ({:.0}%; right {}/{}{}{})",
                        sp.from_s,
                        sp.to_s.map_or("end".to_string(), |t| format!("{t}s")),
                        sp.expected,
                        sp.also.map(|a| format!(" (or {a})")).unwrap_or_default(),
                        sp.verdict,
                        sp.share * 100.0,
                        sp.right,
                        sp.samples,
                        match sp.idle_link_right {
                            0 => String::new(),
                            n => format!(", {n} a limit before the idle link"),
                        },
                        sp.settled_after_s
                            .map(|t| format!(", settled +{t:.1}s"))
                            .unwrap_or_default()
                    )
                })
                .collect();
            s.push_str(&format!(
                "     {} -> {} [{:?}] {} {}: {}{}\n       {}\n",
                f.flow.local,
                f.flow.remote,
                f.side,
                f.throughput_bps
                    .map(units::rate)
                    .unwrap_or_else(|| "-".into()),
                f.figures(),
                if f.asserted {
                    spans.join("; ")
                } else {
                    "not asserted".to_string()
                },
                match (f.other_end, f.ends_agree) {
                    (Some(o), Some(true)) => format!("; other end {o} (agrees)"),
                    (Some(o), _) => format!("; other end {o} (CONTRADICTS)"),
                    _ => String::new(),
                },
                f.explanation
            ));
            for o in f.outran.iter().take(3) {
                s.push_str(&format!("       CEILING OUTRAN: {o}\n"));
            }
            if let Some(line) = f.link_line().filter(|_| !f.pass) {
                s.push_str(&format!("       {line}\n"));
            }
        }
        if let Some(g) = &self.group {
            s.push_str(&g.text());
        }
        s
    }
}
