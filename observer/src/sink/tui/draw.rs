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
    detail,
    fit::keep_tail,
    help, peers,
    row::Row,
    select::Selection,
    sort::SortKey,
    state::{App, Mode, Sorting},
    theme,
};
use crate::{
    attribution::{Side, Verdict},
    units,
};

/// One table column: its sort key, title, width, and when it is dropped.
struct Column {
    key: SortKey,
    title: &'static str,
    /// Width in terminal cells.
    width: u16,
    /// 0: always shown; higher numbers are dropped first as width shrinks.
    priority: u8,
    /// Right-aligned (figures), else left (names, addresses).
    right: bool,
}

impl Column {
    /// A left-aligned column `width` cells wide, always shown.
    const fn new(key: SortKey, title: &'static str, width: u16) -> Column {
        Column {
            key,
            title,
            width,
            priority: 0,
            right: false,
        }
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
}

/// Columns in display order. At 80 columns the priority-0 ones, SRTT and
/// RWND% fit exactly (PROCESS at 12 keeps a pid; REMOTE at its narrowest,
/// 18, keeps an IPv4 port; RATE holds `↓300.5Mbit/s`; VERDICT holds
/// `receiver_application`).
/// WORKLOAD shows on terminals wide enough for every other column.
const COLUMNS: [Column; 14] = [
    Column::new(SortKey::Process, "PROCESS", 12),
    Column::new(SortKey::Local, "LOCAL", 21).dropped_at(3),
    Column::new(SortKey::Remote, "REMOTE", 18),
    Column::new(SortKey::Rate, "RATE", 12).right(),
    Column::new(SortKey::Srtt, "SRTT", 8).dropped_at(1).right(),
    Column::new(SortKey::MinRtt, "MINRTT", 8)
        .dropped_at(8)
        .right(),
    Column::new(SortKey::Cwnd, "CWND", 12).dropped_at(6).right(),
    Column::new(SortKey::SndWnd, "SNDWND", 7)
        .dropped_at(7)
        .right(),
    Column::new(SortKey::Inflight, "INFLT", 6)
        .dropped_at(9)
        .right(),
    Column::new(SortKey::Retrans, "RETR", 6)
        .dropped_at(5)
        .right(),
    Column::new(SortKey::RwndLimited, "RWND%", 5)
        .dropped_at(2)
        .right(),
    Column::new(SortKey::CwndLimited, "CWND%", 5)
        .dropped_at(4)
        .right(),
    Column::new(SortKey::Verdict, "VERDICT", 20),
    Column::new(SortKey::Workload, "WORKLOAD", 24).dropped_at(10),
];

/// Widest an address column grows to (a full IPv6 address and port).
const MAX_ADDR: u16 = 47;

/// A column as drawn: which of [`COLUMNS`], and its width (cells).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Fitted {
    /// Index into [`COLUMNS`].
    column: usize,
    /// Width in terminal cells.
    width: u16,
}

/// The columns that fit in `width`, in display order, and their widths;
/// spare width goes to the address columns.
fn fit_columns(width: u16) -> Vec<Fitted> {
    let mut order: Vec<usize> = (0..COLUMNS.len()).collect();
    order.sort_by_key(|i| COLUMNS[*i].priority);
    let mut shown = vec![false; COLUMNS.len()];
    let mut used: u16 = 0;
    for i in order {
        let need = COLUMNS[i].width + u16::from(used > 0);
        if used + need <= width || COLUMNS[i].priority == 0 {
            shown[i] = true;
            used += need;
        }
    }
    let mut cols: Vec<Fitted> = (0..COLUMNS.len())
        .filter(|i| shown[*i])
        .map(|column| Fitted {
            column,
            width: COLUMNS[column].width,
        })
        .collect();
    let mut spare = width.saturating_sub(used);
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

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "-".to_string(), units::share)
}

