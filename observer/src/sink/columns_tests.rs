//! The table's ADVICE against the JSON `what_if`, for every verdict and
//! every answer of the window arithmetic: the same setting, the same
//! figures.
#![allow(clippy::unwrap_used, reason = "tests: a failure should panic")]

use serde_json::Value;

use super::*;
use crate::{
    attribution::{Bounds, PeerWindow, Verdict, group::fixtures::F},
    sink::records::{write_json, write_table},
};

fn report(f: F) -> Report {
    let (flow, attribution) = f.build(1);
    Report { flow, attribution }
}

/// The ADVICE cell of `r`'s row in the table `observer flows` prints.
fn advice_cell(r: &Report) -> String {
    let mut out = Vec::new();
    write_table(&mut out, std::slice::from_ref(r)).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    // The header is ASCII: its byte offset is the column's.
    let at = lines[0].find("ADVICE").unwrap();
    lines[1].chars().skip(at).collect()
}

fn json(r: &Report) -> Value {
    let mut out = Vec::new();
    write_json(&mut out, std::slice::from_ref(r)).unwrap();
    serde_json::from_slice(&out).unwrap()
}

/// A download held by this host's window (`receive_window`), 5 Mbit/s at
/// 104 ms, with `window` bytes and its `bounds`.
fn host_window(window: u64, bounds: Bounds) -> F {
    F {
        side: Side::Receiver,
        verdict: Verdict::ReceiveWindow,
        rule: "receive_window",
        rate_bps: 5e6,
        min_rtt_us: 104_000,
        srtt_us: 104_000,
        window: Some((window, bounds)),
        ..F::default()
    }
}

fn own(shift: u8, scaling_off: bool, path_bps: f64) -> Bounds {
    Bounds {
        shift: Some(shift),
        scaling_off,
        own: true,
        path_bps,
        peer: None,
    }
}

/// An upload held by the peer's window (`receive_window` at the sender).
fn peer_window(shift: u8, now: u64, max: u64) -> F {
    F {
        verdict: Verdict::ReceiveWindow,
        rule: "receive_window",
        rate_bps: 5e6,
        window: Some((
            65_535,
            Bounds {
                shift: Some(shift),
                scaling_off: false,
                own: false,
                path_bps: 0.0,
                peer: Some(PeerWindow {
                    full_share: 0.6,
                    min_rtt_us: 104_000,
                    now_bytes: now,
                    max_bytes: max,
                }),
            },
        )),
        ..F::default()
    }
}

/// A verdict of `side`, `verdict` and `rule`, without a window.
fn plain(side: Side, verdict: Verdict, rule: &'static str) -> F {
    F {
        side,
        verdict,
        rule,
        ..F::default()
    }
}

/// Every verdict and every answer of the arithmetic, with the advice the
/// table gives it: the setting (or, where no window answers, why).
fn cases() -> Vec<(&'static str, F, &'static str)> {
    use Side::{Receiver, Sender};
    vec![
        (
            "host window",
            host_window(65_536, own(7, false, 35e6)),
            "rcv_wnd 130.0KB → 10.0Mbit/s: tcp_rmem",
        ),
        (
            "host window of a buffer the application set",
            F {
                rcvbuf_locked: true,
                ..host_window(65_536, own(7, false, 35e6))
            },
            "rcv_wnd 130.0KB → 10.0Mbit/s: SO_RCVBUF",
        ),
        (
            "host window past its scale",
            host_window(65_535, own(0, false, 35e6)),
            "rcv_wnd 130.0KB → 10.0Mbit/s: tcp_rmem, reconnect",
        ),
        (
            "host window unscaled",
            host_window(65_535, own(0, true, 35e6)),
            "rcv_wnd 130.0KB → 10.0Mbit/s: tcp_window_scaling",
        ),
        (
            "no headroom",
            host_window(65_536, own(7, false, 5e6)),
            "more capacity",
        ),
        (
            "window enough",
            host_window(4_000_000, own(7, false, 35e6)),
            "faster reader",
        ),
        (
            "peer window enough",
            F {
                window: peer_window(7, 4_000_000, 4_000_000)
                    .window
                    .map(|(_, b)| (4_000_000, b)),
                ..peer_window(7, 4_000_000, 4_000_000)
            },
            "peer's reader",
        ),
        (
            "peer window",
            peer_window(7, 65_535, 65_535),
            "peer's window 131.2KB → 10.0Mbit/s",
        ),
        (
            "peer window past its scale",
            peer_window(0, 65_535, 65_535),
            "peer's window 131.2KB → 10.0Mbit/s: reconnect",
        ),
        (
            "peer's reader",
            peer_window(7, 65_535, 1_000_000),
            "peer's reader",
        ),
        (
            "send buffer",
            F {
                verdict: Verdict::SendBuffer,
                rule: "send_buffer",
                window: Some((100_000, Bounds::default())),
                ..F::default()
            },
            "sndbuf 262.5KB → 20.0Mbit/s: tcp_wmem",
        ),
        (
            "cwnd",
            F {
                verdict: Verdict::CongestionWindow,
                rule: "cwnd_no_queue",
                window: Some((72_400, Bounds::default())),
                ..F::default()
            },
            "cwnd 262.5KB → 20.0Mbit/s: find the loss",
        ),
        (
            "cwnd at the receiver",
            plain(Receiver, Verdict::CongestionWindow, "loss_holds_cwnd"),
            "find the loss",
        ),
        (
            "shut window",
            F {
                rate_bps: 0.0,
                ..plain(Sender, Verdict::ReceiveWindow, "receive_window")
            },
            "window shut",
        ),
        (
            "path",
            plain(Sender, Verdict::Path, "full_bottleneck"),
            "more capacity",
        ),
        (
            "policer",
            plain(Sender, Verdict::Path, "drops_without_queue"),
            "none: policer",
        ),
        (
            "reader",
            plain(Receiver, Verdict::ReceiverApplication, "reader"),
            "faster reader",
        ),
        (
            "requests",
            plain(Receiver, Verdict::ReceiverApplication, "requests"),
            "larger requests",
        ),
        (
            "application",
            plain(Sender, Verdict::Application, "idle"),
            "faster app",
        ),
        (
            "sender",
            plain(Receiver, Verdict::Sender, "sender_held"),
            "look at sender",
        ),
        (
            "unknown",
            plain(Sender, Verdict::Unknown, "too_little"),
            "too little",
        ),
    ]
}

