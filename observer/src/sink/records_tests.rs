//! The flows table and NDJSON: headers, sections, alignment, the stream.
#![allow(clippy::unwrap_used, reason = "tests: a failure should panic")]

use super::*;
use crate::{attribution, model::clock::Clock, track::snapshot::FlowTable};
use observer_common::FlowSample;

/// The column titles of one of docs/json.md's tables of columns (the
/// `### heading` under "## The table's columns"), in order.
fn documented(heading: &str) -> Vec<String> {
    let doc = include_str!("../../../docs/json.md");
    let section = doc
        .split("## The table's columns")
        .nth(1)
        .and_then(|s| s.split(heading).nth(1))
        .expect("docs/json.md's table of columns");
    section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .flat_map(|l| l.split('|').nth(1))
        .flat_map(|cell| cell.split(','))
        .map(|c| c.trim().trim_matches('`').to_string())
        .collect()
}

/// docs/json.md's tables of columns list every column each section of
/// the table prints, in order.
#[test]
fn the_documented_columns_are_the_tables() {
    assert_eq!(documented("### Uploads"), Section::Uploads.headers());
    assert_eq!(documented("### Downloads"), Section::Downloads.headers());
}

fn flow() -> Report {
    let mut s = FlowSample::ZERO;
    s.cookie = 7;
    s.saddr = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1];
    s.daddr = s.saddr;
    s.sport = 40000;
    s.dport = 5201;
    s.bytes_acked = 10 * 1024 * 1024;
    s.snd_wnd = 80_480;
    s.max_window = 131_072;
    s.srtt_us = 104_500;
    s.chrono_stat = [10, 30, 0];
    s.state = 1;
    s.first_seen_ns = 1;
    let mut t = FlowTable::new();
    t.update(s, 2);
    let cfg = attribution::Config::default();
    t.reports(&Clock::fixed(0, 250), 3, 0, &cfg).remove(0)
}

/// `flow()` judged from its receiving end: a download.
fn download() -> Report {
    let mut d = flow();
    d.attribution.side = attribution::Side::Receiver;
    d.flow.rcv_wnd = 65_536;
    d.flow.unread_bytes = 20_000;
    d.flow.rcv_ooopack = 12;
    let ev = &mut d.attribution.evidence;
    ev.receiver_rtt_us = 41_000;
    ev.receive.base_rtt_us = 40_000;
    ev.receive.window_fill = 0.01;
    ev.receive.closed_share = 0.88;
    d
}

