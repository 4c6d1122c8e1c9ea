//! The keys of `observer top` and the marks on its screen, in one table:
//! the `?` overlay ([`super::draw`]) draws it, and observer-top(1)'s KEYS
//! and SCREEN sections are made from it (`observer::manual`), so the
//! two cannot say different things.

use std::sync::LazyLock;

use crate::{attribution::Verdict, sink::figures::also_name};

/// One line of the help: a key (or a mark on the screen) and what it
/// does or means. An empty key continues the entry above on a line of
/// its own (the overlay is 74 columns wide: 13 for the key, 58 for the
/// text).
pub type Entry = (&'static str, &'static str);

/// Every key `observer top` accepts ([`super::keys`]), in the overlay's
/// order.
pub const KEYS: [Entry; 11] = [
    (
        "q, Ctrl-C",
        "quit, then print a summary of the flows seen, by peer",
    ),
    (
        "Up Down, j k",
        "select a flow (PgUp PgDn: a page; g G, Home End: ends)",
    ),
    (
        "s, r",
        "sort by the next column (title underlined); reverse it",
    ),
    (
        "/",
        "filter: an expression (port 443, rate > 10M, verdict path;",
    ),
    (
        "",
        "and/or/not) or words all in process, pid, address, verdict",
    ),
    ("", "(Enter applies, Esc cancels, Backspace, Ctrl-U erase)"),
    ("p", "pause the display (polling goes on)"),
    (
        "v",
        "peers: flows by remote address, per_flow or shared limit",
    ),
    (
        "c",
        "recently closed flows, newest first: life verdict, advice",
    ),
    (
        "Enter",
        "details (in c too): ADVICE whole, what-if, history",
    ),
    (
        "?, Esc",
        "this help; Esc closes it, then details, peers, closed",
    ),
];

/// The VERDICT+x entry's text: the short name of every verdict that can
/// be a second limit, from the table the cells print them with
/// ([`also_name`]), so the help lists each one a cell can show.
static SECOND_LIMITS: LazyLock<String> = LazyLock::new(|| {
    let names: Vec<&str> = Verdict::ALL
        .iter()
        .filter(|v| **v != Verdict::Unknown)
        .map(|v| also_name(*v))
        .collect();
    format!("x a second limit: {}", names.join(" "))
});

/// What the marks and columns of the screen mean, after the keys.
pub static LEGEND: LazyLock<[Entry; 5]> = LazyLock::new(|| {
    [
        (
            "RATE, ↓, ~",
            "verdict window; ↓ download; ~ 10 s mean, window empty",
        ),
        (
            "↓ figures",
            "RCV_RTT BASE_RTT UNREAD RCV_WND OOO CLOSED% FILL% (- shut)",
        ),
        (
            "RWND% CWND%",
            "rwnd-/cwnd-limited % of busy; CWND, INFLT in segments",
        ),
        ("VERDICT+x", SECOND_LIMITS.as_str()),
        (
            "dim rows",
            "closed flows, a few seconds, RATE closed; c lists them",
        ),
    ]
});

/// `table`'s entries with their continuation lines joined: one
/// `(key, text)` per entry, for a page that wraps text itself.
pub fn joined(table: &[Entry]) -> Vec<(&'static str, String)> {
    let mut out: Vec<(&'static str, String)> = Vec::new();
    for (key, text) in table {
        match out.last_mut() {
            Some((_, whole)) if key.is_empty() => {
                whole.push(' ');
                whole.push_str(text);
            }
            _ => out.push((key, (*text).to_string())),
        }
    }
    out
}
