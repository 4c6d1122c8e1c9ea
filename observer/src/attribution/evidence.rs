//! The figures a verdict rests on, computed between two points of a flow.

use serde::Serialize;

use super::point::Point;
use crate::model::flow::Flow;

/// Shares of the interval's wall time (each 0 to 1; they sum to 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Shares {
    /// Busy and blocked by the peer's receive window (`tcpi_rwnd_limited`).
    pub rwnd_limited: f64,
    /// Busy and blocked by the send buffer: `tcpi_sndbuf_limited`, or
    /// observer's own measure where larger (the writer waiting for space
    /// with everything sent and the cwnd open; `Flow::sndbuf_full_us`).
    pub sndbuf_limited: f64,
    /// Busy with the congestion window full (in-flight >= cwnd), and not
    /// counted above.
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

/// What the receiving end measured over an interval: the time-weighted
/// means of the kernel's integrals (see [`crate::model::integrals::Integrals`]) and
/// the shares of time the window was closed or the sender paused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Receive {
    /// Time-weighted mean of the advertised window (bytes).
    pub rcv_wnd_mean: f64,
    /// Time-weighted mean of the receiver RTT estimate (µs); srtt, then
    /// min_rtt, where the kernel has none.
    pub rtt_mean_us: f64,
    /// The path's RTT without a queue (µs): the smaller of min_rtt (the
    /// handshake and any ACKed data) and the lowest receiver RTT seen.
    pub base_rtt_us: u32,
    /// Receive rate x mean RTT (bytes): what the sender keeps in flight,
    /// as seen from here.
    pub in_flight_bytes: f64,
    /// `in_flight_bytes` / `rcv_wnd_mean`: 1 when the sender fills the window.
    pub window_fill: f64,
    /// Time-weighted mean of the unread bytes (bytes).
    pub unread_mean: f64,
    /// Share of the interval with the window closed or nearly so (0 to 1).
    pub closed_share: f64,
    /// Times the reader caught up with data waiting unread, in the
    /// interval (count; `Flow::reader_drains`).
    pub reader_drains: u32,
    /// Share of the interval in arrival gaps over 10 ms (0 to 1): the sender
    /// sent nothing then.
    pub gap_share: f64,
    /// Mean length of those gaps (µs; 0 when none ended in the interval):
    /// a sender held by its congestion window waits about a round trip
    /// for ACKs, one that waits longer waits for data or a timer.
    pub mean_gap_us: f64,
    /// Gaps that ended in the interval (count; `Flow::rx_gaps`).
    pub gaps: u32,
    /// Share of the interval in those gaps with the window shut by the
    /// reader (0 to 1, at most `gap_share`; `Flow::rx_gap_shut_us`): the
    /// part of the sender's silence the reader imposed.
    pub gap_shut_share: f64,
    /// Share of the interval in gaps during which this host sent data (0
    /// to 1, at most `gap_share`; `Flow::rx_gap_asked_us`): the sender may
    /// have waited for this host's next request.
    pub gap_asked_share: f64,
    /// Share of the interval in gaps with the window open and nothing
    /// asked of the sender (0 to 1): `gap_share` less its shut and asked
    /// parts, and less the part of a gap that ended in the interval but
    /// began before it (counted whole where it ends).
    pub own_gap_share: f64,
    /// Out-of-order arrivals in the interval (segments).
    pub ooo_packets: u32,
    /// Segments with payload received in the interval.
    pub data_segments: u32,
    /// Seconds since out-of-order arrivals last grew, at the interval's end
    /// (None: never seen).
    pub since_ooo_s: Option<f64>,
    /// Mean receiver RTT above the base RTT (µs): a queue in the path, or a
    /// sender that holds data back.
    pub queue_delay_us: u32,
    /// Rate within bursts (bits/s): segments that arrived at least twice as
    /// fast as the flow's mean spacing; an estimate of the bottleneck's
    /// rate. 0 when none did (the flow arrives evenly).
    pub burst_rate_bps: f64,
    /// Share of the received bytes that arrived in bursts (0 to 1).
    pub burst_share: f64,
    /// Receive rate / burst rate: how much of the bottleneck the flow uses
    /// (0 to 1; 1 when it arrives evenly).
    pub path_use: f64,
}

impl Receive {
    /// Whether the reader shut the window for `min_share` of the interval
    /// or more (`Config::significant_share`): a reader verdict then rests
    /// on that closed time, not on the window's ceiling.
    pub fn reader_shut(&self, min_share: f64) -> bool {
        self.closed_share >= min_share
    }

