//! Uploads and downloads in their own sections, under their own titles;
//! a row and its detail pane give one figure under one name.

use super::*;
use crate::sink::tui::row::Row;

/// The snapshot's rows with curl's flow (cookie 2) a download its reader
/// holds: the window closed 88% of the time and 1% full.
fn with_download() -> Vec<Row> {
    let mut rows = snapshot().rows;
    let r = rows.iter_mut().find(|r| r.cookie() == 2).unwrap();
    r.current.side = crate::attribution::Side::Receiver;
    r.current.verdict = Verdict::ReceiverApplication;
    let ev = &mut r.current.evidence;
    ev.receiver_rtt_us = 41_000;
    // A download's rate is what it received.
    ev.recv_rate_bps = std::mem::take(&mut ev.rate_bps);
    let rx = &mut ev.receive;
    rx.window_fill = 0.01;
    rx.closed_share = 0.88;
    rx.in_flight_bytes = 1_660.0;
    rx.rcv_wnd_mean = 166_000.0;
    rx.unread_mean = 91_000.0;
    rx.rtt_mean_us = 41_000.0;
    rx.base_rtt_us = 40_000;
    rx.queue_delay_us = 1_000;
    rows
}

fn app_of(rows: Vec<Row>) -> App {
    let mut a = App::new(Options::default());
    a.update(Snapshot::from_rows(rows, &COUNTERS));
    a
}

#[test]
fn downloads_follow_uploads_under_their_own_titles() {
    let mut a = app_of(with_download());
    let b = render(&mut a, 160, 12);
    let l = lines(&b);
    #[rustfmt::skip]
    assert_eq!(l[3..9], [
        "PROCESS      LOCAL                 REMOTE                     RATE     SRTT SND_WND   RETR   RWND% CWND% VERDICT              ADVICE",
        "iperf3/4242  10.0.0.1:40001        10.0.0.2:5201         6.1Mbit/s  105.0ms  80.5KB      0     56%    0% receive_window       peer's window 161.0KB → 12.3Mbit/s",
        "iperf3/4242  10.0.0.1:40004        10.0.0.2:5201            closed  105.0ms  80.5KB      0     56%    0% receive_window       peer's window 161.0KB → 12.3Mbit/s",
        "sshd/99      192.168.1.10:22       192.168.1.20:60000       0bit/s   30.0ms  64.0KB      0       -     - application          faster app",
        "PROCESS      LOCAL                 REMOTE                     RATE  RCV_RTT RCV_WND    OOO CLOSED% FILL% VERDICT              ADVICE",
        "curl/777     [2001:db8::1]:51000   [2001:db8::2]:443   ↓10.0Mbit/s   41.0ms 166.0KB      0     88%     - receiver_application faster reader",
    ]);
    // The downloads' titles are titles: bold, not a selectable row.
    assert!(b[(0, 7)].modifier.contains(Modifier::BOLD));
    assert_eq!(a.len(), 4);
    let at = l[8].find("receiver_application").unwrap();
    let x = l[8][..at].chars().count() as u16;
    assert_eq!(b[(x, 8)].fg, verdict_color(Verdict::ReceiverApplication));
    // At 80 columns the download keeps its mark, verdict and advice.
    let l = lines(&render(&mut a, 80, 12));
    assert_eq!(
        l[8],
        "curl/777     [2001:db8::2]:443   ↓10.0Mbit/s receiver_application faster reader"
    );
}

#[test]
fn a_row_and_its_detail_pane_give_the_same_figures() {
    let mut a = app_of(with_download());
    key(&mut a, KeyCode::Char('G'));
    let row = lines(&render(&mut a, 160, 12))[8].clone();
    key(&mut a, KeyCode::Enter);
    let l = lines(&render(&mut a, 160, 30));
    let has = |s: &str| l.iter().any(|l| l.contains(s));
    // CLOSED% is the pane's "window closed", FILL% its "window fill",
    // RCV_WND its rcv_wnd, RCV_RTT its rcv_rtt, ADVICE its advice.
    for (cell, pane) in [
        ("88%", "window closed 88%"),
        // Shut 88% of the time: no fill to speak of, `-` in both.
        ("88%     - ", "window fill - (in flight"),
        ("166.0KB", "rcv_wnd 166.0 KB"),
        ("41.0ms", "rcv_rtt 41.0 ms"),
        ("faster reader", "│advice   faster reader"),
    ] {
        assert!(row.contains(cell), "{cell}: {row}");
        assert!(has(pane), "{pane}: {l:#?}");
    }
    assert!(has("unread 91.0 KB"), "{l:#?}");
}

