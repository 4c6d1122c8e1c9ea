//! The receiver's explanations: one line per reason, with the numbers the
//! verdict rests on, written only when shown (`Config::explain`).

use super::{context::ReceiverCtx, rules::Reason};
use crate::{
    attribution::assemble::{ceiling_and_rate, too_little_text},
    model::flow::Flow,
    units,
};

/// The explanation of `reason` in the context `c` (empty with
/// `Config::explain` off).
pub fn explain(reason: Reason, c: &ReceiverCtx<'_>) -> String {
    if !c.cfg.explain {
        return String::new();
    }
    let rx = c.rx;
    let t = units::time_us;
    match reason {
        Reason::Reader => reader(c),
        Reason::TooLittle(rtts) => {
            too_little_text("received", c.ev.bytes_received, c.ev.interval_us, rtts)
        }
        Reason::WindowThroughQueue(at_base) => format!(
            "path: the bottleneck is full: this host's window is full only through a queue: rcv_wnd {} allows {} at the base RTT {}, and rcv_rtt {} vs base {}; data arrives at {}, {}: a larger window would add queue, not rate",
            units::bytes(rx.rcv_wnd_mean),
            units::rate(at_base),
            t(c.path_rtt),
            t(c.rtt),
            t(c.path_rtt),
            units::rate(c.rate),
            arrivals(rx.ooo_packets)
        ),
        Reason::ReceiveWindow => format!(
            "receive window (this host's): {}; {}",
            window_cause(c.flow),
            window_line(c)
        ),
        Reason::SharedBottleneck => format!(
            "path: the bottleneck is full: a queue stands ({}) while {} (other traffic shares the link, or the link delivers in aggregates); receiving {}, {}",
            queue_line(c),
            held(c),
            units::rate(c.rate),
            arrivals(rx.ooo_packets)
        ),
        Reason::LossHeld => {
            let when = match rx.since_ooo_s {
                Some(s) if rx.ooo_packets == 0 => format!(", the last {s:.1} s ago"),
                _ => String::new(),
            };
            format!(
                "congestion window (the sender's, held down by loss): {}{when}; {} while {}, receiving {}",
                arrivals(rx.ooo_packets),
                held(c),
                open_line(c),
                units::rate(c.rate)
            )
        }
        Reason::Requests => format!(
            "receiver application: this host asks for its data a piece at a time: {} of the time the sender waited for its next request, {} gaps of {} on average, about {} of {}; receiving {} (larger requests, or several at once, would help)",
            units::share(rx.gap_asked_share),
            rx.gaps,
            t(rx.mean_gap_us),
            rtts_word(rx.mean_gap_us / c.rtt.max(c.path_rtt).max(1.0)),
            t(c.rtt.max(c.path_rtt)),
            units::rate(c.rate)
        ),
        Reason::SenderHeld => format!(
            "sender: {}, {}, while {}; receiving {} (the sender's application, send buffer or a rate limit){}",
            held(c),
            old_loss(c),
            open_line(c),
            units::rate(c.rate),
            outwaited(c)
        ),
        Reason::EvenArrival => format!(
            "path: {} while {}{}; {}, {}",
            how(c),
            open_line(c),
            if c.queued { ", and a queue builds" } else { "" },
            queue_line(c),
            arrivals(rx.ooo_packets)
        ),
    }
}

