//! The steps every rule shares: the "too little to say" check, and
//! turning a rule's finding into an [`Attribution`] (with the what-if
//! arithmetic for window verdicts).

use super::{
    calibration::measured,
    config::Config,
    evidence::Evidence,
    matched::with_also,
    rule::Finding,
    side::Side,
    verdict::{Also, Attribution, Verdict},
    whatif::{Bounds, PeerWindow, what_if},
};
use crate::{model::flow::Flow, units};

/// "`X` ceiling, delivering `Y`" (`moving`: "delivering" or "receiving"),
/// the ceiling a window allows over a mean RTT against the rate. A rate
/// measured above its ceiling (the RTT is a smoothed mean, and the rate
/// counts whole segments acked in the interval) says by how much, so no
/// line claims more than its ceiling without saying so.
pub(super) fn ceiling_and_rate(ceiling: f64, moving: &str, rate: f64) -> String {
    let line = format!(
        "{} ceiling, {moving} {}",
        units::rate(ceiling),
        units::rate(rate)
    );
    if ceiling > 0.0 && rate > ceiling {
        // Less than rounds to 1% is said so, not "0% above".
        let excess = rate / ceiling - 1.0;
        let by = if excess < 0.005 {
            "under 1%".to_string()
        } else {
            units::share(excess)
        };
        format!("{line}, {by} above it (the ceiling rests on a smoothed RTT)")
    } else {
        line
    }
}

/// The interval's length in round trips of `rtt_us` when fewer than
/// `cfg.min_bytes` moved (`bytes`) or it spans fewer than `cfg.min_rtts`
/// of them (too little to judge); None when there is enough.
pub(super) fn too_little(bytes: u64, interval_us: u64, rtt_us: f64, cfg: &Config) -> Option<f64> {
    let rtts = if rtt_us > 0.0 {
        interval_us as f64 / rtt_us
    } else {
        0.0
    };
    (bytes < cfg.min_bytes || rtts < cfg.min_rtts).then_some(rtts)
}

/// The explanation of a "too little to say" finding: `bytes` `moved`
/// ("acked", "received") over an interval of `interval_us`, `rtts` round
/// trips long. Nothing moved is said as such (an idle connection is not a
/// small sample of one), and round trips are counted whole: "0 B received
/// over 125104.0 round trips" read as a measurement of something.
pub(super) fn too_little_text(moved: &str, bytes: u64, interval_us: u64, rtts: f64) -> String {
    let over = format!("{} ({})", span(interval_us), whole_round_trips(rtts));
    if bytes == 0 {
        format!("unknown: nothing {moved} in {over}: no data to judge")
    } else {
        format!(
            "unknown: {} {moved} in {over}; too little to say",
            units::bytes(bytes as f64)
        )
    }
}

/// An interval's length: `340 ms`, `12.3 s`, `5 min`; under a
/// millisecond in µs.
fn span(interval_us: u64) -> String {
    if interval_us < 1000 {
        units::time_us(interval_us as f64)
    } else {
        units::age_ms(interval_us / 1000)
    }
}

/// A count of round trips, whole: "under one round trip", "1 round
/// trip", "3 round trips" (3.6 rounds down: three have passed).
pub(super) fn whole_round_trips(rtts: f64) -> String {
    if rtts.is_nan() || rtts < 1.0 {
        return "under one round trip".to_string();
    }
    let n = rtts.floor();
    if n < 2.0 {
        "1 round trip".to_string()
    } else {
        format!("{n:.0} round trips")
    }
}

/// Assembles an attribution from the finding of `rule` at the end `side`,
/// its reason written out as the explanation (empty with
/// `Config::explain` off), and the second limit beside it (`also`, named
/// last in the explanation): window arithmetic for window verdicts, folded
/// into the explanation, and the confidence (the rule's measured one
/// where `cfg` has it) rounded to two places.
pub(super) fn assemble(
    rule: &'static str,
    side: Side,
    found: Finding<String>,
    also: Option<Also>,
    ev: &Evidence,
    flow: &Flow,
    cfg: &Config,
) -> Attribution {
    let Finding {
        verdict,
        confidence,
        reason: explanation,
    } = found;
    let window_verdict = match side {
        Side::Sender => matches!(
            verdict,
            Verdict::ReceiveWindow | Verdict::SendBuffer | Verdict::CongestionWindow
        ),
        Side::Receiver => verdict == Verdict::ReceiveWindow,
    };
    // No arithmetic for a window that moved nothing (a shut window): it
    // would ask what window 0 bit/s needs.
    let rate = ev.rate_bps.max(ev.recv_rate_bps);
    // Nor for a window whose window / RTT the flow outran (a send buffer
    // the kernel let bursts overshoot): that arithmetic would contradict
    // the measured rate.
    let what_if = (window_verdict && rate > 0.0)
        .then(|| {
            let w = binding_window(ev, flow, verdict, cfg);
            what_if(w.bytes, w.rtt_us, w.rate_bps, w.bounds, cfg)
        })
        .filter(|w| w.ceiling_bps * cfg.max_fill >= rate);
    let explanation = match &what_if {
        Some(w) => explain!(cfg, "{explanation}; {}", w.summary),
        None => explanation,
    };
    let explanation = with_also(explanation, also.as_ref(), cfg);
    // A verdict is given at its rule's measured precision where the
    // harness has one (`calibration`); `unknown` stays at 0.
    let confidence = if verdict == Verdict::Unknown {
        confidence
    } else {
        measured(cfg.measured, cfg.measured_min_ends, side, rule).unwrap_or(confidence)
    };
    Attribution {
        verdict,
        rule,
        confidence: (confidence * 100.0).round() / 100.0,
        side,
        explanation,
        evidence: ev.clone(),
        what_if,
        also,
    }
}