#[test]
fn every_verdict_has_advice_that_agrees_with_its_json_what_if() {
    let mut verdicts = std::collections::HashSet::new();
    for (name, f, want) in cases() {
        let r = report(f);
        verdicts.insert(r.attribution.verdict);
        let cell = advice_cell(&r);
        assert_eq!(cell, want, "{name}");
        assert_eq!(
            cell,
            attribution::group::advice::advice(&r.attribution, &r.flow),
            "{name}"
        );
        let v = json(&r);
        // The JSON carries the same words.
        assert_eq!(v["advice"].as_str(), Some(cell.as_str()), "{name}");
        let Some(w) = v.get("what_if") else {
            // No arithmetic: the advice says why, in a word or two.
            assert!(r.attribution.what_if.is_none(), "{name}");
            assert!(!cell.is_empty() && cell != "-", "{name}: {cell:?}");
            continue;
        };
        let fix = w["other_fix"].as_str().unwrap_or_default();
        let helps = w["window_helps"].as_bool().unwrap();
        if cell.contains('→') {
            // A window buys the rate: the JSON's figures, in the table's
            // units, and the setting its other_fix names.
            let needed = units::compact(&units::bytes(w["needed_bytes"].as_f64().unwrap()));
            let target = units::compact(&units::rate(w["target_bps"].as_f64().unwrap()));
            assert!(
                cell.contains(&format!(" {needed} → {target}")),
                "{name}: {cell} {w}"
            );
            if cell.ends_with(": tcp_window_scaling") {
                assert!(
                    fix.contains("enable net.ipv4.tcp_window_scaling"),
                    "{name}: {fix}"
                );
            } else if cell.ends_with("tcp_rmem, reconnect") {
                assert!(
                    fix.contains("raise net.ipv4.tcp_rmem's maximum"),
                    "{name}: {fix}"
                );
            } else if cell.starts_with("peer's window") && cell.ends_with(": reconnect") {
                assert!(
                    fix.contains("the peer must raise its receive buffer"),
                    "{name}: {fix}"
                );
            } else {
                assert!(fix.is_empty() && helps, "{name}: {w}");
            }
        } else {
            // No window answers: the JSON says a larger one would not help.
            assert!(!helps, "{name}: {w}");
            let summary = w["summary"].as_str().unwrap();
            let said = match want {
                // A window that carries the target names what frees it.
                "peer's reader" if name.ends_with("enough") => {
                    "a larger window would not raise the rate"
                }
                "peer's reader" => "a larger window would not help: the peer's reader",
                "more capacity" => "the path has shown no more than",
                _ => "a larger window would not raise the rate",
            };
            assert!(summary.contains(said), "{name}: {summary}");
        }
    }
    assert_eq!(verdicts.len(), Verdict::ALL.len(), "{verdicts:?}");
}

#[test]
fn a_window_advice_names_the_setting_and_the_figures() {
    let r = report(host_window(65_536, own(7, false, 35e6)));
    // Twice the rate, 10 Mbit/s, needs 130 KB at 104 ms.
    assert_eq!(advice_cell(&r), "rcv_wnd 130.0KB → 10.0Mbit/s: tcp_rmem");
}

#[test]
fn the_two_sections_share_no_name_with_two_meanings() {
    let up = Section::Uploads.headers();
    let down = Section::Downloads.headers();
    let shared: Vec<&str> = up.iter().copied().filter(|h| down.contains(h)).collect();
    // The same in both: who, what moved, and the verdict.
    assert_eq!(
        shared,
        [
            "LOCAL", "REMOTE", "PID", "COMM", "STATE", "ACKED", "RECEIVED", "RATE", "CC",
            "VERDICT", "ADVICE"
        ]
    );
    for (u, d) in up.iter().zip(down) {
        assert!(u == &d || !shared.contains(u), "{u} / {d}");
    }
}

/// The VERDICT cell of `r`'s row in the table, trimmed (ADVICE follows
/// it).
fn verdict_cell(r: &Report) -> String {
    let mut out = Vec::new();
    write_table(&mut out, std::slice::from_ref(r)).unwrap();
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // The header is ASCII: its byte offsets are the columns'.
    let (at, end) = (
        lines[0].find("VERDICT").unwrap(),
        lines[0].find("ADVICE").unwrap(),
    );
    let row: String = lines[1].chars().skip(at).take(end - at).collect();
    row.trim().to_string()
}

#[test]
fn a_second_limit_follows_the_verdict_after_a_plus() {
    let mut r = report(plain(Side::Receiver, Verdict::Sender, "sender_held"));
    assert_eq!(verdict_cell(&r), "sender");
    r.attribution.also = Some(attribution::Also {
        verdict: Verdict::ReceiverApplication,
        share: 0.25,
        reason: "the reader left the window shut 25% of the interval".into(),
    });
    assert_eq!(verdict_cell(&r), "sender+reader");
    // JSON keeps them apart.
    let j = json(&r);
    assert_eq!(j["verdict"], "sender");
    assert_eq!(j["also"]["verdict"], "receiver_application");
}
