//! One flow as a group sees it: its judged interval's bytes, rate and
//! span, and the limit its verdict names, classed as its own or shared.

use std::time::UNIX_EPOCH;

use serde::Serialize;

use crate::attribution::{Attribution, Config, Side, Verdict};
use crate::model::flow::Flow;

/// A limit held by one flow alone: more streams (or a bigger window, where
/// the limit is a window) would add rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Knob {
    /// This host's advertised receive window (a download's
    /// `receive_window`).
    HostWindow,
    /// The peer's advertised receive window (an upload's
    /// `receive_window`).
    PeerWindow,
    /// This host's send buffer (`send_buffer`).
    SendBuffer,
    /// The sender's congestion window (`congestion_window`, from either
    /// end).
    CongestionWindow,
    /// This host's reader (`receiver_application`).
    Reader,
    /// This host's application asking for its data a piece at a time
    /// (`receiver_application` by rule `requests`).
    Requests,
    /// A rate limit that drops without a queue (`path` by rule
    /// `drops_without_queue`): a policer, per flow.
    Policer,
    /// The sending application on this host (`application`).
    Application,
    /// The sending host, seen from here (`sender`).
    SendingHost,
}

impl Knob {
    /// The snake_case name used in JSON.
    pub const fn name(self) -> &'static str {
        match self {
            Knob::HostWindow => "host_window",
            Knob::PeerWindow => "peer_window",
            Knob::SendBuffer => "send_buffer",
            Knob::CongestionWindow => "congestion_window",
            Knob::Reader => "reader",
            Knob::Requests => "requests",
            Knob::Policer => "policer",
            Knob::Application => "application",
            Knob::SendingHost => "sending_host",
        }
    }
}

/// What a flow's verdict says of the group question.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Held by a limit of its own.
    Own(Knob),
    /// At the path's bottleneck (`path`, but for a policer's drops): a
    /// limit it shares with every flow through that bottleneck.
    Shared,
    /// Not judged (`unknown`): it counts in bytes, not in the judgement.
    Unjudged,
}

/// The class of a flow's verdict.
pub fn class(a: &Attribution) -> Class {
    match (a.side, a.verdict) {
        (_, Verdict::Unknown) => Class::Unjudged,
        (_, Verdict::Path) if a.rule == "drops_without_queue" => Class::Own(Knob::Policer),
        (_, Verdict::Path) => Class::Shared,
        (Side::Receiver, Verdict::ReceiveWindow) => Class::Own(Knob::HostWindow),
        (Side::Sender, Verdict::ReceiveWindow) => Class::Own(Knob::PeerWindow),
        (_, Verdict::SendBuffer) => Class::Own(Knob::SendBuffer),
        (_, Verdict::CongestionWindow) => Class::Own(Knob::CongestionWindow),
        (_, Verdict::ReceiverApplication) if a.rule == "requests" => Class::Own(Knob::Requests),
        (_, Verdict::ReceiverApplication) => Class::Own(Knob::Reader),
        (_, Verdict::Application) => Class::Own(Knob::Application),
        (_, Verdict::Sender) => Class::Own(Knob::SendingHost),
    }
}

/// One flow of a group, over its judged interval.
#[derive(Clone, Debug)]
pub struct Member<'a> {
    /// The flow's latest figures.
    pub flow: &'a Flow,
    /// Its verdict over the interval.
    pub att: &'a Attribution,
    /// Bytes moved by the judging end over the interval (acked at the
    /// sender, received at the receiver).
    pub bytes: u64,
    /// Its rate over the interval (bits/s).
    pub rate_bps: f64,
    /// The interval's start and end (µs since the Unix epoch).
    pub start_us: f64,
    /// See `start_us`.
    pub end_us: f64,
    /// What its verdict says of the group question.
    pub class: Class,
    /// What the path has shown this flow can carry (bits/s; 0: nothing):
    /// its fastest recent delivery-rate sample at the sender, the rate
    /// within its bursts at the receiver where they carried enough of its
    /// bytes to show the link (`Receive::shown_bps`).
    pub shown_bps: f64,
    /// Its standing queue (µs): mean srtt (the receiver RTT at the
    /// receiving end) above the path's base RTT.
    pub queue_us: u32,
    /// Segments lost in the interval: retransmitted at the sender, out of
    /// order at the receiver.
    pub lost: u32,
    /// The path's base RTT (µs): min_rtt, or the receiving end's base RTT.
    pub base_rtt_us: u32,
}

