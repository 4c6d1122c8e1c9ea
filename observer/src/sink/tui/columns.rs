//! The flow table's columns in `observer top`: the figure each shows in
//! each section (uploads, judged at this, the sending end; downloads,
//! marked ↓, judged at this, the receiving end), widths, which ones fit a
//! terminal, and each cell's text. Titles are the figures' short names in
//! the table the `flows` table shares ([`crate::sink::figures`]): a
//! download's own figures have their own names (RCV_RTT, BASE_RTT,
//! UNREAD, RCV_WND, OOO, CLOSED%, FILL%), so no title means two things.

use super::{fit::keep_tail, row::Row, sort::SortKey};
use crate::{
    sink::figures::{Figure, verdict_fitted},
    units,
};

/// One table column: its sort key, figures, width, and when it is dropped.
pub(super) struct Column {
    /// The key `s` and `--sort` name it by.
    pub(super) key: SortKey,
    /// The figure it shows over uploads.
    pub(super) up: Figure,
    /// The figure it shows over downloads; None where a download has no
    /// such figure (its title and cells are empty).
    pub(super) down: Option<Figure>,
    /// Width in terminal cells (ADVICE: the least it is given).
    pub(super) width: u16,
    /// 0: always shown; higher numbers are dropped first as width shrinks.
    pub(super) priority: u8,
    /// Right-aligned (figures), else left (names, addresses).
    pub(super) right: bool,
}

impl Column {
    /// A left-aligned column `width` cells wide, always shown, showing
    /// `figure` in both sections.
    const fn new(key: SortKey, figure: Figure, width: u16) -> Column {
        Column {
            key,
            up: figure,
            down: Some(figure),
            width,
            priority: 0,
            right: false,
        }
    }

    /// Showing `down` over downloads (None: nothing).
    const fn down(self, down: Option<Figure>) -> Column {
        Column { down, ..self }
    }

    /// Dropped at `priority` as the terminal narrows (higher first).
    const fn dropped_at(self, priority: u8) -> Column {
        Column { priority, ..self }
    }

    /// Right-aligned, as figures are.
    const fn right(self) -> Column {
        Column {
            right: true,
            ..self
        }
    }

    /// Its title over the section of `download` rows: its figure's short
    /// name, or empty.
    pub(super) fn title(&self, download: bool) -> &'static str {
        let figure = if download { self.down } else { Some(self.up) };
        figure.map_or("", Figure::short)
    }
}

/// Columns in display order. At 80 columns the priority-0 ones fit
/// exactly (PROCESS at 12 keeps a pid; REMOTE at its narrowest, 18, keeps
/// an IPv4 port; RATE holds `↓300.5Mbit/s`; VERDICT holds
/// `receiver_application`; ADVICE at its narrowest, 14, holds `faster
/// reader`). WORKLOAD shows on terminals wide enough for every other
/// column; ADVICE comes last, widened as [`fit_columns`] says.
pub(super) const COLUMNS: [Column; 16] = [
    // Only where a flow shown has an `ip netns` name ([`fit_columns`]);
    // given room once the windows' columns have theirs.
    Column::new(SortKey::Netns, Figure::Netns, 10).dropped_at(8),
    Column::new(SortKey::Process, Figure::Process, 12),
    Column::new(SortKey::Local, Figure::Local, 21).dropped_at(3),
    Column::new(SortKey::Remote, Figure::Remote, 18),
    Column::new(SortKey::Rate, Figure::Rate, 12).right(),
    Column::new(SortKey::Srtt, Figure::Srtt, 8)
        .down(Some(Figure::RcvRtt))
        .dropped_at(1)
        .right(),
    Column::new(SortKey::MinRtt, Figure::MinRtt, 8)
        .down(Some(Figure::BaseRtt))
        .dropped_at(8)
        .right(),
    Column::new(SortKey::Cwnd, Figure::Cwnd, 12)
        .down(Some(Figure::Unread))
        .dropped_at(6)
        .right(),
    Column::new(SortKey::SndWnd, Figure::SndWnd, 7)
        .down(Some(Figure::RcvWnd))
        .dropped_at(7)
        .right(),
    Column::new(SortKey::Inflight, Figure::Inflight, 6)
        .down(None)
        .dropped_at(9)
        .right(),
    Column::new(SortKey::Retrans, Figure::Retrans, 6)
        .down(Some(Figure::Ooo))
        .dropped_at(5)
        .right(),
    Column::new(SortKey::RwndLimited, Figure::RwndLimited, 7)
        .down(Some(Figure::Closed))
        .dropped_at(2)
        .right(),
    Column::new(SortKey::CwndLimited, Figure::CwndLimited, 5)
        .down(Some(Figure::Fill))
        .dropped_at(4)
        .right(),
    Column::new(SortKey::Verdict, Figure::Verdict, 20),
    Column::new(SortKey::Workload, Figure::Workload, 24).dropped_at(10),
    Column::new(SortKey::Advice, Figure::Advice, 14),
];

