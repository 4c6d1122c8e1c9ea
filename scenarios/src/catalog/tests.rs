//! The catalogue's invariants: stable names, the reference paths, the
//! receiver-side vocabulary.
use std::time::Duration;

use observer::attribution::Verdict;
use pathemu::Side;

use super::*;

#[test]
fn names_are_the_stable_ones() {
    let names: Vec<&str> = all().iter().map(|s| s.name).collect();
    for n in [
        "ref-a-lowlat",
        "ref-a-default",
        "ref-a-w64k",
        "ref-a-w64k-p4",
        "ref-b-cubic",
        "ref-b-bbr",
        "ref-b-bbr-p4",
        "ref-b-cubic-32m",
        "cwnd-clamp",
        "sndbuf",
        "app-limited",
        "path-cubic",
        "path-bbr",
        "phase-change",
        "rx-ref-a-w64k",
        "rx-ref-b-cubic",
        "rx-rmem-cap",
        "rx-sorcvbuf",
        "rx-no-wscale",
        "rx-slow-reader",
        "rx-loss",
        "rx-bufferbloat",
        "rx-bbr-path",
        "rx-server-paced",
        "rx-server-sndbuf",
        "rx-bufferbloat-bbr",
        "rx-cubic-path",
        "rx-server-sndbuf-cubic",
        "rx-slow-reader-cubic",
    ] {
        assert!(names.contains(&n), "missing {n}");
    }
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len(), "duplicate names");
}

#[test]
fn rx_scenarios_are_judged_from_the_receiver() {
    let rx: Vec<Scenario> = all()
        .into_iter()
        .filter(|s| s.name.starts_with("rx-"))
        .collect();
    assert!(rx.len() >= 11, "only {} rx scenarios", rx.len());
    for s in &rx {
        assert_eq!(s.view, View::Receiver, "{} is not judged from B", s.name);
        assert!(!s.expect.is_empty(), "{} expects nothing", s.name);
        for e in &s.expect {
            assert!(
                RECEIVER_VERDICTS.contains(&e.verdict) && e.verdict != Verdict::Unknown,
                "{} expects {}, not a receiver verdict",
                s.name,
                e.verdict
            );
        }
    }
}

#[test]
fn http_servers_take_the_namespace_congestion_control() {
    // An HTTP server cannot be given `-C`: a `cc` there would be ignored.
    for s in all() {
        if matches!(s.traffic, Traffic::Http { .. }) {
            assert!(s.cc.is_none(), "{}: use snd_cc_default", s.name);
        }
    }
}

#[test]
fn namespace_settings() {
    let base = all().into_iter().find(|s| s.name == "sndbuf").unwrap();
    assert!(base.sysctls().is_empty());
    let s = Scenario {
        rcv_rmem_max: Some(128 * 1024),
        rcv_window_scaling: Some(false),
        snd_cc_default: Some("cubic"),
        ..base.clone()
    };
    assert_eq!(
        s.sysctls(),
        vec![
            (Side::B, "net.ipv4.tcp_rmem=4096 131072 131072".to_string()),
            (Side::B, "net.ipv4.tcp_window_scaling=0".to_string()),
            (Side::A, "net.ipv4.tcp_congestion_control=cubic".to_string())
        ]
    );
    let s = Scenario {
        rcv_rmem_max: Some(8 << 20),
        snd_wmem_max: Some(65_536),
        ..base
    };
    assert_eq!(
        s.sysctls(),
        vec![
            (Side::B, "net.ipv4.tcp_rmem=4096 131072 8388608".to_string()),
            (Side::A, "net.ipv4.tcp_wmem=4096 16384 65536".to_string())
        ]
    );
}

#[test]
fn reference_a_path_is_104_ms_and_35_mbit() {
    let s = all().into_iter().find(|s| s.name == "ref-a-w64k").unwrap();
    assert_eq!(s.path.forward.rate_bps, 35_000_000);
    assert_eq!(
        s.path.forward.delay + s.path.reverse.delay,
        Duration::from_millis(104)
    );
}
