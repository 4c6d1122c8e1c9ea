//! Verdicts made from the sending end.

use super::{
    assemble::{assemble, ceiling_and_rate, too_little},
    config::Config,
    evidence::Evidence,
    verdict::{Attribution, Side, Verdict},
    whatif::{ceiling, full_through_queue, shrunk_by_unread},
};
use crate::{model::flow::Flow, units};

/// The sender-side verdict for `ev`.
pub fn attribute(ev: &Evidence, flow: &Flow, cfg: &Config) -> Attribution {
    let (verdict, confidence, explanation) = decide(ev, flow, cfg);
    assemble(
        verdict,
        confidence,
        Side::Sender,
        explanation,
        ev,
        flow,
        cfg,
    )
}

/// The send-buffer explanation: how long the writer waited for space, the
/// buffer's size and who set it, and what the rate would need.
fn send_buffer(ev: &Evidence, flow: &Flow, sndbuf: f64, cwnd: f64, cfg: &Config) -> String {
    let size = units::bytes(f64::from(flow.sndbuf));
    let who = if flow.sndbuf_locked {
        // The kernel doubles what SO_SNDBUF asks for (sock_setsockopt()).
        explain!(
            cfg,
            "the application set SO_SNDBUF {}, sk_sndbuf {size}",
            units::bytes(f64::from(flow.sndbuf / 2))
        )
    } else {
        explain!(cfg, "sk_sndbuf {size}, sized by net.ipv4.tcp_wmem")
    };
    let buffer_ceiling = ceiling(f64::from(flow.sndbuf), f64::from(ev.srtt_us));
    // The same test as the what-if's (assemble.rs): the two never disagree.
    let bursts = if buffer_ceiling * cfg.max_fill < ev.rate_bps {
        // The kernel let the queue overshoot sk_sndbuf: no ceiling to quote.
        ", moving in bursts that overshoot it"
    } else {
        ""
    };
    explain!(
        cfg,
        "send buffer: the writer waited for buffer space with everything sent and the window open {} of busy time ({who}{bursts}); delivering {} with cwnd-limited {} of busy",
        units::share(sndbuf),
        units::rate(ev.rate_bps),
        units::share(cwnd),
    )
}

