//! What would help one flow, in a few words: the ADVICE column of
//! `observer flows` and `observer top`, and the detail pane's `advice`
//! line. The one-flow form of a group's what-if ([`super::what_ifs`]): built
//! from the limit its verdict names (the knob [`class`] gives it) and its
//! window arithmetic ([`WhatIf`]: the same figures as the JSON
//! `what_if`), never computed again.

use super::member::{Class, Knob, class};
use crate::{
    attribution::{
        Attribution,
        whatif::{Answer, WhatIf},
    },
    model::flow::Flow,
    units,
};

/// What would help the flow judged `a`, in a few words: the window to
/// grow, what it buys and the setting that grows it (`rcv_wnd 130.0KB →
/// 10.0Mbit/s: tcp_rmem`: the window the what-if's target needs,
/// `needed_bytes`, and that target, `target_bps`), or, where no window
/// answers, why in a word (`faster reader`, `more capacity`, `too
/// little`). The setting is the one this socket's buffer follows:
/// `SO_RCVBUF` or `SO_SNDBUF` where the application set it (autotuning
/// and `tcp_rmem`/`tcp_wmem` then do not apply), else the sysctl; `flow`
/// is the flow `a` judged. Never empty, never `-`.
pub fn advice(a: &Attribution, flow: &Flow) -> String {
    let knob = match class(a) {
        Class::Unjudged => return "too little".to_string(),
        Class::Shared => return "more capacity".to_string(),
        Class::Own(knob) => knob,
    };
    if let Some(w) = &a.what_if {
        return window(knob, w, flow);
    }
    let rate = a.evidence.rate_bps.max(a.evidence.recv_rate_bps);
    match knob {
        Knob::Reader => "faster reader".to_string(),
        Knob::Requests => "larger requests".to_string(),
        Knob::Application => "faster app".to_string(),
        Knob::SendingHost => "look at sender".to_string(),
        Knob::Policer => "none: policer".to_string(),
        Knob::CongestionWindow => "find the loss".to_string(),
        // A window verdict without arithmetic: a shut window (no rate to
        // size it by), or a rate above window / RTT (a send buffer the
        // kernel let bursts overshoot): the setting alone.
        Knob::HostWindow | Knob::PeerWindow | Knob::SendBuffer if rate <= 0.0 => {
            "window shut".to_string()
        }
        Knob::HostWindow | Knob::PeerWindow | Knob::SendBuffer => {
            format!("{}: {}", setting(knob, flow).0, setting(knob, flow).1)
        }
    }
}

/// The window `knob` names, and the setting that grows it.
fn setting(knob: Knob, flow: &Flow) -> (&'static str, &'static str) {
    match knob {
        Knob::HostWindow if flow.rcvbuf_locked => ("rcv_wnd", "SO_RCVBUF"),
        Knob::HostWindow => ("rcv_wnd", "tcp_rmem"),
        Knob::SendBuffer if flow.sndbuf_locked => ("sndbuf", "SO_SNDBUF"),
        // The peer's buffer: no setting of this host's to name.
        Knob::PeerWindow => ("peer's window", ""),
        Knob::SendBuffer => ("sndbuf", "tcp_wmem"),
        // No setting grows a congestion window: the loss (or a clamp)
        // holds it down.
        _ => ("cwnd", "find the loss"),
    }
}

/// The advice of a window verdict held by `knob`, from its what-if `w`:
/// the window first, so that a narrow column keeps the figures.
fn window(knob: Knob, w: &WhatIf, flow: &Flow) -> String {
    let (name, setting) = setting(knob, flow);
    let buys = format!(
        "{name} {} → {}",
        units::compact(&units::bytes(w.needed_bytes)),
        units::compact(&units::rate(w.target_bps))
    );
    match w.answer {
        Answer::Window if setting.is_empty() => buys,
        Answer::Window => format!("{buys}: {setting}"),
        // The agreed window scale caps the window: a buffer set before
        // the next connection, or window scaling turned on.
        Answer::Rescale if setting.is_empty() => format!("{buys}: reconnect"),
        Answer::Rescale => format!("{buys}: {setting}, reconnect"),
        Answer::ScalingOff => format!("{buys}: tcp_window_scaling"),
        Answer::PeerReader => "peer's reader".to_string(),
        Answer::NoHeadroom => "more capacity".to_string(),
        // The window's own clock says it blocked the flow, yet its mean
        // size carries the target at the mean round trip: it was full only
        // while smaller than its mean or while the round trip was longer,
        // both the doing of whoever frees it (a reader that lets unread
        // data shrink it, an ACK clock that stalls with its CPU), not its
        // size. A send buffer likewise fills behind a window or a path
        // that slowed, not for want of bytes.
        Answer::Enough => match knob {
            Knob::PeerWindow => "peer's reader".to_string(),
            Knob::HostWindow => "faster reader".to_string(),
            _ => "not the buffer size".to_string(),
        },
    }
}