#[test]
fn a_downloads_detail_pane_gives_the_receiving_ends_figures() {
    let mut a = app_of(with_download());
    key(&mut a, KeyCode::Char('G'));
    key(&mut a, KeyCode::Enter);
    let l = lines(&render(&mut a, 80, 30));
    let has = |s: &str| l.iter().any(|l| l.starts_with(s));
    assert!(
        has("│receive  window fill - (in flight 1.7 KB of rcv_wnd 166.0 KB), unread 91.0 "),
        "{l:#?}"
    );
    assert!(
        has("│rtt      rcv_rtt 41.0 ms, base 40.0 ms, queue 1.0 ms; out-of-order 0 (0 total)"),
        "{l:#?}"
    );
    for name in ["│advice ", "│rcv_wnd ", "│unread ", "│rcv_rtt "] {
        assert!(has(name), "{name}: {l:#?}");
    }
    // Nothing of the little this host sends: no cwnd, srtt or busy time.
    for name in ["│limited ", "│windows ", "│cwnd ", "│snd_wnd ", "│srtt "] {
        assert!(!has(name), "{name}: {l:#?}");
    }
}

#[test]
fn the_downloads_titles_head_the_table_once_scrolled_to_them() {
    let rows = with_download();
    let up = rows.iter().find(|r| r.cookie() == 3).unwrap().clone();
    let down = rows.iter().find(|r| r.cookie() == 2).unwrap().clone();
    // 20 uploads, then 20 downloads, in 19 lines under the header.
    let many = (0..40)
        .map(|i| {
            let mut r = if i < 20 { up.clone() } else { down.clone() };
            r.flow.cookie = 1000 + i;
            r
        })
        .collect();
    let mut a = app_of(many);
    let title = |l: &[String]| l[3].contains("RCV_RTT");
    let l = lines(&render(&mut a, 120, 24));
    assert!(!title(&l) && l[3].contains("SRTT"), "{}", l[3]);
    // The last upload, then the downloads' titles, then the first download.
    key(&mut a, KeyCode::PageDown);
    let l = lines(&render(&mut a, 120, 24));
    assert_eq!(a.cursor(), 19);
    assert!(l[22].starts_with("sshd/99"), "{l:#?}");
    key(&mut a, KeyCode::Down);
    let b = render(&mut a, 120, 24);
    let l = lines(&b);
    assert!(
        l[21].contains("RCV_RTT") && l[22].starts_with("curl/777"),
        "{l:#?}"
    );
    assert!(b[(0, 22)].modifier.contains(Modifier::REVERSED));
    // At the end, the downloads' titles head the table.
    key(&mut a, KeyCode::Char('G'));
    let b = render(&mut a, 120, 24);
    let l = lines(&b);
    assert!(title(&l), "{l:#?}");
    assert!(l[4..23].iter().all(|l| l.starts_with("curl/777")), "{l:#?}");
    assert!(b[(0, 22)].modifier.contains(Modifier::REVERSED));
    assert_eq!(a.offset, 21);
}

