//! The peers view of `observer top` (`v`): the flows that moved data
//! grouped by remote address within their network namespace, each group judged as `observer
//! flows --by peer` judges it (per-flow, shared, mixed or unknown limit:
//! docs/attribution.md, "Groups"), and its detail pane with the judgement
//! and what would help.

use ratatui::{
    Frame,
    layout::{Alignment, Constraint, Rect},
    style::Style,
    text::{Line, Span, Text},
    widgets::{Block, Cell, Paragraph, Row as TableRow, Table, Wrap},
};

use super::{fit::keep_tail, state::App, theme};
use crate::{
    attribution::group::{Direction, Group},
    sink::groups::{Named, verdict_mix},
    units,
};

/// Terminals at least this wide show the fastest flow's and the path's
/// rates too.
const WIDE: u16 = 110;

/// The table's columns, in order: title and width. Titles are one word
/// each, so that two side by side never read as one (`PATH LIMIT`).
const NARROW: [(&str, u16); 5] = [
    ("PEER", 24),
    ("DIR", 4),
    ("FLOWS", 5),
    ("OPEN", 4),
    // A rate is at most 12 characters (`130.97Gbit/s`), a download's 13.
    ("RATE", 13),
];

/// The columns wide terminals add after [`NARROW`]'s.
const WIDE_ONLY: [(&str, u16); 2] = [("FASTEST", 12), ("PATHRATE", 12)];

/// The group's direction in [`NARROW`]'s `DIR`: `down` (this host
/// receives) or `up`.
fn direction(g: &Group) -> &'static str {
    match g.direction {
        Direction::Download => "down",
        Direction::Upload => "up",
    }
}

/// What the group moved and over what window: `2.75 GB over 12.0 s at
/// 1.83 Gbit/s`.
fn moved(g: &Group) -> String {
    format!(
        "{} over {} (the flows' judged intervals) at {}",
        units::bytes(g.bytes as f64),
        units::age_ms(g.span_us / 1000),
        units::rate(g.rate_bps)
    )
}

/// A rate, compact (`10.0Mbit/s`).
fn rate(bps: f64) -> String {
    units::compact(&units::rate(bps))
}

/// The group's rate, `↓`-marked for a download (this host receives).
fn direction_rate(g: &Group) -> String {
    match g.direction {
        Direction::Download => format!("↓{}", rate(g.rate_bps)),
        Direction::Upload => rate(g.rate_bps),
    }
}

/// Draws the peers table; keeps `app.page` in step with its height.
pub fn draw_table(frame: &mut Frame, app: &mut App, area: Rect) {
    let height = usize::from(area.height.saturating_sub(1));
    app.page = height.max(1);
    let groups = app.groups();
    if groups.is_empty() {
        let p = Paragraph::new("no peers yet: waiting for flows... (v: back to the flows)")
            .alignment(Alignment::Center);
        frame.render_widget(p, area.inner(ratatui::layout::Margin::new(0, 1)));
        return;
    }
    let wide = area.width >= WIDE;
    let cursor = app.peer_cursor();
    let first = (cursor + 1).saturating_sub(height);
    let wide_only: &[(&str, u16)] = if wide { &WIDE_ONLY } else { &[] };
    let (mut titles, mut widths): (Vec<&str>, Vec<u16>) = NARROW
        .iter()
        .chain(wide_only)
        .chain(&[("LIMIT", 9)])
        .copied()
        .unzip();
    titles.push("VERDICTS");
    let used: u16 = widths.iter().sum::<u16>() + widths.len() as u16;
    widths.push(area.width.saturating_sub(used).max(8));
    let header = TableRow::new(titles.iter().enumerate().map(|(i, t)| {
        let line = Line::styled(*t, theme::bold());
        // Counts and rates right-aligned, as in the flow table.
        Cell::from(if (2..titles.len() - 2).contains(&i) {
            line.right_aligned()
        } else {
            line
        })
    }));
    let rows = groups
        .iter()
        .enumerate()
        .skip(first)
        .take(height)
        .map(|(n, g)| {
            let mut cells = vec![
                Cell::from(keep_tail(&g.key, 24)),
                Cell::from(direction(g)),
                Cell::from(Line::raw(g.flows.to_string()).right_aligned()),
                Cell::from(Line::raw(g.open.to_string()).right_aligned()),
                // ↓ marks a download, as in the flow table.
                Cell::from(Line::raw(direction_rate(g)).right_aligned()),
            ];
            if wide {
                cells.push(Cell::from(Line::raw(rate(g.fastest_bps)).right_aligned()));
                cells.push(Cell::from(Line::raw(rate(g.path_bps)).right_aligned()));
            }
            cells.push(Cell::from(Line::styled(
                g.limit.name(),
                theme::limit(g.limit),
            )));
            cells.push(Cell::from(verdict_mix(g)));
            let mut style = Style::new();
            if n == cursor {
                style = style.add_modifier(theme::SELECTED);
            }
            TableRow::new(cells).style(style)
        });
    let table = Table::new(rows, widths.into_iter().map(Constraint::Length))
        .header(header)
        .column_spacing(1);
    frame.render_widget(table, area);
}

/// Draws the detail pane of the peer `g`: its figures, the judgement and
/// what would help; its namespace by name where `names` has one.
pub fn draw_detail(frame: &mut Frame, g: &Named, area: Rect) {
    let mut lines = vec![
        Line::from(vec![
            theme::label("limit "),
            Span::styled(g.limit.name(), theme::limit(g.limit)),
            Span::raw(format!("  (rule {})", g.rule)),
        ]),
        Line::from(vec![
            theme::label("flows "),
            Span::raw(format!(
                "{} ({} open, at most {} at once, {} judged)",
                g.flows, g.open, g.concurrent, g.judged
            )),
        ]),
        Line::from(vec![
            theme::label("moved "),
            Span::raw(format!(
                "{}; fastest flow {}; the path has shown {}",
                moved(g),
                units::rate(g.fastest_bps),
                units::rate(g.path_bps)
            )),
        ]),
        Line::from(vec![theme::label("verdicts "), Span::raw(verdict_mix(g))]),
        Line::raw(""),
        Line::raw(g.explanation.clone()),
    ];
    if !g.what_if.is_empty() {
        lines.push(Line::raw(""));
        lines.push(Line::from(theme::label("what would help")));
        for w in &g.what_if {
            lines.push(Line::raw(format!("- {}", w.summary)));
        }
    }
    let block = Block::bordered().title(format!(
        " peer {} {} ({}) ",
        g.key,
        g.direction.name(),
        g.netns_words()
    ));
    let p = Paragraph::new(Text::from(lines))
        .block(block)
        .wrap(Wrap { trim: false });
    frame.render_widget(p, area);
}

#[cfg(test)]
mod width_tests {
    use super::*;

    /// Every rate fits its column whole: a cut one loses its leading
    /// digit (`30.97Gbit/s` of 130.97), which reads as another figure.
    #[test]
    fn the_widest_rates_fit_their_columns() {
        let widest = rate(999.99e9);
        assert_eq!(widest, "999.99Gbit/s");
        let n = widest.chars().count() as u16;
        assert!(NARROW[4].1 > n, "a download's ↓ and {widest}");
        assert!(WIDE_ONLY.iter().all(|(_, w)| *w >= n));
    }
}
