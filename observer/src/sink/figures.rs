//! The figures a flow's row shows, each with its one name, in one table
//! that `observer flows`' table ([`super::columns`]) and `observer top`
//! ([`super::tui`]) both title their columns from, so that a header means
//! one thing wherever it is printed. Each tool picks its own figures,
//! order and widths; where top's narrow columns cannot hold the `flows`
//! name, it prints the figure's [`Figure::short`] name instead (INFLT for
//! INFLIGHT), and no short name is another figure's name.
//!
//! Uploads (judged at this, the sending end) and downloads (judged at
//! this, the receiving end, marked ↓) have figures of their own: a
//! download's round trip is [`Figure::RcvRtt`], its window
//! [`Figure::RcvWnd`], its losses [`Figure::Ooo`], never SRTT, SND_WND or
//! RETRANS, which are the sender's.

use crate::attribution::{Attribution, Receive, Verdict};

/// One figure of a flow's row. Units are those the cells print in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Figure {
    /// The flow's network namespace's `ip netns` name, or `-`.
    Netns,
    /// `comm/pid` of the socket's owner (top).
    Process,
    /// Process id of the socket's owner (`flows`).
    Pid,
    /// Command name of the socket's owner (`flows`).
    Comm,
    /// TCP state, `closed` once closed.
    State,
    /// Local `ip:port`.
    Local,
    /// Remote `ip:port`.
    Remote,
    /// Bytes acknowledged by the peer over the flow's life.
    Acked,
    /// Bytes received over the flow's life.
    Received,
    /// The data direction's rate over the judged interval (bit/s; `↓`
    /// before a download's).
    Rate,
    /// An upload's smoothed RTT (ms or µs).
    Srtt,
    /// An upload's minimum RTT (ms or µs).
    MinRtt,
    /// An upload's congestion window (segments; top adds its bytes).
    Cwnd,
    /// An upload's peer's advertised window (bytes).
    SndWnd,
    /// An upload's segments in flight.
    Inflight,
    /// An upload's retransmitted segments over the flow's life.
    Retrans,
    /// An upload's receive-window-limited share of busy time (percent).
    RwndLimited,
    /// An upload's congestion-window-limited share of busy time (percent).
    CwndLimited,
    /// A download's mean receiver RTT (`rcv_rtt`, ms or µs).
    RcvRtt,
    /// A download's base RTT as this, the receiving end, measures it.
    BaseRtt,
    /// A download's window, this host's advertised `rcv_wnd` (bytes).
    RcvWnd,
    /// A download's bytes received and not yet read (bytes).
    Unread,
    /// A download's data segments that arrived out of order
    /// (`rcv_ooopack`).
    Ooo,
    /// A download's window fill, in flight over `rcv_wnd` (percent).
    Fill,
    /// The share of the judged interval a download's window was closed
    /// (percent).
    Closed,
    /// Congestion control.
    Cc,
    /// The verdict, with `+` and the second limit's short name where one
    /// is matched with it (`sender+reader`).
    Verdict,
    /// The owner's pod, container, systemd unit or cgroup (top).
    Workload,
    /// What would help, in a few words.
    Advice,
}

impl Figure {
    /// Every figure.
    pub const ALL: [Figure; 29] = [
        Figure::Netns,
        Figure::Process,
        Figure::Pid,
        Figure::Comm,
        Figure::State,
        Figure::Local,
        Figure::Remote,
        Figure::Acked,
        Figure::Received,
        Figure::Rate,
        Figure::Srtt,
        Figure::MinRtt,
        Figure::Cwnd,
        Figure::SndWnd,
        Figure::Inflight,
        Figure::Retrans,
        Figure::RwndLimited,
        Figure::CwndLimited,
        Figure::RcvRtt,
        Figure::BaseRtt,
        Figure::RcvWnd,
        Figure::Unread,
        Figure::Ooo,
        Figure::Fill,
        Figure::Closed,
        Figure::Cc,
        Figure::Verdict,
        Figure::Workload,
        Figure::Advice,
    ];

