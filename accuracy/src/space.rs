//! The space of situations: what a situation is, and how one is drawn at
//! random from a seed, stratified by kind.
//!
//! Situation `i` of a run depends only on the seed, the congestion
//! control and `i` (never on `--n`), so a run can be extended or resumed
//! and a situation rebuilt from its three numbers. The ranges are
//! docs/accuracy.md's "The space"; each is a named constant here.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

/// Shortest base round trip drawn on an emulated path (µs).
pub const RTT_MIN_US: u64 = 1_000;
/// Longest base round trip drawn (µs).
pub const RTT_MAX_US: u64 = 400_000;
/// Slowest bottleneck drawn (bits/s of IP packet bytes).
pub const LINK_MIN_BPS: u64 = 500_000;
/// Fastest bottleneck drawn (bits/s): well inside the 300-600 Mbit/s
/// pathemu keeps time for with one flow.
pub const LINK_MAX_BPS: u64 = 200_000_000;
/// Largest bandwidth-delay product drawn (bytes), so that a run settles.
pub const BDP_MAX_BYTES: u64 = 4_000_000;
/// The bottleneck queue is drawn between these multiples of the BDP.
pub const QUEUE_BDP: (f64, f64) = (0.1, 4.0);
/// No queue or bucket holds fewer than two full packets (bytes).
pub const MIN_QUEUE_BYTES: u64 = 3_000;
/// Random loss is drawn in this range (probability per packet).
pub const LOSS_RANGE: (f64, f64) = (0.0001, 0.03);
/// A limit under test is drawn between these multiples of the path's
/// own ceiling, so that it is sometimes the tightest, sometimes matched
/// and sometimes not binding at all.
pub const LIMIT_SPREAD: (f64, f64) = (0.05, 3.0);
/// A policer's or shaper's rate is drawn between these multiples of the
/// link's, and never under [`LINK_MIN_BPS`]: it is the bottleneck then,
/// and below that a run moves too few packets to measure (seed 2, cubic
/// #2: a 141 kbit/s policer moved 72 packets in 6 s).
pub const STAGE_SPREAD: (f64, f64) = (0.05, 0.8);
/// A policer's bucket is drawn between these multiples of its rate x RTT.
pub const BUCKET_BDP: (f64, f64) = (0.1, 2.0);
/// No window, buffer or chunk is drawn under this (bytes): below it the
/// kernel's floors, not the setting, decide.
pub const MIN_WINDOW_BYTES: u64 = 16_384;
/// No send buffer is drawn to allow less in flight than this (bytes): a
/// write may overshoot a small `sk_sndbuf` by a whole skb (64 KB), so
/// below it the buffer's size is not what binds.
pub const MIN_FLIGHT_BYTES: u64 = 65_536;
/// A chunked writer's or reader's period is drawn in this range (ms).
pub const PERIOD_MS: (u64, u64) = (10, 200);
/// Objects of request/response and short transfers (bytes).
pub const OBJECT_BYTES: (u64, u64) = (65_536, 4_000_000);
/// Reordering: the share of packets held back, and by how long (ms).
pub const REORDER_SHARE: (f64, f64) = (0.01, 0.2);
/// Reordering delay range (ms).
pub const REORDER_MS: (u64, u64) = (2, 10);
/// Delay jitter range (ms), uniform per packet, order kept.
pub const JITTER_MS: (u64, u64) = (1, 10);
/// An outage lasts this long (ms) ...
pub const OUTAGE_FOR_MS: (u64, u64) = (300, 3_000);
/// ... once every this long (ms), at least twice its length.
pub const OUTAGE_EVERY_MS: (u64, u64) = (3_000, 10_000);
/// A PMTU black hole drops every IP packet over this many bytes.
pub const BLACKHOLE_BYTES: u32 = 1_300;
/// The rates of a LAN's end limits (bits/s), on a plain veth pair.
pub const LAN_RATE_BPS: (u64, u64) = (20_000_000, 1_000_000_000);
/// The transfer of one situation lasts at least this long (s) ...
pub const SECS_MIN: u64 = 6;
/// ... and at most this long (s).
pub const SECS_MAX: u64 = 20;

/// The congestion control of the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Cc {
    /// CUBIC (RFC 9438), loss-based.
    Cubic,
    /// BBR (v1 in Linux 6.x), model-based.
    Bbr,
}

