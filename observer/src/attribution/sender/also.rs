//! The sending end's candidates for a second limit (`Attribution::also`):
//! each limit's own clock (rwnd-, sndbuf- and cwnd-limited time, idle
//! time), and the peer's window and the send buffer at the path's own
//! round trip. A standing queue is not one: a flow that bursts queues at
//! a link it uses a fraction of.

use super::context::SenderCtx;
use crate::{
    attribution::{
        matched::{Candidate, strongest},
        verdict::{Also, Verdict},
    },
    units,
};

/// The second limit beside `verdict` in `c`, if one binds
/// ([`strongest`]).
pub fn also(c: &SenderCtx<'_>, verdict: Verdict) -> Option<Also> {
    if verdict == Verdict::Unknown || c.nothing_moved {
        return None;
    }
    strongest(verdict, candidates(c, verdict), c.cfg)
}

fn candidates(c: &SenderCtx<'_>, verdict: Verdict) -> Vec<Candidate> {
    let ev = c.ev;
    let share = |verdict, strength: f64, what: &str| {
        let reason = format!("{what} {} of busy time", units::share(strength));
        Candidate::share(verdict, strength, reason)
    };
    let idle = ev.shares.idle;
    let mut v = vec![Candidate::share(
        Verdict::Application,
        idle,
        format!("idle (nothing to send) {} of the time", units::share(idle)),
    )];
    // Behind a standing queue a window or buffer blocks by its clock only
    // because the queue stretches srtt: there its ceiling at min_rtt
    // (below) speaks for it, not its limited time.
    if !c.full_queue() {
        v.push(share(Verdict::ReceiveWindow, c.rwnd, "rwnd-limited"));
        v.push(share(Verdict::SendBuffer, c.sndbuf, "sndbuf-limited"));
    }
    // A window full at a standing queue is the path's: cwnd-limited time
    // is named only where no queue stands, and never beside `path`.
    if verdict != Verdict::Path && !c.full_queue() {
        v.push(share(Verdict::CongestionWindow, c.cwnd, "cwnd-limited"));
    }
    // The peer's window and the send buffer at the path's own round
    // trip: past the verdict's limit, each would hold the flow within
    // this factor. Only one that met the flow at least now and then
    // (`cfg.probe_share` of busy time): a window still growing with its
    // receiver's autotuning has not been met, and would grow on.
    let at_base = |bytes: f64| bytes * 8e6 / c.path_rtt.max(1.0);
    if c.rate > 0.0 {
        for (verdict, bytes, met, what) in [
            (
                Verdict::ReceiveWindow,
                f64::from(ev.snd_wnd),
                c.rwnd,
                "the peer's window",
            ),
            (
                Verdict::SendBuffer,
                f64::from(c.flow.sndbuf),
                c.sndbuf,
                "the send buffer",
            ),
        ] {
            if bytes > 0.0 && met >= c.cfg.probe_share {
                let ceiling = at_base(bytes);
                v.push(Candidate::ceiling(
                    verdict, c.rate, ceiling, what, "min_rtt", c.path_rtt,
                ));
            }
        }
    }
    v
}
