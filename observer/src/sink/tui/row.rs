//! One flow as `observer top` shows it: the figures and verdict copied
//! out of the live flows at a poll, and what the columns and the detail
//! pane derive from them.

use std::time::Duration;

use crate::{
    attribution::{Attribution, Side, Verdict},
    model::flow::Flow,
    track::{history::HistoryPoint, tracked::TrackedFlow},
};

/// One flow as the view shows it, copied out of the live flows at a poll.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The flow's latest figures.
    pub flow: Flow,
    /// Its verdict with the evidence: over the current window while the
    /// flow is open; once closed, over its observed life (so the rate is
    /// its life's average, as the closed list shows it).
    pub current: Attribution,
    /// Its recent history, oldest first, for sparklines.
    pub history: Vec<HistoryPoint>,
    /// Whether the flow has closed (it lingers for a while).
    pub closed: bool,
    /// What RATE shows instead of the judged window's rate, marked `~`,
    /// where that window moved nothing but the flow, open, moved data
    /// over the last [`AVERAGE_SPAN`] (bits/s): the mean of its history's
    /// rates over that span. None otherwise ([`Row::average_idle`]).
    pub average_bps: Option<f64>,
}

/// How far back RATE's average reaches where the judged window moved
/// nothing: a download throttled to 1 Mbit/s (`curl --limit-rate 125k`,
/// curl's rate being bytes/s) receives in bursts seconds apart, so most
/// 1-2 s windows hold no arrival, and 10 s holds several bursts.
pub const AVERAGE_SPAN: Duration = Duration::from_secs(10);

/// A sender's congestion window, as the table shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cwnd {
    /// `snd_cwnd` (segments).
    pub segments: u32,
    /// `snd_cwnd` x MSS (bytes).
    pub bytes: u64,
}

impl Row {
    /// The row of a tracked flow: a closed one judged over its life.
    pub fn from_tracked(t: &TrackedFlow) -> Row {
        let closed = t.is_closed();
        Row {
            flow: t.flow.clone(),
            current: if closed { &t.life } else { &t.current }.clone(),
            history: t.history.iter().copied().collect(),
            closed,
            average_bps: None,
        }
    }

    /// Sets [`Row::average_bps`], its history's points `interval` apart:
    /// the mean rate of the points over the last [`AVERAGE_SPAN`] (fewer
    /// where the flow is younger), where the flow is open, its judged
    /// window moved nothing, and that mean is not zero. A point's rate
    /// is its poll's, the larger direction's, which for a download is
    /// what it received.
    pub fn average_idle(&mut self, interval: Duration) {
        self.average_bps = None;
        if self.closed || self.rate_bps() > 0.0 {
            return;
        }
        let step = interval.as_secs_f64().max(1e-3);
        let points = ((AVERAGE_SPAN.as_secs_f64() / step).ceil() as usize).max(1);
        let recent = &self.history[self.history.len().saturating_sub(points)..];
        if recent.is_empty() {
            return;
        }
        let mean = recent.iter().map(|p| p.rate_bps).sum::<f64>() / recent.len() as f64;
        self.average_bps = (mean > 0.0).then_some(mean);
    }

    /// The rate RATE shows (bits/s): [`Row::average_bps`] where set,
    /// else the judged window's ([`Row::rate_bps`]). Sorting by rate
    /// orders by it.
    pub fn shown_bps(&self) -> f64 {
        self.average_bps.unwrap_or_else(|| self.rate_bps())
    }

    /// The flow's key.
    pub fn cookie(&self) -> u64 {
        self.flow.cookie
    }

    /// The current verdict.
    pub fn verdict(&self) -> Verdict {
        self.current.verdict
    }

    /// Send rate over the verdict window (bits/s, from bytes acked).
    pub fn send_bps(&self) -> f64 {
        self.current.evidence.rate_bps
    }

    /// Receive rate over the verdict window (bits/s).
    pub fn recv_bps(&self) -> f64 {
        self.current.evidence.recv_rate_bps
    }

    /// The rate of the flow's data direction, the side it is judged
    /// from (bits/s): sent for an upload, received for a download, as the
    /// detail pane's "sent" or "received" gives it.
    pub fn rate_bps(&self) -> f64 {
        if self.download() {
            self.recv_bps()
        } else {
            self.send_bps()
        }
    }

    /// Whether the row is a download judged from this, the receiving, end:
    /// its columns then show the receiving end's figures, not those of
    /// the little it sends (requests, ACK-only segments).
    pub fn download(&self) -> bool {
        self.current.side == Side::Receiver
    }

    // The figures below are those the verdict used over its window (the
    // evidence), as the detail pane shows them, so a row and its pane
    // never give one name two values.

