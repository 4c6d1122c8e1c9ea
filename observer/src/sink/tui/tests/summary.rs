//! What top says when it ends: the host view's summary of every flow it
//! saw, cut to one screen.
#![allow(clippy::unwrap_used, reason = "tests: a failure should panic")]

use super::*;
use crate::sink::tui::{
    closed::ClosedFlow,
    summary::{MAX_CLOSED, Seen, one_screen},
};

/// What top saw of [`live_and_events`]: flow 4's close, and flows 1 to 3
/// open at the end.
fn seen() -> (Seen, LiveFlows) {
    let (live, events) = live_and_events();
    let mut seen = Seen::default();
    for e in &events {
        if let Some(f) = ClosedFlow::from_event(e, 0) {
            seen.push(f.row);
        }
    }
    (seen, live)
}

fn written(s: &crate::sink::tui::summary::Summary, lines: usize) -> String {
    let mut out = Vec::new();
    s.write(&mut out, lines, 0).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn the_closed_and_the_open_flows_each_once_by_peer() {
    let (seen, live) = seen();
    let s = seen.summary(&live, |_| true, Duration::from_millis(12_400));
    let mut cookies: Vec<u64> = s.rows.iter().map(|r| r.cookie()).collect();
    cookies.sort_unstable();
    assert_eq!(cookies, [1, 2, 3, 4]);
    // Each judged over its life.
    assert!(s.rows.iter().all(|r| r.verdict() != Verdict::Unknown));
    let text = written(&s, 40);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "observer top saw 4 flows in 12s:");
    // The host view's summary, as `observer flows --summary` prints it.
    // The idle ssh session moved nothing: in no group, and said so.
    assert!(
        lines[1].starts_with("host: 3 flows in 2 groups by peer:")
            && lines[1].ends_with(" (1 flow moved nothing: in no group)"),
        "{text}"
    );
    assert!(
        !text.contains("192.168.1.20") && !text.contains("0.0 times"),
        "{text}"
    );
    assert!(text.contains("peer 10.0.0.2 upload"), "{text}");
}

#[test]
fn the_filter_in_force_narrows_it() {
    let (seen, live) = seen();
    let s = seen.summary(&live, |r| r.flow.comm == "curl", Duration::from_secs(5));
    assert_eq!(s.rows.len(), 1);
    let text = written(&s, 40);
    assert!(
        text.starts_with("observer top saw 1 flow in 5s:\nhost: 1 flows in 1 group"),
        "{text}"
    );
}

#[test]
fn the_oldest_closes_past_the_cap_are_counted_not_kept() {
    let (_, live) = seen();
    let row = snapshot().rows[0].clone();
    let mut seen = Seen::default();
    for _ in 0..MAX_CLOSED + 2 {
        seen.push(row.clone());
    }
    let s = seen.summary(
        &live,
        |r| r.flow.comm != "iperf3" || r.closed,
        Duration::ZERO,
    );
    assert_eq!(s.left_out, 2);
    let first = written(&s, 5).lines().next().unwrap().to_string();
    assert!(
        first.contains("(2 older closed flows left out: it keeps the last 10000)"),
        "{first}"
    );
}

#[test]
fn one_screen_cuts_between_groups_and_counts_the_rest() {
    let text = "host: 9 flows in 4 groups by peer: 1 per_flow, 3 shared, 0 mixed, 0 unknown\n\
                peer a upload (netns 1): one\n  - a1\n  - a2\n\
                peer b upload (netns 1): two\n  - b1\n\
                peer c upload (netns 1): three\n\
                peer d upload (netns 1): four\n";
    assert_eq!(one_screen(text, 8, 0), text);
    assert_eq!(
        one_screen(text, 6, 0),
        "host: 9 flows in 4 groups by peer: 1 per_flow, 3 shared, 0 mixed, 0 unknown\n\
         peer a upload (netns 1): one\n  - a1\n  - a2\n\
         ... and 3 more groups that did not fit this screen\n"
    );
    // Never within a group: b's advice goes with it.
    assert_eq!(
        one_screen(text, 7, 0),
        "host: 9 flows in 4 groups by peer: 1 per_flow, 3 shared, 0 mixed, 0 unknown\n\
         peer a upload (netns 1): one\n  - a1\n  - a2\n\
         peer b upload (netns 1): two\n  - b1\n\
         ... and 2 more groups that did not fit this screen\n"
    );
    assert!(one_screen(text, 1, 0).starts_with("host: 9 flows"));
    // A largest group taller than the screen is cut where the screen
    // ends, rather than naming no group at all.
    let tall = "host: 5 flows in 2 groups by peer: 0 per_flow, 0 shared, 1 mixed, 1 unknown\n\
                (2 flows moved nothing: in no group)\n\
                peer a download (netns 1): mixed\n  - a1\n  - a2\n  - a3\n  - a4\n\
                peer b download (netns 1): unknown\n";
    assert_eq!(
        one_screen(tall, 5, 0),
        "host: 5 flows in 2 groups by peer: 0 per_flow, 0 shared, 1 mixed, 1 unknown\n\
         (2 flows moved nothing: in no group)\n\
         peer a download (netns 1): mixed\n  - a1\n\
         ... and 1 more group that did not fit this screen\n"
    );
}

#[test]
fn the_summary_wraps_between_words() {
    use crate::sink::tui::summary::wrap;
    let line = "  - a faster reader would help, a bigger window would not: rcv_wnd 130.0KB";
    let lines = wrap(line, 30);
    assert_eq!(
        lines,
        [
            "  - a faster reader would",
            "    help, a bigger window",
            "    would not: rcv_wnd 130.0KB",
        ]
    );
    // Never a word cut: the words read as written.
    let words: Vec<&str> = lines.iter().flat_map(|l| l.split_whitespace()).collect();
    assert_eq!(words, line.split_whitespace().collect::<Vec<_>>());
    assert_eq!(wrap("short", 30), ["short"]);
    assert_eq!(
        wrap("averyveryverylongword next", 8),
        ["averyveryverylongword", "  next"]
    );
    // Cut to a screen by the lines the wrapped text takes, not by the
    // text's own lines.
    let text = "host: 2 flows in 2 groups by peer: 1 per_flow, 1 shared, 0 mixed, 0 unknown\n\
                peer a upload (netns 1): one\n\
                peer b upload (netns 1): two\n\
                peer c upload (netns 1): three\n\
                peer d upload (netns 1): four\n";
    let cut = one_screen(text, 5, 40);
    assert!(cut.lines().all(|l| l.chars().count() <= 40), "{cut}");
    assert_eq!(cut.lines().count(), 5, "{cut}");
    assert!(
        cut.ends_with(
            "peer a upload (netns 1): one\n... and 3 more groups that did not fit\n  this screen\n"
        ),
        "{cut}"
    );
}
