//! The sender's explanations: one line per reason, with the numbers the
//! verdict rests on, written only when shown (`Config::explain`).

use super::{context::SenderCtx, rules::Reason};
use crate::{
    attribution::assemble::{ceiling_and_rate, too_little_text},
    units,
};

/// The explanation of `reason` in the context `c` (empty with
/// `Config::explain` off): one function per verdict writes its reasons.
pub fn explain(reason: Reason, c: &SenderCtx<'_>) -> String {
    if !c.cfg.explain {
        return String::new();
    }
    match reason {
        Reason::NotObserved | Reason::TooLittle(_) | Reason::Outran(..) => unknown(reason, c),
        Reason::NothingSent | Reason::MostlyIdle | Reason::PacingCap(_) | Reason::Application => {
            application(reason, c)
        }
        Reason::ShutWindow
        | Reason::PeerReader
        | Reason::ReceiveWindow
        | Reason::ProbesMeetWindow => receive_window(reason, c),
        Reason::SendBuffer => send_buffer(c),
        Reason::CongestionWindow => congestion_window(c),
        Reason::Ramping => ramping(c),
        Reason::BufferThroughQueue(_)
        | Reason::WindowThroughQueue(_)
        | Reason::FullBottleneck
        | Reason::DropsWithoutQueue
        | Reason::Stalled
        | Reason::Pacing => path(reason, c),
    }
}

/// Explanations of `unknown`: nothing observed, too little, or a ceiling the rate outran.
fn unknown(reason: Reason, c: &SenderCtx<'_>) -> String {
    let ev = c.ev;
    let t = |us: u64| units::time_us(us as f64);
    match reason {
        Reason::NotObserved => "unknown: not observed over any time yet".to_string(),
        Reason::TooLittle(rtts) => too_little_text("acked", ev.bytes_acked, ev.interval_us, rtts),
        Reason::Outran(name, ceiling) => format!(
            "unknown: the {name} binds by the kernel's clocks, but its ceiling {} is below the {} delivered (srtt {} overstated?); no verdict from it",
            units::rate(ceiling),
            units::rate(c.rate),
            t(u64::from(ev.srtt_us))
        ),
        _ => String::new(),
    }
}

/// Explanations of `application`: idle, or sending far below the windows.
fn application(reason: Reason, c: &SenderCtx<'_>) -> String {
    let ev = c.ev;
    let t = |us: u64| units::time_us(us as f64);
    match reason {
        Reason::NothingSent => format!("application: idle, nothing sent for {}", t(ev.interval_us)),
        Reason::PacingCap(cap) => format!(
            "application: paced at the {} cap the application set (SO_MAX_PACING_RATE), delivering {}; cwnd {} x {} B / srtt {} would allow {}",
            units::rate(cap),
            units::rate(c.rate),
            ev.snd_cwnd,
            ev.mss,
            t(u64::from(ev.srtt_us)),
            units::rate(ev.ceilings.cwnd_bps)
        ),
        Reason::MostlyIdle => format!(
            "application: idle {} of the time (no data outstanding), sending {}",
            units::share(ev.shares.idle),
            units::rate(c.rate)
        ),
        Reason::Application => format!(
            "application: sending {} with the windows allowing {} (not window-limited{})",
            units::rate(c.rate),
            units::rate(c.lowest),
            if c.app_mark {
                ", app-limited delivery samples"
            } else {
                ""
            }
        ),
        _ => String::new(),
    }
}

/// Explanations of `receive_window`: the peer's window, shut, shrunk by its reader, full, or met by probes.
fn receive_window(reason: Reason, c: &SenderCtx<'_>) -> String {
    let ev = c.ev;
    let t = |us: u64| units::time_us(us as f64);
    match reason {
        Reason::ShutWindow => format!(
            "receive window: the peer's window is shut, nothing delivered for {} (rwnd-limited {} of busy, busy {} of the time); its reader, not its buffer size, is the limit while it stays shut",
            t(ev.interval_us),
            units::share(c.rwnd),
            units::share(ev.busy())
        ),
        Reason::PeerReader => format!(
            "receive window: the peer's reader, whose unread data holds its window well under the largest it offered; its ACKs wait for reads (srtt {} vs min_rtt {}); delivering {} (rwnd-limited {} of busy, cwnd-limited {})",
            t(u64::from(ev.srtt_us)),
            t(u64::from(ev.min_rtt_us)),
            units::rate(c.rate),
            units::share(c.rwnd),
            units::share(c.cwnd)
        ),
        Reason::ReceiveWindow => format!(
            "receive window: {} (rwnd-limited {} of busy)",
            rwnd_ceiling_line(c),
            units::share(c.rwnd)
        ),
        Reason::ProbesMeetWindow => format!(
            "receive window: pacing at {} without a window limit most of the time, but its probes for more meet the peer's window (rwnd-limited {} of busy, cwnd-limited {}): {}",
            units::rate(c.rate),
            units::share(c.rwnd),
            units::share(c.cwnd),
            rwnd_ceiling_line(c)
        ),
        _ => String::new(),
    }
}

