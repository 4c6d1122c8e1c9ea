//! A tracked flow's short history, for sparklines (`observer top`): one
//! point per poll, the last few kept.

use std::collections::VecDeque;

use observer_common::FlowSample;

/// One history point of a flow, for sparklines.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HistoryPoint {
    /// Throughput over the last poll interval (bits/s), sent or received.
    pub rate_bps: f64,
    /// Congestion window (segments).
    pub snd_cwnd: u32,
    /// Peer's advertised window (bytes).
    pub snd_wnd: u32,
    /// Smoothed RTT (µs).
    pub srtt_us: u32,
    /// The window this host advertised, as on the wire (bytes).
    pub rcv_wnd: u32,
    /// Bytes received and not yet read (bytes).
    pub unread: u32,
    /// The receiver RTT estimate (`tcpi_rcv_rtt`, µs; 0: none yet).
    pub rcv_rtt_us: u32,
}

impl HistoryPoint {
    /// The receiver RTT as the verdicts use it (µs): `rcv_rtt_us`, or
    /// srtt while the kernel has no receiver estimate, as
    /// `Receive::rtt_mean_us` falls back (so a download's sparkline and
    /// its RCV_RTT agree).
    pub fn receiver_rtt_us(&self) -> u32 {
        if self.rcv_rtt_us > 0 {
            self.rcv_rtt_us
        } else {
            self.srtt_us
        }
    }
}

/// The history point of sample `s` at `rate_bps`.
pub fn point(s: &FlowSample, rate_bps: f64) -> HistoryPoint {
    HistoryPoint {
        rate_bps,
        snd_cwnd: s.snd_cwnd,
        snd_wnd: s.snd_wnd,
        srtt_us: s.srtt_us,
        rcv_wnd: observer_common::advertised_window(s.rcv_wnd, s.rcv_wscale),
        unread: s.unread,
        rcv_rtt_us: s.rcv_rtt_us,
    }
}

/// Appends `p` to `history`, keeping at most `keep` points (none: 0).
pub fn push(history: &mut VecDeque<HistoryPoint>, keep: usize, p: HistoryPoint) {
    if keep == 0 {
        return;
    }
    if history.len() == keep {
        history.pop_front();
    }
    history.push_back(p);
}
