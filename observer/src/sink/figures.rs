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
    use crate::attribution::{Also, group::kit::F};

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
