//! Renders an [`App`] into a ratatui frame: header (host totals), flow
//! table or detail pane ([`super::detail`]), footer (keys or filter
//! input), help overlay.

use ratatui::{
    Frame,
    layout::{Alignment, Constraint, Layout, Rect},
    style::Style,
    text::{Line, Span, Text},
    widgets::{Block, Cell, Clear, Paragraph, Row as TableRow, Table},
};

use super::{
    closed_view,
    columns::{COLUMNS, Fitted, cell_text, fit_columns},
    detail, help, peers,
    row::Row,
    select::Selection,
    sort::SortKey,
    state::{App, Mode, Sorting},
    steady::Widest,
    theme,
};
use crate::{attribution::Verdict, sink::figures::verdict_cell, units};

/// Draws the whole view; keeps `app.offset` and `app.page` in step with
/// the table's height.
pub fn draw(frame: &mut Frame, app: &mut App) {
    let caption = u16::from(app.caption.is_some());
    let [header, caption_area, body, footer] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(caption),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    draw_header(frame, app, header);
    if let Some(text) = &app.caption {
        let line = Line::styled(text.to_string(), theme::bold());
        frame.render_widget(Paragraph::new(line), caption_area);
    }
    if app.closed_view() {
        match app.detail() {
            Some(row) => detail::draw(frame, row, app.interval(), body),
            None => closed_view::draw_table(frame, app, body),
        }
    } else if app.peers() {
        match app.peer_detail() {
            Some(g) => peers::draw_detail(frame, g, body),
            None => peers::draw_table(frame, app, body),
        }
    } else {
        match app.detail() {
            Some(row) => detail::draw(frame, row, app.interval(), body),
            None => draw_table(frame, app, body),
        }
    }
    draw_footer(frame, app, footer);
    if app.help() {
        draw_help(frame, body);
    }
}

fn draw_header(frame: &mut Frame, app: &App, area: Rect) {
    let t = &app.snapshot().totals;
    let interval = humantime::format_duration(app.interval()).to_string();
    // The counts are the host's: open flows, and those closed in the last
    // seconds (the dim rows); with a filter, how many rows it lets
    // through, and the rates say they are the host's, not the rows'.
    let filtered = !app.filter().is_empty();
    let (send, recv) = if filtered {
        ("host send ", "host recv ")
    } else {
        ("send ", "recv ")
    };
    let l1 = Line::from(vec![
        theme::label("flows "),
        Span::raw(if filtered {
            format!(
                "{} open, {} just closed, {} shown   ",
                t.open,
                t.closed,
                app.len()
            )
        } else {
            format!("{} open, {} just closed   ", t.open, t.closed)
        }),
        theme::label(send),
        Span::raw(format!("{}   ", units::rate(t.send_bps))),
        theme::label(recv),
        Span::raw(format!("{}   ", units::rate(t.recv_bps))),
        theme::label("every "),
        Span::raw(interval),
    ]);
    let mut l2 = vec![theme::label("verdicts ")];
    for (v, n) in Verdict::ALL.iter().zip(t.verdicts) {
        if n > 0 {
            l2.push(Span::styled(v.name(), theme::verdict(*v)));
            l2.push(Span::raw(format!(" {n}  ")));
        }
    }
    if l2.len() == 1 {
        l2.push(Span::raw("-"));
    }
    // What the user set first (sort, filter, pause) and the closed list,
    // so that 80 columns keep them; the kernel's loss counters after.
    let Sorting { key, reversed } = app.sort();
    let arrow = if key.descending() != reversed {
        "▼"
    } else {
        "▲"
    };
    let mut l3 = vec![
        theme::label("sort "),
        Span::raw(format!("{} {arrow}", key.name())),
    ];
    if !app.filter().is_empty() {
        l3.push(theme::label("  filter "));
        l3.push(Span::raw(app.filter().to_string()));
        if let Some(kind) = app.filter_kind() {
            l3.push(Span::styled(format!(" ({kind})"), theme::dim()));
        }
        if let Some(w) = app.filter_warning() {
            l3.push(Span::styled(format!("  warning: {w}"), theme::error()));
        }
    }
    if app.paused() {
        l3.push(Span::raw("  "));
        l3.push(Span::styled("PAUSED", theme::paused()));
    }
    // The recently closed flows, once there are any: `c` lists them.
    let closed = app.closed().len();
    if closed > 0 {
        l3.push(theme::label("  recently closed "));
        l3.push(Span::raw(format!("{closed} kept (c)")));
    }
    l3.push(theme::label("  ringbuf drops "));
    l3.push(Span::styled(
        t.ringbuf_drops.to_string(),
        theme::count(t.ringbuf_drops),
    ));
    l3.push(theme::label("  lru evictions "));
    l3.push(Span::styled(
        t.lru_evictions.to_string(),
        theme::count(t.lru_evictions),
    ));
    for (name, n) in [
        ("  read errors", t.read_errors),
        ("  map errors", t.map_errors),
    ] {
        if n > 0 {
            l3.push(theme::label(name));
            l3.push(Span::styled(format!(" {n}"), theme::count(n)));
        }
    }
    let text = Text::from(vec![l1, Line::from(l2), Line::from(l3)]);
    frame.render_widget(Paragraph::new(text), area);
}