    /// Share of the interval `interval_us` (µs) the sender paused with
    /// room to send and nothing asked of it (0 to 1): `own_gap_share`,
    /// less a round trip of `round_us` (µs) for each gap, as room the
    /// reader makes reaches the sender and comes back as data a round trip
    /// later. What of its silence is the sender's own.
    pub fn own_pause_share(&self, interval_us: u64, round_us: f64) -> f64 {
        let interval = interval_us.max(1) as f64;
        (self.own_gap_share - f64::from(self.gaps) * round_us / interval).max(0.0)
    }

    /// What the path has shown this download can carry (bits/s; 0: not
    /// known): the rate within its bursts, where at least `min_share` of
    /// its bytes came in them (`Config::shown_burst_share`); else 0, as a
    /// few compressed arrivals are the host's batching, not the link.
    pub fn shown_bps(&self, min_share: f64) -> f64 {
        if self.burst_share >= min_share {
            self.burst_rate_bps
        } else {
            0.0
        }
    }
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
    /// Window ceilings over the interval (from the means below).
    pub ceilings: Ceilings,
    /// Smoothed RTT, time-weighted over the interval (µs); the last
    /// reading where the interval covers no sampled time.
    pub srtt_us: u32,
    /// Minimum RTT (µs).
    pub min_rtt_us: u32,
    /// Standing queue: mean srtt - min_rtt (µs).
    pub queue_delay_us: u32,
    /// Segments retransmitted in the interval.
    pub retransmits: u32,
    /// Last delivery-rate sample (bits/s) and whether it was app-limited.
    pub delivery_rate_bps: u64,
    /// The last delivery-rate sample was application-limited.
    pub app_limited: bool,
    /// Share of the interval whose latest delivery-rate sample was
    /// application-limited (0 to 1; `Flow::app_limited_us`).
    pub app_limited_share: f64,
    /// The fastest delivery-rate sample of the last two seconds
    /// at the interval's end (bits/s; 0: none kept): what the path has
    /// recently shown the flow can carry.
    pub delivery_rate_max_bps: u64,
    /// Peer's advertised window, time-weighted over the interval (bytes).
    pub snd_wnd: u32,
    /// Congestion window, time-weighted over the interval (segments).
    pub snd_cwnd: u32,
    /// Sender MSS (bytes).
    pub mss: u32,
    /// Window this host advertised at the end (bytes).
    pub rcv_wnd: u32,
    /// RTT the receiver-side arithmetic uses (µs): the mean of the kernel's
    /// receiver estimate (`tcpi_rcv_rtt`), or srtt while it has none.
    pub receiver_rtt_us: u32,
    /// The receiving end's figures.
    pub receive: Receive,
}

fn bps(bytes: u64, us: u64) -> f64 {
    if us == 0 {
        0.0
    } else {
        bytes as f64 * 8e6 / us as f64
    }
}

/// Time-weighted mean of an integral between two readings, or `fallback`
/// when they cover no time.
fn mean(a: u64, b: u64, a_us: u64, b_us: u64, fallback: f64) -> f64 {
    let us = b_us.wrapping_sub(a_us);
    if us == 0 || us > 1 << 62 {
        fallback
    } else {
        b.wrapping_sub(a) as f64 / us as f64
    }
}

