//! The pages as `observer man --dir` writes them, from the real command
//! line.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use clap::CommandFactory as _;
use observer::{attribution::Verdict, sink::tui::help};

use super::{json_fields, page, sections::plain};

/// Every page's roff source, by file name.
fn pages() -> Vec<(String, String)> {
    page::all(crate::Cli::command())
        .unwrap()
        .into_iter()
        .map(|p| (p.file_name, String::from_utf8(p.roff).unwrap()))
        .collect()
}

/// The roff source of `name`, with roff's escapes of dashes and
/// apostrophes undone so text reads as written.
fn page(name: &str) -> String {
    let (_, roff) = pages()
        .into_iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no page {name}"));
    roff.replace("\\-", "-").replace("\\*(Aq", "'")
}

#[test]
fn every_page_stands_alone() {
    let pages = pages();
    let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "observer-flows.1",
            "observer-run.1",
            "observer-top.1",
            "observer-completions.1",
            "observer-man.1",
            "observer.1"
        ]
    );
    for (name, roff) in &pages {
        for path in ["docs/", ".md", "src/"] {
            assert!(!roff.contains(path), "{name} points at {path}");
        }
        assert!(roff.contains(".SH \"SEE ALSO\""), "{name}");
        assert!(!roff.contains(".SH EXTRA"), "{name}");
    }
}

#[test]
fn pages_that_take_a_filter_say_its_language() {
    for name in ["observer-flows.1", "observer-top.1", "observer-run.1"] {
        let p = page(name);
        assert!(p.contains(".SH FILTERS"), "{name}");
        assert!(p.contains("verdict NAME"), "{name}");
        // The heading once, as the section's; its line's rest opens it.
        assert_eq!(p.matches(".SH FILTERS").count(), 1, "{name}");
        assert!(
            !p.contains("FILTERS (--filter"),
            "{name}: the heading twice"
        );
        let body = p.split(".SH FILTERS\n").nth(1).unwrap();
        assert!(
            body.starts_with("--filter EXPR, as ss(8) writes them:\n.nf\n"),
            "{name}: {body}"
        );
    }
}

#[test]
fn the_top_page_lists_every_key_of_the_help() {
    let p = page("observer-top.1");
    let keys = p.split(".SH KEYS").nth(1).expect("a KEYS section");
    for (key, text) in help::joined(&help::KEYS) {
        assert!(keys.contains(key), "{key}");
        assert!(keys.contains(&text), "{text}");
    }
    assert!(p.contains(".SH SCREEN") && p.contains("dim rows"));
    // SCREEN is the legend whole: the second limits with `path` among them.
    let screen = p.split(".SH SCREEN").nth(1).expect("a SCREEN section");
    assert!(
        screen.contains("x a second limit: rwnd sndbuf app cwnd path reader sender"),
        "{screen}"
    );
}

#[test]
fn the_flows_page_lists_every_verdict_and_json_key() {
    let p = page("observer-flows.1");
    let verdicts = p.split(".SH VERDICTS").nth(1).expect("a VERDICTS section");
    for v in Verdict::ALL {
        assert!(verdicts.contains(&format!("\\fB{}\\fR", v.name())), "{v}");
        assert!(verdicts.contains(&plain(v.remedy())), "{v}");
    }
    let json = p
        .split(".SH \"JSON FIELDS\"")
        .nth(1)
        .expect("a JSON FIELDS section");
    for key in [
        "snd_wnd",
        "rcv_wnd_left",
        "delivery_rate_bps",
        "verdict",
        "what_if",
        "fastest_bps",
    ] {
        assert!(json.contains(key), "{key}");
    }
}

#[test]
fn docs_json_tables_parse() {
    let flows = json_fields::flow_rows();
    let groups = json_fields::group_rows();
    assert!(flows.len() > 50, "{}", flows.len());
    assert!(groups.len() > 10, "{}", groups.len());
    for r in flows.iter().chain(&groups) {
        assert!(r.keys.starts_with('`'), "{}", r.keys);
        assert!(!r.unit.is_empty() && !r.meaning.is_empty(), "{}", r.keys);
    }
}

/// The keys a page names for a flow's object: the table's and the
/// verdict's.
fn documented_keys() -> Vec<String> {
    json_fields::flow_rows()
        .iter()
        .flat_map(|r| {
            plain(r.keys)
                .split(',')
                .map(|k| k.trim().to_string())
                .collect::<Vec<_>>()
        })
        .chain(json_fields::VERDICT_KEYS.iter().map(|(k, _)| k.to_string()))
        .collect()
}

#[test]
fn the_documented_keys_are_the_objects() {
    use observer::{model::clock::Clock, track::snapshot::FlowTable};
    let mut s = observer_common::FlowSample::ZERO;
    s.cookie = 7;
    s.state = 1;
    s.first_seen_ns = 1;
    let mut t = FlowTable::new();
    t.update(s, 2);
    let cfg = observer::attribution::Config::default();
    let report = t.reports(&Clock::fixed(0, 250), 3, 0, &cfg).remove(0);
    // The object as --json writes it.
    let mut out = Vec::new();
    observer::sink::records::write_json(&mut out, std::slice::from_ref(&report)).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
    // what_if is left out of a verdict that has none, as this one, and
    // netns_name of a namespace with no ip netns name.
    assert!(report.attribution.what_if.is_none());
    assert!(report.flow.netns_name.is_none());
    keys.push("what_if".to_string());
    keys.push("netns_name".to_string());
    let mut documented = documented_keys();
    keys.sort();
    documented.sort();
    assert_eq!(keys, documented);
}

#[test]
fn markdown_reads_plain() {
    assert_eq!(plain("`a` *b* [c](../d.md#e) [f]"), "a b c [f]");
    assert_eq!(plain("x [y] (z)"), "x [y] (z)");
}

#[test]
fn writing_the_pages_says_where_in_one_line() {
    let pages = page::all(crate::Cli::command()).unwrap();
    assert_eq!(
        super::written(std::path::Path::new("/usr/local/share/man/man1"), &pages),
        "wrote 6 manual pages to /usr/local/share/man/man1: observer-flows.1, observer-run.1, \
         observer-top.1, observer-completions.1, observer-man.1, observer.1"
    );
}
