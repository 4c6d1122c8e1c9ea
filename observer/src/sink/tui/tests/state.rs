//! State and key handling.
#![allow(clippy::unwrap_used, reason = "tests: a failure should panic")]

use super::*;

#[test]
fn rows_and_totals_come_from_the_book() {
    let s = snapshot();
    let verdict = |c: u64| s.rows.iter().find(|r| r.cookie() == c).unwrap().verdict();
    assert_eq!(verdict(1), Verdict::ReceiveWindow);
    assert_eq!(verdict(2), Verdict::Path);
    assert_eq!(verdict(3), Verdict::Application);
    let t = &s.totals;
    assert_eq!((t.open, t.closed), (3, 1));
    // 6.13 + 10 Mbit/s sent by the open flows.
    assert!((t.send_bps - 16.13e6).abs() < 0.01e6, "{}", t.send_bps);
    assert_eq!(t.recv_bps, 0.0);
    let n = |v: Verdict| t.verdicts[Verdict::ALL.iter().position(|x| *x == v).unwrap()];
    assert_eq!(n(Verdict::ReceiveWindow), 1);
    assert_eq!(n(Verdict::Path), 1);
    assert_eq!(n(Verdict::Application), 1);
    assert_eq!((t.ringbuf_drops, t.lru_evictions), (2, 1));
    let r1 = s.rows.iter().find(|r| r.cookie() == 1).unwrap();
    assert!((r1.window_held().unwrap() - 0.56).abs() < 0.01);
    assert_eq!(r1.cwnd_or_fill(), Some(0.0));
    assert_eq!(r1.history.len(), 4);
    assert!(s.rows.iter().find(|r| r.cookie() == 4).unwrap().closed);
}

#[test]
fn sort_keys_have_names_and_cycle() {
    for k in SortKey::ALL {
        assert_eq!(SortKey::from_name(k.name()), Some(k));
    }
    assert_eq!(SortKey::from_name("bogus"), None);
    assert_eq!(SortKey::Verdict.next(), SortKey::Workload);
    assert_eq!(SortKey::Workload.next(), SortKey::Advice);
    assert_eq!(SortKey::Advice.next(), SortKey::Netns);
    assert_eq!(SortKey::Netns.next(), SortKey::Process);
    assert_eq!(SortKey::Rate.next(), SortKey::Srtt);
}

#[test]
fn sorts_by_rate_then_cycles_and_reverses() {
    let mut a = app();
    // Rate, largest first; the closed flow's rate is its life's average.
    assert_eq!(cookies(&a), [2, 1, 4, 3]);
    key(&mut a, KeyCode::Char('s'));
    assert_eq!((a.sort().key, a.sort().reversed), (SortKey::Srtt, false));
    assert_eq!(cookies(&a), [1, 4, 2, 3]);
    key(&mut a, KeyCode::Char('r'));
    assert_eq!((a.sort().key, a.sort().reversed), (SortKey::Srtt, true));
    assert_eq!(cookies(&a), [3, 2, 1, 4]);
    // A new column starts in its natural order again.
    key(&mut a, KeyCode::Char('s'));
    assert_eq!((a.sort().key, a.sort().reversed), (SortKey::MinRtt, false));
    for _ in 0..SortKey::ALL.len() - 1 {
        key(&mut a, KeyCode::Char('s'));
    }
    assert_eq!(a.sort().key, SortKey::Srtt);
    let mut a = App::new(Options {
        sort: SortKey::Process,
        ..Options::default()
    });
    a.update(snapshot());
    // Names A to Z; ties by cookie.
    assert_eq!(cookies(&a), [2, 1, 4, 3]);
    key(&mut a, KeyCode::Char('r'));
    assert_eq!(cookies(&a), [3, 1, 4, 2]);
}

#[test]
fn filter_is_typed_then_applied_or_cancelled() {
    let mut a = app();
    key(&mut a, KeyCode::Char('/'));
    assert_eq!(a.mode(), &Mode::Filter(String::new()));
    // Commands are text while filtering.
    typed(&mut a, "IPERF3 qx");
    key(&mut a, KeyCode::Backspace);
    key(&mut a, KeyCode::Backspace);
    assert!(!a.should_quit());
    assert_eq!(a.mode(), &Mode::Filter("IPERF3 ".to_string()));
    assert_eq!(a.len(), 4, "not applied before Enter");
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.filter(), "IPERF3");
    assert_eq!(cookies(&a), [1, 4]);
    // Esc drops an edit and keeps the applied filter.
    key(&mut a, KeyCode::Char('/'));
    typed(&mut a, "x");
    key(&mut a, KeyCode::Esc);
    assert_eq!((a.mode(), a.filter()), (&Mode::Normal, "IPERF3"));
    // Every word must match: process and port.
    let set = |a: &mut App, text: &str| {
        key(a, KeyCode::Char('/'));
        handle(a, KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        typed(a, text);
        key(a, KeyCode::Enter);
        cookies(a)
    };
    assert_eq!(set(&mut a, "iperf3 :40004"), [4]);
    assert_eq!(set(&mut a, "path"), [2]);
    assert_eq!(set(&mut a, "2001:db8::2"), [2]);
    assert_eq!(set(&mut a, "192.168.1.10:22"), [3]);
    assert_eq!(set(&mut a, "777"), [2]);
    assert_eq!(set(&mut a, "nothing-matches"), Vec::<u64>::new());
    assert!(a.selected().is_none());
    assert_eq!(set(&mut a, ""), [2, 1, 4, 3]);
}

