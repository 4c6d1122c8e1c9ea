//! observer-flows(1)'s JSON FIELDS: the keys of `observer flows --json`,
//! one line each, from docs/json.md's tables, which the binary carries
//! (an installed binary has no docs/ tree), so the page and the
//! document cannot differ.

use clap_mangen::roff::{Roff, bold, roman};

use super::sections::plain;

/// docs/json.md, as built into the binary.
const DOC: &str = include_str!("../../../../docs/json.md");

/// One row of a table of keys: the keys it documents (`srtt_us`,
/// `min_rtt_us`), their unit (`-` where none) and what they mean, as
/// Markdown.
pub struct Row {
    /// The keys, comma-separated.
    pub keys: &'static str,
    /// Their unit.
    pub unit: &'static str,
    /// What they mean.
    pub meaning: &'static str,
}

/// The rows of the first `| key | unit | meaning |` table after the line
/// `heading` of `doc`; none when there is no such heading.
pub fn table(doc: &'static str, heading: &str) -> Vec<Row> {
    let Some((_, rest)) = doc.split_once(&format!("{heading}\n")) else {
        return Vec::new();
    };
    rest.lines()
        .skip_while(|l| !l.starts_with("| key |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            let mut cells = l.trim_matches('|').split(" | ").map(str::trim);
            Some(Row {
                keys: cells.next()?,
                unit: cells.next()?,
                meaning: cells.next()?,
            })
        })
        .collect()
}

/// The keys of a flow's object (`observer flows --json`).
pub fn flow_rows() -> Vec<Row> {
    table(DOC, "# JSON keys of `observer flows --json`")
}

/// The keys of a group's object (`observer flows --by ... --json`).
pub fn group_rows() -> Vec<Row> {
    table(DOC, "## Groups: `observer flows --by GROUPING --json`")
}

/// The nested objects of a verdict, each with its table in docs/json.md
/// (under the heading `### `NAME``): what `evidence`, `what_if` and
/// `also` hold, key by key.
pub const NESTED: [&str; 6] = [
    "evidence",
    "evidence.shares",
    "evidence.ceilings",
    "evidence.receive",
    "what_if",
    "also",
];

/// The rows of [`NESTED`]'s table `name`.
pub fn nested_rows(name: &str) -> Vec<Row> {
    table(DOC, &format!("### `{name}`"))
}

/// The verdict's keys, which every flow's object carries beside
/// [`flow_rows`]'s (docs/json.md describes them in prose).
pub const VERDICT_KEYS: [(&str, &str); 9] = [
    ("verdict", "what limits the flow (VERDICTS)"),
    (
        "rule",
        "the rule of the attribution engine that decided, by name",
    ),
    ("confidence", "how sure, 0 to 1"),
    (
        "side",
        "sender or receiver: the end the verdict was made from",
    ),
    ("explanation", "the verdict in one line, with its numbers"),
    (
        "evidence",
        "the figures behind it over the judged interval (below): _bps is bit/s, _us µs, \
         shares 0 to 1",
    ),
    (
        "what_if",
        "for window verdicts: the window a target rate needs (below); --target-rate sets the \
         target",
    ),
    (
        "also",
        "a second limit that held the flow beside the verdict's (below); absent where none did",
    ),
    (
        "advice",
        "what would help, in a few words, as the table's ADVICE column: a window, what it buys \
         and the setting that grows it, or why no window helps",
    ),
];

/// The JSON FIELDS section.
pub fn section(roff: &mut Roff) {
    roff.control("SH", ["JSON FIELDS"]);
    roff.text([roman(
        "Each object that --json prints (also with --follow), key by key. Sizes are bytes and \
         times µs unless the key says otherwise; every figure is the kernel's own (struct \
         tcp_sock), named as tcp_info and ss -ti name it.",
    )]);
    rows(roff, &flow_rows());
    for (key, meaning) in VERDICT_KEYS {
        roff.control("TP", []);
        roff.text([bold(key)]);
        roff.text([roman(meaning)]);
    }
    for name in NESTED {
        roff.control("SS", [format!("In {name}").as_str()]);
        rows(roff, &nested_rows(name));
    }
    roff.control("SS", ["With --by: one object per group"]);
    rows(roff, &group_rows());
}

/// One tagged paragraph per row: the keys in bold, the unit, the meaning.
fn rows(roff: &mut Roff, rows: &[Row]) {
    for r in rows {
        roff.control("TP", []);
        let unit = plain(r.unit);
        if unit == "-" || unit.is_empty() {
            roff.text([bold(plain(r.keys))]);
        } else {
            roff.text([bold(plain(r.keys)), roman(format!(" ({unit})"))]);
        }
        roff.text([roman(plain(r.meaning))]);
    }
}