/// Explanations of `congestion_window`.
fn congestion_window(c: &SenderCtx<'_>) -> String {
    let ev = c.ev;
    // The queue is the flow's own bursts' when the path has shown
    // far more than it runs at.
    let room = if c.queued && !c.at_path {
        format!(
            "; the path has delivered {} for it in the last seconds, so the queue is its own bursts'",
            units::rate(c.shown)
        )
    } else {
        String::new()
    };
    format!(
        "congestion window: {} (cwnd-limited {} of busy) while the path has room ({}{room})",
        ceiling_line(
            c,
            "cwnd",
            format!("{} x {} B", ev.snd_cwnd, ev.mss),
            ev.ceilings.cwnd_bps
        ),
        units::share(c.cwnd),
        if c.queued {
            queue_line(c)
        } else {
            short_queue_line(c)
        }
    )
}

/// Explanations of `path`: a window or buffer full only through a queue, a full bottleneck, or pacing.
fn path(reason: Reason, c: &SenderCtx<'_>) -> String {
    let ev = c.ev;
    let t = |us: u64| units::time_us(us as f64);
    match reason {
        Reason::Stalled => format!(
            "path: stalled: {} retransmissions with {} acknowledged over {} (retransmission timeouts, the same data sent again): the path drops what is sent; a PMTU black hole where only full-sized segments vanish (mss {} B)",
            ev.retransmits,
            units::bytes(ev.bytes_acked as f64),
            t(ev.interval_us),
            ev.mss
        ),
        Reason::BufferThroughQueue(at_base) => format!(
            "path: the bottleneck is full: the send buffer is full (the writer waited {} of busy time) only through a queue: sk_sndbuf {} allows {} at min_rtt {}, and {}; delivering {}, {} retransmits: a larger buffer would add queue, not rate",
            units::share(c.sndbuf),
            units::bytes(f64::from(c.flow.sndbuf)),
            units::rate(at_base),
            t(u64::from(ev.min_rtt_us)),
            queue_line(c),
            units::rate(c.rate),
            ev.retransmits
        ),
        Reason::WindowThroughQueue(at_base) => format!(
            "path: the bottleneck is full: the peer's window is full (rwnd-limited {} of busy) only through a queue: snd_wnd {} allows {} at min_rtt {}, and {}; delivering {}: a larger window would add queue, not rate",
            units::share(c.rwnd),
            units::bytes(f64::from(ev.snd_wnd)),
            units::rate(at_base),
            t(u64::from(ev.min_rtt_us)),
            queue_line(c),
            units::rate(c.rate)
        ),
        Reason::FullBottleneck => format!(
            "path: the bottleneck is full, {}; delivering {} with cwnd {} x {} B (cwnd-limited {} of busy), {} retransmits",
            queue_line(c),
            units::rate(c.rate),
            ev.snd_cwnd,
            ev.mss,
            units::share(c.cwnd),
            ev.retransmits
        ),
        Reason::DropsWithoutQueue => format!(
            "path: drops without a queue, a policer or a shallow shaper: {} retransmits ({} of the segments sent) while delivering {}, {:.1} times what isolated losses of that share would let it reach at min_rtt {} ({}): the drops come in clusters, as a rate limit's do; {}",
            ev.retransmits,
            units::share(c.loss_share),
            units::rate(c.rate),
            c.rate / c.isolated_loss_rate,
            t(u64::from(ev.min_rtt_us)),
            units::rate(c.isolated_loss_rate),
            short_queue_line(c)
        ),
        // Only a model-based congestion control (BBR) paces at an estimate
        // of the path; CUBIC's pacing follows its cwnd over srtt.
        Reason::Pacing => format!(
            "path: busy {} of the time without window limits, delivering {}{}{}; {}; {} retransmits",
            units::share(ev.busy()),
            units::rate(c.rate),
            pacing_at(c),
            if c.model_based {
                " as the congestion control estimates the path"
            } else {
                ""
            },
            queue_line(c),
            ev.retransmits
        ),
        _ => String::new(),
    }
}

