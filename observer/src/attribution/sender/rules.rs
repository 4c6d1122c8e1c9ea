//! The sender's rules, in the order they are tried (docs/attribution.md,
//! "## Sender rules, in order", lists them in this order, and
//! `attribution::rule_docs_tests` holds the two together).

use super::context::SenderCtx;
use crate::attribution::{
    assemble::too_little,
    rule::{Finding, Rule, share_confidence},
    verdict::Verdict,
    whatif::shrunk_by_unread,
};

/// Why a sender-side verdict was given: one reason per rule (the
/// explanation is written from it, `super::text`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reason {
    /// No time observed.
    NotObserved,
    /// Busy, nothing delivered, rwnd-limited: the peer's window is shut.
    ShutWindow,
    /// Retransmissions with (almost) nothing acknowledged: the path drops
    /// what is sent.
    Stalled,
    /// Nothing sent or received.
    NothingSent,
    /// Too few bytes acked or round trips: (round trips of srtt).
    TooLittle(f64),
    /// Idle most of the interval.
    MostlyIdle,
    /// Paced at the cap the application set (`SO_MAX_PACING_RATE`,
    /// bits/s), delivering near it.
    PacingCap(f64),
    /// The send buffer is full only through a queue: its ceiling at
    /// min_rtt (bits/s).
    BufferThroughQueue(f64),
    /// The send buffer binds.
    SendBuffer,
    /// The peer's window shrunk by data its application has not read.
    PeerReader,
    /// A window binds by the clocks, but the rate outran its ceiling:
    /// which window, and its ceiling (bits/s).
    Outran(&'static str, f64),
    /// The peer's window is full only through a queue: its ceiling at
    /// min_rtt (bits/s).
    WindowThroughQueue(f64),
    /// The peer's window binds.
    ReceiveWindow,
    /// The cwnd binds, a queue stands and the path shows itself full.
    FullBottleneck,
    /// A loss-based sender's cwnd binds with steady drops, no queue, and a
    /// rate far above what isolated losses of that share allow: a rate
    /// limit that drops (a policer or a shallow shaper).
    DropsWithoutQueue,
    /// The cwnd binds while the path has room.
    CongestionWindow,
    /// Not window-limited, sending far below the windows.
    Application,
    /// A model-based sender (BBR) still ramping: its pacing rate well
    /// above what it delivered, with no queue.
    Ramping,
    /// A pacing sender whose probes meet the peer's window.
    ProbesMeetWindow,
    /// Busy without a window limit: pacing at the path's rate.
    Pacing,
}

