//! The columns of `observer flows`' table: one set for uploads (flows
//! judged at this, the sending end) and one for downloads (judged at
//! this, the receiving end, marked ↓), each a figure of the table that
//! `observer top` titles its columns from too ([`super::figures`]), under
//! the figure's name: a download's round trip is `RCV_RTT`, its window
//! `RCV_WND`, its losses `OOO`, never `SRTT`, `SND_WND` or `RETRANS`.

use super::figures::{Figure, verdict_cell};
use crate::{
    attribution::{self, Side},
    track::snapshot::Report,
    units,
};

/// Columns in either section.
pub const COLUMNS: usize = 18;

/// The title of the column of namespace names, first in a table where
/// any flow's namespace has an `ip netns` name (most have none: the column
/// would be all `-` on most hosts).
pub const NETNS: &str = Figure::Netns.name();

/// `r`'s [`NETNS`] cell: its namespace's `ip netns` name, or `-`.
pub fn netns_cell(r: &Report) -> String {
    r.flow.netns_name.as_deref().unwrap_or("-").to_string()
}

/// Which section of the table a flow is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// Flows judged at this, the sending end: the sender's figures.
    Uploads,
    /// Flows judged at this, the receiving end (↓): the receiver's.
    Downloads,
}

impl Section {
    /// The section of `r`, by the end its verdict was judged from.
    pub fn of(r: &Report) -> Section {
        match r.attribution.side {
            Side::Sender => Section::Uploads,
            Side::Receiver => Section::Downloads,
        }
    }

    /// The section's figures, in column order.
    pub fn figures(self) -> [Figure; COLUMNS] {
        match self {
            Section::Uploads => UPLOADS,
            Section::Downloads => DOWNLOADS,
        }
    }

    /// The section's column titles, in order: its figures' names.
    pub fn headers(self) -> [&'static str; COLUMNS] {
        self.figures().map(Figure::name)
    }
}

/// The uploads' columns.
const UPLOADS: [Figure; COLUMNS] = [
    Figure::Local,
    Figure::Remote,
    Figure::Pid,
    Figure::Comm,
    Figure::State,
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
    Figure::Cc,
    Figure::Verdict,
    Figure::Advice,
];

/// The downloads' columns: the receiving end's figures where the uploads
/// have the sender's.
const DOWNLOADS: [Figure; COLUMNS] = [
    Figure::Local,
    Figure::Remote,
    Figure::Pid,
    Figure::Comm,
    Figure::State,
    Figure::Acked,
    Figure::Received,
    Figure::Rate,
    Figure::RcvRtt,
    Figure::BaseRtt,
    Figure::RcvWnd,
    Figure::Unread,
    Figure::Ooo,
    Figure::Fill,
    Figure::Closed,
    Figure::Cc,
    Figure::Verdict,
    Figure::Advice,
];

/// A share (0 to 1) as a whole percent, without the sign (the title has it).
fn percent(x: f64) -> String {
    format!("{:.0}", x * 100.0)
}

/// The cells of `r`'s row, in its section's column order.
pub fn row(r: &Report) -> [String; COLUMNS] {
    let f = &r.flow;
    let ev = &r.attribution.evidence;
    let bytes = |b: f64| units::compact(&units::bytes(b));
    let time = |us: f64| units::compact(&units::time_us(us));
    let or_dash = |s: &str| {
        if s.is_empty() {
            "-".to_string()
        } else {
            s.to_string()
        }
    };
    let rate = units::compact(&units::rate(ev.rate_bps.max(ev.recv_rate_bps)));
    let state = if f.closed {
        "closed".to_string()
    } else {
        f.state.to_string()
    };
    // The figures of the judging end: the sender's, or for a download
    // the receiving end's (its own send figures are of its ACKs).
    let (rate, own): (String, [String; 7]) = match Section::of(r) {
        Section::Uploads => (
            rate,
            [
                time(f64::from(f.srtt_us)),
                time(f64::from(f.min_rtt_us)),
                f.snd_cwnd.to_string(),
                bytes(f64::from(f.snd_wnd)),
                f.inflight.to_string(),
                f.retransmits.to_string(),
                if f.busy_us > 0 {
                    percent(f.rwnd_limited_us as f64 / f.busy_us as f64)
                } else {
                    "-".to_string()
                },
            ],
        ),
        Section::Downloads => (
            format!("↓{rate}"),
            [
                time(f64::from(ev.receiver_rtt_us)),
                time(f64::from(ev.receive.base_rtt_us)),
                bytes(f64::from(f.rcv_wnd)),
                bytes(f64::from(f.unread_bytes)),
                f.rcv_ooopack.to_string(),
                super::figures::window_fill(&ev.receive).map_or_else(|| "-".to_string(), percent),
                percent(ev.receive.closed_share),
            ],
        ),
    };
    let [a, b, c, d, e, g, h] = own;
    [
        f.local.to_string(),
        f.remote.to_string(),
        if f.pid == 0 {
            "-".into()
        } else {
            f.pid.to_string()
        },
        or_dash(&f.comm),
        state,
        bytes(f.bytes_acked as f64),
        bytes(f.bytes_received as f64),
        rate,
        a,
        b,
        c,
        d,
        e,
        g,
        h,
        or_dash(&f.cc),
        verdict_cell(&r.attribution),
        attribution::group::advice::advice(&r.attribution, f),
    ]
}

#[cfg(test)]
#[path = "columns_tests.rs"]
mod tests;