/// Explanations of `congestion_window` for a model-based sender still
/// ramping.
fn ramping(c: &SenderCtx<'_>) -> String {
    format!(
        "congestion window (the congestion control's own, still ramping): pacing at {} at the end, {:.1} times the {} it delivered over the interval, with no standing queue ({}): the path has room it has not found yet",
        units::rate(c.pacing),
        c.pacing / c.rate.max(1.0),
        units::rate(c.rate),
        short_queue_line(c)
    )
}

/// ", paced at X by the kernel" where the flow is paced.
fn pacing_at(c: &SenderCtx<'_>) -> String {
    if c.pacing > 0.0 {
        format!(" (the kernel paces it at {})", units::rate(c.pacing))
    } else {
        String::new()
    }
}

/// "srtt X vs min_rtt Y: Z standing queue".
fn queue_line(c: &SenderCtx<'_>) -> String {
    let ev = c.ev;
    format!(
        "srtt {} vs min_rtt {}: {} standing queue",
        units::time_us(f64::from(ev.srtt_us)),
        units::time_us(f64::from(ev.min_rtt_us)),
        units::time_us(f64::from(ev.queue_delay_us))
    )
}

/// "srtt X vs min_rtt Y: Z above it, short of a standing queue (over
/// 20% of min_rtt and 2 ms)", for a verdict that rests on there being
/// none (`SenderCtx::queued`): the RTT above min_rtt said so that it does
/// not read as a queue the verdict overlooked.
fn short_queue_line(c: &SenderCtx<'_>) -> String {
    let ev = c.ev;
    let cfg = c.cfg;
    format!(
        "srtt {} vs min_rtt {}: {} above it, short of a standing queue (over {} of min_rtt and {})",
        units::time_us(f64::from(ev.srtt_us)),
        units::time_us(f64::from(ev.min_rtt_us)),
        units::time_us(f64::from(ev.queue_delay_us)),
        units::share(cfg.queue_fraction),
        units::time_us(cfg.queue_floor_us as f64)
    )
}

/// "NAME WINDOW / srtt X = C ceiling, delivering R".
fn ceiling_line(c: &SenderCtx<'_>, name: &str, window: String, ceiling: f64) -> String {
    format!(
        "{name} {window} / srtt {} = {}",
        units::time_us(f64::from(c.ev.srtt_us)),
        ceiling_and_rate(ceiling, "delivering", c.rate)
    )
}

/// The peer window's ceiling line.
fn rwnd_ceiling_line(c: &SenderCtx<'_>) -> String {
    ceiling_line(
        c,
        "snd_wnd",
        units::bytes(f64::from(c.ev.snd_wnd)),
        c.ev.ceilings.rwnd_bps,
    )
}

/// The send-buffer explanation: how long the writer waited for space, the
/// buffer's size and who set it, and whether bursts overshoot it.
fn send_buffer(c: &SenderCtx<'_>) -> String {
    let (ev, flow) = (c.ev, c.flow);
    let size = units::bytes(f64::from(flow.sndbuf));
    let who = if flow.sndbuf_locked {
        // The kernel doubles what SO_SNDBUF asks for (sock_setsockopt()).
        format!(
            "the application set SO_SNDBUF {}, sk_sndbuf {size}",
            units::bytes(f64::from(flow.sndbuf / 2))
        )
    } else {
        format!("sk_sndbuf {size}, sized by net.ipv4.tcp_wmem")
    };
    let buffer_ceiling =
        crate::attribution::whatif::ceiling(f64::from(flow.sndbuf), f64::from(ev.srtt_us));
    // The same test as the what-if's (assemble.rs): the two never disagree.
    let bursts = if buffer_ceiling * c.cfg.max_fill < ev.rate_bps {
        // The kernel let the queue overshoot sk_sndbuf: no ceiling to quote.
        ", moving in bursts that overshoot it"
    } else {
        ""
    };
    format!(
        "send buffer: the writer waited for buffer space with everything sent and the window open {} of busy time ({who}{bursts}); delivering {} with cwnd-limited {} of busy",
        units::share(c.sndbuf),
        units::rate(ev.rate_bps),
        units::share(c.cwnd),
    )
}