fn draw_table(frame: &mut Frame, app: &mut App, area: Rect) {
    let height = usize::from(area.height.saturating_sub(1));
    app.page = height.max(1);
    if app.is_empty() {
        let closed = app.closed_rows().len();
        let msg = if closed > 0 {
            // Flows came and went: they are in the closed list, not awaited.
            format!(
                "no open flow{}; c lists the {closed} recently closed",
                if app.filter().is_empty() {
                    ""
                } else {
                    " the filter shows"
                }
            )
        } else if app.snapshot().rows.is_empty() {
            "waiting for flows...".to_string()
        } else {
            format!("no flow matches \"{}\" (/ to change it)", app.filter())
        };
        let p = Paragraph::new(msg).alignment(Alignment::Center);
        frame.render_widget(p, area.inner(ratatui::layout::Margin::new(0, 1)));
        return;
    }
    let cursor = app.cursor();
    let first_down = app.rows().position(|r| r.download());
    app.offset = scrolled(app.offset, cursor, app.len(), height, first_down);
    let wide = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
    let widest = |cell: &dyn Fn(&Row) -> usize| wide(app.rows().map(cell).max().unwrap_or(0));
    let now = Widest {
        advice: widest(&|r| r.advice().chars().count()),
        verdict: widest(&|r| verdict_cell(&r.current).chars().count()),
        netns: widest(&|r| {
            r.flow
                .netns_name
                .as_deref()
                .map_or(0, |n| n.chars().count())
        }),
    };
    // The widest of the last few frames: columns do not jump between
    // refreshes as cells come and go.
    let held = app.widths.hold(now);
    let rows: Vec<&Row> = app.rows().collect();
    let cols = fit_columns(area.width, held.advice, held.verdict, held.netns);
    let sort = app.sort().key;
    // The table's header names the section of its first row; the
    // downloads' titles head their section where it starts lower down.
    let top_down = rows.get(app.offset).is_some_and(|r| r.download());
    let header = titles(&cols, top_down, sort);
    let mut lines: Vec<TableRow> = Vec::with_capacity(height);
    for (n, r) in rows.iter().enumerate().skip(app.offset) {
        if lines.len() >= height {
            break;
        }
        if Some(n) == first_down && n != app.offset {
            lines.push(titles(&cols, true, sort));
            if lines.len() >= height {
                break;
            }
        }
        lines.push(table_row(&cols, r, n == cursor));
    }
    let widths = cols.iter().map(|f| Constraint::Length(f.width));
    let table = Table::new(lines, widths).header(header).column_spacing(1);
    frame.render_widget(table, area);
}

/// The first row to show (`offset`, as it was) so that row `cursor` of
/// `len` shows in `height` lines, where the downloads' titles take a line
/// of their own above row `first_down` unless it is the first shown; the
/// last rows fill the view rather than leave lines empty below them.
fn scrolled(
    offset: usize,
    cursor: usize,
    len: usize,
    height: usize,
    first_down: Option<usize>,
) -> usize {
    // Rows that fit from `o`: one fewer where the titles show below it.
    let fit = |o: usize| {
        let titled = first_down.is_some_and(|d| d > o && d < o + height);
        height.saturating_sub(usize::from(titled)).max(1)
    };
    let mut offset = offset.min(cursor);
    while cursor >= offset + fit(offset) {
        offset += 1;
    }
    let last = (0..len).find(|o| len - o <= fit(*o)).unwrap_or(0);
    offset.min(last)
}

