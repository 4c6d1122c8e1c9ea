//! The thresholds and confidences of the attribution rules, in one struct
//! with their defaults. docs/attribution.md gives each rule in context;
//! docs/cases/2026-12-07-settings.md the measurements behind the values.

use super::{calibration::Measured, measured::MEASURED};

/// Thresholds and confidences of the engine. The defaults are what the
/// scenario suite checks. Shares are 0 to 1; "of busy" shares are of the
/// sender's busy time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// Whether verdicts carry their explanation, the line with the numbers
    /// (else it is empty). Off where nothing shows it (`observer run`'s
    /// metrics count verdicts only): the formatting is about a third of a
    /// judgement's time, and a poll judges every flow that moved.
    pub explain: bool,
    /// Fewer bytes than this moved in the interval: `unknown` (bytes).
    pub min_bytes: u64,
    /// An interval shorter than this many round trips: `unknown` (srtt at
    /// the sender, the path's base RTT at the receiver).
    pub min_rtts: f64,
    /// Rate at or above this fraction of a ceiling counts as "at the
    /// ceiling"; a window fill at or above it is a full window.
    pub at_ceiling: f64,
    /// A limited-time share of busy time at or above this is significant;
    /// so is the share of time a receiver's window sat closed.
    pub significant_share: f64,
    /// Standing queue above this fraction of min_rtt counts as a queue...
    pub queue_fraction: f64,
    /// ...and above this many µs (so tiny RTTs do not trip it), unless
    /// segments were lost at `steady_loss_share` or more (sender side).
    pub queue_floor_us: u64,
    /// Target rate for the what-if arithmetic (bits/s); 0: twice the current rate.
    pub target_bps: u64,
    /// The least confidence a verdict other than `unknown` is given at: a
    /// rule that fires is at least even odds against the next reading.
    pub confidence_floor: f64,
    /// Sender side: idle (nothing outstanding) at least this share of the
    /// interval is `application`.
    pub idle_share: f64,
    /// Sender side: cwnd-limited at least this share of busy time, the
    /// congestion window binds; the peer's window at its ceiling binds
    /// only while cwnd-limited less than this.
    pub cwnd_share: f64,
    /// Sender side: application-limited delivery samples over at least
    /// this share of the interval mark the application (not for BBR).
    pub app_limited_share: f64,
    /// Sender side: a rate under this fraction of the lowest window
    /// ceiling, not window-limited, is the application's.
    pub app_rate_share: f64,
    /// Sender side: confidence of `receive_window` naming the peer's
    /// reader (its window shrunk by unread data).
    pub peer_reader_confidence: f64,
    /// Sender side: the least confidence of `receive_window` when the
    /// rate is at the rwnd ceiling.
    pub at_rwnd_confidence: f64,
    /// Sender side: the least confidence of `congestion_window` when the
    /// rate is at the cwnd ceiling.
    pub at_cwnd_confidence: f64,
    /// Sender side: confidence of `application` from app-limited samples
    /// or a rate far below the windows.
    pub application_confidence: f64,
    /// Sender side: confidence of `receive_window` from a pacing sender's
    /// probes meeting the peer's window.
    pub probe_confidence: f64,
    /// Confidence of `path` from a flow busy without a window limit (the
    /// sender) or arriving evenly (the receiver), without a queue...
    pub path_confidence: f64,
    /// ...and with a queue standing.
    pub path_queued_confidence: f64,
    /// Receiver side: a share of the interval in arrival gaps (the sender
    /// sent nothing for over 10 ms) at or above this means the sender
    /// paused with the window open; the same share of the bytes in bursts
    /// means it bursts. Pauses with room to send beyond a round trip each
    /// (`Receive::own_pause_share`) that fill this share, and more of the
    /// interval than the reader kept the window shut, overrule the reader
    /// rule: the flow waited on the sender longer.
    pub sender_gap_share: f64,
    /// Receiver side: the rate within a flow's bursts counts as what the
    /// path has shown (the window what-ifs, the host view) only where at
    /// least this share (0 to 1) of its bytes came in bursts: a window's
    /// bursts at the bottleneck's rate are most of a flow's bytes, a
    /// host's batching a few of them (docs/cases/2026-12-07-settings.md, `shown_burst_share`).
    pub shown_burst_share: f64,
    /// Receiver side: arrival gaps count as the sender's pauses only when
    /// they last on average at least this many round trips of the path
    /// (the kernel counts gaps over 10 ms, a thirtieth of a 300 ms round
    /// trip; docs/cases/2026-12-07-settings.md, `pause_rtts`).
    pub pause_rtts: f64,
    /// Receiver side: gaps over this share of the interval are pauses
    /// however short each is (a sender silent most of the time).
    pub silent_share: f64,
    /// Receiver side: the sender waited for this host's requests
    /// (`requests`) where the gaps in which this host sent data fill
    /// `sender_gap_share` of the interval and at least this share of the
    /// time in gaps.
    pub asked_gap_share: f64,
    /// Receiver side: gaps that wait for this host's requests are the
    /// requests' own round trips where they last on average at most this
    /// many round trips of the flow (the mean receiver RTT, at least the
    /// path's); longer, the peer took time of its own to answer, and the
    /// sender rules judge them.
    pub answer_rtts: f64,
    /// Sender side: at least this many segments retransmitted with under
    /// `min_bytes` acknowledged is a stall (`stalled`): the path drops
    /// what is sent, each retransmission timeout sending the same data
    /// again.
    pub stall_retransmits: u32,
    /// Confidence of a stall.
    pub stall_confidence: f64,
    /// Confidence of a flow paced at its application's cap
    /// (`pacing_cap`): the kernel reports the cap and paces at it.
    pub pacing_cap_confidence: f64,
    /// Receiver side: arrival gaps no longer on average than this many
    /// full-sized segments take at the flow's own rate are a slow link's
    /// spacing, not the sender's pauses. Under about 1.2 Mbit/s a
    /// 1,500-byte packet takes longer than the 10 ms a gap must last to
    /// be counted, so a link that paces a bulk sender leaves a counted gap
    /// before nearly every segment (near that rate, before those whose
    /// spacing runs over 10 ms); a sender that pauses sends a window or a
    /// write's worth after each gap, and its gaps last as long as that
    /// took at its rate.
    pub link_paced_segments: f64,
    /// Receiver side: segments whose mean payload is at least this share
    /// of the peer's MSS are full-sized, as a bulk sender's are. An
    /// application that paces its writes sends what each write holds,
    /// mostly less than an MSS at the rates where a link spaces segments
    /// more than a counted gap apart.
    pub full_segment_share: f64,
    /// Receiver side: with drops, a slow link's spacing also shows a queue
    /// (mean receiver RTT above the base) of at least this many mean gaps: each
    /// packet of a busy link waits behind the one before it, while a
    /// sender that paces a small window over a long round trip leaves
    /// the link idle between its segments.
    pub link_paced_queue_gaps: f64,
    /// Receiver side: a slow link's spacing shows itself without drops
    /// by a queue (mean receiver RTT above the base) of at least this
    /// many mean gaps: packets in line, each waiting behind the one
    /// before it, at a link or at a slow way back for the ACKs. A
    /// sender's own pauses cannot make one: each stretches only the
    /// receiver RTT sample it falls in, by about a gap.
    pub link_paced_queue_alone_gaps: f64,
    /// Receiver side: arrival gaps longer than the round trip with its
    /// queue (the mean receiver RTT) over at least this share of the
    /// interval show a sender that held data, and the RTT it stretched is
    /// no queue. A FIFO queue delays each segment by its own length; it
    /// cannot stop a flow for longer. The receiver's RTT is timed from an
    /// ACK to the data it let out, so each hold adds its length to a
    /// sample, as a queue would (tcp_input.c, `tcp_rcv_rtt_measure_ts`).
    /// A share of the interval (0 to 1); applies on paths shorter than a
    /// timestamp tick (1 ms) only (`receiver::context`; docs/cases/2026-12-07-settings.md,
    /// `hold_share`).
    pub hold_share: f64,
    /// Receiver side: out-of-order arrivals at most this old (s) count as
    /// the loss holding a bursting sender's congestion window down, however
    /// large its window (cubic's own regrowth, RFC 9438 section 4.2, takes
    /// seconds at any RTT); shorter where the window regrows sooner
    /// (`loss_memory_rtts_per_segment`).
    pub loss_memory_s: f64,
    /// Receiver side: a bursting sender's loss holds its window for this
    /// many round trips of the path per segment in flight, and at least
    /// `loss_memory_paused_rtts` rounds (round trips, or sampling grains
    /// where longer). 1.2: two regrowths of a window cut to 0.7 of itself
    /// at cubic's Reno-friendly rate of 3(1-0.7)/(1+0.7) = 0.53 segments a
    /// round trip (RFC 9438 section 4.3), 0.57 round trips per segment
    /// each; in a loss-bound sawtooth the last loss lies within one, and
    /// the second leaves room for where the window tops out (docs/cases/2026-12-07-settings.md,
    /// `loss_memory_rtts_per_segment`).
    pub loss_memory_rtts_per_segment: f64,
    /// Receiver side: the same for a sender that pauses most of the time
    /// (s); see `receiver::context::recent_loss`.
    pub loss_memory_paused_s: f64,
    /// Receiver side: for a pausing sender, out-of-order arrivals must also
    /// be at least this share of the interval's data segments (and two).
    pub loss_share_paused: f64,
    /// Receiver side: a pausing sender whose pauses last on average more
    /// than this many base RTTs waits for data or a timer, not for ACKs
    /// (a sender held by its congestion window waits about a round trip):
    /// loss does not name its congestion window then.
    pub ack_wait_rtts: f64,
    /// ...or than this (µs) plus a round trip: `TCP_RTO_MIN`
    /// (include/net/tcp.h), the shortest retransmission timeout, which a
    /// sender held by loss may wait out.
    pub rto_min_us: u64,
    /// Sender side: the longest interval (µs) whose rate is compared with
    /// the recent best delivery-rate sample, which covers the last one to
    /// two seconds (three at most, between rotations).
    pub shown_span_us: u64,
    /// Sender side: a pacing sender whose window-limited time is at least
    /// this share of busy time (and more than its cwnd-limited time) meets
    /// the peer's window when it probes for bandwidth: `receive_window`,
    /// not `path`. BBR probes one phase in eight, so a window that stops
    /// every probe shows up to about an eighth of busy time.
    pub probe_share: f64,
    /// A window fill (in flight / window) or a rate over a ceiling above
    /// this is a measurement that cannot hold (the RTT is overstated): no
    /// window verdict or what-if is made from it.
    pub max_fill: f64,
    /// Sender side: a peer window under this fraction of the largest the
    /// peer has offered (`tcp_sock.max_window`), time-weighted over the
    /// interval and at its end, holds data the peer's application has not
    /// read (`whatif::shrunk_by_unread`).
    pub unread_window: f64,
    /// Receiver side: confidence of `receiver_application` from unread
    /// data when the window was not closed long.
    pub reader_confidence: f64,
    /// Receiver side: a reader lags only with at least this many of the
    /// peer's segments waiting unread on average.
    pub reader_min_segments: f64,
    /// Receiver side: a reader that keeps at least what is in flight
    /// waiting, and this share of the window, lags the network by more
    /// than a round trip.
    pub reader_window_share: f64,
    /// Receiver side: a reader that keeps at least this share of the
    /// window waiting unread on average (time-weighted)...
    pub reader_unread_share: f64,
    /// ...and catches up with it (`Receive::reader_drains`) at most once
    /// in this many round trips of the path, over an interval of at least
    /// that many, lags the network: `receiver_application`. A reader that
    /// keeps up catches up at least once a round trip (each burst the
    /// sender's window lets out).
    pub reader_drain_rtts: f64,
    /// Receiver side: a reader that keeps at least `reader_unread_share`
    /// of the window waiting and is behind the network by at least this
    /// many rounds on average (its mean unread bytes at the receive rate,
    /// in round trips of the path or sampling grains, whichever is
    /// longer)...
    pub reader_lag_rounds: f64,
    /// ...and catches up at most once in this many rounds lags it too,
    /// though more often than `reader_drain_rtts` allows: a BBR sender
    /// paced at its reader's rate lets the reader catch up once in each
    /// 8-round ProbeBW cycle (its 0.75 gain round) at most, and a reader
    /// that keeps up does at least once a round.
    pub reader_lag_drain_rtts: f64,
    /// A named limit binds only with its ceiling at most this many times
    /// the rate, unless its own clock says it blocked the flow (the
    /// rwnd- or cwnd-limited share, a receiver's closed window): a window
    /// that would carry several times the rate holds nothing back (a
    /// ratio of ceiling to rate; docs/cases/2026-12-07-settings.md, `bind_factor`).
    pub bind_factor: f64,
    /// Receiver side: for a pausing sender, loss this many base RTTs old
    /// still counts where that is longer than `loss_memory_paused_s`: a
    /// window regrows in round trips, not seconds (docs/cases/2026-12-07-settings.md,
    /// `loss_memory_paused_rtts`).
    pub loss_memory_paused_rtts: f64,
    /// The sampling grain (µs): one jiffy, 4 ms at HZ=250 (the sample gate
    /// passes about one sample a jiffy on each CPU), so no figure counted
    /// from samples, such as a reader's catch-ups, resolves a round trip
    /// shorter than this (`Config::with_hz` sets it).
    pub sample_grain_us: u64,
    /// Sender side: retransmitted segments at least this share (0 to 1)
    /// of those sent are steady drops, a policer's or an overflowing
    /// queue's, not random loss (docs/cases/2026-12-07-settings.md, `steady_loss_share`).
    pub steady_loss_share: f64,
    /// Sender side: a loss-based flow delivering at least this many times
    /// the Mathis rate of its loss share (what isolated losses allow) drops
    /// in clusters: a rate limit (docs/attribution.md, kind 4; docs/cases/2026-12-07-settings.md,
    /// `drop_clustering`).
    pub drop_clustering: f64,
    /// Sender side: the share (0 to 1) of its best recent delivery rate a
    /// flow behind a rate limit that drops keeps to, a cut by a cluster of
    /// its drops included (docs/cases/2026-12-07-settings.md, `drops_plateau`).
    pub drops_plateau: f64,
    /// Sender side: a model-based sender (BBR) pacing at least this many
    /// times what it delivered over the interval is still ramping (it paces
    /// at most 1.25 times its estimate once it has found the path).
    pub ramp_ratio: f64,
    /// A window or send buffer full only through a queue: the rate under
    /// this fraction of what it would allow at the path's base RTT (the
    /// queue at least as long as the path's own round trip), with a queue
    /// standing. The flow then fills its bottleneck: `path`. Half: a
    /// window-bound flow whose srtt a mild queue stretches by a fifth stays
    /// a window verdict (docs/attribution.md).
    pub queue_only: f64,
    /// Groups (`attribution::group`): two flows are concurrent when their
    /// judged spans overlap for at least this share of the shorter one (and
    /// for at least `min_rtts` round trips of the path, the longer min_rtt):
    /// only then does their sum say anything of a shared limit.
    pub group_concurrent_share: f64,
    /// Groups: the flows held by limits of their own, or those at the path,
    /// decide a group's limit when they carry at least this share of its
    /// judged bytes; else it is `mixed`.
    pub group_dominant_share: f64,
    /// Groups: flows each held by a limit of its own are a per-flow limit
    /// only while together they run at least this many times the fastest
    /// of them alone: more streams have been seen to add rate.
    pub group_gain: f64,
    /// Groups: flows each held by their own limit that together run at
    /// this share or more of what the path has shown one of them (its
    /// fastest delivery-rate sample, or the rate within a download's
    /// bursts) fill the path: the next limit is shared.
    pub group_fills_path: f64,
    /// Groups: a sum up to this multiple of what the path has shown still
    /// fills it (`fills_path`): flows that share a shaper show its rate
    /// and together run at it, give or take the noise of a mean. Well
    /// above it, what was shown is one flow's own limit, not the path's.
    pub group_shown_margin: f64,
    /// Groups: the standing queues (srtt - min_rtt) of flows at the path
    /// agree, one bottleneck, when the shortest is at least this share of
    /// the longest: a bottleneck's queue delays every flow through it by
    /// the same time, whatever their RTTs.
    pub group_queue_agreement: f64,
    /// Each rule's record over the accuracy harness's tuning seed: a
    /// verdict other than `unknown` is given at its rule's measured
    /// precision ([`super::calibration`]); empty, every rule keeps the
    /// confidence it computes.
    pub measured: &'static [Measured],
    /// A rule's record counts once it decided at least this many scored
    /// ends of the tuning seed: fewer cannot tell a precision of 0.7 from
    /// one of 0.9.
    pub measured_min_ends: u32,
    /// A second limit is named beside the verdict (`Attribution::also`)
    /// where it held the flow for at least this share of the interval (of
    /// busy time at the sender)...
    pub also_share: f64,
    /// ...or where its ceiling is at most this many times the rate: the
    /// accuracy harness's own bar for matched limits (a tightest ceiling
    /// over half the next's, docs/accuracy.md).
    pub also_factor: f64,
}

