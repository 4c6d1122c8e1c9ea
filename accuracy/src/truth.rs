//! The truth, by construction: every ceiling a situation's parameters
//! set, the tightest, and the verdicts each end should give.
//!
//! The formulas are docs/accuracy.md's "The truth"; they were written
//! before anything was measured, and each constant here names what it
//! stands for and where it was measured. Rates are bits/s of TCP payload
//! (goodput), so that a link's rate (IP bytes) and an application's
//! (payload bytes) compare.

use observer::attribution::Verdict;
use serde::Serialize;

use crate::objects::{Fetch, objects_goodput};
use crate::sawtooth::{Pipe, cubic_goodput};
use crate::space::{Cc, Disorder, RcvLimit, Reader, Situation, SndLimit, Stall, Writer};
use crate::stack::{
    ACK_BYTES, CUBIC_BETA, CUBIC_C, FLIGHT_PER_SNDBUF, MSS, PACKET_BYTES, RCV_WINDOW_PER_BUFFER,
    SEGMENTS_PER_ACK, SOCKOPT_BUF_MAX, TCP_RMEM, TCP_WMEM, goodput,
};

/// What the host moves over a veth pair with observer attached (bits/s
/// of payload): a LAN situation's path ceiling, an estimate to be
/// measured once LAN situations run.
pub const HOST_BPS: f64 = 5e9;
/// Slow start is a ceiling of its own where it keeps a bulk flow under
/// this share of the slowest stage's rate over the transfer, and CUBIC's
/// sawtooth in the queue where it keeps it under this share of what slow
/// start allows (above it, the next limit binds).
pub const RAMP_SHORTFALL: f64 = 0.9;
/// A situation is clear when its tightest ceiling is below this share of
/// the next.
pub const CLEAR_RATIO: f64 = 0.5;

/// What sets a ceiling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// The bottleneck's rate.
    Link,
    /// CUBIC's sawtooth in a drop-tail queue too shallow to keep the link
    /// busy (`crate::sawtooth`), or, for objects, the drops of bursts the
    /// queue cannot hold (`crate::objects`).
    Queue,
    /// A shaper's rate.
    Shaper,
    /// A policer's rate.
    Policer,
    /// CUBIC's response to random loss.
    Loss,
    /// The receiver's window as set (`tcp_rmem`, `SO_RCVBUF`, clamp).
    Window,
    /// The receiver's window at the default `tcp_rmem` max.
    DefaultWindow,
    /// The sender's buffer as set.
    SendBuffer,
    /// The sender's buffer at the default `tcp_wmem` max.
    DefaultSendBuffer,
    /// The writer's rate (paced or chunked).
    Writer,
    /// `SO_MAX_PACING_RATE`.
    Pacing,
    /// The reader's rate.
    Reader,
    /// One request outstanding: an object per round trip.
    Requests,
    /// Slow start: of a new connection per object, or of a bulk transfer
    /// too short for its path (`crate::sawtooth` with no queue limit).
    SlowStart,
    /// ACKs clocked by a slow reverse direction.
    AckPath,
    /// Outages.
    Outage,
    /// A PMTU black hole.
    BlackHole,
    /// The host's own capacity on a LAN.
    Host,
}

impl Limit {
    /// The verdicts a sending end and a receiving end may give when this
    /// limit binds (docs/accuracy.md's mapping table, which follows
    /// docs/attribution.md's pairing table). Empty: no verdict is defined
    /// for it (the host's CPU), and the situation goes unscored.
    pub fn expected(self) -> (&'static [Verdict], &'static [Verdict]) {
        use Verdict::*;
        match self {
            Limit::Link | Limit::Shaper | Limit::AckPath | Limit::Outage | Limit::BlackHole => {
                (&[Path], &[Path])
            }
            Limit::Policer | Limit::Queue => (&[Path, CongestionWindow], &[Path, CongestionWindow]),
            Limit::Loss | Limit::SlowStart => (&[CongestionWindow], &[CongestionWindow]),
            Limit::Window | Limit::DefaultWindow => (&[ReceiveWindow], &[ReceiveWindow]),
            Limit::SendBuffer | Limit::DefaultSendBuffer => (&[SendBuffer], &[Sender]),
            Limit::Writer | Limit::Pacing => (&[Application], &[Sender]),
            Limit::Reader => (&[ReceiveWindow], &[ReceiverApplication]),
            Limit::Requests => (&[Application], &[ReceiverApplication]),
            Limit::Host => (&[], &[]),
        }
    }
}