/// The titles of `cols` over the section of downloads (`down`) or
/// uploads, bold, the sort column's underlined.
fn titles(cols: &[Fitted], down: bool, sort: SortKey) -> TableRow<'static> {
    TableRow::new(cols.iter().map(|f| {
        let c = &COLUMNS[f.column];
        let mut style = theme::bold();
        if c.key == sort {
            style = style.add_modifier(theme::SORTED);
        }
        let line = Line::styled(c.title(down), style);
        Cell::from(if c.right { line.right_aligned() } else { line })
    }))
}

/// Row `r` in `cols`: dim once closed, reversed when `selected`.
fn table_row(cols: &[Fitted], r: &Row, selected: bool) -> TableRow<'static> {
    let cells = cols.iter().map(|f| {
        let c = &COLUMNS[f.column];
        let text = cell_text(c.key, r, usize::from(f.width));
        let line = if c.key == SortKey::Verdict {
            Line::styled(text, theme::verdict(r.verdict()))
        } else {
            Line::raw(text)
        };
        Cell::from(if c.right { line.right_aligned() } else { line })
    });
    let mut style = Style::new();
    if r.closed {
        style = style.patch(theme::dim());
    }
    if selected {
        style = style.add_modifier(theme::SELECTED);
    }
    TableRow::new(cells).style(style)
}

fn draw_footer(frame: &mut Frame, app: &App, area: Rect) {
    let dim = theme::dim();
    let line = match app.mode() {
        Mode::Filter(text) => {
            let prompt = "filter: ";
            let x = area.x + (prompt.len() + text.chars().count()) as u16;
            frame.set_cursor_position((x.min(area.right().saturating_sub(1)), area.y));
            // How the text will be read, as it is typed: an expression, a
            // words filter, or (looking like an expression) its mistake so
            // far; after Enter, the mistake that kept it from applying.
            let hint = match (app.filter_error(), Selection::parse(text)) {
                (Some(e), _) => Span::styled(format!("   {e}"), theme::error()),
                (None, Err(e)) => Span::styled(format!("   expression: {e}"), dim),
                (None, Ok(s)) => match s.kind() {
                    Some(kind) => Span::styled(format!("   {kind} · Enter apply, Esc cancel"), dim),
                    None => Span::styled("   Enter apply, Esc cancel", dim),
                },
            };
            Line::from(vec![theme::label(prompt), Span::raw(text.clone()), hint])
        }
        Mode::Normal if app.detail().is_some() => {
            Line::styled("Esc back  j/k next flow  p pause  ? help  q quit", dim)
        }
        Mode::Normal if app.closed_view() => Line::styled(
            "q quit  j/k select  Enter detail  c flows  / filter  p pause  ? help   newest first",
            dim,
        ),
        Mode::Normal if app.peer_detail().is_some() => Line::styled(
            "Esc back  j/k next peer  v flows  p pause  ? help  q quit",
            dim,
        ),
        Mode::Normal if app.peers() => Line::styled(
            "q quit  j/k select  v flows  p pause  Enter detail  ? help",
            dim,
        ),
        Mode::Normal => Line::styled(
            "q quit  j/k select  s sort  / filter  p pause  v peers  Enter detail  ? help",
            dim,
        ),
    };
    frame.render_widget(Paragraph::new(line), area);
}

fn draw_help(frame: &mut Frame, area: Rect) {
    let entries = help::KEYS.iter().chain(help::LEGEND.iter());
    let lines: Vec<Line> = entries
        .map(|(k, v)| {
            Line::from(vec![
                Span::styled(format!(" {k:<13}"), theme::bold()),
                Span::raw(*v),
            ])
        })
        .collect();
    let w = area.width.min(74);
    let h = area
        .height
        .min((help::KEYS.len() + help::LEGEND.len()) as u16 + 2);
    let popup = Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    };
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" help (Esc or ? closes) ")),
        popup,
    );
}
