//! The help table against the keys: every key that does something is in
//! it, and every line fits the overlay.

use super::*;
use crate::sink::tui::help::{KEYS, LEGEND, joined};

/// What a key can change, as the view's getters show it.
fn state(a: &App) -> String {
    format!(
        "{} {:?} {:?} {} {} {} {} {} {}",
        a.cursor(),
        a.sort(),
        a.mode(),
        a.paused(),
        a.help(),
        a.should_quit(),
        a.peers(),
        a.detail().is_some(),
        a.closed_view()
    )
}

/// The names the help gives keys: the words of its key column, and of
/// its text, which names the lesser ones (`PgUp PgDn: a page`).
fn documented() -> Vec<&'static str> {
    KEYS.iter()
        .flat_map(|(k, v)| [*k, *v])
        .flat_map(|s| s.split([',', ' ', ':', ';', '(', ')']))
        .filter(|w| !w.is_empty())
        .collect()
}

#[test]
fn every_key_that_acts_is_in_the_help() {
    let named = documented();
    let special = [
        (KeyCode::Up, "Up"),
        (KeyCode::Down, "Down"),
        (KeyCode::PageUp, "PgUp"),
        (KeyCode::PageDown, "PgDn"),
        (KeyCode::Home, "Home"),
        (KeyCode::End, "End"),
        (KeyCode::Enter, "Enter"),
        (KeyCode::Esc, "Esc"),
        (KeyCode::Backspace, "Backspace"),
        (KeyCode::Tab, "Tab"),
        (KeyCode::Delete, "Delete"),
        (KeyCode::Left, "Left"),
        (KeyCode::Right, "Right"),
    ];
    let chars = (b'!'..=b'~').map(|b| (KeyCode::Char(char::from(b)), char::from(b).to_string()));
    let codes = special
        .into_iter()
        .map(|(c, n)| (c, n.to_string()))
        .chain(chars);
    for (code, name) in codes {
        // From the second row, so moving up acts too.
        let mut a = app();
        key(&mut a, KeyCode::Down);
        let before = state(&a);
        key(&mut a, code);
        if state(&a) != before {
            assert!(
                named.contains(&name.as_str()),
                "{name} acts but the help does not name it"
            );
        }
    }
    assert!(named.contains(&"Ctrl-C") && named.contains(&"Ctrl-U"));
}

#[test]
fn every_help_line_fits_the_overlay() {
    for (k, v) in KEYS.iter().chain(LEGEND.iter()) {
        assert!(k.chars().count() <= 13, "{k}");
        assert!(v.chars().count() <= 58, "{k}: {v}");
    }
    // With the border, it leaves the table in sight around it in a
    // 24-line terminal.
    assert!(KEYS.len() + LEGEND.len() + 2 <= 18);
}

#[test]
fn continuation_lines_join_their_entry() {
    let keys = joined(&KEYS);
    let slash = keys.iter().find(|(k, _)| *k == "/").unwrap();
    assert!(slash.1.starts_with("filter: an expression"), "{}", slash.1);
    assert!(slash.1.ends_with("Ctrl-U erase)"), "{}", slash.1);
    assert!(keys.iter().all(|(k, _)| !k.is_empty()));
    assert_eq!(
        keys.len(),
        KEYS.iter().filter(|(k, _)| !k.is_empty()).count()
    );
}

/// The help names a download's figures by the titles top prints over
/// them, the shared table's short names.
#[test]
fn the_help_names_the_downloads_figures_as_titled() {
    use crate::sink::figures::Figure;
    let line = LEGEND
        .iter()
        .find(|(_, v)| v.contains("RCV_RTT"))
        .map(|(_, v)| *v)
        .unwrap();
    let named: Vec<&str> = line
        .split([' ', ':'])
        .filter(|w| w.chars().any(|c| c.is_ascii_uppercase()))
        .collect();
    let titles = [
        Figure::RcvRtt,
        Figure::BaseRtt,
        Figure::Unread,
        Figure::RcvWnd,
        Figure::Ooo,
        Figure::Closed,
        Figure::Fill,
    ]
    .map(Figure::short);
    assert_eq!(named, titles);
}

/// The VERDICT+x entry names every second limit a cell can print
/// (`+path` too), from the cells' own table.
#[test]
fn the_help_lists_every_second_limit_a_cell_can_show() {
    use crate::{attribution::Verdict, sink::figures::also_name};
    let (_, text) = LEGEND.iter().find(|(k, _)| *k == "VERDICT+x").unwrap();
    assert_eq!(
        *text,
        "x a second limit: rwnd sndbuf app cwnd path reader sender"
    );
    for v in Verdict::ALL.iter().filter(|v| **v != Verdict::Unknown) {
        let name = also_name(*v);
        assert!(text.split(' ').any(|w| w == name), "{name} missing: {text}");
    }
}
