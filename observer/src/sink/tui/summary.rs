//! What `observer top` saw, said when it ends: every flow it saw (those
//! that closed while it ran, and those open at the end), each judged over
//! its observed life, grouped by peer and written by the host view's
//! summary (`observer flows --summary`, [`groups::write_summary`]), cut to
//! one screen.

use std::{collections::VecDeque, io::Write, time::Duration};

use super::row::Row;
use crate::{
    attribution::{Config, group::GroupBy},
    sink::groups,
    track::live::LiveFlows,
};

/// Most closed flows kept for the summary; older ones are left out of it
/// (and counted), so that a busy host's churn cannot grow top without
/// bound.
pub const MAX_CLOSED: usize = 10_000;

/// The closed flows seen so far, for the summary.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    /// Newest at the back.
    closed: VecDeque<Row>,
    left_out: u64,
}

impl Seen {
    /// Keeps `row`, a flow that closed, judged over its life; the oldest
    /// beyond [`MAX_CLOSED`] go.
    pub fn push(&mut self, row: Row) {
        if self.closed.len() == MAX_CLOSED {
            self.closed.pop_front();
            self.left_out += 1;
        }
        self.closed.push_back(row);
    }

    /// The summary of the flows kept and those open in `live`, as `shows`
    /// selects them (the view's filter), over `span` of watching.
    pub fn summary(
        self,
        live: &LiveFlows,
        shows: impl Fn(&Row) -> bool,
        span: Duration,
    ) -> Summary {
        let open = live.flows().filter(|t| !t.is_closed()).map(|t| Row {
            flow: t.flow.clone(),
            current: t.life.clone(),
            history: Vec::new(),
            closed: false,
            average_bps: None,
        });
        let rows = self.closed.into_iter().chain(open).filter(|r| shows(r));
        Summary {
            rows: rows.collect(),
            left_out: self.left_out,
            span,
            config: live.config().attribution,
        }
    }
}

/// What top saw, ready to write.
#[derive(Clone, Debug)]
pub struct Summary {
    /// Every flow seen (and kept), its verdict over its observed life.
    pub rows: Vec<Row>,
    /// Closed flows left out (past [`MAX_CLOSED`]).
    pub left_out: u64,
    /// How long top watched.
    pub span: Duration,
    /// The thresholds the groups are judged under.
    pub config: Config,
}

impl Summary {
    /// Writes a line saying what this is, then the host view's summary of
    /// the flows by peer, in at most `lines` lines of `width` columns (at
    /// least the first two), wrapped between words: groups with the most
    /// bytes first, those that do not fit named by count.
    ///
    /// # Errors
    /// Write failures.
    pub fn write(&self, out: &mut impl Write, lines: usize, width: usize) -> std::io::Result<()> {
        let pairs: Vec<_> = self.rows.iter().map(|r| (&r.flow, &r.current)).collect();
        let (pairs, idle) = groups::moving(&pairs);
        let mut found = groups::group_named(&pairs, GroupBy::Peer, &self.config);
        found.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.key.cmp(&b.key)));
        let mut text = Vec::new();
        groups::write_summary(&mut text, &found, idle)?;
        let text = String::from_utf8_lossy(&text);
        let mut head = format!(
            "observer top saw {} flow{} in {}",
            self.rows.len(),
            if self.rows.len() == 1 { "" } else { "s" },
            humantime::format_duration(Duration::from_secs(self.span.as_secs()))
        );
        if self.left_out > 0 {
            head.push_str(&format!(
                " ({} older closed flows left out: it keeps the last {MAX_CLOSED})",
                self.left_out
            ));
        }
        for line in wrap(&format!("{head}:"), width) {
            writeln!(out, "{line}")?;
        }
        write!(
            out,
            "{}",
            one_screen(&text, lines.saturating_sub(1).max(1), width)
        )
    }
}

/// `text` wrapped to `width` ([`wrap`]) and cut to at most `lines` lines,
/// between groups where one fits: a group's what-would-help lines
/// (`  - ...`) stay with it, unless the largest group alone is taller
/// than the screen, whose lines are then cut where the screen ends (a
/// summary that named no group would say nothing); the groups left out
/// are named by count on the last line.
pub fn one_screen(text: &str, lines: usize, width: usize) -> String {
    let all: Vec<(&str, Vec<String>)> = text.lines().map(|l| (l, wrap(l, width))).collect();
    let height = |ls: &[(&str, Vec<String>)]| ls.iter().map(|(_, w)| w.len()).sum::<usize>();
    let emit = |ls: &[(&str, Vec<String>)]| -> String {
        ls.iter()
            .flat_map(|(_, w)| w)
            .map(|l| format!("{l}\n"))
            .collect()
    };
    if height(&all) <= lines {
        return emit(&all);
    }
    let rest = |cut: usize| {
        format!(
            "... and {cut} more group{} that did not fit this screen",
            if cut == 1 { "" } else { "s" }
        )
    };
    // Room for the line that names the rest.
    let room = lines
        .saturating_sub(wrap(&rest(all.len()), width).len())
        .max(1);
    let mut keep = 1;
    while keep < all.len() && height(&all[..=keep]) <= room {
        keep += 1;
    }
    let advice = |l: &str| l.starts_with("  - ");
    // The host's lines come before the first group: "host: ..." and any
    // "(N flows moved nothing ...)".
    let first_group = all
        .iter()
        .skip(1)
        .position(|(l, _)| !advice(l) && !l.starts_with('('))
        .map_or(all.len(), |i| i + 1);
    let whole = {
        let mut k = keep;
        while k > 1 && all.get(k).is_some_and(|(l, _)| advice(l)) {
            k -= 1;
        }
        k
    };
    // Whole groups where one fits; else the largest, cut at the screen.
    if whole > first_group {
        keep = whole;
    }
    let cut = all[keep..].iter().filter(|(l, _)| !advice(l)).count();
    let mut out = emit(&all[..keep]);
    for line in wrap(&rest(cut), width) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// `line` in lines of at most `width` characters, broken between words,
/// never within one (a word wider than `width` has a line of its own);
/// the lines after the first are indented two more than it, so that a
/// group's `  - ` advice reads as one item. `width` 0: not wrapped.
pub fn wrap(line: &str, width: usize) -> Vec<String> {
    if width == 0 || line.chars().count() <= width {
        return vec![line.to_string()];
    }
    let indent = line.len() - line.trim_start_matches(' ').len();
    let more = " ".repeat(indent + 2);
    let mut out: Vec<String> = Vec::new();
    let mut current = line[..indent].to_string();
    let mut empty = true;
    for word in line[indent..].split(' ').filter(|w| !w.is_empty()) {
        let n = current.chars().count();
        if !empty && n + 1 + word.chars().count() > width {
            out.push(std::mem::replace(&mut current, more.clone()));
            empty = true;
        }
        if !empty {
            current.push(' ');
        }
        current.push_str(word);
        empty = false;
    }
    out.push(current);
    out
}