/// Widest an address column grows to (a full IPv6 address and port).
const MAX_ADDR: u16 = 47;

/// Widest NETNS grows to from the spare width, before ADVICE and the
/// addresses do:
/// a generated name (`obs-bench-1234-0-a`, a CNI's `cni-` and a UUID's
/// head) whole; a longer one is cut at its start ([`cell_text`]).
const MAX_NETNS: u16 = 24;

/// A column as drawn: which of [`COLUMNS`], and its width (cells).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Fitted {
    /// Index into [`COLUMNS`].
    pub(super) column: usize,
    /// Width in terminal cells.
    pub(super) width: u16,
}

/// Where ADVICE's widening ranks among the columns' priorities: it
/// widens to its widest text, up to [`ADVICE_FIGURES`] cells, where every
/// column down to RETR (priority 5) fits too, before CWND, SND_WND, MIN_RTT
/// and INFLT are given room; past that, from the width left over.
const ADVICE_WHOLE: u8 = 5;

/// What ADVICE widens to at its rank (cells): a window's advice with its
/// figures, `peer's window 149.7KB → 11.2Mbit/s`, whole.
const ADVICE_FIGURES: u16 = 34;

/// Where VERDICT's widening ranks: once SRTT (priority 1) has its room,
/// VERDICT takes what its widest cell needs past its 20 cells (a second
/// limit's `+sender` after `receiver_application`, 27), as much as fits.
const VERDICT_WHOLE: u8 = 1;

/// One step of fitting the columns, in order of rank.
#[derive(Clone, Copy)]
enum Step {
    /// Show a column of [`COLUMNS`].
    Show(usize),
    /// Widen VERDICT to its widest cell, as far as the width allows.
    WidenVerdict,
    /// Widen ADVICE to its widest text, up to [`ADVICE_FIGURES`], if
    /// all of that fits.
    WidenAdvice,
}

/// The columns that fit in `width`, in display order, and their widths.
/// NETNS is one of them only where `netns` (a flow shown has an `ip
/// netns` name; on most hosts none has, and the column would be all
/// `-`), first, as in the `flows` table, and dropped before the windows'
/// columns as the terminal narrows; `netns` is its widest name (0: no
/// name). VERDICT is widened towards its widest
/// cell, `verdict` cells, at its rank ([`VERDICT_WHOLE`]). ADVICE is given
/// its widest text, `advice` cells (up to [`ADVICE_FIGURES`]), where that
/// fits at its rank ([`ADVICE_WHOLE`]). Spare width goes to NETNS, up to
/// `netns` (at most [`MAX_NETNS`]), then to ADVICE, up to `advice`, then
/// to the address columns.
pub(super) fn fit_columns(width: u16, advice: u16, verdict: u16, netns: u16) -> Vec<Fitted> {
    let named = netns > 0;
    // Columns by priority, each widening after the columns of its rank.
    let mut order: Vec<(u8, Step)> = (0..COLUMNS.len())
        .filter(|i| named || COLUMNS[*i].key != SortKey::Netns)
        .map(|i| (COLUMNS[i].priority, Step::Show(i)))
        .collect();
    order.push((VERDICT_WHOLE, Step::WidenVerdict));
    order.push((ADVICE_WHOLE, Step::WidenAdvice));
    order.sort_by_key(|(p, step)| (*p, !matches!(step, Step::Show(_))));
    let index = |key: SortKey| COLUMNS.iter().position(|c| c.key == key);
    let at = index(SortKey::Advice).unwrap_or(COLUMNS.len() - 1);
    let verdict_at = index(SortKey::Verdict).unwrap_or(at);
    let mut shown = [false; COLUMNS.len()];
    let mut widths = COLUMNS.map(|c| c.width);
    let mut used: u16 = 0;
    for (priority, step) in order {
        match step {
            Step::WidenVerdict => {
                let grow = verdict
                    .saturating_sub(widths[verdict_at])
                    .min(width.saturating_sub(used));
                widths[verdict_at] += grow;
                used += grow;
            }
            Step::WidenAdvice => {
                let grow = advice.min(ADVICE_FIGURES).saturating_sub(widths[at]);
                if used + grow <= width {
                    widths[at] += grow;
                    used += grow;
                }
            }
            Step::Show(i) => {
                let need = COLUMNS[i].width + u16::from(used > 0);
                if used + need <= width || priority == 0 {
                    shown[i] = true;
                    used += need;
                }
            }
        }
    }
    let mut cols: Vec<Fitted> = (0..COLUMNS.len())
        .filter(|i| shown[*i])
        .map(|column| Fitted {
            column,
            width: widths[column],
        })
        .collect();
    let mut spare = width.saturating_sub(used);
    if let Some(c) = cols
        .iter_mut()
        .find(|c| COLUMNS[c.column].key == SortKey::Netns)
    {
        let grow = netns.min(MAX_NETNS).saturating_sub(c.width).min(spare);
        c.width += grow;
        spare -= grow;
    }
    if let Some(c) = cols.iter_mut().find(|c| c.column == at) {
        let grow = advice.saturating_sub(c.width).min(spare);
        c.width += grow;
        spare -= grow;
    }
    let addrs: Vec<usize> = (0..cols.len())
        .filter(|j| {
            matches!(
                COLUMNS[cols[*j].column].key,
                SortKey::Local | SortKey::Remote
            )
        })
        .collect();
    while spare > 0 && !addrs.is_empty() {
        let mut grew = false;
        for j in &addrs {
            if spare > 0 && cols[*j].width < MAX_ADDR {
                cols[*j].width += 1;
                spare -= 1;
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }
    cols
}

/// `comm/pid` cut to `w` characters, keeping the pid.
fn fit_process(r: &Row, w: usize) -> String {
    let p = r.process();
    if p.chars().count() <= w {
        return p;
    }
    let pid = format!("/{}", r.flow.pid);
    let keep = w.saturating_sub(pid.len() + 1);
    if r.flow.pid == 0 || keep == 0 {
        let head: String = p.chars().take(w.saturating_sub(1)).collect();
        return format!("{head}…");
    }
    let head: String = r.flow.comm.chars().take(keep).collect();
    format!("{head}…{pid}")
}

/// `s` cut to `w` characters, keeping its start and marking the cut.
fn keep_head(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        return s.to_string();
    }
    let head: String = s.chars().take(w.saturating_sub(1)).collect();
    format!("{head}…")
}

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), units::share)
}