#[test]
fn filter_expressions_select_and_their_mistakes_are_shown() {
    let mut a = app();
    let set = |a: &mut App, text: &str| {
        key(a, KeyCode::Char('/'));
        handle(a, KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        typed(a, text);
        key(a, KeyCode::Enter);
        cookies(a)
    };
    assert_eq!(set(&mut a, "dport = :443"), [2]);
    assert_eq!(set(&mut a, "dst 10.0.0.0/8 and comm iperf3"), [1, 4]);
    // Flow 3 is an ssh server: local port 22.
    assert_eq!(set(&mut a, "dst 2001:db8::/32 or sport :22"), [2, 3]);
    assert_eq!(set(&mut a, "verdict application"), [3]);
    assert_eq!(set(&mut a, "not verdict receive_window"), [2, 3]);
    // A mistake keeps the filter in force and the text in the editor,
    // with where it went wrong.
    key(&mut a, KeyCode::Char('/'));
    handle(
        &mut a,
        KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL),
    );
    typed(&mut a, "dport = :nosuch");
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.mode(), &Mode::Filter("dport = :nosuch".to_string()));
    assert!(
        a.filter_error()
            .is_some_and(|e| e.starts_with("at column 9:")),
        "{:?}",
        a.filter_error()
    );
    assert_eq!(cookies(&a), [2, 3]);
    key(&mut a, KeyCode::Esc);
    assert_eq!((a.mode(), a.filter_error()), (&Mode::Normal, None));
    assert_eq!(a.filter(), "not verdict receive_window");
}

#[test]
fn selection_stays_in_bounds_and_follows_its_flow() {
    let mut a = app();
    assert_eq!(a.cursor(), 0);
    key(&mut a, KeyCode::Up);
    key(&mut a, KeyCode::Char('k'));
    assert_eq!(a.cursor(), 0);
    for _ in 0..10 {
        key(&mut a, KeyCode::Char('j'));
    }
    assert_eq!(a.cursor(), 3);
    key(&mut a, KeyCode::Char('g'));
    assert_eq!(a.cursor(), 0);
    key(&mut a, KeyCode::Char('G'));
    assert_eq!(a.selected().unwrap().cookie(), 3);
    key(&mut a, KeyCode::PageUp);
    assert_eq!(a.cursor(), 0);
    key(&mut a, KeyCode::Down);
    assert_eq!(a.selected().unwrap().cookie(), 1);
    // Re-sorting keeps flow 1 selected, wherever it lands.
    key(&mut a, KeyCode::Char('s'));
    assert_eq!(a.cursor(), 0);
    assert_eq!(a.selected().unwrap().cookie(), 1);
    // Filtering it out moves the cursor within what is left.
    key(&mut a, KeyCode::Char('/'));
    typed(&mut a, "sshd");
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.selected().unwrap().cookie(), 3);
}

#[test]
fn pause_freezes_the_display_and_resume_shows_the_latest() {
    let mut a = app();
    key(&mut a, KeyCode::Char('p'));
    assert!(a.paused());
    a.update(Snapshot::default());
    assert_eq!(a.len(), 4);
    key(&mut a, KeyCode::Char('p'));
    assert!(!a.paused());
    assert_eq!(a.len(), 0);
}

#[test]
fn detail_and_help_open_and_close() {
    let mut a = app();
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.detail().unwrap().unwrap().cookie(), 1);
    // The pane follows the selection.
    key(&mut a, KeyCode::Char('j'));
    assert_eq!(a.detail().unwrap().unwrap().cookie(), 4);
    key(&mut a, KeyCode::Char('?'));
    assert!(a.help());
    // Only ?, Esc and q act under help.
    key(&mut a, KeyCode::Char('j'));
    key(&mut a, KeyCode::Char('p'));
    assert_eq!((a.cursor(), a.paused()), (2, false));
    key(&mut a, KeyCode::Esc);
    assert!(!a.help());
    assert!(a.detail().is_some());
    key(&mut a, KeyCode::Esc);
    assert!(a.detail().is_none());
    // A flow that is no longer tracked leaves the pane saying so.
    key(&mut a, KeyCode::Enter);
    a.update(Snapshot::default());
    assert_eq!(a.detail().unwrap().unwrap_err(), 4);
    key(&mut a, KeyCode::Char('?'));
    key(&mut a, KeyCode::Char('?'));
    assert!(!a.help());
}

