//! The thresholds of the attribution rules, in one struct with their
//! defaults (docs/attribution.md gives each in context).

/// Thresholds of the engine. The defaults are what the scenario suite checks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// Whether verdicts carry their explanation, the line with the numbers
    /// (else it is empty). Off where nothing shows it (`observer run`'s
    /// metrics count verdicts only): the formatting is about a third of a
    /// judgement's time, and a poll judges every flow that moved.
    pub explain: bool,
    /// Fewer bytes than this moved in the interval: `unknown` (bytes).
    pub min_bytes: u64,
    /// An interval shorter than this many smoothed RTTs: `unknown`.
    pub min_rtts: f64,
    /// Rate at or above this fraction of a ceiling counts as "at the ceiling".
    pub at_ceiling: f64,
    /// A limited-time share of busy time at or above this is significant.
    pub significant_share: f64,
    /// Standing queue above this fraction of min_rtt counts as a queue...
    pub queue_fraction: f64,
    /// ...and above this many µs (so tiny RTTs do not trip it).
    pub queue_floor_us: u64,
    /// Target rate for the what-if arithmetic (bits/s); 0: twice the current rate.
    pub target_bps: u64,
    /// Receiver side: a share of the interval in arrival gaps (the sender
    /// sent nothing for over 10 ms) at or above this means the sender
    /// paused with the window open.
    pub sender_gap_share: f64,
    /// Receiver side: out-of-order arrivals this recent (s) still count as
    /// the loss holding the sender's congestion window down (cubic takes
    /// seconds to grow back to its window before the loss).
    pub loss_memory_s: f64,
    /// Receiver side: the same for a sender that pauses most of the time
    /// (s); see `receiver::recent_loss`.
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
    /// Receiver side: a window fill (in flight / window) above this is a
    /// measurement that cannot hold (the RTT is overstated); no window
    /// verdict is made from it.
    pub max_fill: f64,
    /// Sender side: a peer window under this fraction of the largest the
    /// peer has offered (`tcp_sock.max_window`), time-weighted over the
    /// interval and at its end, holds data the peer's application has not
    /// read (`whatif::shrunk_by_unread`).
    pub unread_window: f64,
    /// Receiver side: a reader that keeps at least this share of the
    /// window waiting unread on average (time-weighted)...
    pub reader_unread_share: f64,
    /// ...and catches up with it (`Receive::reader_drains`) at most once
    /// in this many round trips of the path, over an interval of at least
    /// that many, lags the network: `receiver_application`. A reader that
    /// keeps up catches up at least once a round trip (each burst the
    /// sender's window lets out).
    pub reader_drain_rtts: f64,
    /// A window or send buffer full only through a queue: the rate under
    /// this fraction of what it would allow at the path's base RTT (the
    /// queue at least as long as the path's own round trip), with a queue
    /// standing. The flow then fills its bottleneck: `path`. Half: a
    /// window-bound flow whose srtt a mild queue stretches by a fifth (a
    /// 6.1 VM's 128 KB receiver, 25.9 ms against 21.2 ms) stays a window.
    pub queue_only: f64,
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
            sender_gap_share: 0.2,
            loss_memory_s: 10.0,
            loss_memory_paused_s: 1.0,
            loss_share_paused: 0.001,
            ack_wait_rtts: 3.0,
            rto_min_us: 200_000,
            shown_span_us: 3_000_000,
            max_fill: 1.25,
            probe_share: 0.05,
            unread_window: 0.6,
            reader_unread_share: 0.25,
            reader_drain_rtts: 10.0,
            queue_only: 0.5,
        }
    }
}