impl Cc {
    /// The name the kernel knows it by (`TCP_CONGESTION`).
    pub const fn name(self) -> &'static str {
        match self {
            Cc::Cubic => "cubic",
            Cc::Bbr => "bbr",
        }
    }
}

/// The kind of a situation: which mechanism its draw puts on the path or
/// at an end. Every situation also has a bottleneck; the truth
/// (`crate::truth`) decides which limit is the tightest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A bottleneck and nothing else.
    Link,
    /// Random loss, forward or reverse.
    Loss,
    /// A rate limit in the network: a per-flow token-bucket policer, or
    /// a shaper (a second, slower rate stage with its own queue).
    RateLimit,
    /// The receiver's window: `tcp_rmem` max, `SO_RCVBUF` or `TCP_WINDOW_CLAMP`.
    Window,
    /// The sender's buffer: `tcp_wmem` max or `SO_SNDBUF`.
    SendBuffer,
    /// The writer: paced, chunks and sleeps, or `SO_MAX_PACING_RATE`.
    Writer,
    /// The reader: chunks and sleeps.
    Reader,
    /// Round trips: request/response, or a new connection per object.
    Rounds,
    /// A slow reverse direction whose queue holds the ACKs.
    AckPath,
    /// Reordering or delay jitter on the forward direction.
    Disorder,
    /// Outages (radio-like silences) or a PMTU black hole.
    Stall,
    /// A sub-millisecond path: a plain veth pair, with a limit at an end.
    Lan,
}

impl Kind {
    /// Every kind, in the order situations cycle through them.
    pub const ALL: [Kind; 12] = [
        Kind::Link,
        Kind::Loss,
        Kind::RateLimit,
        Kind::Window,
        Kind::SendBuffer,
        Kind::Writer,
        Kind::Reader,
        Kind::Rounds,
        Kind::AckPath,
        Kind::Disorder,
        Kind::Stall,
        Kind::Lan,
    ];

    /// The snake_case name, as in JSON.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Link => "link",
            Kind::Loss => "loss",
            Kind::RateLimit => "rate_limit",
            Kind::Window => "window",
            Kind::SendBuffer => "send_buffer",
            Kind::Writer => "writer",
            Kind::Reader => "reader",
            Kind::Rounds => "rounds",
            Kind::AckPath => "ack_path",
            Kind::Disorder => "disorder",
            Kind::Stall => "stall",
            Kind::Lan => "lan",
        }
    }
}

/// What limits the receiver's window, set in namespace B before the connection.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "by", content = "bytes")]
pub enum RcvLimit {
    /// `net.ipv4.tcp_rmem` max (bytes).
    RmemMax(u64),
    /// `SO_RCVBUF` on the listening socket (bytes; the kernel doubles it,
    /// capped at `net.core.rmem_max`), which locks the buffer.
    Rcvbuf(u64),
    /// `TCP_WINDOW_CLAMP` on the listening socket (bytes of window).
    Clamp(u64),
}

/// What limits the sender's buffer, set in namespace A.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "by", content = "bytes")]
pub enum SndLimit {
    /// `net.ipv4.tcp_wmem` max (bytes).
    WmemMax(u64),
    /// `SO_SNDBUF` on the sending socket (bytes; the kernel doubles it).
    Sndbuf(u64),
}

/// How the sending application writes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "as")]
pub enum Writer {
    /// As fast as the socket takes data.
    Bulk,
    /// Small writes every 10 ms at `bps` (bits/s of payload).
    Paced {
        /// The writer's rate (bits/s).
        bps: u64,
    },
    /// `bytes` at once, then a sleep, once every `period_ms`.
    Chunks {
        /// Bytes per write burst.
        bytes: u64,
        /// Period (ms).
        period_ms: u64,
    },
    /// Bulk writes on a socket with `SO_MAX_PACING_RATE` of `bps`
    /// (bits/s; the option takes bytes/s): TCP's internal pacing.
    MaxPacing {
        /// The pacing cap (bits/s).
        bps: u64,
    },
    /// Answers requests: the receiver asks for `bytes`, waits for all of
    /// them, asks again (one request outstanding, one connection).
    Requests {
        /// Object size (bytes).
        bytes: u64,
    },
    /// A new connection per object of `bytes`, one after the other.
    Short {
        /// Object size (bytes).
        bytes: u64,
    },
}

