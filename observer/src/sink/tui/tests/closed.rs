//! The recently closed flows (`c`): what the list keeps (by count and
//! by age), the key that shows it, and its table.
#![allow(clippy::unwrap_used, reason = "tests: a failure should panic")]

use super::*;
use crate::sink::tui::{
    closed::{ClosedFlow, ClosedFlows, Retention},
    closed_view::ago,
    row::Row,
};

/// Flow 4's close, as the live flows report it: the window-bound iperf3
/// that closed at 103 s, judged over its life.
fn flow4_close(at_s: u64) -> ClosedFlow {
    let (_, events) = live_and_events();
    let closes: Vec<ClosedFlow> = events
        .iter()
        .filter_map(|e| ClosedFlow::from_event(e, at_s * SEC))
        .collect();
    assert_eq!(closes.len(), 1);
    closes.into_iter().next().unwrap()
}

/// Flow 4's close under another cookie, read at `at_s` seconds.
fn close(cookie: u64, at_s: u64) -> ClosedFlow {
    let mut f = flow4_close(at_s);
    f.row.flow.cookie = cookie;
    f
}

fn kept(list: &ClosedFlows) -> Vec<u64> {
    list.iter().map(|f| f.row.cookie()).collect()
}

#[test]
fn a_close_event_becomes_a_row_with_its_life_verdict_and_advice() {
    let f = flow4_close(104);
    assert_eq!(f.row.cookie(), 4);
    assert!(f.row.closed);
    assert_eq!(f.row.verdict(), Verdict::ReceiveWindow);
    assert!(
        f.row.advice().starts_with("peer's window"),
        "{}",
        f.row.advice()
    );
    assert!((f.life_s - 3.0).abs() < 0.01, "{}", f.life_s);
    assert!(ClosedFlow::from_event(&Event::Started { cookie: 1 }, 0).is_none());
}

#[test]
fn keeps_the_newest_closes_up_to_the_count() {
    let mut list = ClosedFlows::new(Retention {
        count: 3,
        age: Duration::from_secs(600),
    });
    for c in 1..=5 {
        list.push(close(c, 100 + c));
    }
    assert_eq!(kept(&list), [5, 4, 3]);
    // Off: nothing kept.
    let mut off = ClosedFlows::new(Retention {
        count: 0,
        ..Retention::default()
    });
    off.push(close(1, 100));
    assert!(off.is_empty());
}

#[test]
fn lets_closes_older_than_the_age_go() {
    let mut list = ClosedFlows::new(Retention {
        count: 50,
        age: Duration::from_secs(60),
    });
    list.push(close(1, 100));
    list.push(close(2, 130));
    list.push(close(3, 170));
    assert_eq!(kept(&list), [3, 2, 1], "a push expires nothing");
    list.expire(170 * SEC);
    // 70 s old: gone; 40 s old: kept; exactly the age: kept.
    assert_eq!(kept(&list), [3, 2]);
    assert_eq!(
        list.age(&list.iter().nth(1).unwrap().clone()),
        Duration::from_secs(40)
    );
    list.expire(190 * SEC);
    assert_eq!(kept(&list), [3, 2]);
    list.expire(191 * SEC);
    assert_eq!(kept(&list), [3]);
    list.expire(1000 * SEC);
    assert!(list.is_empty());
}

#[test]
fn ages_fit_six_cells() {
    let s = Duration::from_secs;
    assert_eq!(ago(s(0)), "0s");
    assert_eq!(ago(s(59)), "59s");
    assert_eq!(ago(s(245)), "4m05s");
    assert_eq!(ago(s(7800)), "2h10m");
    assert_eq!(ago(s(3 * 86_400 + 5)), "3d");
    assert!(ago(s(99 * 86_400)).len() <= 6);
}

#[test]
fn c_lists_the_closes_newest_first_and_esc_goes_back() {
    let mut a = app();
    a.record_closed([close(7, 104)], 104 * SEC);
    a.record_closed([close(8, 110)], 112 * SEC);
    assert_eq!(a.closed().len(), 2);
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Enter);
    assert!(a.detail().is_some());
    key(&mut a, KeyCode::Char('c'));
    assert!(a.closed_view() && a.detail().is_none() && !a.peers());
    let l = lines(&render(&mut a, 160, 12));
    assert!(l[2].contains("  recently closed 2 kept (c)  "), "{}", l[2]);
    let titles = &l[3];
    for t in [
        "AGO", "PROCESS", "LOCAL", "REMOTE", "LIFE", "RATE", "VERDICT", "ADVICE",
    ] {
        assert!(titles.contains(t), "{t}: {titles}");
    }
    // Newest first, each with how long ago, its life, verdict and advice.
    assert!(l[4].trim_start().starts_with("2s iperf3/4242"), "{}", l[4]);
    assert!(l[5].trim_start().starts_with("8s iperf3/4242"), "{}", l[5]);
    for row in &l[4..6] {
        assert!(row.contains(" 3.0s "), "{row}");
        assert!(row.contains("receive_window"), "{row}");
        assert!(row.contains("peer's window"), "{row}");
    }
    assert!(l[11].contains("c flows"), "{}", l[11]);
    // The selection moves within the closes; Enter opens the detail
    // pane on the selected one, judged over its life; Esc goes back to
    // the list, then to the flows.
    key(&mut a, KeyCode::Char('G'));
    assert_eq!(a.closed_cursor(), 1);
    key(&mut a, KeyCode::Down);
    assert_eq!(a.closed_cursor(), 1);
    key(&mut a, KeyCode::Enter);
    let oldest = a.closed_rows()[1].row.cookie();
    assert_eq!(a.detail().unwrap().unwrap().cookie(), oldest);
    let l = lines(&render(&mut a, 80, 24));
    assert!(l[3].contains("(closed)"), "{}", l[3]);
    assert!(l[4].contains("over its life, 2.0 s, closed"), "{}", l[4]);
    assert!(l[23].starts_with("Esc back  j/k next flow"), "{}", l[23]);
    key(&mut a, KeyCode::Up);
    assert_eq!(
        a.detail().unwrap().unwrap().cookie(),
        a.closed_rows()[0].row.cookie()
    );
    key(&mut a, KeyCode::Esc);
    assert!(a.detail().is_none() && a.closed_view());
    key(&mut a, KeyCode::Esc);
    assert!(!a.closed_view());
    // `c` and `v` take turns.
    key(&mut a, KeyCode::Char('c'));
    key(&mut a, KeyCode::Char('v'));
    assert!(a.peers() && !a.closed_view());
    key(&mut a, KeyCode::Char('c'));
    assert!(a.closed_view() && !a.peers());
}