    /// The data direction's round trip (µs): the mean srtt over the
    /// verdict window for a sender (the pane's `srtt`); for a download the
    /// mean receiver RTT the verdict used (the pane's `rcv_rtt`).
    pub fn rtt_us(&self) -> u32 {
        let ev = &self.current.evidence;
        if self.download() {
            ev.receiver_rtt_us
        } else {
            ev.srtt_us
        }
    }

    /// The data direction's base round trip (µs): min_rtt for a sender,
    /// the receiving end's base RTT for a download.
    pub fn base_rtt_us(&self) -> u32 {
        let ev = &self.current.evidence;
        if self.download() {
            ev.receive.base_rtt_us
        } else {
            ev.min_rtt_us
        }
    }

    /// The window that limits the data direction, its mean over the
    /// verdict window (bytes): the peer's (snd_wnd) for a sender, this
    /// host's advertised one (rcv_wnd) for a download.
    pub fn window_bytes(&self) -> u64 {
        let ev = &self.current.evidence;
        if self.download() {
            ev.receive.rcv_wnd_mean.round() as u64
        } else {
            u64::from(ev.snd_wnd)
        }
    }

    /// The congestion window, its mean over the verdict window; None for
    /// a download (the sender's, which this end cannot read).
    pub fn cwnd(&self) -> Option<Cwnd> {
        let ev = &self.current.evidence;
        (!self.download()).then(|| Cwnd {
            segments: ev.snd_cwnd,
            bytes: u64::from(ev.snd_cwnd) * u64::from(ev.mss),
        })
    }

    /// A download's bytes received and not yet read, their mean over the
    /// verdict window (the pane's `unread`); None for a sender.
    pub fn unread_bytes(&self) -> Option<u64> {
        let rx = &self.current.evidence.receive;
        self.download().then(|| rx.unread_mean.round() as u64)
    }

    /// Packets in flight (segments); None for a download.
    pub fn inflight(&self) -> Option<u32> {
        (!self.download()).then_some(self.flow.inflight)
    }

    /// Loss seen over the flow's life: segments retransmitted by a
    /// sender; for a download, data segments that arrived out of order
    /// (`rcv_ooopack`: loss or reordering upstream).
    pub fn losses(&self) -> u32 {
        if self.download() {
            self.flow.rcv_ooopack
        } else {
            self.flow.retransmits
        }
    }

    /// How much of the verdict window the flow's window held it (0 to 1):
    /// for a sender the rwnd-limited share of busy time (`None` when it
    /// was never busy); for a download the share of the time this host's
    /// window was closed (the pane's "window closed").
    pub fn window_held(&self) -> Option<f64> {
        let ev = &self.current.evidence;
        if self.download() {
            return (ev.interval_us > 0).then_some(ev.receive.closed_share);
        }
        self.of_busy(ev.shares.rwnd_limited)
    }

    /// For a sender the cwnd-limited share of busy time over the verdict
    /// window (0 to 1; `None` when it was never busy); for a download the
    /// window's fill, in flight over rcv_wnd (the pane's "window fill";
    /// `None` without a window or where it was shut most of the window:
    /// [`crate::sink::figures::window_fill`]).
    pub fn cwnd_or_fill(&self) -> Option<f64> {
        let ev = &self.current.evidence;
        if self.download() {
            return crate::sink::figures::window_fill(&ev.receive);
        }
        self.of_busy(ev.shares.cwnd_limited)
    }

    /// What would help, in a few words (the ADVICE column; the detail
    /// pane gives it whole).
    pub fn advice(&self) -> String {
        crate::attribution::group::advice::advice(&self.current, &self.flow)
    }

    fn of_busy(&self, share: f64) -> Option<f64> {
        let ev = &self.current.evidence;
        (ev.interval_us > 0 && ev.busy() > 0.0).then(|| ev.of_busy(share))
    }

    /// `comm/pid`, or what of it is known.
    pub fn process(&self) -> String {
        let f = &self.flow;
        match (f.comm.is_empty(), f.pid) {
            (true, 0) => "-".to_string(),
            (false, 0) => f.comm.clone(),
            (true, pid) => pid.to_string(),
            (false, pid) => format!("{}/{pid}", f.comm),
        }
    }

    /// Whether every (lower-case) term occurs in the row's process, pid,
    /// addresses, verdict or namespace name.
    pub(super) fn matches(&self, terms: &[String]) -> bool {
        if terms.is_empty() {
            return true;
        }
        let f = &self.flow;
        let hay = format!(
            "{} {} {} {} {} {}",
            f.comm,
            f.pid,
            f.local,
            f.remote,
            self.verdict().name(),
            f.netns_name.as_deref().unwrap_or_default()
        )
        .to_lowercase();
        terms.iter().all(|t| hay.contains(t.as_str()))
    }
}
