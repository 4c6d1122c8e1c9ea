//! The pages as `observer man --dir` writes them, from the real command
//! line.
#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use clap::CommandFactory as _;
use observer::{
    attribution::Verdict,
    sink::{figures::Figure, tui::help},
};

use super::{json_fields, metrics, page, sections::plain, synopsis};

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

/// One flow's report, as `observer flows` makes it.
fn one_report() -> observer::track::snapshot::Report {
    use observer::{model::clock::Clock, track::snapshot::FlowTable};
    let mut s = observer_common::FlowSample::ZERO;
    s.cookie = 7;
    s.state = 1;
    s.first_seen_ns = 1;
    let mut t = FlowTable::new();
    t.update(s, 2);
    let cfg = observer::attribution::Config::default();
    t.reports(&Clock::fixed(0, 250), 3, 0, &cfg).remove(0)
}

#[test]
fn the_documented_keys_are_the_objects() {
    let report = one_report();
    // The object as --json writes it.
    let mut out = Vec::new();
    observer::sink::records::write_json(&mut out, std::slice::from_ref(&report)).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let mut keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
    // what_if and also are left out of a verdict that has none, as this
    // one, and netns_name of a namespace with no ip netns name.
    assert!(report.attribution.what_if.is_none());
    assert!(report.flow.netns_name.is_none());
    keys.push("what_if".to_string());
    keys.push("also".to_string());
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

/// `section`'s text in `page`: from its heading to the next.
fn section(page: &str, heading: &str) -> String {
    let body = page
        .split(&format!(".SH {heading}\n"))
        .nth(1)
        .unwrap_or_else(|| panic!("no {heading}"));
    body.split("\n.SH ").next().unwrap().to_string()
}

#[test]
fn the_flows_page_says_what_every_figure_measures() {
    let columns = section(&page("observer-flows.1"), "COLUMNS");
    for f in Figure::ALL {
        assert!(columns.contains(&format!("\\fB{}\\fR", f.name())), "{f:?}");
        assert!(columns.contains(f.meaning()), "{f:?}: {}", f.meaning());
    }
    // A download's own figures under a heading of their own.
    let downloads = columns.split(".SS Downloads").nth(1).unwrap();
    assert!(downloads.contains("\\fBRCV_RTT\\fR") && !downloads.contains("\\fBSRTT\\fR"));
}

/// Every option that takes a value names it for what it is (`--pin DIR`,
/// not the field's name), and the synopsis writes it.
#[test]
fn every_synopsis_names_the_values() {
    fn check(cmd: &clap::Command, pages: &[(String, String)]) {
        let name = cmd.get_display_name().unwrap_or(cmd.get_name());
        let (_, roff) = pages
            .iter()
            .find(|(n, _)| *n == format!("{name}.1"))
            .unwrap_or_else(|| panic!("no page {name}"));
        let synopsis = section(roff, "SYNOPSIS").replace("\\-", "-");
        for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            let takes = a.get_num_args().is_some_and(|n| n.takes_values())
                && matches!(
                    a.get_action(),
                    clap::ArgAction::Set | clap::ArgAction::Append
                );
            if !takes {
                continue;
            }
            assert!(
                a.get_value_names().is_some(),
                "{name}: {:?} has no value_name",
                a.get_id()
            );
            let value = format!("\\fI{}\\fR", synopsis::value_name(a));
            match a.get_long() {
                Some(long) => {
                    let at = synopsis
                        .find(&format!("--{long}\\fR"))
                        .unwrap_or_else(|| panic!("{name}: no --{long}: {synopsis}"));
                    let rest = &synopsis[at..];
                    assert!(rest.contains(&value), "{name}: --{long} without {value}");
                }
                None => assert!(synopsis.contains(&value), "{name}: {value}"),
            }
        }
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            check(sub, pages);
        }
    }
    let mut cmd = crate::Cli::command().disable_help_subcommand(true);
    cmd.build();
    let pages = pages();
    check(&cmd, &pages);
    let flows = pages.iter().find(|(n, _)| n == "observer-flows.1").unwrap();
    assert!(
        flows.1.contains("\\fB\\-\\-pin\\fR\u{a0}\\fIDIR\\fR"),
        "{}",
        section(&flows.1, "SYNOPSIS")
    );
}