/// A sender rule's test.
pub type Judge = fn(&SenderCtx<'_>) -> Option<Finding<Reason>>;

/// `TCP_CA_Loss` of `enum tcp_ca_state` (include/net/inet_connection_sock.h):
/// the state a retransmission timeout puts the sender in.
const TCP_CA_LOSS: u8 = 4;

/// The sender's table: the first rule that finds decides.
pub const SENDER_RULES: &[Rule<Judge>] = &[
    Rule {
        name: "not_observed",
        recognises: "no time observed yet",
        judge: not_observed,
    },
    Rule {
        name: "shut_window",
        recognises: "nothing delivered while rwnd-limited: the peer's window is shut",
        judge: shut_window,
    },
    Rule {
        name: "stalled",
        recognises: "stall_retransmits retransmissions with under min_bytes acked: the path drops what is sent",
        judge: stalled,
    },
    Rule {
        name: "nothing_sent",
        recognises: "nothing sent or received at all: idle",
        judge: nothing_sent,
    },
    Rule {
        name: "too_little",
        recognises: "fewer than min_bytes acked or min_rtts round trips",
        judge: too_little_acked,
    },
    Rule {
        name: "mostly_idle",
        recognises: "idle (nothing outstanding) for idle_share of the interval",
        judge: mostly_idle,
    },
    Rule {
        name: "pacing_cap",
        recognises: "paced at the application's SO_MAX_PACING_RATE and delivering near it",
        judge: pacing_cap,
    },
    Rule {
        name: "buffer_through_queue",
        recognises: "a send buffer full only through a standing queue: the path",
        judge: buffer_through_queue,
    },
    Rule {
        name: "send_buffer",
        recognises: "the writer waits for buffer space with the cwnd open",
        judge: send_buffer,
    },
    Rule {
        name: "peer_reader",
        recognises: "the peer's window shrunk under unread_window of its largest",
        judge: peer_reader,
    },
    Rule {
        name: "rwnd_outran",
        recognises: "the peer's window binds by the clocks but the rate outran its ceiling",
        judge: rwnd_outran,
    },
    Rule {
        name: "window_through_queue",
        recognises: "the peer's window full only through a standing queue: the path",
        judge: window_through_queue,
    },
    Rule {
        name: "receive_window",
        recognises: "rwnd-limited, or the rate at the rwnd ceiling",
        judge: receive_window,
    },
    Rule {
        name: "full_bottleneck",
        recognises: "cwnd-bound with a standing queue and the path showing itself full",
        judge: full_bottleneck,
    },
    Rule {
        name: "drops_without_queue",
        recognises: "cwnd-bound with steady, clustered drops and no queue: a policer",
        judge: drops_without_queue,
    },
    Rule {
        name: "cwnd_outran",
        recognises: "the cwnd binds by the clocks but the rate outran its ceiling",
        judge: cwnd_outran,
    },
    Rule {
        name: "congestion_window",
        recognises: "cwnd-limited, or the rate at the cwnd ceiling, with the path's room",
        judge: congestion_window,
    },
    Rule {
        name: "application",
        recognises: "app-limited samples, or (loss-based) far below the lowest window ceiling",
        judge: application,
    },
    Rule {
        name: "ramping",
        recognises: "a BBR sender pacing well above what it delivers, no queue: still ramping",
        judge: ramping,
    },
    Rule {
        name: "probes_meet_window",
        recognises: "a pacing sender whose bandwidth probes meet the peer's window",
        judge: probes_meet_window,
    },
    Rule {
        name: "pacing",
        recognises: "busy without a window limit: pacing at the path's rate",
        judge: pacing,
    },
];

/// The first rule of [`SENDER_RULES`] that finds something in `c`, with
/// its name; the last rule always finds (a test holds it).
pub fn first(c: &SenderCtx<'_>) -> Option<(&'static str, Finding<Reason>)> {
    SENDER_RULES
        .iter()
        .find_map(|r| (r.judge)(c).map(|f| (r.name, f)))
}

fn found(verdict: Verdict, confidence: f64, reason: Reason) -> Option<Finding<Reason>> {
    Some(Finding::new(verdict, confidence, reason))
}

fn not_observed(c: &SenderCtx) -> Option<Finding<Reason>> {
    (c.ev.interval_us == 0).then(|| Finding::new(Verdict::Unknown, 0.0, Reason::NotObserved))
}

fn shut_window(c: &SenderCtx) -> Option<Finding<Reason>> {
    (c.nothing_moved && c.rwnd >= c.cfg.significant_share).then(|| {
        Finding::new(
            Verdict::ReceiveWindow,
            share_confidence(c.rwnd, c.cfg.confidence_floor),
            Reason::ShutWindow,
        )
    })
}

// Before `nothing_sent` and `too_little`: a sender whose segments all
// vanish (an outage, a PMTU black hole that drops every full-sized one)
// sends the same segment again at each retransmission timeout, with
// nothing acknowledged: that silence is the path's, not the application's
// and not too little to judge.
// Data must still wait at the interval's end (unacknowledged, or queued
// unsent): a flow that sends little (a control connection) and had a few
// segments dropped in a full queue has sent what it had. And a timeout
// must have fired (the sender in TCP_CA_Loss): a slow, lossy flow that
// moves under min_bytes in a short window retransmits fast, in Recovery.
fn stalled(c: &SenderCtx) -> Option<Finding<Reason>> {
    let ev = c.ev;
    let waiting = (c.flow.unacked > 0 || c.flow.notsent > 0) && c.flow.ca_state == TCP_CA_LOSS;
    (waiting && ev.bytes_acked < c.cfg.min_bytes && ev.retransmits >= c.cfg.stall_retransmits)
        .then(|| Finding::new(Verdict::Path, c.cfg.stall_confidence, Reason::Stalled))
}

fn nothing_sent(c: &SenderCtx) -> Option<Finding<Reason>> {
    c.nothing_moved.then(|| {
        Finding::new(
            Verdict::Application,
            c.ev.shares.idle.max(c.cfg.confidence_floor),
            Reason::NothingSent,
        )
    })
}

fn too_little_acked(c: &SenderCtx) -> Option<Finding<Reason>> {
    let ev = c.ev;
    too_little(ev.bytes_acked, ev.interval_us, c.path_rtt, c.cfg)
        .map(|rtts| Finding::new(Verdict::Unknown, 0.0, Reason::TooLittle(rtts)))
}

fn mostly_idle(c: &SenderCtx) -> Option<Finding<Reason>> {
    let idle = c.ev.shares.idle;
    (idle >= c.cfg.idle_share).then(|| Finding::new(Verdict::Application, idle, Reason::MostlyIdle))
}

// The application chose the rate: the kernel paces at the cap it set and
// the flow delivers near it (`at_ceiling`), so neither the windows nor the
// path hold it; a congestion control's own pacing follows cwnd/srtt or
// its model of the path, never a cap. Below the cap's share of delivery,
// something else holds the flow under the cap.
fn pacing_cap(c: &SenderCtx) -> Option<Finding<Reason>> {
    let cap = c.pacing_cap?;
    (c.rate >= c.cfg.at_ceiling * cap).then(|| {
        Finding::new(
            Verdict::Application,
            c.cfg.pacing_cap_confidence,
            Reason::PacingCap(cap),
        )
    })
}

// Before the send buffer, whatever the shares: a buffer full only through
// a queue holds what waits in the bottleneck's queue (docs/attribution.md).
fn buffer_through_queue(c: &SenderCtx) -> Option<Finding<Reason>> {
    let at_base = c.buffer_at_base.filter(|_| c.sndbuf_binds())?;
    found(
        Verdict::Path,
        c.path_confidence,
        Reason::BufferThroughQueue(at_base),
    )
}

// Before the cwnd, even with more cwnd-limited time: the send-buffer
// clocks run only with the cwnd open and nothing left to send; but not
// over a larger cwnd share at a full bottleneck, where more buffer would
// add queue, not rate.
fn send_buffer(c: &SenderCtx) -> Option<Finding<Reason>> {
    (c.sndbuf_binds() && (c.sndbuf >= c.cwnd || !c.full_queue())).then(|| {
        Finding::new(
            Verdict::SendBuffer,
            share_confidence(c.sndbuf, c.cfg.confidence_floor),
            Reason::SendBuffer,
        )
    })
}

// The peer ACKs at once only when a read reopens its window
// (`__tcp_ack_snd_check()`, net/ipv4/tcp_input.c): its late ACKs stretch
// srtt and hold the cwnd, so the cwnd's clocks and a "queue" would name
// the wrong limit. The window must bind, though: by the rwnd-limited
// clock, or a ceiling near the rate (a reader whose stalls a large buffer
// absorbs shrinks the window without holding the sender).
fn peer_reader(c: &SenderCtx) -> Option<Finding<Reason>> {
    let shrunk = shrunk_by_unread(
        u64::from(c.ev.snd_wnd),
        u64::from(c.flow.snd_wnd),
        u64::from(c.flow.snd_wnd_max),
        c.cfg.unread_window,
    );
    let binds = c.rwnd >= c.cfg.significant_share || c.binds(c.ev.ceilings.rwnd_bps);
    (!c.app_mark && c.rwnd_within && shrunk && binds).then(|| {
        Finding::new(
            Verdict::ReceiveWindow,
            c.cfg.peer_reader_confidence,
            Reason::PeerReader,
        )
    })
}

fn rwnd_outran(c: &SenderCtx) -> Option<Finding<Reason>> {
    (c.rwnd_binds() && !c.rwnd_within).then(|| {
        Finding::new(
            Verdict::Unknown,
            0.0,
            Reason::Outran("peer's window", c.ev.ceilings.rwnd_bps),
        )
    })
}

fn window_through_queue(c: &SenderCtx) -> Option<Finding<Reason>> {
    let at_base = c.window_at_base.filter(|_| c.rwnd_binds())?;
    found(
        Verdict::Path,
        c.path_confidence,
        Reason::WindowThroughQueue(at_base),
    )
}

fn receive_window(c: &SenderCtx) -> Option<Finding<Reason>> {
    let at = if c.at_rwnd {
        c.cfg.at_rwnd_confidence
    } else {
        0.0
    };
    c.rwnd_binds().then(|| {
        Finding::new(
            Verdict::ReceiveWindow,
            share_confidence(c.rwnd.max(at), c.cfg.confidence_floor),
            Reason::ReceiveWindow,
        )
    })
}

fn full_bottleneck(c: &SenderCtx) -> Option<Finding<Reason>> {
    (c.cwnd_binds() && c.full_queue())
        .then(|| Finding::new(Verdict::Path, c.path_confidence, Reason::FullBottleneck))
}

// Isolated random losses cut a loss-based cwnd one at a time, and the
// rate settles near the Mathis rate of their share (docs/attribution.md:
// 0.84-0.85 of it with 1% random loss at 30 and 300 ms). A rate limit that
// drops instead of queueing drops the excess of each round trip in a
// cluster, one cut for several drops: the flow runs well above that rate
// (a 10 Mbit/s policer with a one-BDP bucket: 1.9-2.8 times it). It holds
// the flow near the rate it lets through (`drops_plateau`, a cut by its
// drops included): a slow-start overshoot also drops in a cluster, but far
// below the rate the path has shown, and over a flow's life one
// overshoot's cluster cannot be told from steady ones.
fn drops_without_queue(c: &SenderCtx) -> Option<Finding<Reason>> {
    let cfg = c.cfg;
    let clustered = c.rate >= cfg.drop_clustering * c.isolated_loss_rate;
    (!c.model_based
        && c.cwnd_binds()
        && c.cwnd_within
        && !c.queued
        && c.near_shown
        && c.loss_share >= cfg.steady_loss_share
        && clustered)
        .then(|| {
            Finding::new(
                Verdict::Path,
                cfg.path_confidence,
                Reason::DropsWithoutQueue,
            )
        })
}

fn cwnd_outran(c: &SenderCtx) -> Option<Finding<Reason>> {
    (c.cwnd_binds() && !c.cwnd_within).then(|| {
        Finding::new(
            Verdict::Unknown,
            0.0,
            Reason::Outran("congestion window", c.ev.ceilings.cwnd_bps),
        )
    })
}

fn congestion_window(c: &SenderCtx) -> Option<Finding<Reason>> {
    let at = if c.at_cwnd {
        c.cfg.at_cwnd_confidence
    } else {
        0.0
    };
    c.cwnd_binds().then(|| {
        Finding::new(
            Verdict::CongestionWindow,
            share_confidence(c.cwnd.max(at), c.cfg.confidence_floor),
            Reason::CongestionWindow,
        )
    })
}

// A model-based sender's cwnd is twice its estimate by design: a rate
// below its ceiling says nothing of its application; app-limited samples
// with a pacing rate far above what it sends do (its ProbeRTT marks its
// samples too, but lasts a fraction of a second and slows the rate).
fn application(c: &SenderCtx) -> Option<Finding<Reason>> {
    let far_below = !c.model_based && c.rate < c.cfg.app_rate_share * c.lowest;
    let unpaced = c.model_based && c.app_limited() && c.pacing >= c.cfg.ramp_ratio * c.rate;
    (c.app_mark || far_below || unpaced).then(|| {
        Finding::new(
            Verdict::Application,
            c.cfg.application_confidence,
            Reason::Application,
        )
    })
}

// BBR paces at most 1.25 times its bandwidth estimate once it has found
// the path (2.89 times in STARTUP): a pacing rate well above that of what
// it delivered over the interval is an estimate that has been growing.
fn ramping(c: &SenderCtx) -> Option<Finding<Reason>> {
    let ramps = c.pacing >= c.cfg.ramp_ratio * c.rate;
    // Drops at a steady share show it has met the path's limit.
    let dropping = c.loss_share >= c.cfg.steady_loss_share;
    (c.model_based && !c.queued && !c.app_limited() && ramps && !dropping).then(|| {
        Finding::new(
            Verdict::CongestionWindow,
            c.cfg.path_confidence,
            Reason::Ramping,
        )
    })
}

// BBR probes one phase in eight at 1.25 times its estimate
// (net/ipv4/tcp_bbr.c): probes that meet the peer's window rather than a
// queue show that window holds it, not the path.
fn probes_meet_window(c: &SenderCtx) -> Option<Finding<Reason>> {
    (c.rwnd >= c.cfg.probe_share && c.rwnd > c.cwnd && c.rwnd_within).then(|| {
        Finding::new(
            Verdict::ReceiveWindow,
            c.cfg.probe_confidence,
            Reason::ProbesMeetWindow,
        )
    })
}

fn pacing(c: &SenderCtx) -> Option<Finding<Reason>> {
    let confidence = if c.queued {
        c.cfg.path_queued_confidence
    } else {
        c.cfg.path_confidence
    };
    found(Verdict::Path, confidence, Reason::Pacing)
}
