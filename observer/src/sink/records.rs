//! Renders flows for people (an aligned table) and scripts (NDJSON).

use std::io::Write;

use super::columns::{COLUMNS, NETNS, Section, netns_cell, row};
use crate::{attribution::group::advice::advice, track::snapshot::Report};

/// One flow's JSON object: the report's keys, and the table's ADVICE.
#[derive(serde::Serialize)]
pub(super) struct Line<'a> {
    #[serde(flatten)]
    report: &'a Report,
    /// What would help, in a few words: the ADVICE column.
    advice: String,
}

impl Line<'_> {
    /// `report`'s object, with its advice.
    pub(super) fn of(report: &Report) -> Line<'_> {
        Line {
            report,
            advice: advice(&report.attribution, &report.flow),
        }
    }
}

/// Writes one JSON object per flow, one per line: the report's keys and
/// `advice`, the table's ADVICE.
///
/// # Errors
/// Write or serialisation failures.
pub fn write_json(out: &mut impl Write, flows: &[Report]) -> std::io::Result<()> {
    for f in flows {
        serde_json::to_writer(&mut *out, &Line::of(f))?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Writes an aligned table: uploads, then downloads, each under its own
/// header ([`Section::headers`]) and aligned on its own, a blank line
/// between; with no flow, the uploads' header alone. Where any flow's
/// namespace has an `ip netns` name, both sections start with a
/// [`NETNS`] column.
///
/// # Errors
/// Write failures.
pub fn write_table(out: &mut impl Write, flows: &[Report]) -> std::io::Result<()> {
    let named = flows.iter().any(|r| r.flow.netns_name.is_some());
    let mut written = false;
    for section in [Section::Uploads, Section::Downloads] {
        let rows: Vec<Vec<String>> = flows
            .iter()
            .filter(|r| Section::of(r) == section)
            .map(|r| cells(r, named))
            .collect();
        if rows.is_empty() {
            continue;
        }
        if written {
            writeln!(out)?;
        }
        write_section(out, &headers(section, named), &rows)?;
        written = true;
    }
    if !written {
        write_section(out, &headers(Section::Uploads, named), &[])?;
    }
    Ok(())
}

/// A section's titles, [`NETNS`] first when `named`.
fn headers(section: Section, named: bool) -> Vec<String> {
    let netns = named.then_some(NETNS);
    netns
        .into_iter()
        .chain(section.headers())
        .map(String::from)
        .collect()
}

/// `r`'s row, its namespace's name first when `named`.
fn cells(r: &Report, named: bool) -> Vec<String> {
    let netns = named.then(|| netns_cell(r));
    netns.into_iter().chain(row(r)).collect()
}

/// One section of [`write_table`]: its `headers` and `rows`, aligned.
fn write_section(
    out: &mut impl Write,
    headers: &[String],
    rows: &[Vec<String>],
) -> std::io::Result<()> {
    let mut width: Vec<usize> = headers.iter().map(String::len).collect();
    for r in rows {
        widen(&mut width, r);
    }
    writeln!(out, "{}", line(headers, &width))?;
    for r in rows {
        writeln!(out, "{}", line(r, &width))?;
    }
    Ok(())
}

/// The table of [`write_table`] for a stream of rows (`observer flows
/// --follow`): each batch's uploads, then its downloads, each under its
/// section's header, written again (after a blank line) where the section
/// changes; aligned to the widest cell seen so far in its section (a
/// column widens when a wider cell comes, and stays wide). The [`NETNS`]
/// column comes with the first flow whose namespace has a name, under a
/// header written again, and stays.
#[derive(Debug)]
pub struct TableStream {
    /// The uploads' and the downloads' column widths, [`NETNS`]'s first.
    width: [[usize; COLUMNS + 1]; 2],
    /// The section whose header was written last.
    last: Option<Section>,
    /// Whether rows have the [`NETNS`] column.
    named: bool,
    /// Whether the next row needs a header whatever its section (the
    /// [`NETNS`] column has just come).
    rehead: bool,
}

impl Default for TableStream {
    fn default() -> Self {
        // Room for the usual cells from the start (a short namespace name,
        // IPv4 endpoints with ephemeral ports, a 15-character command name,
        // `established`, `123.4Mbit/s`, `104.5ms`), so that few rows shift
        // the columns.
        const USUAL: [usize; COLUMNS + 1] =
            [8, 21, 21, 7, 15, 11, 8, 8, 12, 8, 8, 8, 8, 8, 7, 9, 5, 0, 0];
        let width = [Section::Uploads, Section::Downloads].map(|s| {
            let mut width = [0; COLUMNS + 1];
            for ((w, title), usual) in width.iter_mut().zip(headers(s, true)).zip(USUAL) {
                *w = title.len().max(usual);
            }
            width
        });
        TableStream {
            width,
            last: None,
            named: false,
            rehead: false,
        }
    }
}

impl TableStream {
    /// Writes `flows` as rows: uploads, then downloads, with a header
    /// where the section changes (and before the first row).
    ///
    /// # Errors
    /// Write failures.
    pub fn write(&mut self, out: &mut impl Write, flows: &[Report]) -> std::io::Result<()> {
        if !self.named && flows.iter().any(|r| r.flow.netns_name.is_some()) {
            self.named = true;
            self.rehead = true;
        }
        // Without names, the widths past NETNS's.
        let skip = usize::from(!self.named);
        for (i, section) in [Section::Uploads, Section::Downloads]
            .into_iter()
            .enumerate()
        {
            for r in flows.iter().filter(|r| Section::of(r) == section) {
                let cells = cells(r, self.named);
                let width = &mut self.width[i][skip..];
                widen(width, &cells);
                if self.last != Some(section) || self.rehead {
                    if self.last.is_some() {
                        writeln!(out)?;
                    }
                    writeln!(out, "{}", line(&headers(section, self.named), width))?;
                    self.last = Some(section);
                    self.rehead = false;
                }
                writeln!(out, "{}", line(&cells, width))?;
            }
        }
        Ok(())
    }
}

/// Widens `width` to fit `cells`, in terminal columns, not bytes: a
/// command name in Cyrillic or CJK takes two or three bytes a character,
/// and one or two columns.
pub(super) fn widen(width: &mut [usize], cells: &[String]) {
    use unicode_width::UnicodeWidthStr as _;
    for (w, cell) in width.iter_mut().zip(cells.iter()) {
        *w = (*w).max(cell.width());
    }
}

/// One line of the table: `cells` padded to `width`, two spaces apart.
pub(super) fn line(cells: &[String], width: &[usize]) -> String {
    use unicode_width::UnicodeWidthStr as _;
    let mut l = String::new();
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            l.push_str("  ");
        }
        l.push_str(c);
        l.push_str(&" ".repeat(width[i].saturating_sub(c.width())));
    }
    l.trim_end().to_string()
}

#[cfg(test)]
#[path = "records_tests.rs"]
mod tests;