/// How the receiving application reads.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "as")]
pub enum Reader {
    /// As fast as data arrives.
    Continuous,
    /// At most `bytes` once every `period_ms`.
    Chunks {
        /// Bytes per read.
        bytes: u64,
        /// Period (ms).
        period_ms: u64,
    },
}

/// Reordering or jitter on the forward direction.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "as")]
pub enum Disorder {
    /// A share of packets held back by `delay_ms`.
    Reorder {
        /// Probability a packet is held back.
        share: f64,
        /// Extra delay of a held-back packet (ms).
        delay_ms: u64,
    },
    /// Each packet delayed by up to `ms` more, order kept.
    Jitter {
        /// Largest extra delay (ms).
        ms: u64,
    },
}

/// A stall on the path.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "as")]
pub enum Stall {
    /// Both directions dark for `for_ms` once every `every_ms`.
    Outage {
        /// Length of each outage (ms).
        for_ms: u64,
        /// Period (ms).
        every_ms: u64,
    },
    /// Forward IP packets over `bytes` dropped silently.
    BlackHole {
        /// The largest packet that passes (bytes).
        bytes: u32,
    },
}

/// One situation: a path, the settings of both ends and the traffic.
/// Rates are bits/s of IP packet bytes on the path, of payload at the ends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Situation {
    /// Its number within the run (the draw's input with the seed and cc).
    pub index: u32,
    /// The kind it was drawn as.
    pub kind: Kind,
    /// The sender's congestion control.
    pub cc: Cc,
    /// Base round trip (µs); 0 on a LAN (a veth pair: sub-millisecond).
    pub rtt_us: u64,
    /// Forward bottleneck (bits/s); 0 on a LAN.
    pub link_bps: u64,
    /// Its drop-tail queue (bytes).
    pub queue_bytes: u64,
    /// Random loss forward (data).
    pub loss_fwd: f64,
    /// Random loss reverse (ACKs).
    pub loss_rev: f64,
    /// A per-flow policer: (rate bits/s, bucket bytes).
    pub police: Option<(u64, u64)>,
    /// A shaper after the bottleneck: (rate bits/s, queue bytes).
    pub shaper: Option<(u64, u64)>,
    /// The reverse direction's rate and queue (bits/s, bytes), where slow.
    pub reverse: Option<(u64, u64)>,
    /// Reordering or jitter.
    pub disorder: Option<Disorder>,
    /// An outage or a black hole.
    pub stall: Option<Stall>,
    /// The receiver's window setting.
    pub rcv: Option<RcvLimit>,
    /// The sender's buffer setting.
    pub snd: Option<SndLimit>,
    /// The writer.
    pub writer: Writer,
    /// The reader.
    pub reader: Reader,
    /// Transfer length (s).
    pub secs: u64,
}

impl Situation {
    /// A bulk transfer of the shortest length over a path of (base RTT
    /// µs, bottleneck bits/s, queue bytes), with nothing else on it or
    /// at its ends: what each draw starts from.
    pub const fn bulk(
        index: u32,
        kind: Kind,
        cc: Cc,
        (rtt_us, link_bps, queue_bytes): (u64, u64, u64),
    ) -> Situation {
        Situation {
            index,
            kind,
            cc,
            rtt_us,
            link_bps,
            queue_bytes,
            loss_fwd: 0.0,
            loss_rev: 0.0,
            police: None,
            shaper: None,
            reverse: None,
            disorder: None,
            stall: None,
            rcv: None,
            snd: None,
            writer: Writer::Bulk,
            reader: Reader::Continuous,
            secs: SECS_MIN,
        }
    }
}

/// The generator of situation `index` of (`seed`, `cc`), and of the
/// choices made for it before any run (the counterfactual sample).
pub fn rng_for(seed: u64, cc: Cc, index: u32, stream: u64) -> Xoshiro256PlusPlus {
    // SplitMix-style mixing, so nearby seeds and indices give unrelated streams.
    let mut z = seed
        ^ (u64::from(index) << 20)
        ^ (stream << 52)
        ^ match cc {
            Cc::Cubic => 0x1C0B_1C00,
            Cc::Bbr => 0x0BB2_0000,
        };
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    Xoshiro256PlusPlus::seed_from_u64(z ^ (z >> 31))
}

