//! Rendering: golden buffers at 80x24 and 160x30, styles, overlays.
#![allow(clippy::unwrap_used, reason = "tests: a failure should panic")]

use super::*;

#[test]
fn table_at_80x24_keeps_the_essential_columns() {
    let mut a = app();
    let b = render(&mut a, 80, 24);
    #[rustfmt::skip]
    assert_lines(&b, &[
        "flows 3 open, 1 closed   send 16.1 Mbit/s   recv 0 bit/s   every 1s",
        "verdicts receive_window 1  application 1  path 1",
        "ringbuf drops 2  lru evictions 1  sort rate ▼",
        "PROCESS      REMOTE                     RATE     SRTT RWND% VERDICT",
        "curl/777     [2001:db8::2]:443    10.0Mbit/s   60.0ms    0% path",
        "iperf3/4242  10.0.0.2:5201         6.1Mbit/s  105.0ms   56% receive_window",
        "iperf3/4242  10.0.0.2:5201         6.1Mbit/s  105.0ms   56% receive_window",
        "sshd/99      192.168.1.20:60000       0bit/s   30.0ms     - application",
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
fn table_at_160x30_shows_every_column() {
    let mut a = app();
    let b = render(&mut a, 160, 30);
    #[rustfmt::skip]
    assert_lines(&b, &[
        "flows 3 open, 1 closed   send 16.1 Mbit/s   recv 0 bit/s   every 1s",
        "verdicts receive_window 1  application 1  path 1",
        "ringbuf drops 2  lru evictions 1  sort rate ▼",
        "PROCESS      LOCAL                     REMOTE                         RATE     SRTT   MINRTT         CWND  SNDWND  INFLT   RETR RWND% CWND% VERDICT",
        "curl/777     [2001:db8::1]:51000       [2001:db8::2]:443        10.0Mbit/s   60.0ms   20.0ms    50/72.4KB  3.00MB     50     10    0%   80% path",
        "iperf3/4242  10.0.0.1:40001            10.0.0.2:5201             6.1Mbit/s  105.0ms  104.0ms  500/724.0KB  80.5KB     55      0   56%    0% receive_window",
        "iperf3/4242  10.0.0.1:40004            10.0.0.2:5201             6.1Mbit/s  105.0ms  104.0ms  500/724.0KB  80.5KB     55      0   56%    0% receive_window",
        "sshd/99      192.168.1.10:22           192.168.1.20:60000           0bit/s   30.0ms   29.0ms    10/14.5KB  64.0KB      0      0     -     - application",
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
        "flows 3 open, 1 closed   send 16.1 Mbit/s   recv 0 bit/s   every 1s",
        "verdicts receive_window 1  application 1  path 1",
        "ringbuf drops 2  lru evictions 1  sort rate ▼",
        "┌ iperf3/4242  10.0.0.1:40001 -> 10.0.0.2:5201 ────────────────────────────────┐",
        "│receive_window  confidence 0.80, sender side, over the last 1.0 s             │",
        "│receive window: snd_wnd 80.5 KB / srtt 105.0 ms = 6.1 Mbit/s ceiling,         │",
        "│delivering 6.1 Mbit/s (rwnd-limited 56% of busy); 12.3 Mbit/s would need 161.0│",
        "│KB at 105.0 ms; 80.5 KB allows 12.9 Mbit/s at 50 ms, 2.6 Mbit/s at 250 ms     │",
        "│limited  of busy: rwnd 56%, sndbuf 0%, cwnd 0%, other 44%; busy 100% of wall  │",
        "│rate     sent 6.1 Mbit/s; ceilings rwnd 6.1 Mbit/s (100%), cwnd 55.2 Mbit/s   │",
        "│(11%)                                                                         │",
        "│windows  cwnd 500 x 1448 B, snd_wnd 80480 B, rcv_wnd 0 B, in flight 55        │",
        "│rtt      srtt 105.0 ms, min 104.0 ms, queue 1.0 ms; retrans 0 (0 total)       │",
        "│what-if  80.5 KB / 105.0 ms = 6.1 Mbit/s; 12.3 Mbit/s needs 161.0 KB; the     │",
        "│window allows 64.4 Mbit/s at 10 ms, 12.9 Mbit/s at 50 ms, 6.4 Mbit/s at 100   │",
        "│ms, 2.6 Mbit/s at 250 ms                                                      │",
        "│ss       rto 308.0ms pacing 12.3Mbit/s reord 3 unacked 55 sacked 0 lost 0     │",
        "│history: last 4 s (4 polls), oldest left                                      │",
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
    for w in 66..=220 {
        let b = render(&mut a, w, 10);
        let header = &lines(&b)[3];
        assert!(header.starts_with("PROCESS"), "{w}: {header}");
        // WORKLOAD comes last, once every other column fits.
        if w >= 177 {
            assert!(
                header.ends_with("VERDICT              WORKLOAD"),
                "{w}: {header}"
            );
        } else {
            assert!(header.ends_with("VERDICT"), "{w}: {header}");
        }
        for title in ["REMOTE", "RATE"] {
            assert!(header.contains(title), "{w}: {header}");
        }
        if w >= 80 {
            assert!(header.contains("SRTT") && header.contains("RWND%"), "{w}");
        }
        if w >= 152 {
            assert!(header.contains("LOCAL") && header.contains("INFLT"), "{w}");
        }
    }
}

#[test]
fn header_shows_sort_filter_and_pause() {
    let mut a = App::new(Options {
        interval: Duration::from_millis(500),
        filter: "iperf3".to_string(),
        sort: SortKey::Srtt,
    });
    a.update(snapshot());
    key(&mut a, KeyCode::Char('r'));
    key(&mut a, KeyCode::Char('p'));
    let l = lines(&render(&mut a, 80, 24));
    assert_eq!(
        l[0],
        "flows 3 open, 1 closed, 2 shown   send 16.1 Mbit/s   recv 0 bit/s   every 500ms"
    );
    assert_eq!(
        l[2],
        "ringbuf drops 2  lru evictions 1  sort srtt ▲  filter iperf3 (words)  PAUSED"
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
    assert!(l[2].ends_with("filter rate > 10M (expression)"), "{}", l[2]);
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
    assert_eq!(
        l[4],
        "cur┌ help (Esc or ? closes) ────────────────────────────────────────────────┐"
    );
    assert_eq!(
        l[5],
        "ipe│ q, Ctrl-C    quit                                                      │"
    );
    assert!(l.iter().any(|l| l.contains("│ dim rows     closed flows")));
    assert!(
        l.iter()
            .any(|l| l.contains("│ ↓            a download: rcv_rtt"))
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
        "a-very-…/777 …dd:eeee:ffff]:443   10.0Mbit/s   60.0ms    0% path"
    );
}

#[test]
fn downloads_are_marked_and_receiver_verdicts_fit_at_80_columns() {
    let mut rows = snapshot().rows;
    let r = rows.iter_mut().find(|r| r.cookie() == 2).unwrap();
    r.current.side = crate::attribution::Side::Receiver;
    r.current.verdict = Verdict::ReceiverApplication;
    // The receiving end's figures, not those of what this host sends.
    r.current.evidence.receiver_rtt_us = 41_000;
    r.current.evidence.receive.window_fill = 0.45;
    let mut a = App::new(Options::default());
    a.update(Snapshot::from_rows(rows, &COUNTERS));
    let b = render(&mut a, 80, 24);
    let l = lines(&b);
    assert_eq!(
        l[4],
        "curl/777     [2001:db8::2]:443   ↓10.0Mbit/s   41.0ms   45% receiver_application"
    );
    assert_eq!(b[(60, 4)].fg, verdict_color(Verdict::ReceiverApplication));
}

#[test]
fn a_downloads_detail_pane_gives_the_receiving_ends_figures() {
    let mut rows = snapshot().rows;
    let r = rows.iter_mut().find(|r| r.cookie() == 2).unwrap();
    r.current.side = crate::attribution::Side::Receiver;
    r.current.verdict = Verdict::ReceiverApplication;
    let rx = &mut r.current.evidence.receive;
    rx.window_fill = 0.45;
    rx.in_flight_bytes = 75_000.0;
    rx.rcv_wnd_mean = 166_000.0;
    rx.unread_mean = 91_000.0;
    rx.rtt_mean_us = 41_000.0;
    rx.base_rtt_us = 40_000;
    rx.queue_delay_us = 1_000;
    let mut a = App::new(Options::default());
    a.update(Snapshot::from_rows(rows, &COUNTERS));
    key(&mut a, KeyCode::Enter);
    let l = lines(&render(&mut a, 80, 24));
    let has = |s: &str| l.iter().any(|l| l.starts_with(s));
    assert!(
        has("│receive  window fill 45% (in flight 75.0 KB of rcv_wnd 166.0 KB), unread 91.0"),
        "{l:#?}"
    );
    assert!(
        has("│rtt      rcv_rtt 41.0 ms, base 40.0 ms, queue 1.0 ms; out-of-order 0 (0 total)"),
        "{l:#?}"
    );
    for name in ["│rcv_wnd ", "│unread ", "│rcv_rtt "] {
        assert!(has(name), "{name}: {l:#?}");
    }
    // Nothing of the little this host sends: no cwnd, srtt or busy time.
    for name in ["│limited ", "│windows ", "│cwnd ", "│snd_wnd ", "│srtt "] {
        assert!(!has(name), "{name}: {l:#?}");
    }
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
