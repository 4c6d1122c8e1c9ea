//! The receiver's rules, in the order they are tried (docs/attribution.md,
//! "## Receiver rules, in order", lists them in this order, and
//! `attribution::rule_docs_tests` holds the two together).

use super::context::ReceiverCtx;
use crate::attribution::{
    assemble::too_little,
    rule::{Finding, Rule, share_confidence},
    verdict::Verdict,
};

/// Why a receiver-side verdict was given: one reason per rule (the
/// explanation is written from it, `super::text`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Reason {
    /// This host's reader holds the window.
    Reader,
    /// Too few bytes received or round trips of the path.
    TooLittle(f64),
    /// This host's window is full only through a queue: its ceiling at
    /// the base RTT (bits/s).
    WindowThroughQueue(f64),
    /// This host's window binds.
    ReceiveWindow,
    /// Bursts at the link rate over a standing queue, no pauses.
    SharedBottleneck,
    /// The sender pauses or bursts, held down by recent loss.
    LossHeld,
    /// The sender waits for this host's requests, a round trip each.
    Requests,
    /// The sender pauses or bursts without loss that holds it.
    SenderHeld,
    /// Data arrives evenly with the window open.
    EvenArrival,
}

/// A receiver rule's test.
pub type Judge = fn(&ReceiverCtx<'_>) -> Option<Finding<Reason>>;

/// The receiver's table: the first rule that finds decides.
pub const RECEIVER_RULES: &[Rule<Judge>] = &[
    Rule {
        name: "reader",
        recognises: "this host's reader leaves the window closed or data waiting",
        judge: reader,
    },
    Rule {
        name: "too_little",
        recognises: "fewer than min_bytes received or min_rtts round trips of the path",
        judge: too_little_received,
    },
    Rule {
        name: "window_through_queue",
        recognises: "this host's window full only through a standing queue: the path",
        judge: window_through_queue,
    },
    Rule {
        name: "receive_window",
        recognises: "the sender keeps this host's window full",
        judge: receive_window,
    },
    Rule {
        name: "shared_bottleneck",
        recognises: "bursts over a standing queue without pauses: a full, shared link",
        judge: shared_bottleneck,
    },
    Rule {
        name: "loss_held",
        recognises: "a sender that pauses or bursts, its cwnd held down by recent loss",
        judge: loss_held,
    },
    Rule {
        name: "requests",
        recognises: "gaps that wait for this host's requests, about a round trip each",
        judge: requests,
    },
    Rule {
        name: "sender_held",
        recognises: "a sender that pauses or bursts with the window open, without loss",
        judge: sender_held,
    },
    Rule {
        name: "even_arrival",
        recognises: "data arrives evenly with the window open: the path",
        judge: even_arrival,
    },
];

/// The first rule of [`RECEIVER_RULES`] that finds something in `c`, with
/// its name; the last rule always finds (a test holds it).
pub fn first(c: &ReceiverCtx<'_>) -> Option<(&'static str, Finding<Reason>)> {
    RECEIVER_RULES
        .iter()
        .find_map(|r| (r.judge)(c).map(|f| (r.name, f)))
}

// Judged before the window fill (a reader that reads in bursts leaves the
// window open between them, yet holds the sender back all the same), and
// even when too little arrived: a shut window is why nothing did. Not
// where the sender paused with room to send longer than the reader kept
// the window shut: the flow waited on the sender more (`sender_held`).
fn reader(c: &ReceiverCtx) -> Option<Finding<Reason>> {
    let floor = if c.closed {
        0.0
    } else {
        c.cfg.reader_confidence
    };
    (c.reader_lags() && !c.sender_outwaits).then(|| {
        Finding::new(
            Verdict::ReceiverApplication,
            share_confidence(c.rx.closed_share.max(floor), c.cfg.confidence_floor),
            Reason::Reader,
        )
    })
}

fn too_little_received(c: &ReceiverCtx) -> Option<Finding<Reason>> {
    too_little(c.ev.bytes_received, c.ev.interval_us, c.path_rtt, c.cfg)
        .map(|rtts| Finding::new(Verdict::Unknown, 0.0, Reason::TooLittle(rtts)))
}

// A window full only through a queue (at the base RTT), with data
// arriving without the sender pausing: a larger window would add queue,
// not rate.
fn window_through_queue(c: &ReceiverCtx) -> Option<Finding<Reason>> {
    let at_base = c
        .queue_only
        .filter(|_| c.rx.window_fill >= c.cfg.at_ceiling)?;
    Some(Finding::new(
        Verdict::Path,
        c.path_confidence,
        Reason::WindowThroughQueue(at_base),
    ))
}

// More in flight than the window (by over max_fill) cannot be: the RTT it
// rests on is overstated, so no window verdict rests on that ceiling.
fn receive_window(c: &ReceiverCtx) -> Option<Finding<Reason>> {
    let fill = c.rx.window_fill;
    (fill >= c.cfg.at_ceiling && fill <= c.cfg.max_fill).then(|| {
        Finding::new(
            Verdict::ReceiveWindow,
            share_confidence(fill, c.cfg.confidence_floor),
            Reason::ReceiveWindow,
        )
    })
}

// The flow's segments interleave with other traffic at a full bottleneck,
// not held back at their sender.
fn shared_bottleneck(c: &ReceiverCtx) -> Option<Finding<Reason>> {
    (c.bursty && !c.paused && c.queued)
        .then(|| Finding::new(Verdict::Path, c.path_confidence, Reason::SharedBottleneck))
}

/// How held back the sender looks: the share of time paused, or of the
/// path left unused, as a confidence above the floor.
fn held_confidence(c: &ReceiverCtx) -> f64 {
    let floor = c.cfg.confidence_floor;
    let held = c.rx.gap_share.max(1.0 - c.rx.path_use);
    (floor + held * (1.0 - floor)).min(1.0)
}

fn loss_held(c: &ReceiverCtx) -> Option<Finding<Reason>> {
    ((c.paused || c.bursty) && c.recent_loss).then(|| {
        Finding::new(
            Verdict::CongestionWindow,
            held_confidence(c),
            Reason::LossHeld,
        )
    })
}

// Request/response as the receiving end sees it: the sender was silent
// because this host had not asked yet, and each wait is the request's
// round trip. After `loss_held`: objects whose bursts a shallow queue
// drops are held by the loss, not by the asking.
fn requests(c: &ReceiverCtx) -> Option<Finding<Reason>> {
    c.waits_on_requests().then(|| {
        Finding::new(
            Verdict::ReceiverApplication,
            share_confidence(
                c.rx.gap_asked_share / c.rx.gap_share.max(f64::EPSILON),
                c.cfg.confidence_floor,
            ),
            Reason::Requests,
        )
    })
}

// Where the reader lagged too (and the sender's own pauses outwaited it,
// or the reader rule would have decided), as sure as the sender's share
// of the two waits.
fn sender_held(c: &ReceiverCtx) -> Option<Finding<Reason>> {
    (c.paused || c.bursty).then(|| {
        let confidence = if c.reader_lags() {
            let waits = c.own_pause + c.rx.closed_share;
            share_confidence(
                c.own_pause / waits.max(f64::EPSILON),
                c.cfg.confidence_floor,
            )
        } else {
            held_confidence(c)
        };
        Finding::new(Verdict::Sender, confidence, Reason::SenderHeld)
    })
}

// A BBR sender at its bottleneck keeps little queue: still the path.
fn even_arrival(c: &ReceiverCtx) -> Option<Finding<Reason>> {
    let confidence = if c.queued {
        c.cfg.path_queued_confidence
    } else {
        c.cfg.path_confidence
    };
    Some(Finding::new(Verdict::Path, confidence, Reason::EvenArrival))
}
