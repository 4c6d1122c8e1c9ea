//! The look of `observer top` in one place: the colour of each verdict and
//! the styles the header, table and detail pane share. Change a colour
//! here and every place that shows it follows.

use ratatui::{
    style::{Color, Modifier, Style},
    text::Span,
};

use crate::attribution::{Verdict, group::judge::Limit};

/// The colour of a verdict, wherever it is shown (header counts, the
/// VERDICT column, the detail pane's title and sparklines).
pub fn verdict_color(v: Verdict) -> Color {
    match v {
        Verdict::ReceiveWindow => Color::Yellow,
        Verdict::SendBuffer => Color::Magenta,
        Verdict::Application => Color::Blue,
        Verdict::CongestionWindow => Color::Cyan,
        Verdict::Path => Color::Red,
        Verdict::ReceiverApplication => Color::LightMagenta,
        Verdict::Sender => Color::Green,
        Verdict::Unknown => Color::Gray,
    }
}

/// A group's limit in its colour: a per-flow limit in the colour of a
/// window (something of each flow's own to raise), a shared one in the
/// path's.
pub fn limit(l: Limit) -> Style {
    match l {
        Limit::PerFlow => verdict(Verdict::ReceiveWindow),
        Limit::Shared => verdict(Verdict::Path),
        Limit::Mixed => Style::new().fg(Color::Cyan),
        Limit::Unknown => verdict(Verdict::Unknown),
    }
}

/// A verdict's text in its colour.
pub fn verdict(v: Verdict) -> Style {
    Style::new().fg(verdict_color(v))
}

/// Labels, headings and column titles.
pub fn bold() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

/// A label: `text` in [`bold`].
pub fn label(text: &str) -> Span<'_> {
    Span::styled(text, bold())
}

/// Secondary text (closed flows, the history title, the footer's keys).
pub fn dim() -> Style {
    Style::new().add_modifier(Modifier::DIM)
}

/// A health count: red and bold when anything was counted (drops,
/// evictions, errors), plain at zero.
pub fn count(n: u64) -> Style {
    if n > 0 {
        Style::new().fg(Color::Red).add_modifier(Modifier::BOLD)
    } else {
        Style::new()
    }
}

/// A mistake the user must fix (a filter that does not parse).
pub fn error() -> Style {
    Style::new().fg(Color::Red)
}

/// The PAUSED badge.
pub fn paused() -> Style {
    Style::new().fg(Color::Black).bg(Color::Yellow)
}

/// The selected row.
pub const SELECTED: Modifier = Modifier::REVERSED;

/// The sort column's title.
pub const SORTED: Modifier = Modifier::UNDERLINED;
