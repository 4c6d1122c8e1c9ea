//! Rendering: golden buffers at 80x24 and 160x30, styles, overlays.
#![allow(clippy::unwrap_used, reason = "tests: a failure should panic")]

use super::*;

#[test]
fn table_at_80x24_keeps_the_essential_columns() {
    let mut a = app();
    let b = render(&mut a, 80, 24);
    #[rustfmt::skip]
    assert_lines(&b, &[
        "flows 3 open, 1 just closed   send 16.1 Mbit/s   recv 0 bit/s   every 1s",
        "verdicts receive_window 1  application 1  path 1",
        "sort rate ▼  ringbuf drops 2  lru evictions 1",
        "PROCESS      REMOTE                     RATE VERDICT              ADVICE",
        "curl/777     [2001:db8::2]:443    10.0Mbit/s path                 more capacity",
        "iperf3/4242  10.0.0.2:5201         6.1Mbit/s receive_window       peer's window…",
        "iperf3/4242  10.0.0.2:5201            closed receive_window       peer's window…",
        "sshd/99      192.168.1.20:60000       0bit/s application          faster app",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "q quit  j/k select  s sort  / filter  p pause  v peers  Enter detail  ? help",
    ]);
}

#[test]
fn table_at_160x30_gives_advice_its_room() {
    let mut a = app();
    let b = render(&mut a, 160, 30);
    #[rustfmt::skip]
    assert_lines(&b, &[
        "flows 3 open, 1 just closed   send 16.1 Mbit/s   recv 0 bit/s   every 1s",
        "verdicts receive_window 1  application 1  path 1",
        "sort rate ▼  ringbuf drops 2  lru evictions 1",
        "PROCESS      LOCAL                 REMOTE                     RATE     SRTT SND_WND   RETR   RWND% CWND% VERDICT              ADVICE",
        "curl/777     [2001:db8::1]:51000   [2001:db8::2]:443    10.0Mbit/s   60.0ms  3.00MB     10      0%   80% path                 more capacity",
        "iperf3/4242  10.0.0.1:40001        10.0.0.2:5201         6.1Mbit/s  105.0ms  80.5KB      0     56%    0% receive_window       peer's window 161.0KB → 12.3Mbit/s",
        "iperf3/4242  10.0.0.1:40004        10.0.0.2:5201            closed  105.0ms  80.5KB      0     56%    0% receive_window       peer's window 161.0KB → 12.3Mbit/s",
        "sshd/99      192.168.1.10:22       192.168.1.20:60000       0bit/s   30.0ms  64.0KB      0       -     - application          faster app",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "",
        "q quit  j/k select  s sort  / filter  p pause  v peers  Enter detail  ? help",
    ]);
}

#[test]
fn detail_pane_at_80x24_shows_evidence_what_if_and_history() {
    let mut a = app();
    key(&mut a, KeyCode::Down);
    key(&mut a, KeyCode::Enter);
    let b = render(&mut a, 80, 24);
    #[rustfmt::skip]
    assert_lines(&b, &[
        "flows 3 open, 1 just closed   send 16.1 Mbit/s   recv 0 bit/s   every 1s",
        "verdicts receive_window 1  application 1  path 1",
        "sort rate ▼  ringbuf drops 2  lru evictions 1",
        "┌ iperf3/4242  10.0.0.1:40001 -> 10.0.0.2:5201 ────────────────────────────────┐",
        "│receive_window  confidence 0.80, sender side, over the last 1.0 s             │",
        "│advice   peer's window 161.0KB → 12.3Mbit/s                                   │",
        "│receive window: snd_wnd 80.5 KB / srtt 105.0 ms = 6.1 Mbit/s ceiling,         │",
        "│delivering 6.1 Mbit/s (rwnd-limited 56% of busy); 12.3 Mbit/s would need 161.0│",
        "│KB at 105.0 ms; 80.5 KB allows 12.9 Mbit/s at 50 ms, 2.6 Mbit/s at 250 ms     │",
        "│limited  of busy: rwnd 56%, sndbuf 0%, cwnd 0%, other 44%; busy 100% of wall  │",
        "│rate     sent 6.1 Mbit/s; ceilings rwnd 6.1 Mbit/s (100%), cwnd 55.2 Mbit/s   │",
        "│(11%)                                                                         │",
        "│windows  cwnd 500 seg x 1448 B = 724.0 KB, snd_wnd 80.5 KB, in flight 55 seg  │",
        "│rtt      srtt 105.0 ms, min 104.0 ms, queue 1.0 ms; retrans 0 (0 total)       │",
        "│what-if  80.5 KB / 105.0 ms = 6.1 Mbit/s; 12.3 Mbit/s needs 161.0 KB; the     │",
        "│window allows 64.4 Mbit/s at 10 ms, 12.9 Mbit/s at 50 ms, 6.4 Mbit/s at 100   │",
        "│ms, 2.6 Mbit/s at 250 ms                                                      │",
        "│history: last 4 s, one point a poll (1s), oldest left                         │",
        "│rate     ████                                          6.1Mbit/s max 6.1Mbit/s│",
        "│cwnd     ████                                          500 seg max 500 seg    │",
        "│snd_wnd  ████                                          80.5KB max 80.5KB      │",
        "│srtt     ████                                          105.0ms max 105.0ms    │",
        "└──────────────────────────────────────────────────────────────────────────────┘",
        "Esc back  j/k next flow  p pause  ? help  q quit",
    ]);
}

