//! What attribution returns: the verdict, and the whole answer with the
//! side that judged it and its evidence ([`Attribution`]).

use serde::Serialize;

use super::{evidence::Evidence, side::Side, whatif::WhatIf};

/// What limits a flow's throughput.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The peer's advertised receive window (snd_wnd) binds; seen from the
    /// receiver: this host's advertised window binds.
    ReceiveWindow,
    /// The local send buffer (SO_SNDBUF / tcp_wmem) binds.
    SendBuffer,
    /// The sending application does not supply data fast enough (idle or
    /// app-limited most of the time).
    Application,
    /// The congestion window binds while the path has room (no standing
    /// queue): slow start, recovery after loss, a cwnd clamp.
    CongestionWindow,
    /// The bottleneck link is full: a standing queue, or sending at the
    /// path's rate as the congestion control measures it.
    Path,
    /// Seen from the receiver: this host's application does not read fast
    /// enough; unread bytes fill the receive buffer and the advertised
    /// window shrinks.
    ReceiverApplication,
    /// Seen from the receiver: the sending host itself (its application,
    /// send buffer or a rate limit) sends below what the window and the
    /// path allow, without loss or a standing queue.
    Sender,
    /// Too few bytes or round trips to say.
    Unknown,
}

impl Verdict {
    /// Every verdict, for metric labels and documentation.
    pub const ALL: [Verdict; 8] = [
        Verdict::ReceiveWindow,
        Verdict::SendBuffer,
        Verdict::Application,
        Verdict::CongestionWindow,
        Verdict::Path,
        Verdict::ReceiverApplication,
        Verdict::Sender,
        Verdict::Unknown,
    ];

    /// The snake_case name used in JSON, metrics and the CLI.
    pub const fn name(self) -> &'static str {
        match self {
            Verdict::ReceiveWindow => "receive_window",
            Verdict::SendBuffer => "send_buffer",
            Verdict::Application => "application",
            Verdict::CongestionWindow => "congestion_window",
            Verdict::Path => "path",
            Verdict::ReceiverApplication => "receiver_application",
            Verdict::Sender => "sender",
            Verdict::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether a verdict made at the sending end and one made at the
/// receiving end of the same flow name the same limit (the table in
/// docs/attribution.md). `unknown` at either end contradicts nothing.
pub fn ends_agree(sender: Verdict, receiver: Verdict) -> bool {
    use Verdict::*;
    matches!(
        (sender, receiver),
        (Unknown, _)
            | (_, Unknown)
            | (ReceiveWindow, ReceiveWindow | ReceiverApplication)
            | (SendBuffer | Application, Sender)
            | (CongestionWindow, CongestionWindow | Sender)
            | (Path, Path)
    )
}

/// [`ends_agree`], knowing the rule that decided the sender's verdict: a
/// sender's `path` from drops without a queue (rule `drops_without_queue`,
/// a policer) also pairs with the receiver's `congestion_window`, since
/// the receiver sees a rate limit's drops as loss holding the sender's
/// window down and cannot tell when they come; so does a sender's `path`
/// from its congestion window binding at a full queue (rule
/// `full_bottleneck`): a drop-tail queue that stands overflows, and the
/// receiver sees its drops as the loss that holds the window (the flow
/// that lost its share of four cubic flows through one 20 Mbit/s queue).
pub fn ends_agree_by_rule((sender, rule): (Verdict, &str), receiver: Verdict) -> bool {
    ends_agree(sender, receiver)
        || (sender == Verdict::Path
            && matches!(rule, "drops_without_queue" | "full_bottleneck")
            && receiver == Verdict::CongestionWindow)
}

/// A verdict with its confidence, evidence and explanation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Attribution {
    /// What limits the flow.
    pub verdict: Verdict,
    /// The name of the rule that decided, as docs/attribution.md lists the
    /// rules of each side (`receive_window`, `window_through_queue`, ...).
    pub rule: &'static str,
    /// How sure, 0 to 1.
    pub confidence: f64,
    /// Which end the verdict was made from.
    pub side: Side,
    /// One line, with the numbers (empty when judged with
    /// [`super::Config::explain`] off).
    pub explanation: String,
    /// The figures behind the verdict.
    pub evidence: Evidence,
    /// Window arithmetic, for window verdicts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub what_if: Option<WhatIf>,
    /// A second limit that binds beside the verdict's (docs/attribution.md,
    /// "Matched limits"); None where no other comes near.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub also: Option<Also>,
}

/// A second limit named beside a verdict: one that held the flow for a
/// share of the interval of its own, or whose ceiling lies within
/// `Config::also_factor` of the rate, so that relaxing the verdict's limit
/// alone would soon meet it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Also {
    /// The second limit, as a verdict of the same end.
    pub verdict: Verdict,
    /// How strongly it binds, 0 to 1: the share of the interval (of busy
    /// time at the sender) it held the flow, or the rate over its ceiling.
    pub share: f64,
    /// The figure that names it, in words (empty with `Config::explain`
    /// off).
    pub reason: String,
}

impl Also {
    /// The clause an explanation ends with where it names this limit:
    /// "; also VERDICT: REASON" (what a reader of the explanation alone
    /// needs; a view that shows the `also` on its own strips it).
    pub fn clause(&self) -> String {
        format!("; also {}: {}", self.verdict, self.reason)
    }
}