/// The `reader` rule's explanation. The figure the verdict rests on: its
/// closed time where the reader shut the window (its mean over the open
/// stretches between reads would claim far more than the rate, and a
/// window reopened a chunk at a time, each sent at once, can average
/// less); else the window's ceiling, where it binds.
fn reader(c: &ReceiverCtx<'_>) -> String {
    let rx = c.rx;
    let window = if c.window_binds && !c.closed {
        format!(" ({})", window_line(c))
    } else {
        format!(", receiving {}", units::rate(c.rate))
    };
    format!(
        "receiver application: this host's reader leaves {} unread on average and read all that was waiting {} in {}; the window was closed {} of the time{window}",
        units::bytes(rx.unread_mean),
        times(rx.reader_drains),
        rounds(c),
        units::share(rx.closed_share),
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

/// A count of round trips in words: "one round trip", "1.5 round trips".
fn rtts_word(n: f64) -> String {
    if (n - 1.0).abs() < 0.05 {
        "one round trip".to_string()
    } else {
        format!("{n:.1} round trips")
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

/// A window at this share (%) of what its scale can carry, or more, is
/// pinned there by the scale.
const WSCALE_PINNED_PCT: u64 = 90;

/// Whether this host's advertised window cannot grow as the flow goes
/// faster: no window scaling, a buffer the application set, a window
/// pinned by the scale agreed at the handshake, or the buffer at
/// tcp_rmem's max (the causes [`window_cause`] names, but autotuning).
pub fn window_fixed(flow: &Flow) -> bool {
    !flow.wscale_ok || flow.rcvbuf_locked || scale_pinned(flow) || flow.at_rmem_max()
}

/// Whether this host's window sits at `WSCALE_PINNED_PCT` or more of
/// the largest the scale agreed at the handshake can carry
/// ([`scaled_max`]).
fn scale_pinned(flow: &Flow) -> bool {
    u64::from(flow.rcv_wnd) * 100 >= scaled_max(flow) * WSCALE_PINNED_PCT
}

/// `65535 << rcv_wscale`: the largest window this host can advertise on
/// the connection (bytes).
fn scaled_max(flow: &Flow) -> u64 {
    65_535u64 << flow.rcv_wscale.min(14)
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
    // The window pinned at what the scale agreed at the handshake can
    // carry: a buffer set small, or TCP_WINDOW_CLAMP, before connect chose
    // that scale, and autotuning cannot grow past it.
    if scale_pinned(flow) {
        return format!(
            "window scale {} agreed at the handshake: at most {} can be advertised (a small buffer or TCP_WINDOW_CLAMP set before connect chose it; a larger buffer needs a new connection)",
            flow.rcv_wscale,
            units::bytes(scaled_max(flow) as f64)
        );
    }
    if flow.at_rmem_max() {
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

/// "mean rcv_wnd W / rcv_rtt R = C ceiling, receiving X": the ceiling is
/// the interval's mean window over its mean RTT, not the window now.
fn window_line(c: &ReceiverCtx<'_>) -> String {
    format!(
        "mean rcv_wnd {} / rcv_rtt {} = {}",
        units::bytes(c.rx.rcv_wnd_mean),
        units::time_us(c.rtt),
        ceiling_and_rate(c.ev.ceilings.rcv_wnd_bps, "receiving", c.rate)
    )
}

/// "rcv_rtt X vs base Y".
fn queue_line(c: &ReceiverCtx<'_>) -> String {
    format!(
        "rcv_rtt {} vs base {}",
        units::time_us(c.rtt),
        units::time_us(f64::from(c.rx.base_rtt_us))
    )
}

/// "the window was open (in flight X of a mean rcv_wnd Y)", with the share
/// of the time it was open where the reader shut it at times.
fn open_line(c: &ReceiverCtx<'_>) -> String {
    let when = if units::share_shows(c.rx.closed_share) {
        format!(" {} of the time", units::share(1.0 - c.rx.closed_share))
    } else {
        String::new()
    };
    format!(
        "the window was open{when} (in flight {} of a mean rcv_wnd {})",
        units::bytes(c.rx.in_flight_bytes),
        units::bytes(c.rx.rcv_wnd_mean)
    )
}

/// The rounds a reader's catch-ups are counted in: "40 round trips", or
/// where the sampling grain is longer than the flow's round trip, "59
/// rounds of 4.0 ms (the sampling grain; a round trip takes 613 µs)".
fn rounds(c: &ReceiverCtx<'_>) -> String {
    let round_trip = c.rtt.max(c.path_rtt);
    if c.round_us > round_trip {
        format!(
            "{:.0} rounds of {} (the sampling grain; a round trip takes {})",
            c.rounds,
            units::time_us(c.round_us),
            units::time_us(round_trip)
        )
    } else {
        format!("{:.0} round trips", c.rounds)
    }
}

/// How the sender held back: its pauses, or its bursts and the share of
/// their rate the flow used.
fn held(c: &ReceiverCtx<'_>) -> String {
    let rx = c.rx;
    if c.paused {
        let shut = if units::share_shows(rx.gap_shut_share) {
            format!(
                " ({} of the time with the window shut)",
                units::share(rx.gap_shut_share)
            )
        } else {
            String::new()
        };
        format!(
            "the sender paused {} of the time{shut}",
            units::share(rx.gap_share)
        )
    } else {
        format!(
            "{} of the data came in bursts at {}, and the flow averaged {} of that rate",
            units::share(rx.burst_share),
            units::rate(rx.burst_rate_bps),
            units::share(rx.path_use)
        )
    }
}

/// How the data arrives when the path is the limit: evenly, or in bursts
/// at a rate the flow uses nearly all of. Bursts measured slower than the
/// mean rate (loopback, whose segments arrive as 64 KB super-segments)
/// are the host's batching, not a rate the data came at: evenly, then.
fn how(c: &ReceiverCtx<'_>) -> String {
    let rx = c.rx;
    if rx.burst_share >= c.cfg.sender_gap_share && rx.burst_rate_bps >= c.rate {
        format!(
            "data arrives at {}, {} of the rate of its bursts ({})",
            units::rate(c.rate),
            units::share(rx.path_use),
            units::rate(rx.burst_rate_bps)
        )
    } else if c.link_paced {
        // The gaps are the link's own spacing of full-sized segments; with
        // no drops, the queue that shows it may be the ACKs' on their way
        // back, which then clock the sender.
        let pace = if rx.ooo_packets == 0 {
            "the pace of a slow link, or of ACKs queued on a slow way back"
        } else {
            "a slow link's pace"
        };
        format!(
            "data arrives evenly at {}, a full-sized segment or two after each of {} gaps of {} on average: {pace}, not the sender pausing",
            units::rate(c.rate),
            rx.gaps,
            units::time_us(rx.mean_gap_us)
        )
    } else {
        format!("data arrives evenly at {}", units::rate(c.rate))
    }
}

/// Where this host's reader lagged too, why the sender is named all the
/// same: its own pauses outlasted the reader's closed time.
fn outwaited(c: &ReceiverCtx<'_>) -> String {
    if !(c.sender_outwaits && c.reader_lags()) {
        return String::new();
    }
    format!(
        "; this host's reader left {} unread on average and shut the window {} of the time, less than the sender's own pauses with room to send ({})",
        units::bytes(c.rx.unread_mean),
        units::share(c.rx.closed_share),
        units::share(c.own_pause)
    )
}

/// Loss too old to hold the sender's window, still named.
fn old_loss(c: &ReceiverCtx<'_>) -> String {
    let rx = c.rx;
    match (rx.ooo_packets, rx.since_ooo_s) {
        (0, _) | (_, None) => "without loss".to_string(),
        (n, Some(_)) if c.paused && !c.acked_pauses => format!(
            "{}, but its pauses last {} on average, longer than a sender waiting for ACKs waits ({} at a {} round trip): it waits for data or a timer",
            arrivals(n),
            units::time_us(rx.mean_gap_us),
            units::time_us(c.ack_wait_us),
            units::time_us(c.path_rtt)
        ),
        (n, Some(ago)) => format!("{} but none in the last {ago:.1} s", arrivals(n)),
    }
}