/// The receiving end's figures between flows `a` and `b`, `dt` µs apart,
/// the interval ending at monotonic `end_ns`, receiving at `rate` bits/s.
fn receive(a: &Flow, b: &Flow, dt: u64, end_ns: u64, rate: f64) -> Receive {
    let gap = Gaps::between(a, b, end_ns.saturating_sub(dt * 1000));
    let (ia, ib) = (&a.integrals, &b.integrals);
    let bursts = Bursts::between(a, b, rate);
    let rcv_wnd_mean = mean(ia.rcv_wnd, ib.rcv_wnd, ia.us, ib.us, f64::from(b.rcv_wnd));
    let rtt_now = [b.rcv_rtt_us, b.srtt_us, b.min_rtt_us]
        .into_iter()
        .find(|r| *r > 0)
        .unwrap_or(0);
    let rtt_mean_us = mean(
        ia.rcv_rtt,
        ib.rcv_rtt,
        ia.rcv_rtt_us,
        ib.rcv_rtt_us,
        f64::from(rtt_now),
    );
    let base_rtt_us = [b.min_rtt_us, b.rcv_rtt_min_us]
        .into_iter()
        .filter(|r| *r > 0)
        .min()
        .unwrap_or(0);
    let in_flight_bytes = rate * rtt_mean_us / 8e6;
    let share = |x: u64| {
        if dt == 0 {
            0.0
        } else {
            (x as f64 / dt as f64).min(1.0)
        }
    };
    Receive {
        rcv_wnd_mean,
        rtt_mean_us,
        base_rtt_us,
        in_flight_bytes,
        window_fill: if rcv_wnd_mean > 0.0 {
            in_flight_bytes / rcv_wnd_mean
        } else {
            0.0
        },
        unread_mean: mean(
            ia.unread,
            ib.unread,
            ia.us,
            ib.us,
            f64::from(b.unread_bytes),
        ),
        closed_share: share(b.rwnd_closed_us.saturating_sub(a.rwnd_closed_us)),
        reader_drains: b.reader_drains.wrapping_sub(a.reader_drains),
        gap_share: share(b.rx_gap_us.saturating_sub(a.rx_gap_us)),
        mean_gap_us: match b.rx_gaps.wrapping_sub(a.rx_gaps) {
            0 => 0.0,
            n => b.rx_gap_us.saturating_sub(a.rx_gap_us) as f64 / f64::from(n),
        },
        gaps: b.rx_gaps.wrapping_sub(a.rx_gaps),
        gap_shut_share: share(gap.shut_us),
        gap_asked_share: share(gap.asked_us),
        own_gap_share: share(gap.own_us),
        ooo_packets: b.rcv_ooopack.saturating_sub(a.rcv_ooopack),
        data_segments: b.data_segs_in.wrapping_sub(a.data_segs_in),
        since_ooo_s: (b.last_ooo_ns != 0)
            .then(|| end_ns.saturating_sub(b.last_ooo_ns) as f64 / 1e9),
        queue_delay_us: (rtt_mean_us - f64::from(base_rtt_us)).max(0.0).round() as u32,
        burst_rate_bps: bursts.rate_bps,
        burst_share: bursts.share,
        path_use: bursts.path_use,
    }
}

/// The bytes that arrived in bursts between flows `a` and `b`: their
/// rate, their share of what arrived, and how much of that rate the
/// flow's own (`rate`, bits/s) used (`Receive::burst_rate_bps`,
/// `burst_share`, `path_use`).
struct Bursts {
    rate_bps: f64,
    share: f64,
    path_use: f64,
}

impl Bursts {
    fn between(a: &Flow, b: &Flow, rate: f64) -> Bursts {
        let (ia, ib) = (&a.integrals, &b.integrals);
        let received = b.bytes_received.saturating_sub(a.bytes_received);
        let bytes = ib.burst_bytes.saturating_sub(ia.burst_bytes);
        let ns = ib.burst_ns.saturating_sub(ia.burst_ns);
        let rate_bps = if ns == 0 {
            0.0
        } else {
            bytes as f64 * 8e9 / ns as f64
        };
        Bursts {
            rate_bps,
            share: if received == 0 {
                0.0
            } else {
                (bytes as f64 / received as f64).min(1.0)
            },
            path_use: if rate_bps > 0.0 {
                (rate / rate_bps).min(1.0)
            } else {
                1.0
            },
        }
    }
}

/// The arrival gaps of an interval, split by who the sender waited on
/// (µs).
struct Gaps {
    /// With the window shut by the reader.
    shut_us: u64,
    /// In gaps during which this host sent data.
    asked_us: u64,
    /// With the window open and nothing asked: the sender's own.
    own_us: u64,
}

impl Gaps {
    /// The gaps that ended between `a` and `b`, the interval starting at
    /// `start_ns` (monotonic ns). A gap running at the start is counted
    /// whole where it ends; its part before the start (from `a`'s last
    /// arrival, with the closed time since) is taken off the own time,
    /// which an over-count there can only shorten.
    fn between(a: &Flow, b: &Flow, start_ns: u64) -> Gaps {
        let gap_us = b.rx_gap_us.saturating_sub(a.rx_gap_us);
        let shut_us = b
            .rx_gap_shut_us
            .saturating_sub(a.rx_gap_shut_us)
            .min(gap_us);
        let asked_us = b
            .rx_gap_asked_us
            .saturating_sub(a.rx_gap_asked_us)
            .min(gap_us);
        let running = b.rx_gaps != a.rx_gaps && a.last_rx_ns != 0 && start_ns > a.last_rx_ns;
        let (before_us, shut_before_us) = if running {
            (
                (start_ns - a.last_rx_ns) / 1000,
                a.rwnd_closed_us.saturating_sub(a.rx_shut_mark_us),
            )
        } else {
            (0, 0)
        };
        Gaps {
            shut_us,
            asked_us,
            own_us: gap_us
                .saturating_sub(before_us)
                .saturating_sub(shut_us.saturating_sub(shut_before_us))
                .saturating_sub(asked_us),
        }
    }
}