#[test]
fn a_downloads_sparklines_use_the_rows_receiver_rtt_and_no_history_says_so() {
    let mut rows = with_download();
    let r = rows.iter_mut().find(|r| r.cookie() == 2).unwrap();
    // No receiver estimate yet: the row's RCV_RTT is srtt, and so is the
    // sparkline's, not 0.0 ms.
    for p in &mut r.history {
        p.rcv_rtt_us = 0;
        p.srtt_us = 109_000;
    }
    let mut a = app_of(rows);
    key(&mut a, KeyCode::Char('G'));
    key(&mut a, KeyCode::Enter);
    let l = lines(&render(&mut a, 160, 30));
    let spark = l.iter().find(|l| l.starts_with("│rcv_rtt ")).unwrap();
    assert!(spark.contains("109.0ms max 109.0ms"), "{spark}");
    // A row with no history: one line that says so, no zeros.
    let mut rows = with_download();
    rows.iter_mut().for_each(|r| r.history.clear());
    let mut a = app_of(rows);
    key(&mut a, KeyCode::Char('G'));
    key(&mut a, KeyCode::Enter);
    let l = lines(&render(&mut a, 160, 30));
    assert!(
        l.iter()
            .any(|l| l.contains("history: none kept for this flow"))
    );
    assert!(
        !l.iter()
            .any(|l| l.starts_with("│rcv_rtt ") || l.contains(" max ")),
        "{l:#?}"
    );
}

/// [`with_download`] with the sender named beside the reader as `also`,
/// its reason at the explanation's end as the engine writes it.
fn with_also() -> Vec<Row> {
    let mut rows = with_download();
    let r = rows.iter_mut().find(|r| r.cookie() == 2).unwrap();
    let reason = "the sender paused 31% of the interval with the window open";
    r.current.explanation = format!("reader holds the window shut 88%; also sender: {reason}");
    r.current.also = Some(crate::attribution::Also {
        verdict: Verdict::Sender,
        share: 0.31,
        reason: reason.to_string(),
    });
    rows
}

#[test]
fn a_second_limit_follows_the_verdict_after_a_plus() {
    let mut a = app_of(with_also());
    // Wide enough, VERDICT widens to hold the pair whole.
    let l = lines(&render(&mut a, 160, 12));
    let down = l.iter().find(|l| l.starts_with("curl/777")).unwrap();
    assert!(
        down.contains(" receiver_application+sender faster reader"),
        "{down}"
    );
    // At 80 columns the verdict is cut and the second limit kept.
    let l = lines(&render(&mut a, 80, 12));
    assert_eq!(
        l[8],
        "curl/777     [2001:db8::2]:443   ↓10.0Mbit/s receiver_app…+sender faster reader"
    );
}

#[test]
fn the_detail_pane_gives_the_second_limit_a_line_with_its_reason() {
    let mut a = app_of(with_also());
    key(&mut a, KeyCode::Char('G'));
    key(&mut a, KeyCode::Enter);
    // A short pane still shows it, near the top.
    let l = lines(&render(&mut a, 100, 14));
    let also: Vec<&str> = l
        .iter()
        .filter(|l| l.contains("also"))
        .map(|l| l.trim_end_matches('│').trim_end())
        .collect();
    assert_eq!(
        also,
        [
            "│also     sender (strength 0.31): the sender paused 31% of the interval with the window open"
        ],
        "{l:#?}"
    );
    // The explanation no longer says it again.
    let l = lines(&render(&mut a, 100, 30));
    assert_eq!(l.iter().filter(|l| l.contains("also")).count(), 1);
    assert!(
        l.iter()
            .any(|l| l.starts_with("│reader holds the window shut 88% ")),
        "{l:#?}"
    );
}

#[test]
fn a_downloads_pane_says_nothing_arrived_in_one_line_for_an_empty_interval() {
    let mut rows = with_download();
    let r = rows.iter_mut().find(|r| r.cookie() == 2).unwrap();
    r.current.evidence.recv_rate_bps = 0.0;
    r.current.evidence.bytes_received = 0;
    let mut a = app_of(rows);
    key(&mut a, KeyCode::Char('G'));
    key(&mut a, KeyCode::Enter);
    let l = lines(&render(&mut a, 100, 30));
    let has = |s: &str| l.iter().any(|l| l.starts_with(s));
    assert!(
        has("│receive  nothing arrived in the judged interval; window closed 88%, unread 91.0 KB"),
        "{l:#?}"
    );
    // No fill of a window nothing came through, no bursts at 0 bit/s.
    assert!(
        !l.iter()
            .any(|l| l.contains("window fill") || l.starts_with("│bursts")),
        "{l:#?}"
    );
    assert!(has("│rtt      rcv_rtt 41.0 ms"), "{l:#?}");
}