/// The text of column `key` for row `r`, fitted to `w`.
fn cell_text(key: SortKey, r: &Row, w: usize) -> String {
    let f = &r.flow;
    match key {
        SortKey::Process => fit_process(r, w),
        SortKey::Local => keep_tail(&f.local.to_string(), w),
        SortKey::Remote => keep_tail(&f.remote.to_string(), w),
        // A download (judged from the receiving end) is marked with ↓.
        SortKey::Rate => match r.current.side {
            Side::Receiver => format!("↓{}", units::compact(&units::rate(r.rate_bps()))),
            Side::Sender => units::compact(&units::rate(r.rate_bps())),
        },
        SortKey::Srtt => units::compact(&units::time_us(f64::from(r.rtt_us()))),
        SortKey::MinRtt => units::compact(&units::time_us(f64::from(r.base_rtt_us()))),
        SortKey::Cwnd => r.cwnd().map_or_else(
            || "-".to_string(),
            |c| {
                format!(
                    "{}/{}",
                    c.segments,
                    units::compact(&units::bytes(c.bytes as f64))
                )
            },
        ),
        SortKey::SndWnd => units::compact(&units::bytes(f64::from(r.window_bytes()))),
        SortKey::Inflight => r
            .inflight()
            .map_or_else(|| "-".to_string(), |n| n.to_string()),
        SortKey::Retrans => r.losses().to_string(),
        SortKey::RwndLimited => pct(r.rwnd_limited()),
        SortKey::CwndLimited => pct(r.cwnd_limited()),
        SortKey::Verdict => r.verdict().name().to_string(),
        SortKey::Workload => {
            let name = f.workload.get().name();
            if name.is_empty() {
                "-".to_string()
            } else {
                keep_tail(&name, w)
            }
        }
    }
}

/// Draws the whole view; keeps `app.offset` and `app.page` in step with
/// the table's height.
pub fn draw(frame: &mut Frame, app: &mut App) {
    let [header, body, footer] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    draw_header(frame, app, header);
    if app.peers() {
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
    let l1 = Line::from(vec![
        theme::label("flows "),
        Span::raw(if app.filter().is_empty() {
            format!("{} open, {} closed   ", t.open, t.closed)
        } else {
            // Host totals, and how many rows the filter lets through.
            format!(
                "{} open, {} closed, {} shown   ",
                t.open,
                t.closed,
                app.len()
            )
        }),
        theme::label("send "),
        Span::raw(format!("{}   ", units::rate(t.send_bps))),
        theme::label("recv "),
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
    let mut l3 = vec![
        theme::label("ringbuf drops "),
        Span::styled(t.ringbuf_drops.to_string(), theme::count(t.ringbuf_drops)),
        theme::label("  lru evictions "),
        Span::styled(t.lru_evictions.to_string(), theme::count(t.lru_evictions)),
    ];
    for (name, n) in [("read errors", t.read_errors), ("map errors", t.map_errors)] {
        if n > 0 {
            l3.push(theme::label(name));
            l3.push(Span::styled(format!(" {n}"), theme::count(n)));
        }
    }
    let Sorting { key, reversed } = app.sort();
    let arrow = if key.descending() != reversed {
        "▼"
    } else {
        "▲"
    };
    l3.push(theme::label("  sort "));
    l3.push(Span::raw(format!("{} {arrow}", key.name())));
    if !app.filter().is_empty() {
        l3.push(theme::label("  filter "));
        l3.push(Span::raw(app.filter().to_string()));
        if let Some(kind) = app.filter_kind() {
            l3.push(Span::styled(format!(" ({kind})"), theme::dim()));
        }
    }
    if app.paused() {
        l3.push(Span::raw("  "));
        l3.push(Span::styled("PAUSED", theme::paused()));
    }
    let text = Text::from(vec![l1, Line::from(l2), Line::from(l3)]);
    frame.render_widget(Paragraph::new(text), area);
}

fn draw_table(frame: &mut Frame, app: &mut App, area: Rect) {
    let height = usize::from(area.height.saturating_sub(1));
    app.page = height.max(1);
    if app.is_empty() {
        let msg = if app.snapshot().rows.is_empty() {
            "waiting for flows...".to_string()
        } else {
            format!("no flow matches \"{}\" (/ to change it)", app.filter())
        };
        let p = Paragraph::new(msg).alignment(Alignment::Center);
        frame.render_widget(p, area.inner(ratatui::layout::Margin::new(0, 1)));
        return;
    }
    let cursor = app.cursor();
    if cursor < app.offset {
        app.offset = cursor;
    } else if height > 0 && cursor >= app.offset + height {
        app.offset = cursor + 1 - height;
    }
    app.offset = app.offset.min(app.len().saturating_sub(height));
    let cols = fit_columns(area.width);
    let sort = app.sort().key;
    let header = TableRow::new(cols.iter().map(|f| {
        let c = &COLUMNS[f.column];
        let mut style = theme::bold();
        if c.key == sort {
            style = style.add_modifier(theme::SORTED);
        }
        let line = Line::styled(c.title, style);
        Cell::from(if c.right { line.right_aligned() } else { line })
    }));
    let rows = app
        .rows()
        .enumerate()
        .skip(app.offset)
        .take(height)
        .map(|(n, r)| {
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
            if n == cursor {
                style = style.add_modifier(theme::SELECTED);
            }
            TableRow::new(cells).style(style)
        });
    let widths = cols.iter().map(|f| Constraint::Length(f.width));
    let table = Table::new(rows, widths).header(header).column_spacing(1);
    frame.render_widget(table, area);
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