/// A log-uniform draw in `[lo, hi]`.
fn log_uniform(rng: &mut Xoshiro256PlusPlus, lo: f64, hi: f64) -> f64 {
    (lo.ln() + rng.random::<f64>() * (hi.ln() - lo.ln())).exp()
}

fn log_u64(rng: &mut Xoshiro256PlusPlus, (lo, hi): (u64, u64)) -> u64 {
    log_uniform(rng, lo as f64, hi as f64).round() as u64
}

/// Bytes a rate of `bps` moves in `us` µs.
pub fn bytes_in(bps: f64, us: u64) -> f64 {
    bps / 8.0 * us as f64 / 1e6
}

/// Draws situation `index` of (`seed`, `cc`): its kind is
/// `Kind::ALL[index % 12]`, its figures come from its own generator.
pub fn draw(seed: u64, cc: Cc, index: u32) -> Situation {
    let kind = Kind::ALL[index as usize % Kind::ALL.len()];
    let mut r = rng_for(seed, cc, index, 0);
    let mut s = if kind == Kind::Lan {
        lan(&mut r, index, cc)
    } else {
        wan(&mut r, index, kind, cc)
    };
    s.secs = transfer_secs(&s);
    s
}

/// The base of every emulated situation: a bottleneck with a queue.
fn wan(r: &mut Xoshiro256PlusPlus, index: u32, kind: Kind, cc: Cc) -> Situation {
    let rtt_us = log_u64(r, (RTT_MIN_US, RTT_MAX_US));
    // The rate, capped so the BDP stays within BDP_MAX_BYTES.
    let cap = (BDP_MAX_BYTES as f64 * 8.0 / (rtt_us as f64 / 1e6)) as u64;
    let link_bps = log_u64(r, (LINK_MIN_BPS, LINK_MAX_BPS.min(cap).max(LINK_MIN_BPS)));
    let bdp = bytes_in(link_bps as f64, rtt_us);
    let queue_bytes =
        ((bdp * log_uniform(r, QUEUE_BDP.0, QUEUE_BDP.1)) as u64).max(MIN_QUEUE_BYTES);
    let mut s = Situation::bulk(index, kind, cc, (rtt_us, link_bps, queue_bytes));
    let goodput = crate::stack::goodput(link_bps as f64);
    let spread = |r: &mut Xoshiro256PlusPlus| log_uniform(r, LIMIT_SPREAD.0, LIMIT_SPREAD.1);
    match kind {
        Kind::Link | Kind::Lan => {}
        Kind::Loss => {
            let p = log_uniform(r, LOSS_RANGE.0, LOSS_RANGE.1);
            // One in three lossy paths loses ACKs instead of data.
            if r.random::<f64>() < 1.0 / 3.0 {
                s.loss_rev = p;
            } else {
                s.loss_fwd = p;
            }
        }
        Kind::RateLimit => {
            let bps = ((link_bps as f64 * log_uniform(r, STAGE_SPREAD.0, STAGE_SPREAD.1)) as u64)
                .max(LINK_MIN_BPS);
            let bdp = bytes_in(bps as f64, rtt_us);
            if r.random::<bool>() {
                let bucket = bdp * log_uniform(r, BUCKET_BDP.0, BUCKET_BDP.1);
                s.police = Some((bps, (bucket as u64).max(MIN_QUEUE_BYTES)));
            } else {
                let q = bdp * log_uniform(r, QUEUE_BDP.0, QUEUE_BDP.1);
                s.shaper = Some((bps, (q as u64).max(MIN_QUEUE_BYTES)));
            }
        }
        Kind::Window => {
            let window = (bdp * spread(r)).max(MIN_WINDOW_BYTES as f64);
            // `TCP_WINDOW_CLAMP` is not drawn: set on the listener, it gave
            // the connection window scale 0, and autotuning lifted the clamp
            // to 64 KB (seed 1, cubic #15: a 30 KB clamp ran at 65.2 KB).
            // The truth has no rule for that yet.
            s.rcv = Some(if r.random::<bool>() {
                RcvLimit::RmemMax(crate::stack::rmem_for_window(window))
            } else {
                RcvLimit::Rcvbuf(crate::stack::rcvbuf_for_window(window))
            });
        }
        Kind::SendBuffer => {
            let flight = (bdp * spread(r)).max(MIN_FLIGHT_BYTES as f64);
            s.snd = Some(if r.random::<bool>() {
                SndLimit::WmemMax(crate::stack::wmem_for_flight(flight))
            } else {
                SndLimit::Sndbuf(crate::stack::sndbuf_for_flight(flight))
            });
        }
        Kind::Writer => {
            let bps = (goodput * spread(r)) as u64;
            s.writer = match r.random_range(0..3u32) {
                0 => Writer::Paced { bps },
                1 => {
                    let period_ms = log_u64(r, PERIOD_MS);
                    let bytes = (bytes_in(bps as f64, period_ms * 1000) as u64).max(1448);
                    Writer::Chunks { bytes, period_ms }
                }
                _ => Writer::MaxPacing { bps },
            };
        }
        Kind::Reader => {
            let bps = goodput * spread(r);
            let period_ms = log_u64(r, PERIOD_MS);
            let bytes = (bytes_in(bps, period_ms * 1000) as u64).max(4096);
            s.reader = Reader::Chunks { bytes, period_ms };
        }
        Kind::Rounds => {
            let bytes = log_u64(r, OBJECT_BYTES);
            s.writer = if r.random::<bool>() {
                Writer::Requests { bytes }
            } else {
                Writer::Short { bytes }
            };
        }
        Kind::AckPath => {
            // The reverse rate whose ACKs (one per two segments) carry a
            // drawn share of the forward goodput; a queue of 64 ACKs.
            let acked_bps = goodput * spread(r);
            let rev = crate::stack::reverse_for_acked(acked_bps);
            s.reverse = Some((rev, 64 * crate::stack::ACK_BYTES));
        }
        Kind::Disorder => {
            s.disorder = Some(if r.random::<bool>() {
                Disorder::Reorder {
                    share: log_uniform(r, REORDER_SHARE.0, REORDER_SHARE.1),
                    delay_ms: r.random_range(REORDER_MS.0..=REORDER_MS.1),
                }
            } else {
                Disorder::Jitter {
                    ms: r.random_range(JITTER_MS.0..=JITTER_MS.1),
                }
            });
        }
        Kind::Stall => {
            s.stall = Some(if r.random::<bool>() {
                let every_ms = r.random_range(OUTAGE_EVERY_MS.0..=OUTAGE_EVERY_MS.1);
                let for_ms = r
                    .random_range(OUTAGE_FOR_MS.0..=OUTAGE_FOR_MS.1)
                    .min(every_ms / 2);
                Stall::Outage { for_ms, every_ms }
            } else {
                Stall::BlackHole {
                    bytes: BLACKHOLE_BYTES,
                }
            });
        }
    }
    s
}