#[test]
fn the_closed_table_fits_80_columns_with_the_flow_tables_essentials() {
    let mut a = app();
    a.record_closed([close(7, 104)], 104 * SEC);
    key(&mut a, KeyCode::Char('c'));
    let l = lines(&render(&mut a, 80, 24));
    let titles: Vec<&str> = l[3].split_whitespace().collect();
    assert_eq!(
        titles,
        ["PROCESS", "REMOTE", "AVGRATE", "VERDICT", "ADVICE"]
    );
    assert!(
        l[4].contains("receive_window") && l[4].contains("peer's window"),
        "{}",
        l[4]
    );
    assert!(l.iter().all(|l| l.chars().count() <= 80));
}

#[test]
fn the_filter_and_pause_hold_for_the_closes_too() {
    let mut a = app();
    a.record_closed([close(7, 104)], 104 * SEC);
    key(&mut a, KeyCode::Char('c'));
    key(&mut a, KeyCode::Char('/'));
    typed(&mut a, "curl");
    key(&mut a, KeyCode::Enter);
    assert!(a.closed_rows().is_empty());
    let l = lines(&render(&mut a, 120, 12));
    assert!(
        l.iter()
            .any(|l| l.contains("none of the 1 recently closed flows matches the filter")),
        "{l:#?}"
    );
    key(&mut a, KeyCode::Char('/'));
    key(&mut a, KeyCode::Backspace);
    key(&mut a, KeyCode::Backspace);
    key(&mut a, KeyCode::Backspace);
    key(&mut a, KeyCode::Backspace);
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.closed_rows().len(), 1);
    // Paused: a close waits for the resume.
    key(&mut a, KeyCode::Char('p'));
    a.record_closed([close(8, 105)], 105 * SEC);
    assert_eq!(a.closed_rows().len(), 1);
    key(&mut a, KeyCode::Char('p'));
    let cookies: Vec<u64> = a.closed_rows().iter().map(|f| f.row.cookie()).collect();
    assert_eq!(cookies, [8, 7]);
}

#[test]
fn a_flow_that_leaves_the_table_stays_in_its_detail_pane_from_the_closed_list() {
    let (live, events) = live_and_events();
    let mut a = App::new(Options::default());
    a.update(Snapshot::from_live(&live, &COUNTERS));
    // Flow 4 lingers, closed, judged over its life: no current rate.
    while a.selected().map(Row::cookie) != Some(4) {
        key(&mut a, KeyCode::Down);
    }
    key(&mut a, KeyCode::Enter);
    let lingering = a.detail().unwrap().unwrap().clone();
    assert!(lingering.closed);
    // Its close, with its history from the live flows, then the table
    // without it: the pane goes on showing it, from the closed list.
    let closes: Vec<ClosedFlow> = events
        .iter()
        .filter_map(|e| ClosedFlow::from_event(e, 104 * SEC))
        .map(|f| f.with_history(&live))
        .collect();
    assert_eq!(closes[0].row.history.len(), lingering.history.len());
    assert!(!closes[0].row.history.is_empty());
    a.record_closed(closes, 104 * SEC);
    let mut rest = Snapshot::from_live(&live, &COUNTERS);
    rest.rows.retain(|r| r.cookie() != 4);
    a.update(rest);
    let shown = a.detail().unwrap().unwrap();
    assert_eq!(shown.cookie(), 4);
    assert_eq!(shown.verdict(), lingering.verdict());
    assert_eq!(shown.rate_bps(), lingering.rate_bps());
    let l = lines(&render(&mut a, 100, 30));
    assert!(l[4].contains("over its life, 2.0 s, closed"), "{}", l[4]);
    assert!(!l.iter().any(|l| l.contains("no longer tracked")));
    assert!(l.iter().any(|l| l.starts_with("│rate ")), "{l:#?}");
}

#[test]
fn the_closed_table_names_the_namespace_where_a_flow_has_a_name() {
    let mut a = app();
    let mut f = close(7, 104);
    f.row.flow.netns_name = Some("pe-9547-0-a".into());
    a.record_closed([f, close(8, 104)], 104 * SEC);
    key(&mut a, KeyCode::Char('c'));
    let l = lines(&render(&mut a, 160, 12));
    // As wide as its name, AGO right-aligned after it.
    assert!(l[3].starts_with("NETNS          AGO PROCESS"), "{}", l[3]);
    let rows: Vec<&String> = l[4..6].iter().collect();
    assert!(
        rows.iter().any(|l| l.starts_with("pe-9547-0-a ")),
        "{rows:#?}"
    );
    assert!(
        rows.iter().any(|l| l.starts_with("-           ")),
        "{rows:#?}"
    );
    // At 80 columns it gives way first.
    let l = lines(&render(&mut a, 80, 24));
    assert!(l[3].starts_with("PROCESS"), "{}", l[3]);
}
