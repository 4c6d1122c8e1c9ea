//! Bottleneck attribution: for a flow over an interval, say what limits its
//! throughput and show the numbers that prove it.
//!
//! Pure code, no I/O: it reads two [`Point`]s of one flow (or one point and
//! the flow's birth) and returns an [`Attribution`]. Verdicts are defined in
//! plain words in `docs/attribution.md`.
//!
//! Two signals are combined, because neither suffices alone:
//! - the kernel's chrono shares (busy, rwnd-limited, sndbuf-limited, as
//!   `tcp_info` reports them) and observer's cwnd-limited time: on an
//!   emulated 104 ms path a flow entirely bound by a 64 KB receiver window was
//!   rwnd-limited for only 56% of its busy time;
//! - the ceilings the sampled state implies (window / RTT) against the
//!   measured delivery rate, with the standing queue (srtt - min_rtt).

mod evidence;
mod receiver;
mod sender;
mod whatif;

pub use evidence::{Ceilings, Evidence, Receive, Shares};
pub use whatif::{WhatIf, what_if};

use serde::Serialize;

use observer_common::FlowSample;

use crate::{
    model::{clock::Clock, flow::Flow},
    units,
};

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

/// Which end of the flow the verdict was made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// This host sends the data.
    Sender,
    /// This host receives the data.
    Receiver,
}

/// Thresholds of the engine. The defaults are what the scenario suite checks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// Fewer bytes than this moved in the interval: `unknown` (bytes).
    pub min_bytes: u64,
    /// An interval shorter than this many smoothed RTTs: `unknown`.
    pub min_rtts: f64,
    /// Rate at or above this fraction of a ceiling counts as "at the ceiling".
    pub at_ceiling: f64,
    /// A limited-time share of busy time at or above this is significant.
    pub significant_share: f64,
    /// Standing queue above this fraction of min_rtt counts as a queue...
    pub queue_fraction: f64,
    /// ...and above this many µs (so tiny RTTs do not trip it).
    pub queue_floor_us: u64,
    /// Target rate for the what-if arithmetic (bits/s); 0: twice the current rate.
    pub target_bps: u64,
    /// Receiver side: a share of the interval in arrival gaps (the sender
    /// sent nothing for over 10 ms) at or above this means the sender
    /// paused with the window open.
    pub sender_gap_share: f64,
    /// Receiver side: out-of-order arrivals this recent (s) still count as
    /// the loss holding the sender's congestion window down (cubic takes
    /// seconds to grow back to its window before the loss).
    pub loss_memory_s: f64,
    /// Receiver side: the same for a sender that pauses most of the time
    /// (s); see `receiver::recent_loss`.
    pub loss_memory_paused_s: f64,
    /// Receiver side: for a pausing sender, out-of-order arrivals must also
    /// be at least this share of the interval's data segments (and two).
    pub loss_share_paused: f64,
    /// Receiver side: a window fill (in flight / window) above this is a
    /// measurement that cannot hold (the RTT is overstated); no window
    /// verdict is made from it.
    pub max_fill: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            min_bytes: 32 * 1024,
            min_rtts: 4.0,
            at_ceiling: 0.8,
            significant_share: 0.2,
            queue_fraction: 0.2,
            queue_floor_us: 2_000,
            target_bps: 0,
            sender_gap_share: 0.2,
            loss_memory_s: 10.0,
            loss_memory_paused_s: 1.0,
            loss_share_paused: 0.001,
            max_fill: 1.25,
        }
    }
}

/// One flow's figures at one moment: what the engine compares.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// When the figures hold (monotonic ns): the read time, or the close time
    /// of a closed flow.
    pub at_ns: u64,
    /// When the flow was first seen (monotonic ns).
    pub first_seen_ns: u64,
    /// The flow was first seen at its close: its counters cover a life
    /// observer did not watch.
    pub born_at_close: bool,
    /// The flow as read then.
    pub flow: Flow,
}

