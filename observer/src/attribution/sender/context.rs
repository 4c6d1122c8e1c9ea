//! What the sender's rules read, computed once per judgement from the
//! interval's evidence: the shares of busy time, the rate against each
//! ceiling, the standing queue and whether the path shows itself full.

use crate::{
    attribution::{
        config::Config, evidence::Evidence, rule::queue_confidence, whatif::full_through_queue,
    },
    model::flow::Flow,
};

/// The sender's view of one interval. Rates are bits/s, times µs, shares
/// 0 to 1 of busy time unless named otherwise.
pub struct SenderCtx<'a> {
    /// The interval's figures.
    pub ev: &'a Evidence,
    /// The flow at the interval's end (its buffer settings, its congestion
    /// control).
    pub flow: &'a Flow,
    /// The thresholds.
    pub cfg: &'a Config,
    /// Delivery rate over the interval (bytes acked; bits/s).
    pub rate: f64,
    /// rwnd-limited share of busy time.
    pub rwnd: f64,
    /// sndbuf-limited share of busy time (the kernel's clock or observer's,
    /// the larger).
    pub sndbuf: f64,
    /// cwnd-limited share of busy time.
    pub cwnd: f64,
    /// Nothing was acked or received in the interval.
    pub nothing_moved: bool,
    /// Application-limited delivery samples over at least
    /// `cfg.app_limited_share` of the interval, for a congestion control
    /// other than BBR (which marks its own ProbeRTT samples app-limited,
    /// `bbr_update_min_rtt()`, net/ipv4/tcp_bbr.c).
    pub app_mark: bool,
    /// A standing queue: srtt - min_rtt above `cfg.queue_fraction` of
    /// min_rtt and above `cfg.queue_floor_us`, or above that fraction
    /// alone where segments were lost at `cfg.steady_loss_share` or more.
    pub queued: bool,
    /// The path shows itself full: segments were retransmitted, or the
    /// flow runs while busy at `cfg.at_ceiling` of the best delivery-rate
    /// sample it has recently shown, or no sample comparable with the
    /// interval was kept (the queue alone decides then).
    pub at_path: bool,
    /// The best recent delivery-rate sample (bits/s; 0: none kept).
    pub shown: f64,
    /// The flow runs, while busy, at `cfg.at_ceiling` or more of the best
    /// recent sample, and the interval is short enough to compare with it:
    /// a plateau at what the path carries for it.
    pub plateau: bool,
    /// The flow runs, while busy, at `cfg.drops_plateau` or more of the
    /// best recent sample (a comparable interval): near the rate a limit
    /// that drops lets through, a cut by its drops included.
    pub near_shown: bool,
    /// Confidence of a full bottleneck: it grows with the share of srtt
    /// queued ([`queue_confidence`]).
    pub path_confidence: f64,
    /// With a queue the path holds ([`SenderCtx::full_queue`]): the send
    /// buffer's ceiling at min_rtt where it is full only through that
    /// queue (`whatif::full_through_queue`).
    pub buffer_at_base: Option<f64>,
    /// With a queue the path holds: the peer window's ceiling at min_rtt
    /// where it is full only through that queue.
    pub window_at_base: Option<f64>,
    /// The rate at `cfg.at_ceiling` or more of the rwnd ceiling.
    pub at_rwnd: bool,
    /// The rate at `cfg.at_ceiling` or more of the cwnd ceiling, not
    /// app-limited.
    pub at_cwnd: bool,
    /// The rate within `cfg.max_fill` of the rwnd ceiling (or none known).
    pub rwnd_within: bool,
    /// The rate within `cfg.max_fill` of the cwnd ceiling (or none known).
    pub cwnd_within: bool,
    /// The lower of the rwnd and cwnd ceilings that are known (bits/s;
    /// infinite when neither is).
    pub lowest: f64,
    /// The path's round trip without a queue (µs): min_rtt, or srtt where
    /// the kernel has none; intervals are counted in these.
    pub path_rtt: f64,
    /// The congestion control paces by a model of the path (BBR): its cwnd
    /// is a cap of twice its estimate, its app-limited marks include its
    /// own ProbeRTT, and loss does not set its rate.
    pub model_based: bool,
    /// The kernel's pacing rate at the interval's end (bits/s; 0: not
    /// paced).
    pub pacing: f64,
    /// The application's pacing cap, where the kernel paces at it
    /// (`Flow::max_pacing_rate_bps`, bits/s): the pacing rate at least
    /// `cfg.at_ceiling` of the cap. `sk_pacing_rate` never exceeds
    /// `sk_max_pacing_rate` (net/ipv4/tcp_output.c, `tcp_update_pacing_rate()`
    /// and the congestion controls' own, as `SO_MAX_PACING_RATE` clamps them).
    pub pacing_cap: Option<f64>,
    /// Share of the segments sent in the interval that were retransmitted
    /// (0 to 1).
    pub loss_share: f64,
    /// The rate a loss-based sender reaches at `loss_share` if its losses
    /// were isolated, one cwnd cut each (bits/s; infinite without loss):
    /// MSS x 8 / RTT x sqrt(3 / (2 p)) (Mathis et al., 1997).
    pub isolated_loss_rate: f64,
}