/// One ceiling: what sets it and the rate it allows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ceiling {
    /// What sets it.
    pub limit: Limit,
    /// The rate it allows (bits/s of payload).
    pub bps: f64,
}

/// A situation's truth.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Truth {
    /// Every ceiling, tightest first.
    pub ceilings: Vec<Ceiling>,
    /// Whether the tightest is below [`CLEAR_RATIO`] of the next.
    pub clear: bool,
    /// Verdicts that count as right at the sending end.
    pub sender: Vec<Verdict>,
    /// Verdicts that count as right at the receiving end.
    pub receiver: Vec<Verdict>,
}

impl Truth {
    /// The tightest ceiling.
    pub fn tightest(&self) -> &Ceiling {
        &self.ceilings[0]
    }

    /// The second tightest, where there is one.
    pub fn next(&self) -> Option<&Ceiling> {
        self.ceilings.get(1)
    }

    /// Whether a verdict is defined for this situation's limit(s).
    pub fn scorable(&self) -> bool {
        !self.sender.is_empty() && !self.receiver.is_empty()
    }
}

/// The round trip a window waits (s): the base RTT and one full packet's
/// serialisation at the slowest rate stage.
fn window_rtt(s: &Situation) -> f64 {
    let slowest = match s.shaper {
        Some((bps, _)) => bps.min(s.link_bps),
        None => s.link_bps,
    };
    s.rtt_us as f64 / 1e6 + (PACKET_BYTES * 8) as f64 / slowest.max(1) as f64
}

/// CUBIC's mean window under random loss `p` at round trip `rtt` (s), in
/// segments: RFC 9438's response function, or its Reno-friendly region
/// where that is larger (section 5.2, with alpha = 3(1-beta)/(1+beta)).
pub fn cubic_window(p: f64, rtt: f64) -> f64 {
    let cubic = (CUBIC_C * (3.0 + CUBIC_BETA) / (4.0 * (1.0 - CUBIC_BETA))).powf(0.25)
        * rtt.powf(0.75)
        / p.powf(0.75);
    let alpha = 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA);
    let reno = (alpha * (1.0 + CUBIC_BETA) / (2.0 * (1.0 - CUBIC_BETA) * p)).sqrt();
    cubic.max(reno)
}