impl Attribution {
    /// The ceiling (bits/s) the verdict names, if it rests on one: the
    /// peer's window (snd_wnd / srtt) for a sender's `receive_window`, the
    /// congestion window (cwnd x MSS / srtt) for `congestion_window`, this
    /// host's window (rcv_wnd / receiver RTT) for a receiver's
    /// `receive_window`, and for `receiver_application` where the reader
    /// held the window by what it left waiting: one that shut the window
    /// for `cfg.significant_share` of the interval or more rests on that
    /// closed time, not on a ceiling (a reader that reopens the window a
    /// chunk at a time gets each chunk sent at once, so the window's
    /// time-weighted mean can fall below what it let through).
    pub fn named_ceiling(&self, cfg: &super::Config) -> Option<(&'static str, f64)> {
        let c = &self.evidence.ceilings;
        match (self.side, self.verdict) {
            (Side::Sender, Verdict::ReceiveWindow) => Some(("rwnd", c.rwnd_bps)),
            // A ramping BBR names its own estimate, quoted as its pacing
            // rate, not a window.
            (Side::Sender, Verdict::CongestionWindow) if self.rule != "ramping" => {
                Some(("cwnd", c.cwnd_bps))
            }
            (Side::Receiver, Verdict::ReceiveWindow) => Some(("rcv_wnd", c.rcv_wnd_bps)),
            // A reader's lag names the window it holds; requests name none.
            (Side::Receiver, Verdict::ReceiverApplication)
                if !self.evidence.receive.reader_shut(cfg.significant_share)
                    && self.rule != "requests" =>
            {
                Some(("rcv_wnd", c.rcv_wnd_bps))
            }
            _ => None,
        }
    }

    /// The share of the interval (sender: of busy time) in which the
    /// limit the verdict names blocked the flow by its own clock: the
    /// rwnd- or cwnd-limited share, or this host's window closed; 0 for
    /// other verdicts.
    fn blocked_share(&self) -> f64 {
        let ev = &self.evidence;
        match (self.side, self.verdict) {
            (Side::Sender, Verdict::ReceiveWindow) => ev.of_busy(ev.shares.rwnd_limited),
            (Side::Sender, Verdict::CongestionWindow) => ev.of_busy(ev.shares.cwnd_limited),
            (Side::Receiver, _) => ev.receive.closed_share,
            _ => 0.0,
        }
    }

    /// The property that a named limit binds (issue 35): the ceiling the
    /// verdict names is at most `cfg.bind_factor` times the measured rate,
    /// or the limit's own clock says it blocked the flow for at least
    /// `cfg.significant_share` (`cfg.probe_share` for a pacing sender's
    /// probes, rule `probes_meet_window`) ([`Attribution::named_ceiling`]).
    /// `Err` says
    /// which claim the rate does not support.
    ///
    /// # Errors
    /// The unsupported claim, in words.
    pub fn check_binds(&self, cfg: &super::Config) -> Result<(), String> {
        let rate = match self.side {
            Side::Sender => self.evidence.rate_bps,
            Side::Receiver => self.evidence.recv_rate_bps,
        };
        let Some((name, ceiling)) = self.named_ceiling(cfg).filter(|(_, c)| *c > 0.0) else {
            return Ok(());
        };
        if rate <= 0.0 || ceiling <= cfg.bind_factor * rate {
            return Ok(());
        }
        let blocked = self.blocked_share();
        // A pacing sender's probes meet the window one phase in eight: the
        // window binds then, by design only a small share of the time.
        let needed = if self.rule == "probes_meet_window" {
            cfg.probe_share
        } else {
            cfg.significant_share
        };
        if blocked >= needed {
            return Ok(());
        }
        Err(format!(
            "{} ({}): the {name} ceiling {ceiling:.0} bit/s is {:.1} times the measured {rate:.0} bit/s and blocked the flow {:.0}% of the time",
            self.verdict,
            self.rule,
            ceiling / rate,
            blocked * 100.0
        ))
    }

    /// The property every verdict keeps (issue 14): none rests on a
    /// ceiling the measured rate exceeds by more than `cfg.max_fill` (1.25:
    /// RTT and window estimates are means), neither the verdict's own
    /// ([`Attribution::named_ceiling`]) nor the what-if's. `Err` says which
    /// claim the rate contradicts.
    ///
    /// # Errors
    /// The contradicted claim, in words.
    pub fn check_ceilings(&self, cfg: &super::Config) -> Result<(), String> {
        let max_fill = cfg.max_fill;
        let rate = match self.side {
            Side::Sender => self.evidence.rate_bps,
            Side::Receiver => self.evidence.recv_rate_bps,
        };
        let named = self.named_ceiling(cfg).filter(|(_, c)| *c > 0.0);
        let what_if = self.what_if.as_ref().map(|w| ("what-if", w.ceiling_bps));
        for (name, ceiling) in named.into_iter().chain(what_if) {
            if rate > ceiling * max_fill {
                return Err(format!(
                    "{}: the {name} ceiling {ceiling:.0} bit/s is below the measured {rate:.0} bit/s",
                    self.verdict
                ));
            }
        }
        Ok(())
    }
}