impl Point {
    /// The point for kernel sample `s` read at monotonic `now_ns`.
    pub fn new(s: &FlowSample, clock: &Clock, now_ns: u64) -> Point {
        Point {
            at_ns: if s.closed_ns != 0 {
                s.closed_ns
            } else {
                now_ns
            },
            first_seen_ns: s.first_seen_ns,
            born_at_close: s.born_at_close != 0,
            flow: Flow::from_sample(s, clock, now_ns),
        }
    }
}

/// A verdict with its confidence, evidence and explanation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Attribution {
    /// What limits the flow.
    pub verdict: Verdict,
    /// How sure, 0 to 1.
    pub confidence: f64,
    /// Which end the verdict was made from.
    pub side: Side,
    /// One line, with the numbers.
    pub explanation: String,
    /// The figures behind the verdict.
    pub evidence: Evidence,
    /// Window arithmetic, for window verdicts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub what_if: Option<WhatIf>,
}

/// `unknown` when fewer than `cfg.min_bytes` moved (`moved`: "acked" or
/// "received") or the interval spans fewer than `cfg.min_rtts` round trips
/// of `rtt_us`; None when there is enough to judge.
fn too_little(
    bytes: u64,
    moved: &str,
    interval_us: u64,
    rtt_us: f64,
    cfg: &Config,
) -> Option<(Verdict, f64, String)> {
    let rtts = if rtt_us > 0.0 {
        interval_us as f64 / rtt_us
    } else {
        0.0
    };
    (bytes < cfg.min_bytes || rtts < cfg.min_rtts).then(|| {
        (
            Verdict::Unknown,
            0.0,
            format!(
                "unknown: {} {moved} over {rtts:.1} round trips; too little to say",
                units::bytes(bytes as f64)
            ),
        )
    })
}

/// Assembles an attribution: window arithmetic for window verdicts, folded
/// into the explanation, and the confidence rounded to two places.
fn assemble(
    verdict: Verdict,
    confidence: f64,
    side: Side,
    explanation: String,
    ev: &Evidence,
    flow: &Flow,
    cfg: &Config,
) -> Attribution {
    let window_verdict = match side {
        Side::Sender => matches!(
            verdict,
            Verdict::ReceiveWindow | Verdict::SendBuffer | Verdict::CongestionWindow
        ),
        Side::Receiver => verdict == Verdict::ReceiveWindow,
    };
    // No arithmetic for a window that moved nothing (a shut window): it
    // would ask what window 0 bit/s needs.
    let moved = ev.rate_bps.max(ev.recv_rate_bps) > 0.0;
    let what_if = (window_verdict && moved).then(|| what_if(ev, flow, verdict, cfg));
    let explanation = match &what_if {
        Some(w) => format!("{explanation}; {}", w.summary),
        None => explanation,
    };
    Attribution {
        verdict,
        confidence: (confidence * 100.0).round() / 100.0,
        side,
        explanation,
        evidence: ev.clone(),
        what_if,
    }
}

/// Attributes the interval from `from` (or the flow's birth, when `None`)
/// to `to`. Both points must be of the same flow.
pub fn attribute(from: Option<&Point>, to: &Point, cfg: &Config) -> Attribution {
    if from.is_none() && to.born_at_close {
        // No span to divide its counters by: say so rather than a rate.
        let ev = Evidence::between(Some(to), to);
        let side = if to.flow.bytes_received > to.flow.bytes_acked {
            Side::Receiver
        } else {
            Side::Sender
        };
        return assemble(
            Verdict::Unknown,
            0.0,
            side,
            "unknown: first seen at its close (observer never sampled it open)".to_string(),
            &ev,
            &to.flow,
            cfg,
        );
    }
    let ev = Evidence::between(from, to);
    // The end that moved more data in the interval judges it; an interval
    // in which nothing moved (a window shut by a stalled reader) goes to
    // the end that has moved more over the flow's life.
    let receiving = if ev.bytes_received == 0 && ev.bytes_acked == 0 {
        to.flow.bytes_received > to.flow.bytes_acked
    } else {
        ev.bytes_received > ev.bytes_acked
    };
    if receiving {
        receiver::attribute(&ev, &to.flow, cfg)
    } else {
        sender::attribute(&ev, &to.flow, cfg)
    }
}

#[cfg(test)]
mod receiver_tests;
#[cfg(test)]
mod tests;