    /// Its name: the header of its column in the `flows` table, and in
    /// top where the column is wide enough.
    pub const fn name(self) -> &'static str {
        match self {
            Figure::Netns => "NETNS",
            Figure::Process => "PROCESS",
            Figure::Pid => "PID",
            Figure::Comm => "COMM",
            Figure::State => "STATE",
            Figure::Local => "LOCAL",
            Figure::Remote => "REMOTE",
            Figure::Acked => "ACKED",
            Figure::Received => "RECEIVED",
            Figure::Rate => "RATE",
            Figure::Srtt => "SRTT",
            Figure::MinRtt => "MIN_RTT",
            Figure::Cwnd => "CWND",
            Figure::SndWnd => "SND_WND",
            Figure::Inflight => "INFLIGHT",
            Figure::Retrans => "RETRANS",
            Figure::RwndLimited => "RWND_LIM%",
            Figure::CwndLimited => "CWND_LIM%",
            Figure::RcvRtt => "RCV_RTT",
            Figure::BaseRtt => "BASE_RTT",
            Figure::RcvWnd => "RCV_WND",
            Figure::Unread => "UNREAD",
            Figure::Ooo => "OOO",
            Figure::Fill => "FILL%",
            Figure::Closed => "CLOSED%",
            Figure::Cc => "CC",
            Figure::Verdict => "VERDICT",
            Figure::Workload => "WORKLOAD",
            Figure::Advice => "ADVICE",
        }
    }

    /// What its column measures, in a sentence: the manual's COLUMNS
    /// (observer-flows(1)) is made from these, so page and table cannot
    /// say different things. A download's figures are this, the receiving
    /// end's; an upload's the sender's.
    pub const fn meaning(self) -> &'static str {
        match self {
            Figure::Netns => {
                "the flow's network namespace by its ip netns name (/run/netns), - for one \
                 without; the column leads the table only where some flow's namespace has a name"
            }
            Figure::Process => "comm/pid of the socket's owner, - until known",
            Figure::Pid => "process id of the socket's owner, - until known",
            Figure::Comm => "command name of the socket's owner, - until known",
            Figure::State => "TCP state, closed once the flow has closed",
            Figure::Local => "this host's address and port",
            Figure::Remote => "the peer's address and port",
            Figure::Acked => {
                "bytes the peer acknowledged over the flow's life (sent and delivered)"
            }
            Figure::Received => "bytes this host received over the flow's life",
            Figure::Rate => {
                "bit/s of the flow's data over the judged interval, the verdict's: acknowledged \
                 for an upload, received for a download (marked ↓)"
            }
            Figure::Srtt => "the smoothed round-trip time the sender measures (ms or µs)",
            Figure::MinRtt => "the least round-trip time seen over the flow's life (ms or µs)",
            Figure::Cwnd => "the congestion window, in segments",
            Figure::SndWnd => {
                "the peer's advertised receive window, the most the sender may have in flight \
                 (bytes)"
            }
            Figure::Inflight => "segments sent and not yet acknowledged",
            Figure::Retrans => "segments retransmitted over the flow's life",
            Figure::RwndLimited => {
                "percent of busy time the sender waited on the peer's window (rwnd-limited); - \
                 for a flow never busy"
            }
            Figure::CwndLimited => {
                "percent of busy time the sender waited on its congestion window (cwnd-limited)"
            }
            Figure::RcvRtt => {
                "the mean round-trip time this receiving end measured over the judged interval \
                 (rcv_rtt, ms or µs), the one the verdict used"
            }
            Figure::BaseRtt => "the path's base round-trip time as this receiving end measures it",
            Figure::RcvWnd => "the receive window this host advertises to the sender (bytes)",
            Figure::Unread => "bytes received and not yet read by the application (ss Recv-Q)",
            Figure::Ooo => {
                "data segments that arrived out of order (rcv_ooopack): the sign of losses"
            }
            Figure::Fill => {
                "percent of the receive window in flight (window fill); - where the window was \
                 closed over half the judged interval, or there was none"
            }
            Figure::Closed => "percent of the judged interval the receive window was closed (zero)",
            Figure::Cc => "congestion control (on a download, this end's, which sends only ACKs)",
            Figure::Verdict => {
                "what limits the flow (VERDICTS), then + and the short name of a second limit \
                 that held it too (sender+reader)"
            }
            Figure::Workload => "the owner's pod, container, systemd unit or cgroup; - until known",
            Figure::Advice => {
                "what would help, in a few words: the window to grow, what it buys and the \
                 setting that grows it, or why no window helps (faster reader, more capacity)"
            }
        }
    }

    /// Its header in top, whose columns are narrow: its [`Figure::name`]
    /// but for four figures with short ones.
    pub const fn short(self) -> &'static str {
        match self {
            Figure::Inflight => "INFLT",
            Figure::Retrans => "RETR",
            Figure::RwndLimited => "RWND%",
            Figure::CwndLimited => "CWND%",
            other => other.name(),
        }
    }
}

