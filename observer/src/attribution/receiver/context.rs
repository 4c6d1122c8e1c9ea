//! What the receiver's rules read, computed once per judgement: the
//! interval in round trips of the path, the reader's lag, the window's
//! fill, the queue, and how the sender paused and what it lost.

use crate::{
    attribution::{
        config::Config,
        evidence::{Evidence, Receive},
        rule::queue_confidence,
        whatif::full_through_queue,
    },
    model::flow::Flow,
};

/// The tick of the TCP timestamp clock (µs): `TCP_TS_HZ` is 1000
/// (include/net/tcp.h), and the receiver's RTT from timestamps
/// (`tcp_rcv_rtt_measure_ts`, net/ipv4/tcp_input.c) moves in whole ticks
/// unless the route asks for microsecond timestamps.
const TS_TICK_US: u64 = 1_000;

/// The MSS assumed where the peer's is not yet known (bytes): RFC 1122's
/// default, `TCP_MSS_DEFAULT` (include/net/tcp.h).
const DEFAULT_MSS: u32 = 536;

/// The receiver's view of one interval. Rates are bits/s, times µs.
pub struct ReceiverCtx<'a> {
    /// The interval's figures.
    pub ev: &'a Evidence,
    /// The receiving end's figures.
    pub rx: &'a Receive,
    /// The flow at the interval's end (its buffer settings).
    pub flow: &'a Flow,
    /// The thresholds.
    pub cfg: &'a Config,
    /// Receive rate (bits/s).
    pub rate: f64,
    /// Mean receiver RTT (µs).
    pub rtt: f64,
    /// The path's own round trip (µs): the base RTT where known, else the
    /// mean, so a deep queue does not make every interval too short.
    pub path_rtt: f64,
    /// The interval in round trips of the path.
    pub rtts: f64,
    /// The interval in rounds the samples can resolve: the flow's round
    /// trips with their queue (the mean receiver RTT, at least the
    /// path's), or sampling grains where those are longer (a LAN's 0.15 ms
    /// round trip is shorter than the 4 ms a reader's catch-ups can be
    /// counted in).
    pub rounds: f64,
    /// The length of one of those rounds (µs).
    pub round_us: f64,
    /// This host's window ceiling is near enough the rate to bind (at most
    /// `cfg.bind_factor` times it).
    pub window_binds: bool,
    /// The window sat closed for a significant share of the interval.
    pub closed: bool,
    /// The reader keeps more waiting than the path holds in flight (and
    /// half the window), or as much as the window, or lags throughout
    /// (`lagging`).
    pub waiting: bool,
    /// A standing queue: the mean receiver RTT above the base by
    /// `cfg.queue_fraction` of it and `cfg.queue_floor_us`, with the
    /// sender not holding data (`holds`), which stretches that RTT too.
    pub queued: bool,
    /// The sender held data: arrival gaps longer than the round trip with
    /// its queue (the mean receiver RTT), which no queue can make, for
    /// `cfg.hold_share` of a loss-free interval or more, on a path shorter
    /// than a timestamp tick (`TS_TICK_US`).
    pub holds: bool,
    /// Confidence of a full bottleneck ([`queue_confidence`]).
    pub path_confidence: f64,
    /// With a queue standing and the sender not pausing: the window's
    /// ceiling at the base RTT where the window is full only through the
    /// queue (`whatif::full_through_queue`).
    pub queue_only: Option<f64>,
    /// Share of the interval the sender paused with room to send, a round
    /// trip of the flow allowed for each pause to answer the reader
    /// (`Receive::own_pause_share`; 0 to 1).
    pub own_pause: f64,
    /// The sender's own pauses (`own_pause`) fill `cfg.sender_gap_share`
    /// of the interval or more, and more of it than the reader kept the
    /// window shut: the flow stood still longer for the sender than for
    /// the reader, so the reader is not what it waited for.
    pub sender_outwaits: bool,
    /// Arrival gaps for `cfg.sender_gap_share` of the interval or more,
    /// each on average at least `cfg.pause_rtts` round trips of the path,
    /// or together `cfg.silent_share` of it.
    pub paused: bool,
    /// A share of the bytes in bursts, at a rate the flow uses under
    /// `cfg.at_ceiling` of.
    pub bursty: bool,
    /// The arrival gaps are a slow link's spacing of full-sized segments,
    /// not the sender's pauses (`link_paced`): neither `paused` nor
    /// `own_pause` counts them.
    pub link_paced: bool,
    /// The longest mean pause of a sender that waits for ACKs (µs).
    pub ack_wait_us: f64,
    /// The sender's pauses are no longer than `ack_wait_us` on average.
    pub acked_pauses: bool,
    /// Loss recent and repeated enough to hold the sender's cwnd down.
    pub recent_loss: bool,
}