fn decide(ev: &Evidence, flow: &Flow, cfg: &Config) -> (Verdict, f64, String) {
    let s = &ev.shares;
    let rate = ev.rate_bps;
    let c = &ev.ceilings;
    if ev.interval_us == 0 {
        return (
            Verdict::Unknown,
            0.0,
            "unknown: not observed over any time yet".to_string(),
        );
    }
    if ev.bytes_acked == 0
        && ev.bytes_received == 0
        && ev.of_busy(s.rwnd_limited) >= cfg.significant_share
    {
        // Busy but nothing delivered: the peer's window is shut.
        return (
            Verdict::ReceiveWindow,
            ev.of_busy(s.rwnd_limited).clamp(0.5, 1.0),
            explain!(
                cfg,
                "receive window: the peer's window is shut, nothing delivered for {} (rwnd-limited {} of busy, busy {} of the time); its reader, not its buffer size, is the limit while it stays shut",
                units::time_us(ev.interval_us as f64),
                units::share(ev.of_busy(s.rwnd_limited)),
                units::share(ev.busy())
            ),
        );
    }
    if ev.bytes_acked == 0 && ev.bytes_received == 0 {
        return (
            Verdict::Application,
            s.idle.max(0.5),
            explain!(
                cfg,
                "application: idle, nothing sent for {}",
                units::time_us(ev.interval_us as f64)
            ),
        );
    }
    if let Some(unknown) = too_little(
        ev.bytes_acked,
        "acked",
        ev.interval_us,
        f64::from(ev.srtt_us),
        cfg,
    ) {
        return unknown;
    }
    if s.idle >= 0.5 {
        return (
            Verdict::Application,
            s.idle,
            explain!(
                cfg,
                "application: idle {} of the time (no data outstanding), sending {}",
                units::share(s.idle),
                units::rate(rate)
            ),
        );
    }
    let rwnd = ev.of_busy(s.rwnd_limited);
    let sndbuf = ev.of_busy(s.sndbuf_limited);
    let cwnd = ev.of_busy(s.cwnd_limited);
    let near = |ceiling: f64| ceiling > 0.0 && rate >= cfg.at_ceiling * ceiling;
    // Application-limited delivery samples over most of the interval, not
    // the flag of its last one (BBR's excepted: see below).
    let app_mark = ev.app_limited_share >= 0.5 && !flow.cc.starts_with("bbr");
    let ceiling_line = |name: &str, window: String, ceiling: f64| {
        explain!(
            cfg,
            "{name} {window} / srtt {} = {}",
            units::time_us(f64::from(ev.srtt_us)),
            ceiling_and_rate(ceiling, "delivering", rate)
        )
    };
    let queued = f64::from(ev.queue_delay_us)
        > (cfg.queue_fraction * f64::from(ev.min_rtt_us)).max(cfg.queue_floor_us as f64);
    // A full bottleneck's confidence grows with the share of srtt queued.
    let path_conf = (0.5 + f64::from(ev.queue_delay_us) / f64::from(ev.srtt_us.max(1))).min(1.0);
    let queue_line = explain!(
        cfg,
        "srtt {} vs min_rtt {}: {} standing queue",
        units::time_us(f64::from(ev.srtt_us)),
        units::time_us(f64::from(ev.min_rtt_us)),
        units::time_us(f64::from(ev.queue_delay_us))
    );
    // A full bottleneck needs more than a queue: loss (the queue
    // overflowed), or the flow running, while busy, at the rate the path
    // has recently shown it (its best delivery-rate sample; the kernel
    // keeps none shorter than min_rtt, so that is a round trip's rate at
    // least). A flow that bursts queues briefly at a link it uses a
    // fraction of, and the mean srtt alone would call that link full. A
    // flow sharing a full link sees samples above its share as the others
    // back off, but it sees loss. The best sample covers the last one to
    // two seconds: over a longer interval (a life verdict), or with none
    // kept (helper reads), the queue alone decides.
    let shown = ev.delivery_rate_max_bps as f64;
    let busy_rate = rate / ev.busy().max(1e-9);
    let comparable = shown > 0.0 && ev.interval_us <= cfg.shown_span_us;
    let at_path = !comparable || busy_rate >= cfg.at_ceiling * shown || ev.retransmits > 0;
    let room = if queued && !at_path {
        explain!(
            cfg,
            "; the path has delivered {} for it in the last seconds, so the queue is its own bursts'",
            units::rate(shown)
        )
    } else {
        String::new()
    };
    // Before the cwnd, even with more cwnd-limited time: the send-buffer
    // clocks run only with the congestion window open and nothing left
    // to send, time the cwnd did not limit; a sender held by its cwnd
    // alone shows none. A buffer that runs dry in each burst also keeps
    // the cwnd from growing (Linux grows it only while it is the limit):
    // cubic with a 64 KB SO_SNDBUF at 50 ms alternates, cwnd-limited 47%
    // and waiting on the buffer 42% of busy time, and carries half the
    // link it fills without the setsockopt. But not over a larger cwnd
    // share at a full bottleneck: more buffer would add queue, not rate.
    // Nor a buffer full only through a queue (`full_through_queue`, the
    // same test as the peer's window's below): it holds what waits in the
    // bottleneck's queue. Cubic with a 64 KB SO_SNDBUF, sk_sndbuf 128 KB,
    // over 10 Mbit/s and 10 ms each way delivers 9.6 Mbit/s with a 76 ms
    // queue and drops, waiting on its buffer most of its busy time. A
    // buffer whose bursts overshoot it allows less than the rate at
    // min_rtt and is not this case.
    let buffer_at_base = queued
        .then(|| full_through_queue(f64::from(flow.sndbuf), f64::from(ev.min_rtt_us), rate, cfg))
        .flatten();
    if let Some(at_base) =
        buffer_at_base.filter(|_| sndbuf >= cfg.significant_share && sndbuf >= rwnd)
    {
        return (
            Verdict::Path,
            path_conf,
            explain!(
                cfg,
                "path: the bottleneck is full: the send buffer is full (the writer waited {} of busy time) only through a queue: sk_sndbuf {} allows {} at min_rtt {}, and {queue_line}; delivering {}, {} retransmits: a larger buffer would add queue, not rate",
                units::share(sndbuf),
                units::bytes(f64::from(flow.sndbuf)),
                units::rate(at_base),
                units::time_us(f64::from(ev.min_rtt_us)),
                units::rate(rate),
                ev.retransmits
            ),
        );
    }
    if sndbuf >= cfg.significant_share && sndbuf >= rwnd && (sndbuf >= cwnd || !(queued && at_path))
    {
        return (
            Verdict::SendBuffer,
            sndbuf.clamp(0.5, 1.0),
            send_buffer(ev, flow, sndbuf, cwnd, cfg),
        );
    }
    // A window whose ceiling the flow outran (by more than max_fill) rests
    // on an overstated RTT or a stale window: no verdict is drawn from it.
    let within = |ceiling: f64| ceiling <= 0.0 || rate <= cfg.max_fill * ceiling;
    let outran = |name: &str, ceiling: f64| {
        (
            Verdict::Unknown,
            0.0,
            explain!(
                cfg,
                "unknown: the {name} binds by the kernel's clocks, but its ceiling {} is below the {} delivered (srtt {} overstated?); no verdict from it",
                units::rate(ceiling),
                units::rate(rate),
                units::time_us(f64::from(ev.srtt_us))
            ),
        )
    };
    // A peer window well under the largest the peer has offered, over the
    // interval and now, holds data the peer's application has not read:
    // its reader is the slowest stage. The peer then ACKs at once only
    // when a read reopens its window (`__tcp_ack_snd_check()`,
    // net/ipv4/tcp_input.c); its late ACKs stretch srtt and hold the cwnd,
    // so the cwnd's clocks and a "queue" would name the wrong limit.
    if !app_mark
        && within(c.rwnd_bps)
        && shrunk_by_unread(
            u64::from(ev.snd_wnd),
            u64::from(flow.snd_wnd),
            u64::from(flow.snd_wnd_max),
            cfg.unread_window,
        )
    {
        return (
            Verdict::ReceiveWindow,
            0.7,
            explain!(
                cfg,
                "receive window: the peer's reader, whose unread data holds its window well under the largest it offered; its ACKs wait for reads (srtt {} vs min_rtt {}); delivering {} (rwnd-limited {} of busy, cwnd-limited {})",
                units::time_us(f64::from(ev.srtt_us)),
                units::time_us(f64::from(ev.min_rtt_us)),
                units::rate(rate),
                units::share(rwnd),
                units::share(cwnd)
            ),
        );
    }
    let at_rwnd = near(c.rwnd_bps);
    if (rwnd >= cfg.significant_share && rwnd >= cwnd) || (at_rwnd && cwnd < 0.5) {
        if !within(c.rwnd_bps) {
            return outran("peer's window", c.rwnd_bps);
        }
        // Full only through a queue (`full_through_queue`): the path.
        let window_at_base = queued
            .then(|| full_through_queue(f64::from(ev.snd_wnd), f64::from(ev.min_rtt_us), rate, cfg))
            .flatten();
        if let Some(at_base) = window_at_base {
            return (
                Verdict::Path,
                path_conf,
                explain!(
                    cfg,
                    "path: the bottleneck is full: the peer's window is full (rwnd-limited {} of busy) only through a queue: snd_wnd {} allows {} at min_rtt {}, and {queue_line}; delivering {}: a larger window would add queue, not rate",
                    units::share(rwnd),
                    units::bytes(f64::from(ev.snd_wnd)),
                    units::rate(at_base),
                    units::time_us(f64::from(ev.min_rtt_us)),
                    units::rate(rate)
                ),
            );
        }
        let conf = rwnd.max(if at_rwnd { 0.8 } else { 0.0 }).clamp(0.5, 1.0);
        return (
            Verdict::ReceiveWindow,
            conf,
            explain!(
                cfg,
                "receive window: {} (rwnd-limited {} of busy)",
                ceiling_line("snd_wnd", units::bytes(f64::from(ev.snd_wnd)), c.rwnd_bps),
                units::share(rwnd)
            ),
        );
    }
    // The cwnd binds when the flow delivers at its ceiling, or spends most
    // of its busy time at it. A pacing sender (BBR) touches its cwnd now and
    // then while delivering well below cwnd / srtt: that is not a cwnd limit.
    let at_cwnd = near(c.cwnd_bps) && !app_mark;
    if cwnd >= 0.5 || at_cwnd {
        if queued && at_path {
            return (
                Verdict::Path,
                path_conf,
                explain!(
                    cfg,
                    "path: the bottleneck is full, {queue_line}; delivering {} with cwnd {} x {} B (cwnd-limited {} of busy), {} retransmits",
                    units::rate(rate),
                    ev.snd_cwnd,
                    ev.mss,
                    units::share(cwnd),
                    ev.retransmits
                ),
            );
        }
        if !within(c.cwnd_bps) {
            return outran("congestion window", c.cwnd_bps);
        }
        return (
            Verdict::CongestionWindow,
            cwnd.max(if at_cwnd { 0.7 } else { 0.0 }).clamp(0.5, 1.0),
            explain!(
                cfg,
                "congestion window: {} (cwnd-limited {} of busy) while the path has room ({queue_line}{room})",
                ceiling_line(
                    "cwnd",
                    explain!(cfg, "{} x {} B", ev.snd_cwnd, ev.mss),
                    c.cwnd_bps
                ),
                units::share(cwnd)
            ),
        );
    }
    let lowest = [c.rwnd_bps, c.cwnd_bps]
        .into_iter()
        .filter(|x| *x > 0.0)
        .fold(f64::INFINITY, f64::min);
    // BBR marks its own ProbeRTT samples app-limited (net/ipv4/tcp_bbr.c
    // bbr_update_min_rtt()): for it the mark says nothing of the
    // application.
    if app_mark || rate < 0.35 * lowest {
        return (
            Verdict::Application,
            0.6,
            explain!(
                cfg,
                "application: sending {} with the windows allowing {} (not window-limited{})",
                units::rate(rate),
                units::rate(lowest),
                if app_mark {
                    ", app-limited delivery samples"
                } else {
                    ""
                }
            ),
        );
    }
    // A pacing sender (BBR) probes for more bandwidth now and then (one
    // phase in eight at 1.25 times its estimate, net/ipv4/tcp_bbr.c): when
    // its probes meet the peer's window rather than a queue, that window
    // holds it, not the path (a reader at the peer that reopens its window
    // at its own pace sets the estimate the sender paces at).
    if rwnd >= cfg.probe_share && rwnd > cwnd && within(c.rwnd_bps) {
        return (
            Verdict::ReceiveWindow,
            0.6,
            explain!(
                cfg,
                "receive window: pacing at {} without a window limit most of the time, but its probes for more meet the peer's window (rwnd-limited {} of busy, cwnd-limited {}): {}",
                units::rate(rate),
                units::share(rwnd),
                units::share(cwnd),
                ceiling_line("snd_wnd", units::bytes(f64::from(ev.snd_wnd)), c.rwnd_bps)
            ),
        );
    }
    (
        Verdict::Path,
        if queued { 0.8 } else { 0.6 },
        explain!(
            cfg,
            "path: busy {} of the time without window limits, pacing at {} as the congestion control estimates the path; {queue_line}; {} retransmits",
            units::share(ev.busy()),
            units::rate(rate),
            ev.retransmits
        ),
    )
}