/// Where a flow's time went over an interval (µs), as the sender's
/// figures split it: the kernel's rwnd- and sndbuf-limited clocks,
/// cwnd-limited time, the rest of busy time, and idle time. The five sum
/// to the interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LimitedTime {
    /// Stalled on the peer's receive window (`tcpi_rwnd_limited`).
    pub rwnd_us: u64,
    /// Stalled on the send buffer (`tcpi_sndbuf_limited`).
    pub sndbuf_us: u64,
    /// Busy with in-flight at the congestion window.
    pub cwnd_us: u64,
    /// Busy otherwise (pacing, a full bottleneck).
    pub other_busy_us: u64,
    /// Idle: nothing to send.
    pub idle_us: u64,
}

impl LimitedTime {
    /// The interval of `ev` split by its shares.
    pub fn of(ev: &Evidence) -> LimitedTime {
        let us = |share: f64| (share * ev.interval_us as f64).round() as u64;
        let s = &ev.shares;
        LimitedTime {
            rwnd_us: us(s.rwnd_limited),
            sndbuf_us: us(s.sndbuf_limited),
            cwnd_us: us(s.cwnd_limited),
            other_busy_us: us(s.other_busy),
            idle_us: us(s.idle),
        }
    }

    /// Adds `other`, saturating.
    pub fn add(&mut self, other: &LimitedTime) {
        self.rwnd_us = self.rwnd_us.saturating_add(other.rwnd_us);
        self.sndbuf_us = self.sndbuf_us.saturating_add(other.sndbuf_us);
        self.cwnd_us = self.cwnd_us.saturating_add(other.cwnd_us);
        self.other_busy_us = self.other_busy_us.saturating_add(other.other_busy_us);
        self.idle_us = self.idle_us.saturating_add(other.idle_us);
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
        // The kernel's clock, or observer's own test where it saw more (the
        // kernel's never starts for a sender that moves in bursts); the two
        // describe the same state, so the larger counts, not the sum.
        let sndbuf = b
            .sndbuf_limited_us
            .saturating_sub(a.sndbuf_limited_us)
            .max(b.sndbuf_full_us.saturating_sub(a.sndbuf_full_us))
            .min(busy - rwnd);
        let cwnd = b
            .cwnd_limited_us
            .saturating_sub(a.cwnd_limited_us)
            .min(busy - rwnd - sndbuf);
        let share = |x: u64| if dt == 0 { 0.0 } else { x as f64 / dt as f64 };
        let acked = b.bytes_acked.saturating_sub(a.bytes_acked);
        let received = b.bytes_received.saturating_sub(a.bytes_received);
        // Time-weighted means: a window or RTT read at the interval's last
        // instant (a BBR ProbeRTT, a window closing as a reader stops) must
        // not describe the whole interval.
        let (ia, ib) = (&a.integrals, &b.integrals);
        let srtt = mean(ia.srtt, ib.srtt, ia.us, ib.us, f64::from(b.srtt_us));
        let snd_wnd = mean(ia.snd_wnd, ib.snd_wnd, ia.us, ib.us, f64::from(b.snd_wnd));
        let cwnd_mean = mean(ia.cwnd, ib.cwnd, ia.us, ib.us, f64::from(b.snd_cwnd));
        let per_rtt = |bytes: f64, rtt: f64| if rtt > 0.0 { bytes * 8e6 / rtt } else { 0.0 };
        let rx = receive(a, b, dt, to.at_ns, bps(received, dt));
        let rcv_rtt = rx.rtt_mean_us.round() as u32;
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
                rwnd_bps: per_rtt(snd_wnd, srtt),
                cwnd_bps: per_rtt(cwnd_mean * f64::from(b.mss), srtt),
                rcv_wnd_bps: per_rtt(rx.rcv_wnd_mean, rx.rtt_mean_us),
            },
            srtt_us: srtt.round() as u32,
            min_rtt_us: b.min_rtt_us,
            queue_delay_us: (srtt.round() as u32).saturating_sub(b.min_rtt_us),
            retransmits: b.retransmits.saturating_sub(a.retransmits),
            delivery_rate_bps: b.delivery_rate_bps,
            app_limited: b.app_limited,
            app_limited_share: share(b.app_limited_us.saturating_sub(a.app_limited_us).min(dt)),
            delivery_rate_max_bps: b.delivery_rate_max_bps,
            snd_wnd: snd_wnd.round() as u32,
            snd_cwnd: cwnd_mean.round() as u32,
            mss: b.mss,
            rcv_wnd: b.rcv_wnd,
            receiver_rtt_us: rcv_rtt,
            receive: rx,
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