/// Every ceiling `s` sets (unsorted).
pub fn ceilings(s: &Situation) -> Vec<Ceiling> {
    let mut v = Vec::new();
    let mut add = |limit, bps: f64| v.push(Ceiling { limit, bps });
    if s.link_bps == 0 {
        add(Limit::Host, HOST_BPS);
    } else {
        let link = goodput(s.link_bps as f64);
        add(Limit::Link, link);

        let rtt = window_rtt(s);
        // The default maximum binds only where the situation sets none.
        if matches!(s.rcv, None | Some(RcvLimit::Clamp(_))) {
            add(
                Limit::DefaultWindow,
                TCP_RMEM[2] as f64 * RCV_WINDOW_PER_BUFFER * 8.0 / rtt,
            );
        }
        if s.snd.is_none() {
            add(
                Limit::DefaultSendBuffer,
                TCP_WMEM[2] as f64 * FLIGHT_PER_SNDBUF * 8.0 / rtt,
            );
        }
        if let Some((bps, _)) = s.shaper {
            add(Limit::Shaper, goodput(bps as f64));
        }
        if let Some((bps, _)) = s.police {
            add(Limit::Policer, goodput(bps as f64));
        }
        if s.cc == Cc::Cubic && s.loss_fwd > 0.0 {
            let w = cubic_window(s.loss_fwd, rtt);
            add(Limit::Loss, w * (MSS * 8) as f64 / rtt);
        }
        if let Some(window) = s.rcv.map(window_bytes) {
            add(Limit::Window, window * 8.0 / rtt);
        }
        if let Some(flight) = s.snd.map(flight_bytes) {
            add(Limit::SendBuffer, flight * 8.0 / rtt);
        }
        if let Some((bps, _)) = s.reverse {
            let acks = bps as f64 / (8 * ACK_BYTES) as f64;
            add(Limit::AckPath, acks * (SEGMENTS_PER_ACK * MSS * 8) as f64);
        }
        match s.stall {
            Some(Stall::Outage { for_ms, every_ms }) => add(
                Limit::Outage,
                goodput(s.link_bps as f64) * (1.0 - for_ms as f64 / every_ms as f64),
            ),
            Some(Stall::BlackHole { .. }) => add(Limit::BlackHole, 0.0),
            None => {}
        }
        // An object takes its round trips, on this path's queue, plus its
        // time through the link (`crate::objects`).
        let pipe = Pipe {
            rate_bps: s.link_bps as f64,
            rtt_s: s.rtt_us as f64 / 1e6,
            queue_bytes: s.queue_bytes as f64,
            secs: s.secs as f64,
        };
        let objects = match s.writer {
            Writer::Requests { bytes } => Some((Limit::Requests, bytes, Fetch::Requests)),
            Writer::Short { bytes } => Some((Limit::SlowStart, bytes, Fetch::Connections)),
            _ => None,
        };
        if let Some((limit, bytes, fetch)) = objects {
            // Their round trips in a queue that drops nothing; and, for
            // CUBIC, with the drops of bursts this queue cannot hold: the
            // queue's own ceiling where it costs the objects more than
            // [`RAMP_SHORTFALL`] leaves them.
            let alone = objects_goodput(pipe, bytes, fetch, false);
            add(limit, alone);
            if s.cc == Cc::Cubic {
                let dropped = objects_goodput(pipe, bytes, fetch, true);
                if dropped < RAMP_SHORTFALL * alone {
                    add(Limit::Queue, dropped);
                }
            }
        }
    }
    match s.writer {
        Writer::Paced { bps } => add(Limit::Writer, bps as f64),
        Writer::Chunks { bytes, period_ms } => {
            add(Limit::Writer, (bytes * 8) as f64 / (period_ms as f64 / 1e3));
        }
        Writer::MaxPacing { bps } => add(Limit::Pacing, bps as f64),
        Writer::Bulk | Writer::Requests { .. } | Writer::Short { .. } => {}
    }
    if let Reader::Chunks { bytes, period_ms } = s.reader {
        add(Limit::Reader, (bytes * 8) as f64 / (period_ms as f64 / 1e3));
    }
    if s.link_bps > 0 {
        ramp_and_sawtooth(s, &mut v);
    }
    // Reordering and jitter set no ceiling of their own: the verdict
    // follows whatever binds (the counterfactual checks that they do not).
    let _: Option<Disorder> = s.disorder;
    v
}