/// A sub-millisecond path: no emulated link, an end limit drawn.
fn lan(r: &mut Xoshiro256PlusPlus, index: u32, cc: Cc) -> Situation {
    let bps = log_u64(r, LAN_RATE_BPS);
    let mut s = Situation::bulk(index, Kind::Lan, cc, (0, 0, 0));
    match r.random_range(0..3u32) {
        0 => s.writer = Writer::Paced { bps },
        1 => s.writer = Writer::MaxPacing { bps },
        _ => {
            let period_ms = log_u64(r, (PERIOD_MS.0, PERIOD_MS.1 / 4));
            let bytes = (bytes_in(bps as f64, period_ms * 1000) as u64).max(4096);
            s.reader = Reader::Chunks { bytes, period_ms };
        }
    }
    s
}

/// How long the transfer runs (s): slow start twice over, then 30 round
/// trips, within [`SECS_MIN`]..=[`SECS_MAX`].
fn transfer_secs(s: &Situation) -> u64 {
    let rtt = s.rtt_us as f64 / 1e6;
    let bdp = bytes_in(s.link_bps as f64, s.rtt_us);
    let rounds = (bdp / (10.0 * crate::stack::MSS as f64))
        .max(1.0)
        .log2()
        .ceil();
    let secs = 2.0 + 2.0 * rounds * rtt + 30.0 * rtt;
    (secs.ceil() as u64).clamp(SECS_MIN, SECS_MAX)
}