/// The share of the segments sent in `ev` that were retransmitted, and
/// the rate a loss-based sender reaches at that share if its losses were
/// isolated, over a path of round trip `path_rtt` (µs): the context's
/// `loss_share` and `isolated_loss_rate`.
fn losses(ev: &Evidence, path_rtt: f64) -> (f64, f64) {
    let sent = ev.bytes_acked as f64 / f64::from(ev.mss.max(1)) + f64::from(ev.retransmits);
    let loss_share = if sent > 0.0 {
        f64::from(ev.retransmits) / sent
    } else {
        0.0
    };
    let isolated_loss_rate = if loss_share > 0.0 && path_rtt > 0.0 {
        f64::from(ev.mss) * 8e6 / path_rtt * (1.5 / loss_share).sqrt()
    } else {
        f64::INFINITY
    };
    (loss_share, isolated_loss_rate)
}

impl<'a> SenderCtx<'a> {
    /// The context of `ev` for `flow` under `cfg`.
    pub fn new(ev: &'a Evidence, flow: &'a Flow, cfg: &'a Config) -> SenderCtx<'a> {
        let s = &ev.shares;
        let c = &ev.ceilings;
        let rate = ev.rate_bps;
        let near = |ceiling: f64| ceiling > 0.0 && rate >= cfg.at_ceiling * ceiling;
        let within = |ceiling: f64| ceiling <= 0.0 || rate <= cfg.max_fill * ceiling;
        let model_based = flow.cc.starts_with("bbr");
        let app_mark = ev.app_limited_share >= cfg.app_limited_share && !model_based;
        let queue = f64::from(ev.queue_delay_us);
        let min_rtt = f64::from(ev.min_rtt_us);
        let path_rtt = if ev.min_rtt_us > 0 {
            min_rtt
        } else {
            f64::from(ev.srtt_us)
        };
        let (loss_share, isolated_loss_rate) = losses(ev, path_rtt);
        // The floor keeps a short path's jitter from reading as a queue;
        // drops at a steady share are what jitter does not make, so with
        // them the queue's share of min_rtt alone counts (a shallow queue
        // on a 2 ms path stands under the floor while it overflows).
        let queued = queue > (cfg.queue_fraction * min_rtt).max(cfg.queue_floor_us as f64)
            || (loss_share >= cfg.steady_loss_share && queue > cfg.queue_fraction * min_rtt);
        // A queue alone is not a full bottleneck: a flow that bursts
        // queues briefly at a link it uses a fraction of. The best sample
        // covers the last one to two seconds; over a longer interval (a
        // life verdict), or with none kept (helper reads), the queue
        // alone decides.
        let shown = ev.delivery_rate_max_bps as f64;
        let busy_rate = rate / ev.busy().max(1e-9);
        let comparable = shown > 0.0 && ev.interval_us <= cfg.shown_span_us;
        let plateau = comparable && busy_rate >= cfg.at_ceiling * shown;
        let near_shown = comparable && busy_rate >= cfg.drops_plateau * shown;
        let at_path = !comparable || plateau || ev.retransmits > 0;
        let through_queue = |bytes: f64| {
            (queued && at_path)
                .then(|| full_through_queue(bytes, min_rtt, rate, cfg))
                .flatten()
        };
        let lowest = [c.rwnd_bps, c.cwnd_bps]
            .into_iter()
            .filter(|x| *x > 0.0)
            .fold(f64::INFINITY, f64::min);
        SenderCtx {
            ev,
            flow,
            cfg,
            rate,
            rwnd: ev.of_busy(s.rwnd_limited),
            sndbuf: ev.of_busy(s.sndbuf_limited),
            cwnd: ev.of_busy(s.cwnd_limited),
            nothing_moved: ev.bytes_acked == 0 && ev.bytes_received == 0,
            app_mark,
            queued,
            at_path,
            shown,
            plateau,
            near_shown,
            path_confidence: queue_confidence(
                queue,
                f64::from(ev.srtt_us.max(1)),
                cfg.confidence_floor,
            ),
            buffer_at_base: through_queue(f64::from(flow.sndbuf)),
            window_at_base: through_queue(f64::from(ev.snd_wnd)),
            at_rwnd: near(c.rwnd_bps),
            at_cwnd: near(c.cwnd_bps) && !app_mark,
            rwnd_within: within(c.rwnd_bps),
            cwnd_within: within(c.cwnd_bps),
            lowest,
            path_rtt,
            model_based,
            pacing: flow.pacing_rate_bps.unwrap_or(0) as f64,
            pacing_cap: flow.max_pacing_rate_bps.map(|b| b as f64).filter(|&cap| {
                flow.pacing_rate_bps
                    .is_some_and(|p| p as f64 >= cfg.at_ceiling * cap)
            }),
            loss_share,
            isolated_loss_rate,
        }
    }

    /// Application-limited delivery samples over at least
    /// `cfg.app_limited_share` of the interval, whatever the congestion
    /// control (`app_mark` leaves BBR out).
    pub fn app_limited(&self) -> bool {
        self.ev.app_limited_share >= self.cfg.app_limited_share
    }

    /// A ceiling (bits/s) near enough the rate to bind: at most
    /// `cfg.bind_factor` times it. A window that would allow many times
    /// the rate holds nothing back.
    pub fn binds(&self, ceiling: f64) -> bool {
        ceiling > 0.0 && ceiling <= self.cfg.bind_factor * self.rate
    }

    /// A standing queue the path can hold: a queue stands and the path
    /// shows itself full (`at_path`). A flow far below what the path has
    /// carried for it cannot keep a queue there: its srtt is stretched by
    /// something else, such as late ACKs from a peer whose reader lags.
    pub fn full_queue(&self) -> bool {
        self.queued && self.at_path
    }

    /// The peer's window binds by the clocks (rwnd-limited for a
    /// significant share, no less than cwnd-limited), or by the rate at
    /// its ceiling while the cwnd held the flow under `cfg.cwnd_share` of
    /// busy time.
    pub fn rwnd_binds(&self) -> bool {
        let cfg = self.cfg;
        (self.rwnd >= cfg.significant_share && self.rwnd >= self.cwnd)
            || (self.at_rwnd && self.cwnd < cfg.cwnd_share)
    }

    /// The congestion window binds: cwnd-limited `cfg.cwnd_share` of busy
    /// time or more, or the rate at its ceiling (not app-limited).
    pub fn cwnd_binds(&self) -> bool {
        self.cwnd >= self.cfg.cwnd_share || self.at_cwnd
    }

    /// The send buffer binds by the clocks: sndbuf-limited for a
    /// significant share, no less than rwnd-limited.
    pub fn sndbuf_binds(&self) -> bool {
        self.sndbuf >= self.cfg.significant_share && self.sndbuf >= self.rwnd
    }
}