/// The share of the interval above which a download's window counts as
/// shut: FILL% is then `-`, since the fill of a window that was mostly
/// closed (a throttled reader's, `window closed 88%`) says nothing of how
/// full it runs while open.
pub const SHUT_MOST: f64 = 0.5;

/// A download's window fill as FILL% and the detail pane give it (0 to
/// 1): None where the window was shut most of the interval
/// ([`SHUT_MOST`]) or there was no window.
pub fn window_fill(rx: &Receive) -> Option<f64> {
    (rx.rcv_wnd_mean > 0.0 && rx.closed_share <= SHUT_MOST).then_some(rx.window_fill)
}

/// The short name of a second limit in a VERDICT cell, after the `+`.
pub const fn also_name(v: Verdict) -> &'static str {
    match v {
        Verdict::ReceiveWindow => "rwnd",
        Verdict::SendBuffer => "sndbuf",
        Verdict::Application => "app",
        Verdict::CongestionWindow => "cwnd",
        Verdict::Path => "path",
        Verdict::ReceiverApplication => "reader",
        Verdict::Sender => "sender",
        Verdict::Unknown => "unknown",
    }
}

/// `a`'s VERDICT cell: the verdict's name, then `+` and the short name of
/// the second limit matched with it ([`also_name`]), where there is one:
/// `sender+reader`, `receive_window+app`.
pub fn verdict_cell(a: &Attribution) -> String {
    match &a.also {
        Some(x) => format!("{}+{}", a.verdict.name(), also_name(x.verdict)),
        None => a.verdict.name().to_string(),
    }
}

/// [`verdict_cell`] in at most `w` characters: where it is wider, the
/// verdict's name is cut (marked `…`) and `+` with the second limit kept
/// whole, `receiver_applic…+sender`, so the pair still reads.
pub fn verdict_fitted(a: &Attribution, w: usize) -> String {
    let whole = verdict_cell(a);
    let n = whole.chars().count();
    if n <= w {
        return whole;
    }
    let Some(x) = &a.also else {
        let head: String = whole.chars().take(w.saturating_sub(1)).collect();
        return format!("{head}…");
    };
    let tail = format!("+{}", also_name(x.verdict));
    let keep = w.saturating_sub(tail.len() + 1);
    let head: String = a.verdict.name().chars().take(keep).collect();
    format!("{head}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribution::{Also, group::fixtures::F};

    fn judged(verdict: Verdict, also: Option<Verdict>) -> Attribution {
        let (_, mut a) = F {
            verdict,
            ..F::default()
        }
        .build(1);
        a.also = also.map(|verdict| Also {
            verdict,
            share: 0.3,
            reason: String::new(),
        });
        a
    }

    #[test]
    fn a_verdict_cell_names_the_second_limit_after_a_plus() {
        let a = judged(Verdict::Sender, Some(Verdict::ReceiverApplication));
        assert_eq!(verdict_cell(&a), "sender+reader");
        assert_eq!(verdict_fitted(&a, 20), "sender+reader");
        let a = judged(Verdict::ReceiverApplication, Some(Verdict::Sender));
        assert_eq!(verdict_cell(&a), "receiver_application+sender");
        // Cut to 20, the second limit stays whole.
        assert_eq!(verdict_fitted(&a, 20), "receiver_app…+sender");
        let a = judged(Verdict::Path, None);
        assert_eq!(verdict_cell(&a), "path");
        assert_eq!(
            verdict_fitted(&judged(Verdict::CongestionWindow, None), 10),
            "congestio…"
        );
        // Every short name is one word, and names one verdict.
        let names = Verdict::ALL.map(also_name);
        for (i, n) in names.iter().enumerate() {
            assert!(n.chars().all(|c| c.is_ascii_lowercase()), "{n}");
            assert!(!names[..i].contains(n), "{n}");
        }
    }

    /// No header, long or short, names two figures.
    #[test]
    fn each_header_names_one_figure() {
        let mut seen: Vec<(&str, Figure)> = Vec::new();
        for f in Figure::ALL {
            for h in [f.name(), f.short()] {
                if let Some((_, other)) = seen.iter().find(|(s, g)| *s == h && *g != f) {
                    panic!("{h} names {f:?} and {other:?}");
                }
                seen.push((h, f));
            }
        }
        assert_eq!(Figure::Inflight.short(), "INFLT");
        assert_eq!(Figure::MinRtt.short(), "MIN_RTT");
        assert_eq!(Figure::RcvRtt.short(), Figure::RcvRtt.name());
    }
}
