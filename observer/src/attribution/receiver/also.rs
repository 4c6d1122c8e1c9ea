//! The receiving end's candidates for a second limit (`Attribution::also`):
//! the reader's shut window, the sender's own pauses, and this host's
//! window at the path's own round trip. A standing queue is not one: a
//! reader that holds its ACKs or a sender that bursts stretches the
//! receiver RTT too. Nor is the rate within bursts: the host's batching
//! (GRO) reads it at 14-33 Gbit/s on a 4 Gbit/s LAN download, so how near
//! it lies to the rate tells nothing of the link.

use super::{context::ReceiverCtx, text::window_fixed};
use crate::{
    attribution::{
        matched::{Candidate, strongest},
        verdict::{Also, Verdict},
    },
    units,
};

/// The second limit beside `verdict` in `c`, if one binds
/// ([`strongest`]).
pub fn also(c: &ReceiverCtx<'_>, verdict: Verdict) -> Option<Also> {
    if verdict == Verdict::Unknown || c.ev.bytes_received == 0 {
        return None;
    }
    strongest(verdict, candidates(c, verdict), c.cfg)
}

fn candidates(c: &ReceiverCtx<'_>, verdict: Verdict) -> Vec<Candidate> {
    let rx = c.rx;
    let closed = rx.closed_share;
    let mut v = vec![Candidate::share(
        Verdict::ReceiverApplication,
        closed,
        format!(
            "the reader left the window shut {} of the time",
            units::share(closed)
        ),
    )];
    // A slow link's spacing is not the sender pausing, nor is a sender's
    // wait through loss recovery beside a loss-held window.
    if !c.link_paced && verdict != Verdict::CongestionWindow {
        let reason = format!(
            "the sender paused with the window open {} of the time",
            units::share(c.own_pause)
        );
        v.push(Candidate::share(Verdict::Sender, c.own_pause, reason));
    }
    // This host's window at the path's own round trip, where it cannot
    // grow (autotuning would grow it past a faster path); not beside a
    // reader, whose lag is what keeps the window small.
    let at_base = rx.rcv_wnd_mean * 8e6 / c.path_rtt.max(1.0);
    if verdict != Verdict::ReceiverApplication
        && window_fixed(c.flow)
        && rx.rcv_wnd_mean > 0.0
        && c.rate > 0.0
    {
        v.push(Candidate::ceiling(
            Verdict::ReceiveWindow,
            c.rate,
            at_base,
            "this host's window",
            "the base RTT",
            c.path_rtt,
        ));
    }
    v
}
