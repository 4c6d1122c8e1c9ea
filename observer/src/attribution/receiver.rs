//! Verdicts made from the receiving end (a download as this host sees it).
//!
//! The receiver cannot read the sender's windows, but it sees what they
//! produce: how much data is in flight (the receive rate x the receiver
//! RTT) against the window this host advertises, whether its own reader
//! keeps up (unread bytes, a closed window), whether data arrives out of
//! order (loss upstream), and whether the sender pauses with the window
//! open (gaps between arrivals). `docs/attribution.md` gives the order of
//! the rules and their thresholds.

use super::{
    assemble::{assemble, ceiling_and_rate, too_little},
    config::Config,
    evidence::{Evidence, Receive},
    verdict::{Attribution, Side, Verdict},
    whatif::full_through_queue,
};
use crate::{model::flow::Flow, units};

/// The receiver-side verdict for `ev`; `flow` is the flow at the end of
/// the interval (its buffer settings name the cause of a window limit).
pub fn attribute(ev: &Evidence, flow: &Flow, cfg: &Config) -> Attribution {
    let (verdict, confidence, explanation) = decide(ev, flow, cfg);
    assemble(
        verdict,
        confidence,
        Side::Receiver,
        explanation,
        ev,
        flow,
        cfg,
    )
}

/// "1 out-of-order arrival", "3 out-of-order arrivals".
fn arrivals(n: u32) -> String {
    if n == 1 {
        "1 out-of-order arrival".to_string()
    } else {
        format!("{n} out-of-order arrivals")
    }
}

/// "once", "twice", "5 times".
fn times(n: u32) -> String {
    match n {
        1 => "once".to_string(),
        2 => "twice".to_string(),
        n => format!("{n} times"),
    }
}

/// What keeps this host's advertised window where it is, in words with its
/// number, for a `receive_window` verdict.
pub fn window_cause(flow: &Flow) -> String {
    if !flow.wscale_ok {
        return format!(
            "no window scaling on this connection: at most {} can be advertised",
            units::bytes(65_535.0)
        );
    }
    if flow.rcvbuf_locked {
        return format!(
            "SO_RCVBUF set by the application: a {} buffer (autotuning off)",
            units::bytes(f64::from(flow.rcvbuf))
        );
    }
    if flow.tcp_rmem_max > 0 && u64::from(flow.rcvbuf) * 100 >= u64::from(flow.tcp_rmem_max) * 95 {
        return format!(
            "tcp_rmem max reached: the buffer is at net.ipv4.tcp_rmem's {}",
            units::bytes(f64::from(flow.tcp_rmem_max))
        );
    }
    format!(
        "autotuning still growing: buffer {} of tcp_rmem max {}, rcv_ssthresh {}",
        units::bytes(f64::from(flow.rcvbuf)),
        units::bytes(f64::from(flow.tcp_rmem_max)),
        units::bytes(f64::from(flow.rcv_ssthresh))
    )
}

/// Whether out-of-order arrivals (loss upstream) are recent enough to
/// still hold the sender's congestion window down. A sender that pauses
/// most of the time has a window far below the path's; without frequent
/// loss it would regrow within a few round trips, so only loss in the last
/// `loss_memory_paused_s` counts for it, even within the interval, and only
/// when its pauses are round-trip sized (`acked_pauses`): a sender held by
/// its window sends it, then waits about a round trip for the ACKs. A
/// window cut by loss and spread over the round trip (bursts, few pauses)
/// regrows for seconds (cubic): loss in the last `loss_memory_s` counts.
fn recent_loss(rx: &Receive, paused: bool, acked_pauses: bool, cfg: &Config) -> bool {
    if paused {
        // Not "any loss in the interval": a startup overshoot a second
        // before an application-paced stretch does not hold it back, nor
        // does one reordered segment in tens of thousands, nor loss in the
        // bursts of a sender that then waits a second for its application.
        // Loss that keeps a window small is fresh and repeated.
        let repeated = rx.ooo_packets >= 2
            && f64::from(rx.ooo_packets) >= cfg.loss_share_paused * f64::from(rx.data_segments);
        return acked_pauses
            && repeated
            && rx
                .since_ooo_s
                .is_some_and(|s| s <= cfg.loss_memory_paused_s);
    }
    rx.ooo_packets > 0 || rx.since_ooo_s.is_some_and(|s| s <= cfg.loss_memory_s)
}

/// Whether the reader lagged the network all through an interval of
/// `rtts` round trips of the path: a good share of the window waited unread
/// (`reader_unread_share`) and the reader seldom or never caught up with it
/// (`reader_drain_rtts`). A reader that keeps up catches up each time the
/// sender pauses, at least once a round trip; one that is the slowest
/// stage reads a full buffer each time and leaves as much behind.
fn lagging(rx: &Receive, rtts: f64, cfg: &Config) -> bool {
    rtts >= cfg.reader_drain_rtts
        && rx.unread_mean >= cfg.reader_unread_share * rx.rcv_wnd_mean
        && f64::from(rx.reader_drains) * cfg.reader_drain_rtts <= rtts
}

