//! Objects fetched one at a time, round by round: request/response on one
//! connection (one request outstanding), or a new connection per object.
//!
//! An object takes its round trips plus its time through the link. How
//! many round trips depends on the window it meets, and on a loss-based
//! sender also on the queue: the server writes each object whole, so
//! where the window already covers it the object leaves as one burst at
//! the host's rate, and a queue shallower than the burst drops its tail.
//! A tail drop is found only by what follows it (the next round's SACKs),
//! or, where nothing follows, by the tail-loss probe a round later still;
//! the window then drops to β of itself. That is why objects of a few
//! hundred KB over a queue of a tenth of the BDP take three or four round
//! trips instead of one (docs/cases/2026-12-07-objects-in-a-shallow-queue.md).
//!
//! The model (one step per round trip, segments of [`MSS`] in packets of
//! [`PACKET_BYTES`]):
//! - a new connection spends a round on its handshake and starts from
//!   [`INIT_CWND`] in slow start; a request/response connection keeps its
//!   window from object to object (the pause between them, one round
//!   trip, is under the RTO that would restart it, and CUBIC's clock does
//!   not run while idle: `bictcp_cwnd_event()`);
//! - a round sends the retransmissions due, then new data, up to the
//!   window. The queue peaks at: the whole round, for an object's first
//!   (the burst); half the round, or what exceeds the BDP if more, in
//!   slow start (each ACK releases two segments, at twice the link's
//!   rate); what exceeds the BDP plus one TSO burst
//!   ([`burst_packets`]) in congestion avoidance. What the peak exceeds
//!   the queue by is dropped, from the round's new data;
//! - drops are found by the next round that delivers anything, and sent
//!   again in the round after it, with the window decreased
//!   ([`CubicWindow::decrease`]); a round with nothing to send is the
//!   tail-loss probe's wait;
//! - the window grows by what a round delivered in slow start, up to
//!   twice what it sent (`tcp_is_cwnd_limited()`), and by CUBIC's climb
//!   in congestion avoidance only in rounds that filled it;
//! - a paced sender (BBR) drops nothing: its bursts leave at its pacing
//!   rate, and its window is not cut by loss.
//!
//! HyStart's early exit from slow start is not modelled.

use crate::sawtooth::{CubicWindow, Pipe, burst_packets};
use crate::stack::{MSS, PACKET_BYTES};

/// How the objects are fetched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fetch {
    /// One connection, one request outstanding.
    Requests,
    /// A new connection per object.
    Connections,
}

/// The round trips one object takes through `p` from the window `win`
/// (left as the object leaves it), given whether bursts overflow the
/// queue (`drops`).
fn rounds(p: Pipe, segments: f64, win: &mut CubicWindow, drops: bool) -> u32 {
    let bdp = p.rate_bps / 8.0 * p.rtt_s / PACKET_BYTES as f64;
    let queue = p.queue_bytes / PACKET_BYTES as f64;
    let mut left = segments;
    // Drops not found yet, and those found, due in the next round.
    let (mut unfound, mut due) = (0.0f64, 0.0f64);
    let mut n = 0u32;
    while left > 0.0 || due > 0.0 || unfound > 0.0 {
        n += 1;
        if n > 1_000_000 {
            break;
        }
        let resend = std::mem::take(&mut due);
        let new = (win.w.floor() - resend).max(0.0).min(left);
        let sent = resend + new;
        if sent == 0.0 {
            // Nothing to send: the tail-loss probe finds the drops.
            if unfound > 0.0 {
                due = std::mem::take(&mut unfound);
                win.decrease();
            }
            continue;
        }
        let lost = if drops && new > 0.0 {
            let peak = if n == 1 {
                sent
            } else if win.slow_start() {
                (sent / 2.0).max(sent - bdp)
            } else {
                (sent - bdp).max(0.0) + burst_packets(p.rate_bps).min(sent)
            };
            (peak - queue).max(0.0).floor().min(new)
        } else {
            0.0
        };
        left -= new;
        let delivered = sent - lost;
        if unfound > 0.0 && delivered > 0.0 {
            due = std::mem::take(&mut unfound);
            win.decrease();
        }
        unfound += lost;
        let full = sent >= win.w.floor();
        if win.slow_start() {
            if full {
                win.w += delivered;
            } else if win.w < 2.0 * sent {
                win.w = (win.w + delivered).min(2.0 * sent);
            }
        } else if full {
            win.full_round(p.rtt_s);
        }
    }
    n
}