/// Adds slow start and CUBIC's sawtooth to `v`: what a bulk flow
/// averages over the transfer ramping up to the slowest stage's rate (a
/// ceiling where under [`RAMP_SHORTFALL`] of that rate), and what CUBIC
/// averages in that stage's queue (where under that share of the ramp).
/// Each is what the flow would reach were every lower limit relaxed.
fn ramp_and_sawtooth(s: &Situation, v: &mut Vec<Ceiling>) {
    // The slowest stage: its rate, and the queue that fills there (a
    // policer's bucket, which holds a burst as a queue would, but drops
    // what overflows it without delaying the rest).
    let mut stages = vec![(s.link_bps, s.queue_bytes)];
    stages.extend(s.shaper);
    stages.extend(s.police);
    let (rate, queue_bytes) = stages
        .into_iter()
        .min_by_key(|(bps, _)| *bps)
        .unwrap_or((s.link_bps, s.queue_bytes));
    let stage = goodput(rate as f64);
    let pipe = Pipe {
        rate_bps: rate as f64,
        rtt_s: s.rtt_us as f64 / 1e6,
        queue_bytes: f64::INFINITY,
        secs: s.secs as f64,
    };
    // A bulk flow's slow start (BBR's startup doubles as fast), where the
    // transfer is too short for the path to forget it. Measured against
    // the stage, not the tightest ceiling: relaxing a lower one leaves
    // the flow this ramp.
    let ramp = cubic_goodput(pipe);
    if matches!(s.writer, Writer::Bulk) && ramp < RAMP_SHORTFALL * stage {
        v.push(Ceiling {
            limit: Limit::SlowStart,
            bps: ramp,
        });
    }
    // Objects meet the queue as bursts, not as a sawtooth (above).
    let objects = matches!(s.writer, Writer::Requests { .. } | Writer::Short { .. });
    if s.cc == Cc::Cubic && !objects {
        let sawtooth = cubic_goodput(Pipe {
            queue_bytes: queue_bytes as f64,
            ..pipe
        });
        if sawtooth < RAMP_SHORTFALL * ramp {
            v.push(Ceiling {
                limit: Limit::Queue,
                bps: sawtooth,
            });
        }
    }
}

/// The window (bytes) a receiver setting allows.
pub fn window_bytes(l: RcvLimit) -> f64 {
    match l {
        RcvLimit::RmemMax(b) => b as f64 * RCV_WINDOW_PER_BUFFER,
        RcvLimit::Rcvbuf(b) => (2 * b.min(SOCKOPT_BUF_MAX)) as f64 * RCV_WINDOW_PER_BUFFER,
        RcvLimit::Clamp(b) => b as f64,
    }
}

/// The bytes in flight (bytes) a sender setting allows.
pub fn flight_bytes(l: SndLimit) -> f64 {
    match l {
        SndLimit::WmemMax(b) => b as f64 * FLIGHT_PER_SNDBUF,
        SndLimit::Sndbuf(b) => (2 * b.min(SOCKOPT_BUF_MAX)) as f64 * FLIGHT_PER_SNDBUF,
    }
}

/// The truth of `s`: its ceilings sorted, whether it is clear, and the
/// verdicts that count as right at each end (those of the tightest, and
/// of the next where the situation is matched).
pub fn truth(s: &Situation) -> Truth {
    let mut ceilings = ceilings(s);
    ceilings.sort_by(|a, b| a.bps.total_cmp(&b.bps));
    let clear = match ceilings.get(1) {
        Some(next) => ceilings[0].bps < CLEAR_RATIO * next.bps,
        None => true,
    };
    let (mut sender, mut receiver): (Vec<Verdict>, Vec<Verdict>) = {
        let (a, b) = ceilings[0].limit.expected();
        (a.to_vec(), b.to_vec())
    };
    if !clear && let Some(next) = ceilings.get(1) {
        let (a, b) = next.limit.expected();
        if a.is_empty() || b.is_empty() || sender.is_empty() {
            sender.clear();
            receiver.clear();
        } else {
            sender.extend(a.iter().filter(|v| !sender.contains(v)).collect::<Vec<_>>());
            receiver.extend(
                b.iter()
                    .filter(|v| !receiver.contains(v))
                    .collect::<Vec<_>>(),
            );
        }
    }
    Truth {
        ceilings,
        clear,
        sender,
        receiver,
    }
}