#[test]
fn rows_are_styled_by_selection_closure_and_verdict() {
    let mut a = app();
    let b = render(&mut a, 80, 24);
    // Row 4 (curl) is selected, row 6 (flow 4) has closed.
    assert!(b[(0, 4)].modifier.contains(Modifier::REVERSED));
    assert!(!b[(0, 5)].modifier.contains(Modifier::REVERSED));
    assert!(b[(0, 6)].modifier.contains(Modifier::DIM));
    assert!(!b[(0, 5)].modifier.contains(Modifier::DIM));
    // VERDICT starts at column 60.
    assert_eq!(b[(60, 4)].fg, verdict_color(Verdict::Path));
    assert_eq!(b[(60, 5)].fg, verdict_color(Verdict::ReceiveWindow));
    assert_eq!(b[(60, 7)].fg, verdict_color(Verdict::Application));
    // The sort column's title is underlined.
    assert!(b[(43, 3)].modifier.contains(Modifier::UNDERLINED));
    assert!(!b[(0, 3)].modifier.contains(Modifier::UNDERLINED));
}

#[test]
fn narrow_and_wide_terminals_fit_their_columns() {
    let mut a = app();
    for w in 66..=240 {
        let b = render(&mut a, w, 10);
        let header = &lines(&b)[3];
        assert!(header.starts_with("PROCESS"), "{w}: {header}");
        // ADVICE comes last, at every width; WORKLOAD before it once every
        // other column fits.
        assert!(header.ends_with("ADVICE"), "{w}: {header}");
        assert_eq!(header.contains("WORKLOAD"), w >= 214, "{w}: {header}");
        for title in ["REMOTE", "RATE", "VERDICT"] {
            assert!(header.contains(title), "{w}: {header}");
        }
        if w >= 97 {
            assert!(header.contains("SRTT") && header.contains("RWND%"), "{w}");
        }
        if w >= 119 {
            assert!(header.contains("LOCAL"), "{w}: {header}");
        }
        // The widest advice, whole, before CWND, MIN_RTT and INFLT.
        if w >= 152 {
            assert!(
                lines(&b)[5].ends_with("peer's window 161.0KB → 12.3Mbit/s"),
                "{w}: {:?}",
                lines(&b)[5]
            );
        }
        if w >= 190 {
            assert!(
                header.contains("MIN_RTT") && header.contains("INFLT"),
                "{w}"
            );
        }
    }
}

#[test]
fn header_shows_sort_filter_and_pause() {
    let mut a = App::new(Options {
        interval: Duration::from_millis(500),
        filter: "iperf3".to_string(),
        sort: SortKey::Srtt,
        ..Options::default()
    });
    a.update(snapshot());
    key(&mut a, KeyCode::Char('r'));
    key(&mut a, KeyCode::Char('p'));
    let l = lines(&render(&mut a, 80, 24));
    // With a filter the counts add the rows shown and the rates say they
    // are the host's (at 80 columns the interval goes past the edge).
    assert!(
        l[0].starts_with(
            "flows 3 open, 1 just closed, 2 shown   host send 16.1 Mbit/s   host recv 0 bit/s"
        ),
        "{}",
        l[0]
    );
    assert_eq!(
        l[2],
        "sort srtt ▲  filter iperf3 (words)  PAUSED  ringbuf drops 2  lru evictions 1"
    );
    assert_eq!(l.iter().filter(|l| l.starts_with("iperf3/4242")).count(), 2);
}

