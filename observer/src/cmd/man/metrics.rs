//! observer-run(1)'s METRICS: every series `observer run` serves, one
//! entry a row of docs/metrics.md's table, which the binary carries (an
//! installed binary has no docs/ tree). That table is the one list of the
//! metrics: the exporter's integration test holds it to what `/metrics`
//! serves, both ways, so page, document and endpoint cannot differ.

use clap_mangen::roff::{Roff, bold, roman};

use super::sections::plain;

/// docs/metrics.md, as built into the binary.
const DOC: &str = include_str!("../../../../docs/metrics.md");

/// One row of the table: the metrics it documents, their type, labels
/// and meaning, as Markdown.
pub struct Row {
    /// The metric names, comma-separated, without the `observer_` prefix.
    pub names: &'static str,
    /// counter, gauge or histogram; empty where the row's metrics differ.
    pub kind: &'static str,
    /// Their labels; empty where none.
    pub labels: &'static str,
    /// What they count.
    pub meaning: &'static str,
}

/// The rows of the `| metric | type | labels | meaning |` table.
pub fn rows() -> Vec<Row> {
    DOC.lines()
        .skip_while(|l| !l.starts_with("| metric |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            // Split on every bar: an empty cell is `| |`.
            let mut cells = l.trim().trim_matches('|').split('|').map(str::trim);
            Some(Row {
                names: cells.next()?,
                kind: cells.next()?,
                labels: cells.next()?,
                meaning: cells.next()?,
            })
        })
        .collect()
}

/// The METRICS section.
pub fn section(roff: &mut Roff) {
    roff.control("SH", ["METRICS"]);
    roff.text([roman(
        "What /metrics serves, each name with the prefix observer_ but the process_ metrics: \
         its type, its labels and what it counts. (aggregation) marks the labels that \
         --label-comm, --label-cgroup, --label-local-port, --label-remote-subnet and \
         --label-workload add, each capped by --max-label-sets.",
    )]);
    for r in rows() {
        roff.control("TP", []);
        let labels = match plain(r.labels).as_str() {
            "(aggregation)" => "aggregation labels".to_string(),
            other => other.to_string(),
        };
        let kind = [plain(r.kind), labels]
            .into_iter()
            .filter(|s| !s.trim().is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        if kind.is_empty() {
            roff.text([bold(plain(r.names))]);
        } else {
            roff.text([bold(plain(r.names)), roman(format!(" ({kind})"))]);
        }
        roff.text([roman(unlink_docs(&plain(r.meaning)))]);
    }
}

/// `text` without its pointers at the documents (`docs/attribution.md,
/// "Groups"`, `security.md`), which an installed binary does not have:
/// a pointer alone in parentheses goes with them, one after a `:` or `;`
/// with that mark.
pub fn unlink_docs(text: &str) -> String {
    let mut s = text.to_string();
    while let Some(md) = s.find(".md") {
        let is_name = |c: char| c.is_ascii_alphanumeric() || "_/.-".contains(c);
        let start = s[..md]
            .char_indices()
            .rev()
            .take_while(|(_, c)| is_name(*c))
            .last()
            .map_or(md, |(i, _)| i);
        let mut end = md + 3;
        if s[end..].starts_with('#') {
            end += s[end..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || "#-_".contains(c)))
                .unwrap_or(s.len() - end);
        }
        // A heading after the file: `, "Groups"`.
        if s[end..].starts_with(", \"")
            && let Some(close) = s[end + 3..].find('"')
        {
            end += 3 + close + 1;
        }
        let before = &s[..start];
        let after = &s[end..];
        let (cut_from, cut_to) = if before.ends_with('(') && after.starts_with(')') {
            let open = start - 1;
            let from = if s[..open].ends_with(' ') {
                open - 1
            } else {
                open
            };
            (from, end + 1)
        } else if let Some(sep) = [": ", "; ", ", ", " "]
            .iter()
            .find(|p| before.ends_with(**p))
        {
            (start - sep.len(), end)
        } else {
            (start, end)
        };
        s.replace_range(cut_from..cut_to, "");
    }
    s
}
