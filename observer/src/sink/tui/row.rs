//! One flow as `observer top` shows it: the figures and verdict copied
//! out of the live flows at a poll, and what the columns and the detail
//! pane derive from them.

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
    /// Its verdict over the current window, with the evidence.
    pub current: Attribution,
    /// Its recent history, oldest first, for sparklines.
    pub history: Vec<HistoryPoint>,
    /// Whether the flow has closed (it lingers for a while).
    pub closed: bool,
}

/// A sender's congestion window, as the table shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cwnd {
    /// `snd_cwnd` (segments).
    pub segments: u32,
    /// `snd_cwnd` x MSS (bytes).
    pub bytes: u64,
}

impl Row {
    /// The row of a tracked flow.
    pub fn from_tracked(t: &TrackedFlow) -> Row {
        Row {
            flow: t.flow.clone(),
            current: t.current.clone(),
            history: t.history.iter().copied().collect(),
            closed: t.is_closed(),
        }
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

    /// The rate of the flow's data direction: the larger of the two.
    pub fn rate_bps(&self) -> f64 {
        self.send_bps().max(self.recv_bps())
    }

    /// Whether the row is a download judged from this, the receiving, end:
    /// its columns then show the receiving end's figures, not those of
    /// the little it sends (requests, ACK-only segments).
    pub fn download(&self) -> bool {
        self.current.side == Side::Receiver
    }

    /// The data direction's round trip (µs): srtt for a sender; for a
    /// download the receiver RTT the verdict used (its mean `rcv_rtt`).
    pub fn rtt_us(&self) -> u32 {
        if self.download() {
            self.current.evidence.receiver_rtt_us
        } else {
            self.flow.srtt_us
        }
    }

    /// The data direction's base round trip (µs): min_rtt for a sender,
    /// the receiving end's base RTT for a download.
    pub fn base_rtt_us(&self) -> u32 {
        if self.download() {
            self.current.evidence.receive.base_rtt_us
        } else {
            self.flow.min_rtt_us
        }
    }

    /// The window that limits the data direction (bytes): the peer's
    /// (snd_wnd) for a sender, this host's advertised one (rcv_wnd) for a
    /// download.
    pub fn window_bytes(&self) -> u32 {
        if self.download() {
            self.flow.rcv_wnd
        } else {
            self.flow.snd_wnd
        }
    }

    /// The congestion window; None for a download (the sender's, which
    /// this end cannot read).
    pub fn cwnd(&self) -> Option<Cwnd> {
        let f = &self.flow;
        (!self.download()).then(|| Cwnd {
            segments: f.snd_cwnd,
            bytes: u64::from(f.snd_cwnd) * u64::from(f.mss),
        })
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

    /// Share of busy time rwnd-limited over the verdict window (0 to 1),
    /// `None` when the flow was never busy in it. For a download, the
    /// fill of this host's window instead (in flight / rcv_wnd, at most 1).
    pub fn rwnd_limited(&self) -> Option<f64> {
        if self.download() {
            let fill = self.current.evidence.receive.window_fill;
            return (fill > 0.0).then(|| fill.min(1.0));
        }
        self.of_busy(self.current.evidence.shares.rwnd_limited)
    }

    /// Share of busy time cwnd-limited over the verdict window (0 to 1);
    /// `None` for a download (the sender's clock).
    pub fn cwnd_limited(&self) -> Option<f64> {
        if self.download() {
            return None;
        }
        self.of_busy(self.current.evidence.shares.cwnd_limited)
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
    /// addresses or verdict.
    pub(super) fn matches(&self, terms: &[String]) -> bool {
        if terms.is_empty() {
            return true;
        }
        let f = &self.flow;
        let hay = format!(
            "{} {} {} {} {}",
            f.comm,
            f.pid,
            f.local,
            f.remote,
            self.verdict().name()
        )
        .to_lowercase();
        terms.iter().all(|t| hay.contains(t.as_str()))
    }
}