impl Config {
    /// This configuration with every rule at the confidence it computes
    /// (no measured table): what the rules' own arithmetic gives, for
    /// tests of that arithmetic and the recorded suite's golden verdicts,
    /// which a new calibration would otherwise move.
    pub fn rules_own(self) -> Config {
        Config {
            measured: &[],
            ..self
        }
    }

    /// This configuration where the samples do not tell which gaps this
    /// host asked for (a recording from before the kernel counted them,
    /// which reads every gap as asked): no gap is taken as a request's
    /// wait (`answer_rtts` 0), so the `requests` rule cannot find.
    pub fn without_asking(self) -> Config {
        Config {
            answer_rtts: 0.0,
            ..self
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            explain: true,
            min_bytes: 32 * 1024,
            min_rtts: 4.0,
            at_ceiling: 0.8,
            significant_share: 0.2,
            queue_fraction: 0.2,
            queue_floor_us: 2_000,
            target_bps: 0,
            confidence_floor: 0.5,
            idle_share: 0.5,
            cwnd_share: 0.5,
            app_limited_share: 0.5,
            app_rate_share: 0.35,
            peer_reader_confidence: 0.7,
            at_rwnd_confidence: 0.8,
            at_cwnd_confidence: 0.7,
            application_confidence: 0.6,
            probe_confidence: 0.6,
            path_confidence: 0.6,
            path_queued_confidence: 0.8,
            sender_gap_share: 0.2,
            shown_burst_share: 0.2,
            loss_memory_s: 10.0,
            loss_memory_rtts_per_segment: 1.2,
            loss_memory_paused_s: 1.0,
            loss_share_paused: 0.001,
            ack_wait_rtts: 3.0,
            rto_min_us: 200_000,
            shown_span_us: 3_000_000,
            max_fill: 1.25,
            probe_share: 0.05,
            unread_window: 0.6,
            reader_confidence: 0.7,
            reader_min_segments: 2.0,
            reader_window_share: 0.5,
            reader_unread_share: 0.25,
            reader_drain_rtts: 10.0,
            reader_lag_rounds: 0.5,
            reader_lag_drain_rtts: 4.0,
            queue_only: 0.5,
            bind_factor: 4.0,
            loss_memory_paused_rtts: 10.0,
            sample_grain_us: 4_000,
            steady_loss_share: 0.003,
            drop_clustering: 1.75,
            drops_plateau: 0.7,
            ramp_ratio: 1.5,
            pause_rtts: 0.25,
            silent_share: 0.5,
            asked_gap_share: 0.5,
            answer_rtts: 2.0,
            stall_retransmits: 3,
            stall_confidence: 0.8,
            pacing_cap_confidence: 0.9,
            link_paced_segments: 2.0,
            full_segment_share: 0.9,
            link_paced_queue_gaps: 0.4,
            link_paced_queue_alone_gaps: 3.0,
            hold_share: 0.1,
            group_concurrent_share: 0.5,
            group_dominant_share: 0.8,
            group_gain: 1.5,
            group_fills_path: 0.8,
            group_shown_margin: 1.1,
            group_queue_agreement: 0.5,
            measured: MEASURED,
            measured_min_ends: 10,
            also_share: 0.2,
            also_factor: 2.0,
        }
    }
}

impl Config {
    /// This configuration, with explanations written also where `also`
    /// (a record's verdict, where the others need no words).
    pub fn explaining(self, also: bool) -> Config {
        Config {
            explain: self.explain || also,
            ..self
        }
    }

    /// This configuration for a kernel ticking `hz` times a second (its
    /// jiffy is the sampling grain, `sample_grain_us`).
    pub fn with_hz(self, hz: u32) -> Config {
        Config {
            sample_grain_us: 1_000_000 / u64::from(hz.max(1)),
            ..self
        }
    }
}