fn decide(ev: &Evidence, flow: &Flow, cfg: &Config) -> (Verdict, f64, String) {
    let rx = &ev.receive;
    let rate = ev.recv_rate_bps;
    let rtt = rx.rtt_mean_us;
    // Round trips of the path itself: a deep queue (a second of
    // bufferbloat) must not make every interval too short to judge.
    let path_rtt = if rx.base_rtt_us > 0 {
        f64::from(rx.base_rtt_us)
    } else {
        rtt
    };
    let rtts = ev.interval_us as f64 / path_rtt.max(1.0);
    let window_line = explain!(
        cfg,
        "rcv_wnd {} / rcv_rtt {} = {}",
        units::bytes(rx.rcv_wnd_mean),
        units::time_us(rtt),
        ceiling_and_rate(ev.ceilings.rcv_wnd_bps, "receiving", rate)
    );
    let closed = rx.closed_share >= cfg.significant_share;
    // The reader is the limit when unread data, not the buffer size, keep
    // the window small: the buffer holds at least as much unread data as
    // the window offers, or the window sits closed. Judged before the
    // window fill: a reader that reads in bursts leaves the window open
    // between them, yet holds the sender back all the same.
    // Judged even when too little arrived: a reader that keeps the window
    // shut is why nothing did. Nor need the window shut: a reader that
    // keeps more data waiting than the network holds in flight (and at
    // least half as much as the window offers) lags the network by more
    // than a round trip, and the sender's bursts are the window it
    // reopens by reading. Nor need it lag by that much: a reader that
    // never catches up with what waits (`lagging`) is the slowest stage
    // whatever the amount.
    let waiting = rx.unread_mean >= rx.rcv_wnd_mean
        || (rx.unread_mean >= rx.in_flight_bytes && rx.unread_mean >= 0.5 * rx.rcv_wnd_mean)
        || lagging(rx, rtts, cfg);
    let reader = (closed && rx.unread_mean > 0.0)
        || (waiting && rx.unread_mean >= 2.0 * f64::from(flow.rcv_mss.max(536)));
    if reader {
        return (
            Verdict::ReceiverApplication,
            rx.closed_share
                .max(if closed { 0.0 } else { 0.7 })
                .clamp(0.5, 1.0),
            explain!(
                cfg,
                "receiver application: this host's reader leaves {} unread on average and caught up with it {} in {rtts:.0} round trips of the path; the window was closed {} of the time ({window_line})",
                units::bytes(rx.unread_mean),
                times(rx.reader_drains),
                units::share(rx.closed_share)
            ),
        );
    }
    if let Some(unknown) = too_little(ev.bytes_received, "received", ev.interval_us, path_rtt, cfg)
    {
        return unknown;
    }
    let queued = f64::from(rx.queue_delay_us)
        > (cfg.queue_fraction * f64::from(rx.base_rtt_us)).max(cfg.queue_floor_us as f64);
    // A window full only through a queue (`full_through_queue`, at the
    // base RTT), with data arriving without the sender pausing: the flow
    // fills its bottleneck, and a larger window would add queue, not rate.
    let queue_only = (queued && rx.base_rtt_us > 0 && rx.gap_share < cfg.sender_gap_share)
        .then(|| full_through_queue(rx.rcv_wnd_mean, path_rtt, rate, cfg))
        .flatten();
    if let Some(base_ceiling) = queue_only.filter(|_| rx.window_fill >= cfg.at_ceiling) {
        return (
            Verdict::Path,
            (0.5 + f64::from(rx.queue_delay_us) / rtt.max(1.0)).min(1.0),
            explain!(
                cfg,
                "path: the bottleneck is full: this host's window is full only through a queue: rcv_wnd {} allows {} at the base RTT {}, and rcv_rtt {} vs base {}; data arrives at {}, {}: a larger window would add queue, not rate",
                units::bytes(rx.rcv_wnd_mean),
                units::rate(base_ceiling),
                units::time_us(path_rtt),
                units::time_us(rtt),
                units::time_us(path_rtt),
                units::rate(rate),
                arrivals(rx.ooo_packets)
            ),
        );
    }
    // More in flight than the window (by over 25%) cannot be: the RTT it
    // rests on is overstated, so no window verdict rests on that ceiling.
    if rx.window_fill >= cfg.at_ceiling && rx.window_fill <= cfg.max_fill {
        return (
            Verdict::ReceiveWindow,
            rx.window_fill.clamp(0.5, 1.0),
            explain!(
                cfg,
                "receive window (this host's): {}; {window_line}",
                window_cause(flow)
            ),
        );
    }
    let queue_line = explain!(
        cfg,
        "rcv_rtt {} vs base {}",
        units::time_us(rtt),
        units::time_us(f64::from(rx.base_rtt_us))
    );
    let open_line = explain!(
        cfg,
        "the window is open (in flight {} of rcv_wnd {})",
        units::bytes(rx.in_flight_bytes),
        units::bytes(rx.rcv_wnd_mean)
    );
    let paused = rx.gap_share >= cfg.sender_gap_share;
    let bursty = rx.burst_share >= cfg.sender_gap_share && rx.path_use < cfg.at_ceiling;
    let held = if paused {
        explain!(
            cfg,
            "the sender paused {} of the time",
            units::share(rx.gap_share)
        )
    } else {
        explain!(
            cfg,
            "{} of the data came in bursts at {} and the flow used {} of that",
            units::share(rx.burst_share),
            units::rate(rx.burst_rate_bps),
            units::share(rx.path_use)
        )
    };
    // How the data arrives when the path is the limit: evenly, or in bursts
    // at a rate the flow uses nearly all of.
    let how = if rx.burst_share >= cfg.sender_gap_share {
        explain!(
            cfg,
            "data arrives at {}, {} of the rate of its bursts ({})",
            units::rate(rate),
            units::share(rx.path_use),
            units::rate(rx.burst_rate_bps)
        )
    } else {
        explain!(cfg, "data arrives evenly at {}", units::rate(rate))
    };
    if bursty && !paused && queued {
        // Bursts at the link rate with a standing queue and no pauses: the
        // flow's segments are interleaved with other traffic at a full
        // bottleneck, not held back at their sender.
        return (
            Verdict::Path,
            (0.5 + f64::from(rx.queue_delay_us) / rtt.max(1.0)).min(1.0),
            explain!(
                cfg,
                "path: the bottleneck is full and shared: a queue stands ({queue_line}) while {held}; receiving {}, {}",
                units::rate(rate),
                arrivals(rx.ooo_packets)
            ),
        );
    }
    // Pauses no longer than a few round trips of the path, or than a
    // retransmission timeout and a round trip: what a sender waiting for
    // ACKs shows (a gap still running at the interval's end is not
    // counted; no ended gap is no evidence against it). The timeout floor
    // also keeps short paths judgeable: only gaps over 10 ms are counted,
    // which is many round trips of a LAN.
    let ack_wait_us = (cfg.ack_wait_rtts * path_rtt).max(cfg.rto_min_us as f64 + path_rtt);
    let acked_pauses = rx.mean_gap_us <= ack_wait_us;
    if (paused || bursty) && recent_loss(rx, paused, acked_pauses, cfg) {
        let when = match rx.since_ooo_s {
            Some(s) if rx.ooo_packets == 0 => explain!(cfg, ", the last {s:.1} s ago"),
            _ => String::new(),
        };
        return (
            Verdict::CongestionWindow,
            (0.5 + rx.gap_share.max(1.0 - rx.path_use) / 2.0).min(1.0),
            explain!(
                cfg,
                "congestion window (the sender's, held down by loss): {}{when}; {held} while {open_line}, receiving {}",
                arrivals(rx.ooo_packets),
                units::rate(rate)
            ),
        );
    }
    if paused || bursty {
        // Loss too old to hold the window (see `recent_loss`) is still named.
        let loss = match (rx.ooo_packets, rx.since_ooo_s) {
            (0, _) | (_, None) => "without loss".to_string(),
            (n, Some(_)) if paused && !acked_pauses => explain!(
                cfg,
                "{}, but its pauses last {} on average, longer than a sender waiting for ACKs waits ({} at a {} round trip): it waits for data or a timer",
                arrivals(n),
                units::time_us(rx.mean_gap_us),
                units::time_us(ack_wait_us),
                units::time_us(path_rtt)
            ),
            (n, Some(ago)) => explain!(cfg, "{} but none in the last {ago:.1} s", arrivals(n)),
        };
        return (
            Verdict::Sender,
            (0.5 + rx.gap_share.max(1.0 - rx.path_use) / 2.0).min(1.0),
            explain!(
                cfg,
                "sender: {held}, {loss}, while {open_line}; receiving {} (its application, send buffer or a rate limit)",
                units::rate(rate)
            ),
        );
    }
    (
        Verdict::Path,
        if queued { 0.8 } else { 0.6 },
        explain!(
            cfg,
            "path: {how} while {open_line}{}; {queue_line}, {}",
            if queued { ", and a queue builds" } else { "" },
            arrivals(rx.ooo_packets)
        ),
    )
}