impl<'a> ReceiverCtx<'a> {
    /// The context of `ev` for `flow` under `cfg`.
    pub fn new(ev: &'a Evidence, flow: &'a Flow, cfg: &'a Config) -> ReceiverCtx<'a> {
        let rx = &ev.receive;
        let rate = ev.recv_rate_bps;
        let rtt = rx.rtt_mean_us;
        let path_rtt = if rx.base_rtt_us > 0 {
            f64::from(rx.base_rtt_us)
        } else {
            rtt
        };
        let rtts = ev.interval_us as f64 / path_rtt.max(1.0);
        // The reader's rounds are the flow's round trips with their queue:
        // a window the reader opens reaches the sender and comes back as
        // data one of those later, so behind an 80 ms queue on a 20 ms
        // path a reader 40 ms behind is under half a round behind.
        let resolved = Rounds::new(ev.interval_us, rtt.max(path_rtt), cfg);
        let waiting = rx.unread_mean >= rx.rcv_wnd_mean
            || (rx.unread_mean >= rx.in_flight_bytes
                && rx.unread_mean >= cfg.reader_window_share * rx.rcv_wnd_mean)
            || lagging(rx, rate, resolved, cfg);
        let ceiling = ev.ceilings.rcv_wnd_bps;
        let window_binds = ceiling > 0.0 && ceiling <= cfg.bind_factor * rate;
        // A sender that lost segments stops longer than a round trip with
        // data to send (a retransmission timeout, BBR's ProbeRTT after
        // loss); only a loss-free interval shows the gaps were held data.
        // And only on a path shorter than a timestamp tick: there the
        // receiver's RTT is the tick plus what the sender held, while on
        // a longer path each hold stretches one sample of many and a
        // queue the estimate shows is one (a sender holding 2 MB chunks
        // 300 ms beside a bulk flow through a 20 Mbit/s link with 80 ms
        // of queue is at the shared link 86% of the time).
        let holds = rx.base_rtt_us > 0
            && u64::from(rx.base_rtt_us) < TS_TICK_US
            && rx.ooo_packets == 0
            && rx.gap_share >= cfg.hold_share
            && rx.mean_gap_us > rtt;
        let queued = !holds && queue_stands(rx, cfg);
        let queue_only = (queued && rx.base_rtt_us > 0 && rx.gap_share < cfg.sender_gap_share)
            .then(|| full_through_queue(rx.rcv_wnd_mean, path_rtt, rate, cfg))
            .flatten();
        let pauses = Pauses::new(ev, flow, (path_rtt, rtt), cfg);
        ReceiverCtx {
            ev,
            rx,
            flow,
            cfg,
            rate,
            rtt,
            path_rtt,
            rtts,
            rounds: resolved.count,
            round_us: resolved.length_us,
            window_binds,
            closed: rx.reader_shut(cfg.significant_share),
            waiting,
            queued,
            holds,
            path_confidence: queue_confidence(
                f64::from(rx.queue_delay_us),
                rtt.max(1.0),
                cfg.confidence_floor,
            ),
            queue_only,
            own_pause: pauses.own,
            sender_outwaits: pauses.own >= cfg.sender_gap_share && pauses.own > rx.closed_share,
            paused: pauses.paused,
            bursty: pauses.bursty,
            link_paced: pauses.link_paced,
            ack_wait_us: pauses.ack_wait_us,
            acked_pauses: pauses.acked,
            recent_loss: recent_loss(
                rx,
                Pausing {
                    paused: pauses.paused,
                    acked_pauses: pauses.acked,
                },
                path_rtt,
                f64::from(flow.rcv_mss.max(DEFAULT_MSS)),
                cfg,
            ),
        }
    }

    /// The sender waited for this host's requests: the gaps in which this
    /// host sent data (`gap_asked_share`) fill `cfg.sender_gap_share` of
    /// the interval and `cfg.asked_gap_share` of its gaps, and last on
    /// average at most `cfg.answer_rtts` round trips of the flow (the
    /// request's way there and the answer's back, not the peer's own
    /// time). The requests themselves are data this host sent: some of
    /// it was acknowledged in the interval. Not where the gaps are a slow
    /// link's pace.
    pub fn waits_on_requests(&self) -> bool {
        let rx = self.rx;
        !self.link_paced
            && self.ev.bytes_acked > 0
            && rx.gap_asked_share >= self.cfg.sender_gap_share
            && rx.gap_asked_share >= self.cfg.asked_gap_share * rx.gap_share
            && rx.mean_gap_us <= self.cfg.answer_rtts * self.rtt.max(self.path_rtt)
    }

    /// The reader holds the window: closed by unread data, or waiting
    /// data of at least `cfg.reader_min_segments` of the peer's segments
    /// with the window near enough the rate to bind (a buffer that absorbs
    /// the reader's stalls leaves the sender a window it never fills).
    pub fn reader_lags(&self) -> bool {
        let mss = f64::from(self.flow.rcv_mss.max(DEFAULT_MSS));
        (self.closed && self.rx.unread_mean > 0.0)
            || (self.waiting
                && self.window_binds
                && self.rx.unread_mean >= self.cfg.reader_min_segments * mss)
    }
}

/// How the sender paused over an interval, as the arrival gaps show it.
struct Pauses {
    /// [`ReceiverCtx::paused`].
    paused: bool,
    /// [`ReceiverCtx::bursty`].
    bursty: bool,
    /// [`ReceiverCtx::link_paced`].
    link_paced: bool,
    /// [`ReceiverCtx::own_pause`].
    own: f64,
    /// [`ReceiverCtx::ack_wait_us`].
    ack_wait_us: f64,
    /// [`ReceiverCtx::acked_pauses`].
    acked: bool,
}

impl Pauses {
    /// The pauses of `ev` for `flow`, on a path whose own round trip is
    /// `path_rtt` and the flow's, with its queue, `rtt` (µs).
    fn new(ev: &Evidence, flow: &Flow, (path_rtt, rtt): (f64, f64), cfg: &Config) -> Pauses {
        let rx = &ev.receive;
        // Gaps (over 10 ms) count as the sender's pauses when they last a
        // good part of a round trip, or fill most of the interval: at
        // 300 ms, 40 ms gaps between a BBR sender's paced bursts a third
        // of the time are within its round trip, not pauses; a cubic
        // sender held to 11 segments a round trip is silent 94% of it,
        // whatever the gaps' length. A gap still running at the interval's
        // end (none ended) counts. A slow link's spacing does not.
        let long_gaps = rx.mean_gap_us == 0.0
            || rx.mean_gap_us >= cfg.pause_rtts * path_rtt
            || rx.gap_share >= cfg.silent_share;
        // The path must show itself full: by its drops, and by a queue of
        // a good part of a gap, as each packet of a busy link waits behind
        // the one before it. A sender that paces a small window over a
        // long round trip (CUBIC held to 11 segments on a 300 ms tunnel
        // with random loss) spaces its segments as a slow link would, but
        // leaves no such queue. Neither alone: each of a paced writer's
        // pauses stretches the receiver's RTT sample it falls in, by
        // about a gap. A queue of several gaps is packets in line, which
        // no pause makes: that shows a busy link without drops, or ACKs
        // that wait on a slow way back and clock the sender at their pace.
        let queue_gaps = f64::from(rx.queue_delay_us) / rx.mean_gap_us.max(1.0);
        let witnessed = (rx.ooo_packets > 0 && queue_gaps >= cfg.link_paced_queue_gaps)
            || queue_gaps >= cfg.link_paced_queue_alone_gaps;
        let link_paced =
            witnessed && link_paced(rx, (ev.bytes_received, ev.recv_rate_bps), flow.rcv_mss, cfg);
        // Pauses no longer than a few round trips of the path, or than a
        // retransmission timeout and a round trip: what a sender waiting
        // for ACKs shows. The timeout floor also keeps short paths
        // judgeable: only gaps over 10 ms are counted, which is many
        // round trips of a LAN.
        let ack_wait_us = (cfg.ack_wait_rtts * path_rtt).max(cfg.rto_min_us as f64 + path_rtt);
        Pauses {
            paused: !link_paced && rx.gap_share >= cfg.sender_gap_share && long_gaps,
            bursty: rx.burst_share >= cfg.sender_gap_share && rx.path_use < cfg.at_ceiling,
            link_paced,
            own: if link_paced {
                0.0
            } else {
                rx.own_pause_share(ev.interval_us, rtt.max(path_rtt))
            },
            ack_wait_us,
            acked: rx.mean_gap_us <= ack_wait_us,
        }
    }
}

/// Whether the mean receiver RTT of `rx` stands above its base by
/// `cfg.queue_fraction` of it and `cfg.queue_floor_us`.
fn queue_stands(rx: &Receive, cfg: &Config) -> bool {
    f64::from(rx.queue_delay_us)
        > (cfg.queue_fraction * f64::from(rx.base_rtt_us)).max(cfg.queue_floor_us as f64)
}

/// Whether the arrival gaps of `rx` have the shape of a slow link's
/// spacing: the mean gap lasts at most `cfg.link_paced_segments` times
/// the time a full-sized segment takes at the flow's own rate (`rate`,
/// bits/s), and the segments are
/// full-sized (`cfg.full_segment_share` of `mss`, the peer's MSS in
/// bytes, over the `bytes` received). A link under about 1.2 Mbit/s takes
/// longer than a counted gap (10 ms) to carry one 1,500-byte packet, so
/// nearly every segment follows a counted gap; near that rate only the
/// spacings that run over 10 ms are counted, each no longer than a few
/// segments' time, while a sender that pauses sends a window's or a
/// write's worth after each gap, which lasts as long as that took at the
/// flow's rate. An application that writes a segment's worth at a time
/// (or whose small writes Nagle gathers), or a sender that paces a small
/// window over a long round trip, has the same shape: the caller asks
/// also that the path show itself busy, by its drops and a queue, or by a
/// queue of several gaps.
fn link_paced(rx: &Receive, (bytes, rate): (u64, f64), mss: u32, cfg: &Config) -> bool {
    let segments = f64::from(rx.data_segments);
    let segment_us = f64::from(mss) * 8.0 / rate.max(1.0) * 1e6;
    rx.gaps > 0
        && mss > 0
        && rx.mean_gap_us <= cfg.link_paced_segments * segment_us
        && bytes as f64 >= cfg.full_segment_share * f64::from(mss) * segments
}

/// An interval counted in rounds the samples can resolve: round trips of
/// the flow (with their queue), or sampling grains where those are longer.
#[derive(Clone, Copy, Debug)]
struct Rounds {
    /// One round (µs).
    length_us: f64,
    /// The interval in rounds.
    count: f64,
}

impl Rounds {
    /// The rounds of an interval of `interval_us` for a flow whose round
    /// trip is `rtt_us` (µs), under `cfg.sample_grain_us`.
    fn new(interval_us: u64, rtt_us: f64, cfg: &Config) -> Rounds {
        let length_us = rtt_us.max(cfg.sample_grain_us as f64).max(1.0);
        Rounds {
            length_us,
            count: interval_us as f64 / length_us,
        }
    }
}

/// Whether the reader lagged the network all through an interval of
/// `rounds`, receiving `rate` (bits/s): a good share of the window waited
/// unread (`reader_unread_share`) and the reader seldom or never read all
/// that was waiting (`reader_drain_rtts`), or it was behind by half a
/// round or more (`reader_lag_rounds`) and caught up at most once in a few
/// (`reader_lag_drain_rtts`). A reader that keeps up catches up each time
/// the sender pauses, at least once a round trip; one that is the slowest
/// stage reads a full buffer each time and leaves as much behind, and
/// catches up only where its sender slows below it (a BBR sender paced at
/// its rate, once in a ProbeBW cycle).
fn lagging(rx: &Receive, rate: f64, rounds: Rounds, cfg: &Config) -> bool {
    if rounds.count < cfg.reader_drain_rtts
        || rx.unread_mean < cfg.reader_unread_share * rx.rcv_wnd_mean
    {
        return false;
    }
    let drains = f64::from(rx.reader_drains);
    let lag_rounds = rx.unread_mean * 8.0 / rate.max(1.0) * 1e6 / rounds.length_us;
    drains * cfg.reader_drain_rtts <= rounds.count
        || (lag_rounds >= cfg.reader_lag_rounds
            && drains * cfg.reader_lag_drain_rtts <= rounds.count)
}

/// How the sender paused over the interval, as [`ReceiverCtx`] reads it.
#[derive(Clone, Copy, Debug)]
struct Pausing {
    /// It paused ([`ReceiverCtx::paused`]).
    paused: bool,
    /// Its pauses were no longer than a wait for ACKs
    /// ([`ReceiverCtx::acked_pauses`]).
    acked_pauses: bool,
}

/// Whether out-of-order arrivals (loss upstream) are recent enough to
/// still hold the sender's congestion window down. A sender that pauses
/// most of the time has a window far below the path's; without frequent
/// loss it would regrow within a few round trips, so only loss in the last
/// `loss_memory_paused_s` (or `loss_memory_paused_rtts` round trips of the
/// path, `path_rtt_us`, where longer) counts for it, even within the
/// interval, and only
/// when its pauses are round-trip sized (`acked_pauses`): a sender held by
/// its window sends it, then waits about a round trip for the ACKs. A
/// window cut by loss and spread over the round trip (bursts, few pauses)
/// is held while it regrows: `loss_memory_rtts_per_segment` round trips of
/// the path (`path_rtt_us`) per segment in flight (`mss` bytes), at least
/// `loss_memory_paused_rtts` rounds a sample can resolve, at most
/// `loss_memory_s`. `path_rtt_us` is the path's round trip (µs), `mss`
/// the peer's segment size (bytes).
fn recent_loss(
    rx: &Receive,
    Pausing {
        paused,
        acked_pauses,
    }: Pausing,
    path_rtt_us: f64,
    mss: f64,
    cfg: &Config,
) -> bool {
    if paused {
        // Not "any loss in the interval": a startup overshoot a second
        // before an application-paced stretch does not hold it back, nor
        // does one reordered segment in tens of thousands, nor loss in the
        // bursts of a sender that then waits a second for its application.
        // Loss that keeps a window small is fresh and repeated.
        let repeated = rx.ooo_packets >= 2
            && f64::from(rx.ooo_packets) >= cfg.loss_share_paused * f64::from(rx.data_segments);
        let memory_s = cfg
            .loss_memory_paused_s
            .max(cfg.loss_memory_paused_rtts * path_rtt_us / 1e6);
        return acked_pauses && repeated && rx.since_ooo_s.is_some_and(|s| s <= memory_s);
    }
    let regrow_us = cfg.loss_memory_rtts_per_segment * (rx.in_flight_bytes / mss) * path_rtt_us;
    let floor_us = cfg.loss_memory_paused_rtts * path_rtt_us.max(cfg.sample_grain_us as f64);
    let memory_s = (regrow_us.max(floor_us) / 1e6).min(cfg.loss_memory_s);
    rx.since_ooo_s.is_some_and(|s| s <= memory_s)
}