/// The window a window verdict names, and what it is measured against
/// (the arguments of [`what_if`]).
struct BindingWindow {
    /// The window (bytes).
    bytes: u64,
    /// The RTT it is measured against (µs).
    rtt_us: u32,
    /// The rate measured (bits/s).
    rate_bps: f64,
    /// What bounds the answer.
    bounds: Bounds,
}

/// The window a window `verdict` names, with the RTT and rate it is
/// measured against and what bounds the answer: cwnd x MSS, sk_sndbuf or
/// the peer's window (its scale) at srtt; this host's advertised window
/// (its scale, and the rate within the flow's bursts, what the path has
/// shown: `Receive::shown_bps`) at the receiver RTT for a download.
/// Windows are the interval's time-weighted means, as the ceilings are.
fn binding_window(ev: &Evidence, flow: &Flow, verdict: Verdict, cfg: &Config) -> BindingWindow {
    let shift = |s: u8| Some(if flow.wscale_ok { s } else { 0 });
    match verdict {
        Verdict::CongestionWindow => BindingWindow {
            bytes: u64::from(ev.snd_cwnd) * u64::from(ev.mss),
            rtt_us: ev.srtt_us,
            rate_bps: ev.rate_bps,
            bounds: Bounds::default(),
        },
        Verdict::SendBuffer => BindingWindow {
            bytes: u64::from(flow.sndbuf),
            rtt_us: ev.srtt_us,
            rate_bps: ev.rate_bps,
            bounds: Bounds::default(),
        },
        _ if ev.bytes_received > ev.bytes_acked => BindingWindow {
            bytes: ev.receive.rcv_wnd_mean.round() as u64,
            rtt_us: ev.receiver_rtt_us,
            rate_bps: ev.recv_rate_bps,
            bounds: Bounds {
                shift: shift(flow.rcv_wscale),
                scaling_off: !flow.wscale_ok,
                own: true,
                path_bps: ev.receive.shown_bps(cfg.shown_burst_share),
                peer: None,
            },
        },
        _ => BindingWindow {
            bytes: u64::from(ev.snd_wnd),
            rtt_us: ev.srtt_us,
            rate_bps: ev.rate_bps,
            bounds: Bounds {
                shift: shift(flow.snd_wscale),
                scaling_off: !flow.wscale_ok,
                own: false,
                path_bps: 0.0,
                peer: Some(PeerWindow {
                    full_share: ev.of_busy(ev.shares.rwnd_limited),
                    min_rtt_us: ev.min_rtt_us,
                    now_bytes: u64::from(flow.snd_wnd),
                    max_bytes: u64::from(flow.snd_wnd_max),
                }),
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn too_little_says_nothing_moved_and_counts_whole_round_trips() {
        // An idle connection on loopback: no bytes over a long interval.
        assert_eq!(
            too_little_text("received", 0, 4_200_000, 125_104.3),
            "unknown: nothing received in 4.2 s (125104 round trips): no data to judge"
        );
        assert_eq!(
            too_little_text("acked", 3000, 374_000, 3.6),
            "unknown: 3.0 KB acked in 374 ms (3 round trips); too little to say"
        );
        assert_eq!(
            too_little_text("acked", 10, 500, 0.4),
            "unknown: 10 B acked in 500 µs (under one round trip); too little to say"
        );
        assert_eq!(whole_round_trips(1.9), "1 round trip");
        assert_eq!(whole_round_trips(0.0), "under one round trip");
        assert_eq!(whole_round_trips(f64::NAN), "under one round trip");
    }
}
