//! Verdicts made from the receiving end (a download as this host sees it).

use super::{
    Attribution, Config, Side, Verdict,
    evidence::Evidence,
    units::{fmt_bytes, fmt_ms, fmt_rate},
};
use crate::flow::Flow;

/// The receiver-side verdict for `ev`: is this host's advertised window
/// (rcv_wnd) what holds the sender back, or is the limit remote?
pub fn attribute(ev: &Evidence, flow: &Flow, cfg: &Config) -> Attribution {
    let rate = ev.recv_rate_bps;
    let rtt = f64::from(ev.receiver_rtt_us);
    let rtts = if rtt > 0.0 {
        ev.interval_us as f64 / rtt
    } else {
        0.0
    };
    let (verdict, confidence, explanation) =
        if ev.bytes_received < cfg.min_bytes || rtts < cfg.min_rtts {
            (
                Verdict::Unknown,
                0.0,
                format!(
                    "unknown: {} received over {:.1} round trips; too little to say",
                    fmt_bytes(ev.bytes_received as f64),
                    rtts
                ),
            )
        } else {
            let ceiling = ev.ceilings.rcv_wnd_bps;
            let line = format!(
                "rcv_wnd {} / rcv_rtt {} = {} ceiling, receiving {}",
                fmt_bytes(f64::from(ev.rcv_wnd)),
                fmt_ms(rtt),
                fmt_rate(ceiling),
                fmt_rate(rate)
            );
            if ceiling > 0.0 && rate >= cfg.at_ceiling * ceiling {
                (
                    Verdict::ReceiveWindow,
                    (rate / ceiling).clamp(0.5, 1.0),
                    format!("receive window (this host's): {line}"),
                )
            } else {
                (
                    Verdict::Sender,
                    (1.0 - rate / ceiling.max(1.0)).clamp(0.5, 1.0),
                    format!(
                        "remote: not this host's window ({line}); the sender or the path limits it"
                    ),
                )
            }
        };
    super::assemble(
        verdict,
        confidence,
        Side::Receiver,
        explanation,
        ev,
        flow,
        cfg,
    )
}