impl<'a> Member<'a> {
    /// The group's view of `flow` judged `att` (`cfg` says when a
    /// download's bursts show the path).
    pub fn new(flow: &'a Flow, att: &'a Attribution, cfg: &Config) -> Member<'a> {
        let ev = &att.evidence;
        let (bytes, rate_bps, shown_bps, queue_us, base_rtt_us, lost) = match att.side {
            Side::Sender => (
                ev.bytes_acked,
                ev.rate_bps,
                ev.delivery_rate_max_bps as f64,
                ev.queue_delay_us,
                ev.min_rtt_us,
                ev.retransmits,
            ),
            Side::Receiver => (
                ev.bytes_received,
                ev.recv_rate_bps,
                ev.receive.shown_bps(cfg.shown_burst_share),
                ev.receive.queue_delay_us,
                ev.receive.base_rtt_us,
                ev.receive.ooo_packets,
            ),
        };
        let end_us = flow
            .last_seen
            .0
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64() * 1e6);
        Member {
            flow,
            att,
            bytes,
            rate_bps,
            start_us: end_us - ev.interval_us as f64,
            end_us,
            class: class(att),
            shown_bps,
            queue_us,
            lost,
            base_rtt_us,
        }
    }

    /// Whether it was judged (its verdict is not `unknown`).
    pub fn judged(&self) -> bool {
        self.class != Class::Unjudged
    }

    /// Whether a queue stands in its path: the queue above
    /// `cfg.queue_fraction` of the base RTT and `cfg.queue_floor_us`, as
    /// the flow rules read one.
    pub fn queue_stands(&self, cfg: &Config) -> bool {
        let q = f64::from(self.queue_us);
        q > cfg.queue_fraction * f64::from(self.base_rtt_us) && q > cfg.queue_floor_us as f64
    }

    /// Whether its queue can be set beside another flow's: a sender's
    /// srtt is. A receiver's RTT estimate (`rcv_rtt`) is not: the sender's
    /// pauses and this host's reader stretch or shrink it (two curl
    /// downloads through one 35 Mbit/s bottleneck, one at `--limit-rate
    /// 1M`, read 12-21 ms and 68-74 ms of queue).
    pub fn queue_comparable(&self) -> bool {
        self.att.side == Side::Sender
    }

    /// Whether it and `other` ran at the same time: their spans overlap
    /// for at least `cfg.group_concurrent_share` of the shorter one and
    /// at least `cfg.min_rtts` round trips of the path (the longer base
    /// RTT of the two).
    pub fn concurrent_with(&self, other: &Member<'_>, cfg: &Config) -> bool {
        let overlap = self.end_us.min(other.end_us) - self.start_us.max(other.start_us);
        let shorter = (self.end_us - self.start_us).min(other.end_us - other.start_us);
        let rtt = f64::from(self.base_rtt_us.max(other.base_rtt_us));
        overlap > 0.0
            && overlap >= cfg.group_concurrent_share * shorter
            && overlap >= cfg.min_rtts * rtt
    }
}

/// Moves to the path's class the flows whose congestion window loss held
/// down at the group's own bottleneck: a `congestion_window` flow that lost
/// segments while, at the same time ([`Member::concurrent_with`]), a flow
/// the path holds lost segments over a standing queue. A drop-tail
/// bottleneck that overflows drops from every flow through it: the loss
/// that cut this flow's cwnd is that queue's, and the limit is shared.
/// Two curl downloads through one emulated 35 Mbit/s, 104 ms path (one at
/// `--limit-rate 1M`) read, at their receiving end, `path` (8,506
/// out-of-order arrivals, 68 ms of queue) and `congestion_window` (3,611).
pub fn join_bottleneck(members: &mut [Member<'_>], cfg: &Config) {
    let losing: Vec<&Member<'_>> = members
        .iter()
        .filter(|m| m.class == Class::Shared && m.lost > 0 && m.queue_stands(cfg))
        .collect();
    let join: Vec<bool> = members
        .iter()
        .map(|m| {
            m.class == Class::Own(Knob::CongestionWindow)
                && m.lost > 0
                && losing.iter().any(|p| m.concurrent_with(p, cfg))
        })
        .collect();
    for (m, join) in members.iter_mut().zip(join) {
        if join {
            m.class = Class::Shared;
        }
    }
}