fn table(flows: &[Report]) -> String {
    let mut out = Vec::new();
    write_table(&mut out, flows).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn table_has_header_and_aligned_row() {
    let text = table(&[flow()]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with("LOCAL"));
    assert!(lines[0].ends_with("VERDICT  ADVICE"), "{}", lines[0]);
    assert!(lines[1].starts_with("127.0.0.1:40000"));
    // 10 MiB acked, the window and srtt in the units of every view.
    assert!(lines[1].contains("10.49MB"), "{}", lines[1]);
    assert!(lines[1].contains("80.5KB"), "{}", lines[1]);
    assert!(lines[1].contains("104.5ms"), "{}", lines[1]);
    // rwnd-limited 30 of 40 busy jiffies; too little moved to judge, and
    // ADVICE says so.
    let cells: Vec<&str> = lines[1].split("  ").filter(|c| !c.is_empty()).collect();
    assert_eq!(cells.len(), COLUMNS, "{cells:?}");
    assert_eq!(cells[14].trim(), "75");
    assert_eq!(cells[16].trim(), "unknown");
    assert_eq!(cells[17].trim(), "too little");
}

#[test]
fn an_empty_table_keeps_the_uploads_header() {
    let text = table(&[]);
    assert_eq!(text.lines().count(), 1);
    assert!(text.starts_with("LOCAL") && text.contains("SRTT"), "{text}");
}

#[test]
fn downloads_come_after_uploads_under_their_own_header() {
    let text = table(&[download(), flow()]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    let titles = |l: &str| l.split_whitespace().map(String::from).collect::<Vec<_>>();
    assert_eq!(titles(lines[0]), Section::Uploads.headers());
    assert!(!lines[1].contains('↓'), "{text}");
    assert_eq!(lines[2], "");
    assert_eq!(titles(lines[3]), Section::Downloads.headers());
    // The receiving end's figures under the receiving end's names: the
    // window closed 88% of the time, as the detail pane says it, and so
    // no fill (FILL% `-`).
    let cells: Vec<&str> = lines[4].split_whitespace().collect();
    assert_eq!(
        cells[7..15],
        [
            "↓0bit/s",
            "41.0ms",
            "40.0ms",
            "65.5KB",
            "20.0KB",
            "12",
            "-",
            "88"
        ],
        "{text}"
    );
    // No name of the one section is in the other's header.
    let up = Section::Uploads.headers();
    let down = Section::Downloads.headers();
    for (u, d) in up.iter().zip(down) {
        assert!(u == &d || !down.contains(u), "{u} means two things");
    }
}

#[test]
fn columns_align_by_display_width() {
    use unicode_width::UnicodeWidthStr as _;
    let mut wide = flow();
    wide.flow.comm = "服务器".to_string();
    let mut cyrillic = flow();
    cyrillic.flow.comm = "сервер".to_string();
    let text = table(&[flow(), wide, cyrillic]);
    // The STATE column starts at the same terminal column on every line.
    let starts: Vec<usize> = text
        .lines()
        .map(|l| {
            let at = l.find(if l.starts_with("LOCAL") {
                "STATE"
            } else {
                "established"
            });
            l[..at.unwrap_or_else(|| panic!("{l}"))].width()
        })
        .collect();
    assert_eq!(starts.len(), 4);
    assert!(starts.iter().all(|s| *s == starts[0]), "{starts:?}\n{text}");
}

#[test]
fn streamed_table_writes_a_header_where_the_section_changes() {
    let mut t = TableStream::default();
    let mut out = Vec::new();
    t.write(&mut out, &[flow()]).unwrap();
    let mut wide = flow();
    wide.flow.comm = "a-command-name-wider-than-15".to_string();
    t.write(&mut out, &[download(), wide, flow()]).unwrap();
    t.write(&mut out, &[download()]).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 8, "{text}");
    assert!(lines[0].starts_with("LOCAL") && lines[0].contains("SRTT"));
    assert!(lines[1..4].iter().all(|l| l.starts_with("127.0.0.1:40000")));
    let state_at = |l: &str| l.find("established").unwrap();
    // The wide name pushed STATE right, and it stays there.
    assert!(state_at(lines[2]) > state_at(lines[1]));
    assert_eq!(state_at(lines[3]), state_at(lines[2]));
    // The batch's download after its uploads, under its own header, once.
    assert_eq!(lines[4], "");
    assert!(lines[5].starts_with("LOCAL") && lines[5].contains("RCV_RTT"));
    assert!(lines[6].contains('↓') && lines[7].contains('↓'), "{text}");
}

#[test]
fn json_keys_and_values() {
    let mut out = Vec::new();
    write_json(&mut out, &[flow()]).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["cookie"], 7);
    assert_eq!(v["local"], "127.0.0.1:40000");
    assert_eq!(v["snd_wnd"], 80_480);
    assert_eq!(v["snd_wnd_max"], 131_072);
    assert_eq!(v["busy_us"], 160_000);
    assert_eq!(v["rwnd_limited_us"], 120_000);
    assert_eq!(v["closed"], false);
    assert_eq!(v["verdict"], "unknown");
    assert_eq!(v["side"], "sender");
    assert!(v["explanation"].as_str().unwrap().starts_with("unknown: "));
    assert!(v["evidence"]["shares"]["idle"].is_number());
    assert!(v["evidence"]["ceilings"]["rwnd_bps"].is_number());
    for key in [
        "netns",
        "remote",
        "pid",
        "comm",
        "state",
        "bytes_acked",
        "bytes_received",
        "bytes_sent",
        "srtt_us",
        "min_rtt_us",
        "snd_cwnd",
        "mss",
        "inflight",
        "retransmits",
        "sndbuf_limited_us",
        "cwnd_limited_us",
        "cc",
        "first_seen",
        "last_seen",
        "unacked",
        "sacked",
        "lost",
        "retrans_out",
        "rto_us",
        "pacing_rate_bps",
        "reordering",
        "delivered_ce",
        "dsack_dups",
        "last_data_sent_ms",
        "last_data_recv_ms",
        "last_ack_recv_ms",
    ] {
        assert!(v.get(key).is_some(), "missing {key}");
    }
}

/// `flow()` in namespace `name`.
fn named(name: &str) -> Report {
    let mut r = flow();
    r.flow.netns_name = Some(name.into());
    r
}

#[test]
fn a_netns_column_comes_first_only_where_a_namespace_has_a_name() {
    assert!(table(&[flow(), download()]).starts_with("LOCAL"));
    let text = table(&[flow(), named("blue"), download()]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("NETNS  LOCAL"), "{text}");
    assert!(lines[1].starts_with("-      127.0.0.1:40000"), "{text}");
    assert!(lines[2].starts_with("blue   127.0.0.1:40000"), "{text}");
    // Both sections, so they read alike.
    assert!(lines[4].starts_with("NETNS  LOCAL") && lines[4].contains("RCV_RTT"));
    assert!(lines[5].starts_with("-  "), "{text}");
}

#[test]
fn a_streamed_table_gains_the_netns_column_under_a_new_header() {
    let mut t = TableStream::default();
    let mut out = Vec::new();
    t.write(&mut out, &[flow()]).unwrap();
    t.write(&mut out, &[named("blue")]).unwrap();
    t.write(&mut out, &[flow()]).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{text}");
    assert!(lines[0].starts_with("LOCAL"), "{text}");
    assert_eq!(lines[2], "");
    assert!(
        lines[3].starts_with("NETNS") && lines[3].contains("SRTT"),
        "{text}"
    );
    assert!(lines[4].starts_with("blue "), "{text}");
    // It stays, `-` for a namespace without a name.
    assert!(lines[5].starts_with("- "), "{text}");
    let local_at = |l: &str| l.find("127.0.0.1").unwrap();
    assert_eq!(local_at(lines[4]), local_at(lines[5]));
}

#[test]
fn json_has_the_netns_name_only_where_there_is_one() {
    let mut out = Vec::new();
    write_json(&mut out, &[flow(), named("blue")]).unwrap();
    let text = String::from_utf8(out).unwrap();
    let v: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(v[0].get("netns_name").is_none(), "{text}");
    assert_eq!(v[1]["netns_name"], "blue");
    // Beside the inode.
    let at = |k: &str| text.lines().nth(1).unwrap().find(k).unwrap();
    assert!(at("\"netns\"") < at("\"netns_name\"") && at("\"netns_name\"") < at("\"local\""));
}