#[test]
fn q_and_ctrl_c_quit() {
    let mut a = app();
    key(&mut a, KeyCode::Char('x'));
    assert!(!a.should_quit());
    key(&mut a, KeyCode::Char('q'));
    assert!(a.should_quit());
    let mut a = app();
    key(&mut a, KeyCode::Char('/'));
    handle(
        &mut a,
        KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
    );
    assert!(a.should_quit());
}

#[test]
fn slash_takes_rate_and_port_and_shows_a_mistake_instead_of_searching() {
    let mut a = app();
    let set = |a: &mut App, text: &str| {
        key(a, KeyCode::Char('/'));
        handle(a, KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL));
        typed(a, text);
        key(a, KeyCode::Enter);
        cookies(a)
    };
    // RATE shows curl (2) at 10.0 Mbit/s, both iperf3 flows (1, 4) at
    // 6.1 Mbit/s, sshd (3) idle: the filter reads the same figure.
    let rates: Vec<(u64, f64)> = a.rows().map(|r| (r.cookie(), r.rate_bps())).collect();
    assert_eq!(set(&mut a, "rate > 8M"), [2]);
    assert_eq!(set(&mut a, "rate >= 6.1 Mbit/s and rate < 8M"), [1, 4]);
    assert_eq!(set(&mut a, "rate = 0"), [3]);
    assert_eq!(set(&mut a, "rate>500k"), [2, 1, 4]);
    let fast: Vec<u64> = rates
        .iter()
        .filter(|(_, r)| *r > 6e6)
        .map(|(c, _)| *c)
        .collect();
    assert_eq!(set(&mut a, "rate > 6M"), fast);
    assert_eq!(a.filter_kind(), Some("expression"));
    // sshd serves port 22: either end.
    assert_eq!(set(&mut a, "port 22"), [3]);
    assert_eq!(set(&mut a, "port = :ssh"), [3]);
    assert_eq!(set(&mut a, "port != 22"), [2, 1, 4]);
    // Looks like an expression, does not parse: the mistake is shown and
    // the filter in force stays, rather than a search for the words.
    for (text, column) in [
        ("rate > 10MB/s", 8),
        ("iperf3 > 10M", 1),
        ("port = :8099x", 8),
    ] {
        key(&mut a, KeyCode::Char('/'));
        handle(
            &mut a,
            KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL),
        );
        typed(&mut a, text);
        key(&mut a, KeyCode::Enter);
        assert_eq!(a.mode(), &Mode::Filter(text.to_string()));
        let e = a.filter_error().unwrap_or_default();
        assert!(
            e.starts_with(&format!("at column {column}:")),
            "{text}: {e}"
        );
        assert_eq!(cookies(&a), [2, 1, 4], "{text}");
        key(&mut a, KeyCode::Esc);
    }
    // Plain words still search.
    assert_eq!(set(&mut a, "curl"), [2]);
    assert_eq!(a.filter_kind(), Some("words"));
    assert_eq!(set(&mut a, ""), [2, 1, 4, 3]);
    assert_eq!(a.filter_kind(), None);
}

/// `netns = NAME` naming no namespace applies, as in `flows`, and the
/// header warns of it, as `flows` does on stderr, until one is so named.
#[test]
fn a_filter_on_a_namespace_name_no_namespace_has_warns_in_the_header() {
    let dir = std::env::temp_dir().join(format!("observer-top-netns-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut a = App::new(Options::default()).with_netns_dirs(vec![dir.clone()]);
    a.update(snapshot());
    key(&mut a, KeyCode::Char('/'));
    typed(&mut a, "netns = nosuch");
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.mode(), &Mode::Normal);
    let warning = "no network namespace is named \"nosuch\" (ip netns list): the filter's \
                   'netns = nosuch' selects no flow until one is";
    assert_eq!(a.filter_warning(), Some(warning));
    let text = lines(&render(&mut a, 200, 12)).join("\n");
    assert!(
        text.contains("warning: no network namespace is named \"nosuch\""),
        "{text}"
    );
    // Named since: the next poll drops the warning.
    std::fs::write(dir.join("nosuch"), b"").unwrap();
    a.update(snapshot());
    assert_eq!(a.filter_warning(), None);
    // A name that exists warns of nothing.
    key(&mut a, KeyCode::Char('/'));
    handle(
        &mut a,
        KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL),
    );
    typed(&mut a, "netns = nosuch or port 22");
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.filter_warning(), None);
    let _ = std::fs::remove_dir_all(&dir);
}