#[test]
fn empty_views_say_why() {
    let mut a = App::new(Options::default());
    let l = lines(&render(&mut a, 80, 24));
    assert_eq!(l[1], "verdicts -");
    assert_eq!(l[4].trim(), "waiting for flows...");
    let mut a = app();
    key(&mut a, KeyCode::Char('/'));
    typed(&mut a, "zzz");
    key(&mut a, KeyCode::Enter);
    let l = lines(&render(&mut a, 80, 24));
    assert_eq!(l[4].trim(), "no flow matches \"zzz\" (/ to change it)");
    // Flows that came and went are not awaited: the closed list has them.
    let mut a = App::new(Options::default());
    a.record_closed(
        live_and_events()
            .1
            .iter()
            .filter_map(|e| crate::sink::tui::closed::ClosedFlow::from_event(e, 104 * SEC)),
        104 * SEC,
    );
    let l = lines(&render(&mut a, 80, 24));
    assert_eq!(l[4].trim(), "no open flow; c lists the 1 recently closed");
    key(&mut a, KeyCode::Char('/'));
    typed(&mut a, "iperf3");
    key(&mut a, KeyCode::Enter);
    let l = lines(&render(&mut a, 80, 24));
    assert_eq!(
        l[4].trim(),
        "no open flow the filter shows; c lists the 1 recently closed"
    );
}

#[test]
fn filter_input_shows_in_the_footer_with_the_cursor() {
    let mut a = app();
    key(&mut a, KeyCode::Char('/'));
    typed(&mut a, ":5201");
    let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
    t.draw(|f| draw(f, &mut a)).unwrap();
    let l = lines(t.backend().buffer());
    assert_eq!(l[23], "filter: :5201   words · Enter apply, Esc cancel");
    t.backend_mut().assert_cursor_position((13, 23));
}

#[test]
fn the_prompt_says_how_the_text_reads_as_it_is_typed() {
    let mut a = app();
    key(&mut a, KeyCode::Char('/'));
    let footer = |a: &mut App| lines(&render(a, 100, 24))[23].clone();
    typed(&mut a, "rate >");
    let live = footer(&mut a);
    assert!(
        live.starts_with("filter: rate >   expression: at column 7: expected a rate in bit/s"),
        "{live}"
    );
    typed(&mut a, " 10M");
    assert_eq!(
        footer(&mut a),
        "filter: rate > 10M   expression · Enter apply, Esc cancel"
    );
    key(&mut a, KeyCode::Enter);
    let l = lines(&render(&mut a, 100, 24));
    assert!(
        l[2].starts_with("sort rate ▼  filter rate > 10M (expression)  "),
        "{}",
        l[2]
    );
    // A mistake after Enter is shown in the error style.
    key(&mut a, KeyCode::Char('/'));
    typed(&mut a, "B/s");
    key(&mut a, KeyCode::Enter);
    let b = render(&mut a, 100, 24);
    let l = lines(&b);
    assert!(
        l[23].starts_with("filter: rate > 10MB/s   at column 8: expected a rate"),
        "{}",
        l[23]
    );
    let x = l[23].find("at column").unwrap_or_default() as u16;
    assert_eq!(b[(x, 23)].style().fg, crate::sink::tui::theme::error().fg);
}

#[test]
fn help_overlays_the_table() {
    let mut a = app();
    key(&mut a, KeyCode::Char('?'));
    let l = lines(&render(&mut a, 80, 24));
    assert!(
        l[4].starts_with(
            "cur┌ help (Esc or ? closes) ────────────────────────────────────────────────┐"
        ),
        "{}",
        l[4]
    );
    assert!(
        l[5].starts_with(
            "ipe│ q, Ctrl-C    quit, then print a summary of the flows seen, by peer     │"
        ),
        "{}",
        l[5]
    );
    assert!(l.iter().any(|l| l.contains("│ dim rows     closed flows")));
    assert!(
        l.iter()
            .any(|l| l.contains("│ RATE, ↓, ~   verdict window; ↓ download; ~ 10 s mean"))
    );
    // The table still shows around it.
    assert!(l[3].starts_with("PROCESS"), "{}", l[3]);
}

