//! The figures a verdict rests on, computed between two points of a flow.

use serde::Serialize;

use super::Point;
use crate::flow::Flow;

/// Shares of the interval's wall time (each 0 to 1; they sum to 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Shares {
    /// Busy and blocked by the peer's receive window (`tcpi_rwnd_limited`).
    pub rwnd_limited: f64,
    /// Busy and blocked by the send buffer (`tcpi_sndbuf_limited`).
    pub sndbuf_limited: f64,
    /// Busy with in-flight >= cwnd, and not counted above.
    pub cwnd_limited: f64,
    /// Busy for any other reason: pacing, recovery, waiting on ACKs.
    pub other_busy: f64,
    /// Not busy: no data outstanding (the application had nothing to send).
    pub idle: f64,
}

/// Throughput ceilings the sampled state implies (bits/s; 0 when unknown).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Ceilings {
    /// snd_wnd / srtt: the most the peer's window allows.
    pub rwnd_bps: f64,
    /// cwnd x MSS / srtt: the most the congestion window allows.
    pub cwnd_bps: f64,
    /// rcv_wnd / receiver RTT: the most this host's advertised window allows.
    pub rcv_wnd_bps: f64,
}

/// Everything measured over one interval of one flow.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Evidence {
    /// Interval length (µs).
    pub interval_us: u64,
    /// Bytes acknowledged by the peer in the interval.
    pub bytes_acked: u64,
    /// Bytes received in the interval.
    pub bytes_received: u64,
    /// Send throughput from bytes acked (bits/s).
    pub rate_bps: f64,
    /// Receive throughput from bytes received (bits/s).
    pub recv_rate_bps: f64,
    /// Time shares.
    pub shares: Shares,
    /// Window ceilings at the end of the interval.
    pub ceilings: Ceilings,
    /// Smoothed RTT at the end (µs).
    pub srtt_us: u32,
    /// Minimum RTT (µs).
    pub min_rtt_us: u32,
    /// Standing queue: srtt - min_rtt (µs).
    pub queue_delay_us: u32,
    /// Segments retransmitted in the interval.
    pub retransmits: u32,
    /// Last delivery-rate sample (bits/s) and whether it was app-limited.
    pub delivery_rate_bps: u64,
    /// The last delivery-rate sample was application-limited.
    pub app_limited: bool,
    /// Peer's advertised window at the end (bytes).
    pub snd_wnd: u32,
    /// Congestion window at the end (segments) and MSS (bytes).
    pub snd_cwnd: u32,
    /// Sender MSS (bytes).
    pub mss: u32,
    /// Window this host advertised at the end (bytes).
    pub rcv_wnd: u32,
    /// RTT the receiver-side arithmetic uses (µs): the kernel's receiver
    /// estimate (`tcpi_rcv_rtt`), or srtt while it has none.
    pub receiver_rtt_us: u32,
}

fn bps(bytes: u64, us: u64) -> f64 {
    if us == 0 {
        0.0
    } else {
        bytes as f64 * 8e6 / us as f64
    }
}

impl Evidence {
    /// Computes the evidence for the interval `from`..`to`, or birth..`to`.
    pub fn between(from: Option<&Point>, to: &Point) -> Evidence {
        let zero;
        let (a, t0): (&Flow, u64) = match from {
            Some(p) => (&p.flow, p.at_ns),
            None => {
                zero = Flow::zero_like(&to.flow);
                (&zero, to.first_seen_ns)
            }
        };
        let b = &to.flow;
        let dt = to.at_ns.saturating_sub(t0) / 1000;
        let busy = b.busy_us.saturating_sub(a.busy_us).min(dt);
        let rwnd = b
            .rwnd_limited_us
            .saturating_sub(a.rwnd_limited_us)
            .min(busy);
        let sndbuf = b
            .sndbuf_limited_us
            .saturating_sub(a.sndbuf_limited_us)
            .min(busy - rwnd);
        let cwnd = b
            .cwnd_limited_us
            .saturating_sub(a.cwnd_limited_us)
            .min(busy - rwnd - sndbuf);
        let share = |x: u64| if dt == 0 { 0.0 } else { x as f64 / dt as f64 };
        let acked = b.bytes_acked.saturating_sub(a.bytes_acked);
        let received = b.bytes_received.saturating_sub(a.bytes_received);
        let srtt = f64::from(b.srtt_us);
        let per_rtt = |bytes: f64, rtt: f64| if rtt > 0.0 { bytes * 8e6 / rtt } else { 0.0 };
        let rcv_rtt = if b.rcv_rtt_us > 0 {
            b.rcv_rtt_us
        } else {
            b.srtt_us
        };
        Evidence {
            interval_us: dt,
            bytes_acked: acked,
            bytes_received: received,
            rate_bps: bps(acked, dt),
            recv_rate_bps: bps(received, dt),
            shares: Shares {
                rwnd_limited: share(rwnd),
                sndbuf_limited: share(sndbuf),
                cwnd_limited: share(cwnd),
                other_busy: share(busy - rwnd - sndbuf - cwnd),
                idle: share(dt - busy),
            },
            ceilings: Ceilings {
                rwnd_bps: per_rtt(f64::from(b.snd_wnd), srtt),
                cwnd_bps: per_rtt(f64::from(b.snd_cwnd) * f64::from(b.mss), srtt),
                rcv_wnd_bps: per_rtt(f64::from(b.rcv_wnd), f64::from(rcv_rtt)),
            },
            srtt_us: b.srtt_us,
            min_rtt_us: b.min_rtt_us,
            queue_delay_us: b.srtt_us.saturating_sub(b.min_rtt_us),
            retransmits: b.retransmits.saturating_sub(a.retransmits),
            delivery_rate_bps: b.delivery_rate_bps,
            app_limited: b.app_limited,
            snd_wnd: b.snd_wnd,
            snd_cwnd: b.snd_cwnd,
            mss: b.mss,
            rcv_wnd: b.rcv_wnd,
            receiver_rtt_us: rcv_rtt,
        }
    }

    /// Busy share of wall time.
    pub fn busy(&self) -> f64 {
        1.0 - self.shares.idle
    }

    /// A limited share as a fraction of busy time.
    pub fn of_busy(&self, share: f64) -> f64 {
        let busy = self.busy();
        if busy <= 0.0 { 0.0 } else { share / busy }
    }
}