/// The mean goodput (bits/s of payload) of objects of `bytes` fetched one
/// after another as `fetch` says over `p.secs` through `p`; `drops`: the
/// sender is loss-based and unpaced (CUBIC), so bursts overflow the queue.
pub fn objects_goodput(p: Pipe, bytes: u64, fetch: Fetch, drops: bool) -> f64 {
    let segments = bytes.div_ceil(MSS) as f64;
    // Its time through the link (IP bytes at the link's rate).
    let through = segments * (PACKET_BYTES * 8) as f64 / p.rate_bps.max(1.0);
    let mut win = CubicWindow::new();
    let (mut t, mut objects) = (0.0, 0u64);
    while t < p.secs {
        let mut handshake = 0.0;
        if fetch == Fetch::Connections {
            win = CubicWindow::new();
            handshake = p.rtt_s;
        }
        let n = rounds(p, segments, &mut win, drops);
        t += handshake + f64::from(n) * p.rtt_s + through;
        objects += 1;
    }
    (objects * bytes * 8) as f64 / t.max(1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipe(mbit: f64, rtt_ms: f64, queue_bytes: f64) -> Pipe {
        Pipe {
            rate_bps: mbit * 1e6,
            rtt_s: rtt_ms / 1e3,
            queue_bytes,
            secs: 10.0,
        }
    }

    fn mbit(x: f64) -> f64 {
        (x / 1e4).round() / 100.0
    }

    #[test]
    fn objects_in_a_deep_queue_take_a_round_each() {
        // 100 Mbit/s, 100 ms, a 1-BDP queue; 300 KB objects (208
        // segments): slow start's first object takes 5 rounds, then one
        // round and 25 ms through the link each: about 19 Mbit/s.
        let p = pipe(100.0, 100.0, 833_000.0);
        let g = objects_goodput(p, 300_000, Fetch::Requests, true);
        assert_eq!(
            mbit(g),
            mbit(objects_goodput(p, 300_000, Fetch::Requests, false))
        );
        let each = 300_000.0 * 8.0 / (0.1 + 208.0 * 12_000.0 / 100e6);
        assert!(g < each && g > 0.9 * each, "{} vs {}", mbit(g), mbit(each));
    }

    #[test]
    fn a_burst_over_a_shallow_queue_costs_round_trips() {
        // 97.6 Mbit/s, 108 ms, a queue of 0.16 BDP (143 packets); 450 KB
        // objects (312 segments) leave as one burst once the window
        // covers them: the tail is dropped, found a round later by the
        // tail-loss probe and sent again: 3-4 rounds an object, not 1
        // (measured: 8.8 Mbit/s, seed 1 cubic #31).
        let p = pipe(97.6, 107.8, 215_253.0);
        let lossy = objects_goodput(p, 450_611, Fetch::Requests, true);
        let paced = objects_goodput(p, 450_611, Fetch::Requests, false);
        assert!(paced > 2.0 * lossy, "{} vs {}", mbit(paced), mbit(lossy));
        assert!(lossy > 7.0e6 && lossy < 11.0e6, "{}", mbit(lossy));
        // With a queue 4 times as deep, the burst fits.
        let deep = objects_goodput(
            Pipe {
                queue_bytes: 4.0 * 215_253.0,
                ..p
            },
            450_611,
            Fetch::Requests,
            true,
        );
        assert!(deep > 2.0 * lossy, "{} vs {}", mbit(deep), mbit(lossy));
    }

    #[test]
    fn a_new_connection_per_object_slow_starts_each() {
        // 161 Mbit/s, 3.7 ms, a 15-packet queue; 130 KB objects (90
        // segments): 10, 20, 40 (its second half overflows the queue),
        // the rest, and the drops again: 5 rounds and the handshake, not
        // 4 (measured 42 Mbit/s; 47.5 with the queue 4 times as deep).
        let p = pipe(161.1, 3.69, 22_607.0);
        let shallow = objects_goodput(p, 130_260, Fetch::Connections, true);
        let deep = objects_goodput(
            Pipe {
                queue_bytes: 4.0 * 22_607.0,
                ..p
            },
            130_260,
            Fetch::Connections,
            true,
        );
        let gain = deep / shallow;
        assert!(gain > 1.1 && gain < 1.25, "{gain}");
    }
}