fn bytes(b: u64) -> String {
    units::compact(&units::bytes(b as f64))
}

/// RATE's cell for `r` in `w` characters: its shown rate
/// ([`Row::shown_bps`]), after `↓` for a download and `~` where it is the
/// average of the last seconds ([`Row::average_bps`]: the judged window
/// moved nothing). Marked and too wide (`↓~300.5Mbit/s`), the figure
/// loses its decimal (`↓~300Mbit/s`).
fn rate_text(r: &Row, w: usize) -> String {
    let figure = units::compact(&units::rate(r.shown_bps()));
    let text = format!(
        "{}{}{figure}",
        if r.download() { "↓" } else { "" },
        if r.average_bps.is_some() { "~" } else { "" }
    );
    if text.chars().count() <= w {
        return text;
    }
    match text.split_once('.') {
        Some((whole, rest)) => {
            format!(
                "{whole}{}",
                rest.trim_start_matches(|c: char| c.is_ascii_digit())
            )
        }
        None => text,
    }
}

/// The text of column `key` for row `r`, fitted to `w`. A download's
/// cells are its receiving end's figures, under its section's titles.
pub(super) fn cell_text(key: SortKey, r: &Row, w: usize) -> String {
    let f = &r.flow;
    match key {
        // A cut name keeps its end: generated names differ there
        // (`pe-9547-0-a`, `pe-9547-0-b`).
        SortKey::Netns => keep_tail(f.netns_name.as_deref().unwrap_or("-"), w),
        SortKey::Process => fit_process(r, w),
        SortKey::Local => keep_tail(&f.local.to_string(), w),
        SortKey::Remote => keep_tail(&f.remote.to_string(), w),
        // A closed flow has no current rate (the closed list, `c`, gives
        // its life's average).
        SortKey::Rate if r.closed => "closed".to_string(),
        SortKey::Rate => rate_text(r, w),
        SortKey::Srtt => units::compact(&units::time_us(f64::from(r.rtt_us()))),
        SortKey::MinRtt => units::compact(&units::time_us(f64::from(r.base_rtt_us()))),
        SortKey::Cwnd => match (r.cwnd(), r.unread_bytes()) {
            (Some(c), _) => format!("{}/{}", c.segments, bytes(c.bytes)),
            (None, Some(unread)) => bytes(unread),
            (None, None) => "-".to_string(),
        },
        SortKey::SndWnd => bytes(r.window_bytes()),
        SortKey::Inflight => r.inflight().map_or_else(String::new, |n| n.to_string()),
        SortKey::Retrans => r.losses().to_string(),
        SortKey::RwndLimited => pct(r.window_held()),
        SortKey::CwndLimited => pct(r.cwnd_or_fill()),
        SortKey::Verdict => verdict_fitted(&r.current, w),
        SortKey::Workload => {
            // The root cgroup, `/`, names no workload: `-`, as an
            // owner not yet known.
            let name = f.workload.get().name();
            if name.is_empty() || name == "/" {
                "-".to_string()
            } else {
                keep_tail(&name, w)
            }
        }
        SortKey::Advice => keep_head(&r.advice(), w),
    }
}
