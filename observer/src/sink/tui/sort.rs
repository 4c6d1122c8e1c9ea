//! Sort columns of `observer top`: their `--sort` names, natural order
//! and comparison. Uploads and downloads are sorted apart, each section
//! by the figure in the key's column there (`srtt` sorts downloads by
//! RCV_RTT, `cwnd` by UNREAD: [`super::columns`]).

use std::cmp::Ordering;

use super::row::Row;

/// A sortable column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SortKey {
    /// Network namespace: its `ip netns` name (none first), then inode.
    Netns,
    /// Process (comm, then pid).
    Process,
    /// Local address.
    Local,
    /// Remote address.
    Remote,
    /// Rate.
    Rate,
    /// Smoothed RTT (a download: its receiver RTT).
    Srtt,
    /// Minimum RTT (a download: its base RTT).
    MinRtt,
    /// Congestion window, bytes (a download: its unread bytes).
    Cwnd,
    /// Peer's advertised window (a download: this host's).
    SndWnd,
    /// Segments in flight.
    Inflight,
    /// Total retransmits (a download: out-of-order arrivals).
    Retrans,
    /// rwnd-limited share of busy (a download: its window closed share).
    RwndLimited,
    /// cwnd-limited share of busy (a download: its window's fill).
    CwndLimited,
    /// Verdict.
    Verdict,
    /// Workload (pod, container, unit or cgroup).
    Workload,
    /// What would help (the ADVICE column's text).
    Advice,
}

impl SortKey {
    /// Every key, in column order (the order `s` cycles through).
    pub const ALL: [SortKey; 16] = [
        SortKey::Netns,
        SortKey::Process,
        SortKey::Local,
        SortKey::Remote,
        SortKey::Rate,
        SortKey::Srtt,
        SortKey::MinRtt,
        SortKey::Cwnd,
        SortKey::SndWnd,
        SortKey::Inflight,
        SortKey::Retrans,
        SortKey::RwndLimited,
        SortKey::CwndLimited,
        SortKey::Verdict,
        SortKey::Workload,
        SortKey::Advice,
    ];

    /// Every key's name, as `--sort` takes it.
    pub const NAMES: [&'static str; 16] = [
        "netns",
        "process",
        "local",
        "remote",
        "rate",
        "srtt",
        "min_rtt",
        "cwnd",
        "snd_wnd",
        "inflight",
        "retrans",
        "rwnd_limited",
        "cwnd_limited",
        "verdict",
        "workload",
        "advice",
    ];

    /// The name `--sort` takes.
    pub fn name(self) -> &'static str {
        Self::NAMES[self.index()]
    }

    /// The key named `name`.
    pub fn from_name(name: &str) -> Option<SortKey> {
        Self::NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| Self::ALL[i])
    }

    fn index(self) -> usize {
        Self::ALL.iter().position(|k| *k == self).unwrap_or(0)
    }

    /// The next key in column order, wrapping.
    pub fn next(self) -> SortKey {
        Self::ALL[(self.index() + 1) % Self::ALL.len()]
    }

    /// Whether the natural order is largest first (figures) rather than
    /// alphabetical (names and addresses).
    pub fn descending(self) -> bool {
        !matches!(
            self,
            SortKey::Netns
                | SortKey::Process
                | SortKey::Local
                | SortKey::Remote
                | SortKey::Verdict
                | SortKey::Workload
                | SortKey::Advice
        )
    }

    /// Compares two rows by this key, ascending.
    pub(super) fn cmp(self, a: &Row, b: &Row) -> Ordering {
        let (fa, fb) = (&a.flow, &b.flow);
        let pct = |x: Option<f64>| x.unwrap_or(-1.0);
        match self {
            SortKey::Netns => (&fa.netns_name, fa.netns).cmp(&(&fb.netns_name, fb.netns)),
            SortKey::Process => (&fa.comm, fa.pid).cmp(&(&fb.comm, fb.pid)),
            SortKey::Local => fa.local.cmp(&fb.local),
            SortKey::Remote => fa.remote.cmp(&fb.remote),
            SortKey::Rate => a.shown_bps().total_cmp(&b.shown_bps()),
            SortKey::Srtt => a.rtt_us().cmp(&b.rtt_us()),
            SortKey::MinRtt => a.base_rtt_us().cmp(&b.base_rtt_us()),
            SortKey::Cwnd => {
                let bytes = |r: &Row| r.cwnd().map(|c| c.bytes).or(r.unread_bytes());
                bytes(a).cmp(&bytes(b))
            }
            SortKey::SndWnd => a.window_bytes().cmp(&b.window_bytes()),
            SortKey::Inflight => a.inflight().cmp(&b.inflight()),
            SortKey::Retrans => a.losses().cmp(&b.losses()),
            SortKey::RwndLimited => pct(a.window_held()).total_cmp(&pct(b.window_held())),
            SortKey::CwndLimited => pct(a.cwnd_or_fill()).total_cmp(&pct(b.cwnd_or_fill())),
            SortKey::Verdict => a.verdict().name().cmp(b.verdict().name()),
            SortKey::Workload => fa.workload.get().name().cmp(&fb.workload.get().name()),
            SortKey::Advice => a.advice().cmp(&b.advice()),
        }
    }
}