/// Every key of a flow's object, nested ones too (evidence.receive's
/// window_fill and closed_share, what_if's, also's), is in JSON FIELDS.
#[test]
fn json_fields_name_every_key_of_the_object() {
    use observer::attribution::{Also, Bounds, what_if};
    fn keys(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    out.push(k.clone());
                    keys(v, out);
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| keys(v, out)),
            _ => {}
        }
    }
    let mut report = one_report();
    // A window the header cannot carry, so that other_fix and
    // max_window_bytes are filled.
    let bounds = Bounds {
        shift: Some(0),
        scaling_off: true,
        own: true,
        path_bps: 0.0,
        peer: None,
    };
    let cfg = observer::attribution::Config::default();
    report.attribution.what_if = Some(what_if(65_535, 50_000, 100e6, bounds, &cfg));
    report.attribution.also = Some(Also {
        verdict: Verdict::Path,
        share: 0.3,
        reason: String::new(),
    });
    report.flow.netns_name = Some("blue".into());
    let mut out = Vec::new();
    observer::sink::records::write_json(&mut out, std::slice::from_ref(&report)).unwrap();
    let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let mut all = Vec::new();
    keys(&value, &mut all);
    let json = section(&page("observer-flows.1"), "\"JSON FIELDS\"").replace(['\\', '&'], " ");
    let words: std::collections::HashSet<&str> = json
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    for k in ["window_fill", "closed_share"] {
        assert!(all.iter().any(|a| a == k), "{k} is not in the object");
    }
    let missing: Vec<&String> = all
        .iter()
        .filter(|k| !words.contains(k.as_str()) && !words.contains(format!("fB{k}").as_str()))
        .collect();
    assert!(missing.is_empty(), "not in JSON FIELDS: {missing:?}");
    for name in json_fields::NESTED {
        assert!(!json_fields::nested_rows(name).is_empty(), "{name}");
    }
}

#[test]
fn the_run_page_lists_every_metric() {
    let rows = metrics::rows();
    assert!(rows.len() > 20, "{}", rows.len());
    let p = section(&page("observer-run.1"), "METRICS");
    for r in &rows {
        for name in plain(r.names).split(", ") {
            assert!(p.contains(name), "{name}");
        }
    }
    assert!(p.contains("flow_srtt_seconds") && p.contains("process_cpu_seconds_total"));
}

#[test]
fn pointers_at_documents_go() {
    use metrics::unlink_docs;
    assert_eq!(
        unlink_docs("by limit (per_flow, shared: docs/attribution.md, \"Groups\"); a series"),
        "by limit (per_flow, shared); a series"
    );
    assert_eq!(
        unlink_docs("with a newer connection (security.md)"),
        "with a newer connection"
    );
    assert_eq!(unlink_docs("see json.md#keys, then"), "see, then");
    assert_eq!(unlink_docs("no pointer"), "no pointer");
}

/// `man -l` renders every page without a warning, at 80 columns.
#[test]
fn man_renders_every_page_without_warnings() {
    if std::process::Command::new("man")
        .arg("-w")
        .arg("man")
        .output()
        .is_err()
    {
        eprintln!("skipped: no man(1) on this host");
        return;
    }
    let dir = std::env::temp_dir().join(format!("observer-man-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for p in page::all(crate::Cli::command()).unwrap() {
        let path = dir.join(&p.file_name);
        std::fs::write(&path, &p.roff).unwrap();
        let out = std::process::Command::new("man")
            .args(["-l", "--warnings"])
            .arg(&path)
            .env("MANWIDTH", "80")
            .env("MAN_KEEP_FORMATTING", "0")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{}: {err}", p.file_name);
        assert!(err.trim().is_empty(), "{}: {err}", p.file_name);
        assert!(!out.stdout.is_empty(), "{}", p.file_name);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
