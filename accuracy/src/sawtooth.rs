//! A loss-based flow alone in a drop-tail queue: CUBIC's window round by
//! round, from slow start to the end of the transfer, and the goodput it
//! averages.
//!
//! Where the queue holds less than the BDP's share CUBIC's decrease gives
//! up (1 - β of the window), each overflow leaves the link idle until the
//! window regrows; on a long path slow start alone takes seconds. Both
//! keep the flow under the link's rate with no other limit in sight, so
//! the truth needs them as a ceiling of their own.
//!
//! The model (RFC 9438, section 4; one step per round trip):
//! - slow start from [`INIT_CWND`], doubling each round, until the window
//!   exceeds the BDP plus the queue less one burst ([`burst_packets`]:
//!   the first overflow);
//! - at each overflow: W_max = W (or W x (1+β)/2 below the last W_max:
//!   fast convergence), W = β x W;
//! - in congestion avoidance, W = max(W_cubic(t), W_est), with
//!   W_cubic(t) = C (t - K)³ + W_max, K = ∛(W_max (1 - β) / C), and the
//!   Reno-friendly W_est growing by α = 3(1-β)/(1+β) segments a round;
//! - a round lasts the base RTT plus the queue the window stands in, and
//!   delivers the window: at most the link's rate.

use crate::stack::{CUBIC_BETA, CUBIC_C, INIT_CWND, MSS, PACKET_BYTES};

/// A path for the model: rates in bits/s of IP bytes, sizes in IP bytes.
#[derive(Clone, Copy, Debug)]
pub struct Pipe {
    /// The bottleneck's rate (bits/s).
    pub rate_bps: f64,
    /// The base round trip (s).
    pub rtt_s: f64,
    /// The drop-tail queue (bytes).
    pub queue_bytes: f64,
    /// How long the transfer runs (s).
    pub secs: f64,
}

/// The packets one skb carries out back to back at `rate_bps` (IP bits/s):
/// TSO autosizing gives an skb the pacing rate's 1/1024 s
/// (`sk_pacing_shift` 10, net/ipv4/tcp_output.c `tcp_tso_autosize()`),
/// CUBIC's pacing rate being 1.2 times cwnd / srtt in congestion
/// avoidance (`tcp_update_pacing_rate()`), at least `tcp_min_tso_segs`
/// (2) and at most a 64 KB GSO skb.
pub fn burst_packets(rate_bps: f64) -> f64 {
    let bytes = 1.2 * rate_bps / 8.0 / 1024.0;
    (bytes / PACKET_BYTES as f64).clamp(2.0, 65_536.0 / PACKET_BYTES as f64)
}

/// CUBIC's window (segments) round by round: slow start, the decrease
/// at an overflow, and RFC 9438's climb back.
#[derive(Clone, Copy, Debug)]
pub struct CubicWindow {
    /// The congestion window (segments).
    pub w: f64,
    /// The window at the last overflow (segments), after fast convergence.
    w_max: f64,
    /// The Reno-friendly estimate (segments).
    w_est: f64,
    /// Time in congestion avoidance since the last decrease (s); `None`
    /// in slow start.
    since_loss: Option<f64>,
}

impl Default for CubicWindow {
    fn default() -> Self {
        Self::new()
    }
}

impl CubicWindow {
    /// A new connection's window: [`INIT_CWND`], in slow start.
    pub fn new() -> Self {
        Self {
            w: INIT_CWND as f64,
            w_max: 0.0,
            w_est: 0.0,
            since_loss: None,
        }
    }

    /// Whether the window is still in slow start (no loss yet).
    pub fn slow_start(&self) -> bool {
        self.since_loss.is_none()
    }

    /// An overflow found: W_max = W (or W x (1+β)/2 below the last W_max:
    /// fast convergence), W = β x W, and slow start ends.
    pub fn decrease(&mut self) {
        self.w_max = if self.w < self.w_max {
            self.w * (1.0 + CUBIC_BETA) / 2.0
        } else {
            self.w
        };
        self.w *= CUBIC_BETA;
        self.w_est = self.w;
        self.since_loss = Some(0.0);
    }

    /// One round of `round_s` seconds in which the window was full: it
    /// doubles in slow start; in congestion avoidance it is the larger of
    /// W_cubic(t) = C (t - K)³ + W_max, K = ∛(W_max (1 - β) / C), and the
    /// Reno-friendly W_est, growing by α = 3(1-β)/(1+β) segments a round.
    pub fn full_round(&mut self, round_s: f64) {
        match self.since_loss.as_mut() {
            None => self.w *= 2.0,
            Some(t) => {
                *t += round_s;
                let alpha = 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA);
                let k = (self.w_max * (1.0 - CUBIC_BETA) / CUBIC_C).cbrt();
                let cubic = CUBIC_C * (*t - k).powi(3) + self.w_max;
                self.w_est += alpha;
                self.w = cubic.max(self.w_est).max(1.0);
            }
        }
    }
}

/// CUBIC's mean goodput (bits/s of payload) over `p.secs` through `p`.
pub fn cubic_goodput(p: Pipe) -> f64 {
    let per_segment = PACKET_BYTES as f64;
    let bdp = p.rate_bps / 8.0 * p.rtt_s / per_segment;
    // The queue overflows when what stands in it and one burst exceed it.
    let limit = bdp + p.queue_bytes / per_segment - burst_packets(p.rate_bps);
    let mut win = CubicWindow::new();
    let (mut t, mut delivered) = (0.0, 0.0);
    while t < p.secs {
        // A round lasts the base RTT plus the queue the window stands in,
        // and delivers the whole window (the last one only in part).
        let w = win.w;
        let full = p.rtt_s + (w - bdp).max(0.0) * per_segment * 8.0 / p.rate_bps;
        let round = full.min(p.secs - t).max(1e-6);
        delivered += w * round / full;
        t += round;
        if w > limit {
            win.decrease();
        } else {
            win.full_round(round);
        }
    }
    delivered * MSS as f64 * 8.0 / p.secs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mbit(x: f64) -> f64 {
        (x / 1e4).round() / 100.0
    }

    #[test]
    fn a_deep_queue_keeps_the_link_full_after_slow_start() {
        // 10 Mbit/s, 20 ms (16.7 packets of BDP), a 2-BDP queue, 20 s: the
        // first 4 rounds (80 ms) of slow start under the BDP, then full.
        let g = cubic_goodput(Pipe {
            rate_bps: 10e6,
            rtt_s: 0.02,
            queue_bytes: 50_000.0,
            secs: 20.0,
        });
        assert!(g > 0.98 * 10e6 * 1448.0 / 1500.0, "{}", mbit(g));
    }

    #[test]
    fn a_shallow_queue_on_a_long_path_leaves_the_link_idle() {
        // 50 Mbit/s, 200 ms (833 packets of BDP), a 0.1-BDP queue, 10 s:
        // slow start takes 7 rounds (1.4 s), and each overflow to 0.7 x 1.1
        // BDP leaves the link idle until CUBIC regrows, K = 9.1 s later.
        let g = cubic_goodput(Pipe {
            rate_bps: 50e6,
            rtt_s: 0.2,
            queue_bytes: 125_000.0,
            secs: 10.0,
        });
        let link = 50e6 * 1448.0 / 1500.0;
        assert!(g < 0.9 * link && g > 0.6 * link, "{}", mbit(g));
    }
}
