//! RATE where the judged window moved nothing: the flow's average over
//! its last seconds, marked `~`, in the row and the detail pane alike.

use super::*;
use crate::{attribution::Side, sink::tui::row::Row, track::history::HistoryPoint};

/// The snapshot's rows with curl's flow (cookie 2) a throttled download
/// whose judged window received nothing, its last ten polls (1 s apart)
/// `rates` (bits/s), oldest first.
fn throttled(rates: &[f64]) -> Vec<Row> {
    let mut rows = snapshot().rows;
    let r = rows.iter_mut().find(|r| r.cookie() == 2).unwrap();
    r.current.side = Side::Receiver;
    r.current.verdict = Verdict::Sender;
    r.current.evidence.rate_bps = 0.0;
    r.current.evidence.recv_rate_bps = 0.0;
    r.history = rates
        .iter()
        .map(|bps| HistoryPoint {
            rate_bps: *bps,
            ..HistoryPoint::default()
        })
        .collect();
    rows
}

fn app_of(rows: Vec<Row>) -> App {
    let mut a = App::new(Options::default());
    a.update(Snapshot::from_rows(rows, &COUNTERS));
    a
}

/// The row of curl's download on a 160-column screen.
fn curl_row(a: &mut App) -> String {
    let l = lines(&render(a, 160, 12));
    l.into_iter().find(|l| l.starts_with("curl/777")).unwrap()
}

#[test]
fn an_empty_window_shows_the_last_ten_seconds_average_marked() {
    // Two 1 MB bursts in ten seconds (8 Mbit/s for a second each), and
    // older polls that fall outside the ten seconds.
    let mut rates = vec![50e6; 5];
    rates.extend([0.0, 0.0, 8e6, 0.0, 0.0, 0.0, 8e6, 0.0, 0.0, 0.0]);
    let mut a = app_of(throttled(&rates));
    let row = curl_row(&mut a);
    assert!(row.contains("  ↓~1.6Mbit/s "), "{row}");
    // The detail pane gives the window's rate and the same average.
    key(&mut a, KeyCode::Char('G'));
    key(&mut a, KeyCode::Enter);
    let l = lines(&render(&mut a, 120, 30));
    assert!(
        l.iter().any(|l| l
            .contains("rate     received 0 bit/s (~1.6 Mbit/s over the last 10 s, RATE); ceiling")),
        "{l:#?}"
    );
}

#[test]
fn a_window_that_moved_data_or_a_quiet_past_show_the_windows_rate() {
    // Nothing in ten seconds: 0, unmarked.
    let mut a = app_of(throttled(&[0.0; 10]));
    assert!(curl_row(&mut a).contains("  ↓0bit/s "));
    // A window that moved data shows its own rate, unmarked.
    let mut rows = throttled(&[8e6; 10]);
    let r = rows.iter_mut().find(|r| r.cookie() == 2).unwrap();
    r.current.evidence.recv_rate_bps = 2e6;
    let mut a = app_of(rows);
    let row = curl_row(&mut a);
    assert!(row.contains("  ↓2.0Mbit/s ") && !row.contains('~'), "{row}");
    // A closed flow has no current rate.
    let mut rows = throttled(&[8e6; 10]);
    rows.iter_mut().find(|r| r.cookie() == 2).unwrap().closed = true;
    let mut a = app_of(rows);
    assert!(curl_row(&mut a).contains(" closed "));
}

#[test]
fn a_wide_average_loses_its_decimal_and_sorts_by_what_it_shows() {
    let mut a = app_of(throttled(&[3_005e6; 10]));
    let row = curl_row(&mut a);
    assert!(row.contains(" ↓~3.00Gbit/s "), "{row}");
    let mut a = app_of(throttled(&[300.5e6; 10]));
    let row = curl_row(&mut a);
    assert!(row.contains(" ↓~300Mbit/s "), "{row}");
    // The polls are 2 s apart: five points span the ten seconds.
    let mut a = App::new(Options {
        interval: Duration::from_secs(2),
        ..Options::default()
    });
    let mut rates = vec![0.0; 5];
    rates.extend([10e6, 0.0, 0.0, 0.0, 0.0]);
    a.update(Snapshot::from_rows(throttled(&rates), &COUNTERS));
    assert!(curl_row(&mut a).contains(" ↓~2.0Mbit/s "));
    // Sorted by rate, each section by what RATE shows: one download.
    let rates: Vec<(u64, f64)> = a.rows().map(|r| (r.cookie(), r.shown_bps())).collect();
    assert_eq!(rates.last(), Some(&(2, 2e6)));
}