#[test]
fn detail_of_a_departed_flow_says_so() {
    let mut a = app();
    key(&mut a, KeyCode::Enter);
    a.update(Snapshot::default());
    let l = lines(&render(&mut a, 80, 24));
    assert_eq!(
        l[3],
        "┌ flow 2 ──────────────────────────────────────────────────────────────────────┐"
    );
    assert!(l[4].contains("this flow is no longer tracked"));
}

#[test]
fn sparklines_follow_the_history() {
    let mut a = app();
    key(&mut a, KeyCode::Enter);
    let l = lines(&render(&mut a, 160, 30));
    let cwnd = l.iter().find(|l| l.starts_with("│cwnd ")).unwrap();
    // cwnd 20, 30, 40, 50 segments over the last four polls.
    assert!(cwnd.contains("▃▄▆█"), "{cwnd}");
    assert!(cwnd.contains("50 seg max 50 seg"), "{cwnd}");
    assert!(l[4].starts_with("│path  confidence"), "{}", l[4]);
    assert!(l.iter().any(|l| l.contains("what-if  - (no window binds)")));
    assert!(
        l.iter().any(|l| l.contains("retrans 2 (10 total)")),
        "{l:#?}"
    );
}

#[test]
fn the_table_scrolls_to_keep_the_selection_visible() {
    let base = snapshot().rows[0].clone();
    let rows = (0..40)
        .map(|i| {
            let mut r = base.clone();
            r.flow.cookie = 1000 + i;
            r
        })
        .collect();
    let mut a = App::new(Options::default());
    a.update(Snapshot::from_rows(rows, &COUNTERS));
    let b = render(&mut a, 80, 24);
    // 19 table rows under the header.
    assert_eq!(a.page, 19);
    assert_eq!(a.offset, 0);
    key(&mut a, KeyCode::Char('G'));
    let b2 = render(&mut a, 80, 24);
    assert_eq!(a.offset, 40 - 19);
    assert!(b2[(0, 22)].modifier.contains(Modifier::REVERSED));
    key(&mut a, KeyCode::PageUp);
    assert_eq!(a.cursor(), 39 - 19);
    render(&mut a, 80, 24);
    assert_eq!(a.offset, 20);
    key(&mut a, KeyCode::Char('g'));
    render(&mut a, 80, 24);
    assert_eq!(a.offset, 0);
    assert!(b[(0, 4)].modifier.contains(Modifier::REVERSED));
}

#[test]
fn long_addresses_and_names_keep_their_ends() {
    let mut rows = snapshot().rows;
    let r = rows.iter_mut().find(|r| r.cookie() == 2).unwrap();
    r.flow.remote = "[2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff]:443"
        .parse()
        .unwrap();
    r.flow.comm = "a-very-long-nam".to_string();
    let mut a = App::new(Options::default());
    a.update(Snapshot::from_rows(rows, &COUNTERS));
    let l = lines(&render(&mut a, 80, 24));
    assert_eq!(
        l[4],
        "a-very-…/777 …dd:eeee:ffff]:443   10.0Mbit/s path                 more capacity"
    );
}

#[test]
fn sparkline_labels_fit_the_widest_figures() {
    let mut rows = snapshot().rows;
    let r = rows.iter_mut().find(|r| r.cookie() == 2).unwrap();
    for p in &mut r.history {
        p.rate_bps = 24.77e9;
    }
    let mut a = App::new(Options::default());
    a.update(Snapshot::from_rows(rows, &COUNTERS));
    key(&mut a, KeyCode::Enter);
    let l = lines(&render(&mut a, 80, 24));
    let rate = l.iter().find(|l| l.starts_with("│rate     █")).unwrap();
    assert!(rate.ends_with(" 24.77Gbit/s max 24.77Gbit/s│"), "{rate}");
}

