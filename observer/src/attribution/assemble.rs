//! The steps every rule shares: the "too little to say" check, and
//! turning a rule's finding into an [`Attribution`] (with the what-if
//! arithmetic for window verdicts).

use super::{
    config::Config,
    evidence::Evidence,
    verdict::{Attribution, Side, Verdict},
    whatif::what_if,
};
use crate::{model::flow::Flow, units};

/// `unknown` when fewer than `cfg.min_bytes` moved (`moved`: "acked" or
/// "received") or the interval spans fewer than `cfg.min_rtts` round trips
/// of `rtt_us`; None when there is enough to judge.
pub(super) fn too_little(
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
pub(super) fn assemble(
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
    let rate = ev.rate_bps.max(ev.recv_rate_bps);
    // Nor for a window whose window / RTT the flow outran (a send buffer
    // the kernel let bursts overshoot): that arithmetic would contradict
    // the measured rate.
    let what_if = (window_verdict && rate > 0.0)
        .then(|| what_if(ev, flow, verdict, cfg))
        .filter(|w| w.ceiling_bps * cfg.max_fill >= rate);
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
