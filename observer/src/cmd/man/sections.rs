//! The sections observer adds to clap_mangen's pages ([`super::page`]),
//! each made from the table the program itself uses, so page and program
//! say the same: the `?` overlay's keys ([`observer::sink::tui::help`]),
//! the verdicts' texts (`Verdict::meaning`, `Verdict::remedy`), the
//! table's figures (`Figure::meaning`) and the filter language's summary
//! (the text after `--help`).

use clap_mangen::roff::{Roff, bold, italic, roman};
use observer::{
    attribution::Verdict,
    sink::{columns::Section, figures::Figure, tui::help},
};

/// The text clap prints after a command's `--help` (the filter
/// language's summary) as a section of its own, named by the text's
/// first word where that is a heading in capitals (`FILTERS (...):`),
/// kept line for line: it is laid out in columns. The heading is the
/// section's, not repeated in its body: the rest of its line (`--filter
/// EXPR, as ss(8) writes them:`) opens the section.
pub fn after_help(roff: &mut Roff, text: &str) {
    let first = text.split_whitespace().next().unwrap_or_default();
    let titled = first.len() > 1 && first.chars().all(|c| c.is_ascii_uppercase());
    let heading = if titled { first } else { "NOTES" };
    roff.control("SH", [heading]);
    let mut lines = text.lines();
    if titled && let Some(line) = lines.next() {
        let rest = line.trim_start()[first.len()..].trim();
        let rest = rest
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix("):"))
            .map_or_else(|| rest.to_string(), |r| format!("{r}:"));
        if !rest.is_empty() {
            roff.text([roman(rest)]);
        }
    }
    roff.control("nf", []);
    for line in lines {
        roff.text([roman(line)]);
    }
    roff.control("fi", []);
}

/// KEYS: every key `observer top` accepts, from the help overlay's
/// table.
pub fn keys(roff: &mut Roff) {
    roff.control("SH", ["KEYS"]);
    roff.text([roman(
        "The keys of the live view, as its help (?) lists them. While help is open only ?, Esc \
         and q act.",
    )]);
    entries(roff, &help::KEYS);
}

/// SCREEN: what the marks and columns of `observer top` mean, from the
/// help overlay's legend.
pub fn screen(roff: &mut Roff) {
    roff.control("SH", ["SCREEN"]);
    entries(roff, &*help::LEGEND);
}

/// One tagged paragraph per entry of a help table.
fn entries(roff: &mut Roff, table: &[help::Entry]) {
    for (key, text) in help::joined(table) {
        roff.control("TP", []);
        roff.text([bold(key)]);
        roff.text([roman(text)]);
    }
}

/// COLUMNS: what each column of the `flows` table measures, uploads'
/// then downloads', from the one table of figures both the table and
/// `observer top` title their columns from, then the figures only top
/// shows.
pub fn columns(roff: &mut Roff) {
    roff.control("SH", ["COLUMNS"]);
    roff.text([roman(
        "The table has two sections, each under its own titles: uploads (flows judged at this, \
         the sending end), then downloads (judged at this, the receiving end, ↓ before the \
         rate). A download's own figures are the receiving end's and have names of their own, \
         so no title means two things. Sizes are compact (1.20MB), rates bit/s (35.2Mbit/s).",
    )]);
    let uploads = Section::Uploads.figures();
    let downloads = Section::Downloads.figures();
    roff.control("SS", ["Uploads"]);
    figures(roff, &uploads);
    roff.control("SS", ["Downloads"]);
    let shared: Vec<&str> = downloads
        .iter()
        .filter(|f| uploads.contains(f))
        .map(|f| f.name())
        .collect();
    roff.text([roman(format!(
        "{} as for an upload; in place of the sender's figures, the receiving end's own:",
        shared.join(", ")
    ))]);
    let own: Vec<Figure> = downloads
        .into_iter()
        .filter(|f| !uploads.contains(f))
        .collect();
    figures(roff, &own);
    roff.control("SS", ["Namespaces"]);
    figures(roff, &[Figure::Netns]);
    roff.control("SS", ["In observer-top(1)"]);
    let shortened: Vec<String> = Figure::ALL
        .iter()
        .filter(|f| f.short() != f.name())
        .map(|f| format!("{} for {}", f.short(), f.name()))
        .collect();
    roff.text([roman(format!(
        "The live view titles its columns from the same figures, with short titles where its \
         columns are narrow ({}), and adds:",
        shortened.join(", ")
    ))]);
    let top_only: Vec<Figure> = Figure::ALL
        .into_iter()
        .filter(|f| *f != Figure::Netns && !uploads.contains(f) && !downloads.contains(f))
        .collect();
    figures(roff, &top_only);
}

/// One tagged paragraph per figure: its name, what it measures.
fn figures(roff: &mut Roff, figures: &[Figure]) {
    for f in figures {
        roff.control("TP", []);
        roff.text([bold(f.name())]);
        roff.text([roman(f.meaning())]);
    }
}

/// VERDICTS: each verdict, what it means and what to do, from the texts
/// docs/attribution.md's table is made of.
pub fn verdicts(roff: &mut Roff) {
    roff.control("SH", ["VERDICTS"]);
    roff.text([roman(
        "Each flow gets one verdict: what keeps it from going faster, judged from the end that \
         sends its data or, for a download, from this receiving end (the side). The table marks \
         a download with ↓; --json gives the verdict's rule, confidence, explanation and \
         evidence (JSON FIELDS).",
    )]);
    for v in Verdict::ALL {
        roff.control("TP", []);
        roff.text([bold(v.name())]);
        roff.text([roman(plain(v.meaning()))]);
        roff.control("br", []);
        roff.text([italic("What to do:"), roman(" "), roman(plain(v.remedy()))]);
    }
}

/// SEE ALSO: every other page of observer's, and where the references
/// are.
pub fn see_also(roff: &mut Roff, this: &str, names: &[String]) {
    roff.control("SH", ["SEE ALSO"]);
    let others: Vec<&String> = names.iter().filter(|n| *n != this).collect();
    for (i, name) in others.iter().enumerate() {
        let sep = if i + 1 < others.len() { "," } else { "" };
        roff.text([bold(name.as_str()), roman(format!("(1){sep}"))]);
    }
    roff.control("PP", []);
    roff.text([roman(
        "observer-flows(1) lists the verdicts (VERDICTS) and the keys of --json (JSON FIELDS); \
         observer-top(1) the keys of the live view (KEYS); each page that takes --filter, the \
         filter language (FILTERS).",
    )]);
}

/// Markdown text as a manual page shows it: without the backticks and
/// emphasis marks, links as their text.
pub fn plain(md: &str) -> String {
    let mut out = String::with_capacity(md.len());
    let mut rest = md;
    while let Some(open) = rest.find('[') {
        let (before, link) = rest.split_at(open);
        out.push_str(before);
        let parsed = link.split_once("](").and_then(|(text, tail)| {
            let close = tail.find(')')?;
            Some((&text[1..], &tail[close + 1..]))
        });
        match parsed {
            Some((text, after)) if !text.contains(']') => {
                out.push_str(text);
                rest = after;
            }
            _ => {
                out.push('[');
                rest = &link[1..];
            }
        }
    }
    out.push_str(rest);
    out.replace(['`', '*'], "")
}
