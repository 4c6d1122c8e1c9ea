//! What would help one flow, in a few words: the ADVICE column of
//! `observer flows` and `observer top`, and the detail pane's `advice`
//! line. The one-flow form of a group's what-if ([`super::knobs`]): built
//! from the limit its verdict names (the knob [`class`] gives it) and its
//! window arithmetic ([`WhatIf`]: the same figures as the JSON
//! `what_if`), never computed again.

use super::member::{Class, Knob, class};
use crate::{
    attribution::{
        Attribution,
        whatif::{Answer, WhatIf},
    },
    units,
};

/// What would help the flow judged `a`, in a few words: the setting to
/// change and what it buys (`tcp_rmem: rcv_wnd 910.0KB → 70.0Mbit/s`:
/// the window the what-if's target needs, `needed_bytes`, and that
/// target, `target_bps`), or, where no window answers, why in a word
/// (`faster reader`, `more capacity`, `too little`). Never empty, never
/// `-`.
pub fn advice(a: &Attribution) -> String {
    let knob = match class(a) {
        Class::Unjudged => return "too little".to_string(),
        Class::Shared => return "more capacity".to_string(),
        Class::Own(knob) => knob,
    };
    if let Some(w) = &a.what_if {
        return window(knob, w);
    }
    let rate = a.evidence.rate_bps.max(a.evidence.recv_rate_bps);
    match knob {
        Knob::Reader => "faster reader".to_string(),
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
        Knob::HostWindow | Knob::PeerWindow | Knob::SendBuffer => setting(knob).0.to_string(),
    }
}

/// The setting that sizes `knob`'s window, and the window's name.
fn setting(knob: Knob) -> (&'static str, &'static str) {
    match knob {
        Knob::HostWindow => ("tcp_rmem", "rcv_wnd"),
        Knob::PeerWindow => ("peer's rcvbuf", "window"),
        Knob::SendBuffer => ("tcp_wmem", "sndbuf"),
        // No setting sizes a congestion window: the loss (or a clamp)
        // holds it down.
        _ => ("loss or clamp", "cwnd"),
    }
}

/// The advice of a window verdict held by `knob`, from its what-if `w`.
fn window(knob: Knob, w: &WhatIf) -> String {
    let (setting, name) = setting(knob);
    let buys = format!(
        "{name} {} → {}",
        units::compact(&units::bytes(w.needed_bytes)),
        units::compact(&units::rate(w.target_bps))
    );
    match w.answer {
        Answer::Window => format!("{setting}: {buys}"),
        // The agreed window scale caps the window: a buffer set before
        // the next connection, or window scaling turned on.
        Answer::Rescale => format!("{setting}, reconnect: {buys}"),
        Answer::ScalingOff => format!("tcp_window_scaling: {buys}"),
        Answer::PeerReader => "peer's reader".to_string(),
        Answer::NoHeadroom => "more capacity".to_string(),
        Answer::Enough => "not the window".to_string(),
    }
}