#[test]
fn a_netns_column_leads_where_a_flow_has_a_namespace_name() {
    let mut rows = snapshot().rows;
    for r in rows.iter_mut().filter(|r| r.flow.comm == "iperf3") {
        r.flow.netns_name = Some("obs-a".into());
    }
    let mut a = App::new(Options::default());
    a.update(Snapshot::from_rows(rows, &COUNTERS));
    let l = lines(&render(&mut a, 200, 12));
    assert!(
        l[3].starts_with("NETNS      PROCESS      LOCAL") && l[3].contains(" SND_WND "),
        "{}",
        l[3]
    );
    let named: Vec<&String> = l[4..8].iter().filter(|l| l.starts_with("obs-a ")).collect();
    assert_eq!(named.len(), 2, "{l:#?}");
    assert!(named.iter().all(|l| l.contains("iperf3/4242")), "{l:#?}");
    assert!(
        l[4..8].iter().any(|l| l.starts_with("-          curl/777")),
        "{l:#?}"
    );
    // Narrower, it gives way before the windows' columns.
    let l = lines(&render(&mut a, 160, 12));
    assert!(
        l[3].starts_with("PROCESS ") && l[3].contains(" SND_WND "),
        "{}",
        l[3]
    );
    // A name is a word to filter on.
    key(&mut a, KeyCode::Char('/'));
    typed(&mut a, "obs-a");
    key(&mut a, KeyCode::Enter);
    assert_eq!(a.len(), 2);
    // Without a name anywhere, no column.
    let l = lines(&render(&mut app(), 200, 12));
    assert!(l[3].starts_with("PROCESS "), "{}", l[3]);
}

#[test]
fn netns_takes_the_width_its_names_need_and_a_cut_keeps_the_end() {
    let long = "obs-bench-1234567890-0-left-a";
    let mut rows = snapshot().rows;
    let names = ["pe-9547-0-a", "pe-9547-0-b", long];
    for (r, name) in rows.iter_mut().filter(|r| !r.closed).zip(names) {
        r.flow.netns_name = Some(name.into());
    }
    let mut a = App::new(Options::default());
    a.update(Snapshot::from_rows(rows, &COUNTERS));
    // Wide enough for ADVICE's figures: 24 cells, the most NETNS takes,
    // come before LOCAL and REMOTE widen.
    let l = lines(&render(&mut a, 260, 12));
    assert!(
        l[3].starts_with(&format!("{:<25}PROCESS", "NETNS")),
        "{}",
        l[3]
    );
    for name in ["pe-9547-0-a ", "pe-9547-0-b "] {
        assert_eq!(
            l[4..8].iter().filter(|l| l.starts_with(name)).count(),
            1,
            "{l:#?}"
        );
    }
    // Cut, a name keeps its distinguishing end.
    let cut = format!("…{} ", &long[long.len() - 23..]);
    assert!(l[4..8].iter().any(|l| l.starts_with(&cut)), "{cut}: {l:#?}");
}

#[test]
fn spare_width_goes_to_netns_names_before_the_addresses() {
    use crate::sink::tui::{columns::fit_columns, sort::SortKey};
    let width = |cols: &[crate::sink::tui::columns::Fitted], key: SortKey| {
        cols.iter()
            .find(|f| crate::sink::tui::columns::COLUMNS[f.column].key == key)
            .map(|f| f.width)
    };
    // 200 columns, short advice: `pe-9547-0-a` whole (11), the rest to
    // the addresses.
    let cols = fit_columns(200, 14, 20, 11);
    assert_eq!(width(&cols, SortKey::Netns), Some(11));
    let (local, remote) = (width(&cols, SortKey::Local), width(&cols, SortKey::Remote));
    assert_eq!((local, remote), (Some(31), Some(27)));
    // A longer name, up to the cap.
    assert_eq!(
        width(&fit_columns(200, 14, 20, 40), SortKey::Netns),
        Some(24)
    );
    // No name: no column.
    assert_eq!(width(&fit_columns(200, 14, 20, 0), SortKey::Netns), None);
}

#[test]
fn the_root_cgroup_names_no_workload() {
    use crate::model::workload::{SharedWorkload, Workload};
    use crate::sink::tui::{columns::cell_text, sort::SortKey};
    let a = app();
    let mut r = a.rows().next().unwrap().clone();
    let of = |path: &str| SharedWorkload(Some(std::sync::Arc::new(Workload::from_path(path))));
    r.flow.workload = of("/");
    assert_eq!(cell_text(SortKey::Workload, &r, 20), "-");
    r.flow.workload = SharedWorkload::default();
    assert_eq!(cell_text(SortKey::Workload, &r, 20), "-");
    r.flow.workload = of("/system.slice/nginx.service");
    assert_eq!(cell_text(SortKey::Workload, &r, 20), "nginx.service");
}
