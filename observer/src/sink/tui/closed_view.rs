//! The recently closed flows' table in `observer top` (`c`): newest
//! first, each flow's verdict, ADVICE and average rate (AVGRATE) over
//! its whole observed life, how long ago it closed and how long it
//! lived; Enter opens the detail pane on one. The list it draws is
//! [`super::closed`]'s.

use std::time::Duration;

use ratatui::{
    Frame,
    layout::{Alignment, Constraint, Rect},
    style::Style,
    text::Line,
    widgets::{Cell, Paragraph, Row as TableRow, Table},
};

use super::{closed::ClosedFlow, columns::cell_text, sort::SortKey, state::App, theme};
use crate::{sink::figures::Figure, units};

/// What a column of the closed table shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Col {
    /// How long ago the flow closed.
    Ago,
    /// How long it lived (first seen to close).
    Life,
    /// Its average rate over that life (its row's rate: the row is
    /// judged over its life).
    AvgRate,
    /// A column of the flow table, drawn as it draws it.
    Flow(SortKey),
}

/// The columns in display order: title (a flow table column's is its
/// figure's, as there), what, width (ADVICE: the least it is given;
/// NETNS: the most), right-aligned, and the rank at which a narrowing
/// terminal drops it (0: never). At 80 columns PROCESS, REMOTE, RATE,
/// VERDICT and ADVICE fit, as in the flow table. NETNS is there only
/// where a flow listed has an `ip netns` name, as in the flow table.
#[rustfmt::skip]
const COLUMNS: [(&str, Col, u16, bool, u8); 9] = [
    (Figure::Netns.short(), Col::Flow(SortKey::Netns), 24, false, 5),
    ("AGO", Col::Ago, 6, true, 2),
    (Figure::Process.short(), Col::Flow(SortKey::Process), 12, false, 0),
    (Figure::Local.short(), Col::Flow(SortKey::Local), 21, false, 4),
    (Figure::Remote.short(), Col::Flow(SortKey::Remote), 18, false, 0),
    ("LIFE", Col::Life, 7, true, 3),
    ("AVGRATE", Col::AvgRate, 12, true, 1),
    (Figure::Verdict.short(), Col::Flow(SortKey::Verdict), 20, false, 0),
    (Figure::Advice.short(), Col::Flow(SortKey::Advice), 14, false, 0),
];

/// Index of ADVICE in [`COLUMNS`].
const ADVICE: usize = 8;

/// Index of NETNS in [`COLUMNS`].
const NETNS: usize = 0;

/// The columns that fit in `width` (indexes into [`COLUMNS`], display
/// order) and their widths: the kept ones always, then by rank while they
/// fit; ADVICE, last, takes what is left. NETNS is `netns` wide (its
/// widest name, up to its width in [`COLUMNS`]; 0: no name, no column).
fn fit(width: u16, netns: u16) -> Vec<(usize, u16)> {
    let gaps = |n: usize| u16::try_from(n.saturating_sub(1)).unwrap_or(u16::MAX);
    let wide = |i: usize| {
        if i == NETNS {
            netns.clamp(5, COLUMNS[NETNS].2)
        } else {
            COLUMNS[i].2
        }
    };
    let mut shown: Vec<usize> = (0..COLUMNS.len()).filter(|i| COLUMNS[*i].4 == 0).collect();
    let used = |shown: &[usize]| shown.iter().map(|i| wide(*i)).sum::<u16>() + gaps(shown.len());
    let last = if netns > 0 { 5 } else { 4 };
    for rank in 1..=last {
        if let Some(i) = (0..COLUMNS.len()).find(|i| COLUMNS[*i].4 == rank) {
            let mut more = shown.clone();
            more.push(i);
            if used(&more) <= width {
                shown = more;
            }
        }
    }
    shown.sort_unstable();
    let spare = width.saturating_sub(used(&shown));
    shown
        .into_iter()
        .map(|i| (i, wide(i) + if i == ADVICE { spare } else { 0 }))
        .collect()
}

/// How long ago, in at most 6 cells: `12s`, `4m05s`, `2h10m`, `3d`.
pub fn ago(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        3600..86_400 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d", s / 86_400),
    }
}

/// The text of column `col` for `f`, closed `age` ago, in `w` cells.
fn cell(col: Col, f: &ClosedFlow, age: Duration, w: usize) -> String {
    match col {
        Col::Ago => ago(age),
        Col::Life => units::compact(&units::age_ms((f.life_s * 1000.0).round() as u64)),
        Col::AvgRate => {
            let rate = units::compact(&units::rate(f.row.rate_bps()));
            if f.row.download() {
                format!("↓{rate}")
            } else {
                rate
            }
        }
        Col::Flow(key) => cell_text(key, &f.row, w),
    }
}

/// Draws the recently closed flows the filter shows; keeps `app.page`
/// in step with the table's height.
pub fn draw_table(frame: &mut Frame, app: &mut App, area: Rect) {
    let height = usize::from(area.height.saturating_sub(1));
    app.page = height.max(1);
    let flows = app.closed_rows();
    let keep = app.closed().retention();
    if flows.is_empty() {
        let kept = app.closed().len();
        let msg = if keep.count == 0 {
            "the closed list is off (--closed 0); c: back to the flows".to_string()
        } else if kept > 0 {
            // Flows closed, but the filter shows none of them.
            format!(
                "none of the {kept} recently closed flows matches the filter (/ to change it; \
                 c: back to the flows)"
            )
        } else {
            format!(
                "no flow closed in the last {} (c: back to the flows)",
                humantime::format_duration(keep.age)
            )
        };
        let p = Paragraph::new(msg).alignment(Alignment::Center);
        frame.render_widget(p, area.inner(ratatui::layout::Margin::new(0, 1)));
        return;
    }
    let netns = flows
        .iter()
        .filter_map(|f| f.row.flow.netns_name.as_deref())
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0);
    let cols = fit(area.width, u16::try_from(netns).unwrap_or(u16::MAX));
    let header = TableRow::new(cols.iter().map(|(i, _)| {
        let (title, _, _, right, _) = COLUMNS[*i];
        let line = Line::styled(title, theme::bold());
        Cell::from(if right { line.right_aligned() } else { line })
    }));
    let cursor = app.closed_cursor();
    let first = (cursor + 1).saturating_sub(height);
    let lines = flows
        .iter()
        .enumerate()
        .skip(first)
        .take(height)
        .map(|(n, f)| {
            let age = app.closed().age(f);
            let cells = cols.iter().map(|(i, w)| {
                let (_, col, _, right, _) = COLUMNS[*i];
                let text = cell(col, f, age, usize::from(*w));
                let line = if col == Col::Flow(SortKey::Verdict) {
                    Line::styled(text, theme::verdict(f.row.verdict()))
                } else {
                    Line::raw(text)
                };
                Cell::from(if right { line.right_aligned() } else { line })
            });
            let mut style = Style::new();
            if n == cursor {
                style = style.add_modifier(theme::SELECTED);
            }
            TableRow::new(cells).style(style)
        });
    let widths = cols.iter().map(|(_, w)| Constraint::Length(*w));
    let table = Table::new(lines, widths).header(header).column_spacing(1);
    frame.render_widget(table, area);
}
