use std::time::Duration;

use observer_common::FlowSample;

use super::*;
use crate::{
    model::clock::Clock,
    sink::metrics::{agent::ProgramRuns, encode, labels::Aggregation},
    testkit::sample::{SampleBuilder, v4},
    track::live::LiveConfig,
};

const SEC: u64 = 1_000_000_000;

/// Reference A's iperf3 sender number `cookie` at second `t_s`.
fn sample(cookie: u64, t_s: u64, closed: bool) -> FlowSample {
    SampleBuilder::window_bound(cookie, t_s)
        .ends(
            v4(10, 0, 0, 1),
            40_000 + (cookie % 1000) as u16,
            v4(10, 0, (cookie >> 8) as u8, cookie as u8),
            5201,
        )
        .comm("iperf3")
        .closed_if(closed)
        .build()
}

fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|v| v.strip_prefix(' ')))
        .unwrap_or_else(|| panic!("no series {series} in\n{text}"))
        .parse()
        .unwrap()
}

fn live_flows() -> LiveFlows {
    let cfg = LiveConfig {
        history: 1,
        window: Duration::from_secs(1),
        ..LiveConfig::default()
    };
    LiveFlows::new(cfg, Clock::fixed(0, 250), 50 * SEC)
}

#[test]
fn counts_flows_bytes_and_limited_time() {
    let mut b = live_flows();
    let mut c = Catalogue::new(CatalogueConfig {
        max_label_sets: 100,
        top_flows: 2,
        programs_attached: 4,
        ..CatalogueConfig::default()
    })
    .unwrap();
    let mut stats = PollStats {
        active: 1,
        closed: 0,
        took_us: 500,
        recursion_misses: 0,
        parked_evicted: 0,
        walk: Some((true, 2_500)),
    };
    let mut counters = [0u64; Counter::COUNT as usize];
    for t in 1..=3 {
        counters[Counter::ProbeHits as usize] = 1000 * t;
        stats.recursion_misses = [0, 5, 7][t as usize - 1];
        stats.parked_evicted = [0, 2, 3][t as usize - 1];
        let ev = b.ingest(&[sample(7, t, false)], &[], (100 + t) * SEC);
        c.update(&ev, &b, &counters, &stats, 1000);
    }
    let ev = b.ingest(&[], &[sample(7, 4, true)], 104 * SEC);
    c.update(&ev, &b, &counters, &stats, 1000);
    let text = encode(&c.registry).unwrap();
    assert_eq!(value(&text, "observer_flows_started_total"), 1.0);
    assert_eq!(
        value(
            &text,
            r#"observer_flows_closed_total{verdict="receive_window"}"#
        ),
        1.0
    );
    assert_eq!(
        value(
            &text,
            r#"observer_bytes_acked_total{verdict="receive_window"}"#
        ),
        3.0 * 766_476.0
    );
    // 140 of 250 jiffies per second rwnd-limited, over 3 one-second steps.
    assert!(
        (value(
            &text,
            r#"observer_limited_seconds_total{reason="receive_window"}"#
        ) - 3.0 * 0.56)
            .abs()
            < 1e-6
    );
    assert_eq!(value(&text, "observer_probe_hits_total"), 3000.0);
    // A total since load, exported as a counter.
    assert_eq!(value(&text, "observer_recursion_misses_total"), 7.0);
    assert_eq!(value(&text, "observer_parked_closes_evicted_total"), 3.0);
    assert_eq!(value(&text, "observer_programs_attached"), 4.0);
    // A walk within its budget, whose last walk took 2.5 ms.
    assert_eq!(value(&text, "observer_poll_read_walking"), 1.0);
    assert_eq!(value(&text, "observer_poll_read_walk_seconds"), 0.0025);
    let build = format!(
        r#"observer_build_info{{revision="{}",rustc="{}",version="0.1.0"}}"#,
        env!("OBSERVER_REVISION"),
        env!("OBSERVER_RUSTC")
    );
    assert_eq!(value(&text, &build), 1.0);
    // This test process's own figures.
    assert!(value(&text, "process_resident_memory_bytes") > 1e6);
    assert!(value(&text, "process_open_fds") >= 3.0);
    assert!(value(&text, "process_start_time_seconds") > 1.7e9);
    // A commit id (or "unknown" outside a git checkout), and a compiler.
    let rev = env!("OBSERVER_REVISION");
    assert!(
        rev == "unknown" || (rev.len() == 12 && rev.bytes().all(|b| b.is_ascii_hexdigit())),
        "{rev}"
    );
    assert!(env!("OBSERVER_RUSTC").starts_with("rustc 1."));
    assert_eq!(
        value(
            &text,
            r#"observer_flow_duration_seconds_count{verdict="receive_window"}"#
        ),
        1.0
    );
    assert_eq!(
        value(&text, r#"observer_active_flows{verdict="receive_window"}"#),
        0.0
    );
}

#[test]
fn series_stay_bounded_while_5000_flows_come_and_go() {
    let mut b = live_flows();
    let agg = Aggregation {
        local_port: true,
        ..Aggregation::default()
    };
    let mut c = Catalogue::new(CatalogueConfig {
        aggregation: agg,
        max_label_sets: 50,
        top_flows: 10,
        programs_attached: 4,
        ..CatalogueConfig::default()
    })
    .unwrap();
    let stats = PollStats::default();
    let counters = [0u64; Counter::COUNT as usize];
    for round in 0..50u64 {
        let t = 101 + round;
        let start: Vec<FlowSample> = (0..100)
            .map(|k| sample(round * 100 + k + 1, 1, false))
            .collect();
        let ev = b.ingest(&start, &[], t * SEC);
        c.update(&ev, &b, &counters, &stats, 1000);
        let close: Vec<FlowSample> = (0..100)
            .map(|k| sample(round * 100 + k + 1, 2, true))
            .collect();
        let ev = b.ingest(&[], &close, t * SEC + SEC / 2);
        c.update(&ev, &b, &counters, &stats, 1000);
    }
    let text = encode(&c.registry).unwrap();
    let series = text.lines().filter(|l| !l.starts_with('#')).count();
    // 50 admitted local ports + other, across a handful of metrics and verdicts.
    assert!(series < 1500, "{series} series");
    assert!(text.contains(r#"local_port="other""#));
    assert!(value(&text, "observer_label_sets_overflow_total") > 0.0);
}

#[test]
fn promtool_accepts_the_exposition() {
    let Ok(out) = std::process::Command::new("promtool")
        .arg("--version")
        .output()
    else {
        eprintln!(
            "skipped: promtool not installed (Debian package prometheus; `cargo xtask setup`)"
        );
        return;
    };
    assert!(out.status.success());
    let mut b = live_flows();
    let agg = Aggregation {
        comm: true,
        remote_prefix: Some((24, 64)),
        ..Aggregation::default()
    };
    let mut c = Catalogue::new(CatalogueConfig {
        aggregation: agg,
        max_label_sets: 100,
        top_flows: 3,
        programs_attached: 4,
        ..CatalogueConfig::default()
    })
    .unwrap();
    let counters = [5u64; Counter::COUNT as usize];
    for t in 1..=3 {
        let ev = b.ingest(
            &[sample(1, t, false), sample(2, t, false)],
            &[],
            (100 + t) * SEC,
        );
        c.update(&ev, &b, &counters, &PollStats::default(), 1000);
    }
    let ev = b.ingest(&[], &[sample(1, 4, true)], 104 * SEC);
    c.update(&ev, &b, &counters, &PollStats::default(), 1000);
    let text = encode(&c.registry).unwrap();
    let mut child = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool: {said}"
    );
}

#[test]
fn a_filter_counts_only_the_flows_it_selects_and_is_named() {
    let mut b = live_flows();
    let filter = crate::filter::Filter::parse("dst 10.0.0.0/24 and sport > :40001").unwrap();
    let mut c = Catalogue::new(CatalogueConfig {
        max_label_sets: 100,
        top_flows: 10,
        programs_attached: 4,
        filter: Some(filter),
        ..CatalogueConfig::default()
    })
    .unwrap();
    let stats = PollStats::default();
    let counters = [0u64; Counter::COUNT as usize];
    // Flows 1-3 go to 10.0.0.1-3 from ports 40001-40003; flow 257 to
    // 10.0.1.1 from port 40257. The filter selects 2 and 3.
    let cookies = [1u64, 2, 3, 257];
    for t in 1..=2 {
        let flows: Vec<FlowSample> = cookies.iter().map(|k| sample(*k, t, false)).collect();
        let ev = b.ingest(&flows, &[], (100 + t) * SEC);
        c.update(&ev, &b, &counters, &stats, 1000);
    }
    let closed: Vec<FlowSample> = cookies.iter().map(|k| sample(*k, 3, true)).collect();
    let ev = b.ingest(&[], &closed[..1], 103 * SEC);
    c.update(&ev, &b, &counters, &stats, 1000);
    let ev = b.ingest(&[], &closed[2..3], 104 * SEC);
    c.update(&ev, &b, &counters, &stats, 1000);
    let text = encode(&c.registry).unwrap();
    assert_eq!(value(&text, "observer_flows_started_total"), 2.0, "{text}");
    assert_eq!(
        value(
            &text,
            r#"observer_flows_closed_total{verdict="receive_window"}"#
        ),
        1.0
    );
    // Flows 2 (open) and 257 (open, not selected): one active.
    assert_eq!(
        value(&text, r#"observer_active_flows{verdict="receive_window"}"#),
        1.0
    );
    assert_eq!(
        value(
            &text,
            r#"observer_filter_info{filter="dst 10.0.0.0/24 and sport > :40001"}"#
        ),
        1.0
    );
    let top = text
        .lines()
        .filter(|l| l.starts_with("observer_top_flow_rate_bytes_per_second{"))
        .count();
    assert_eq!(top, 1, "{text}");
    // Flows 2 and 3 for a second each, and flow 3's last second to its
    // close: three flow-seconds at the window's rate, not seven.
    let acked = value(
        &text,
        r#"observer_bytes_acked_total{verdict="receive_window"}"#,
    );
    let one = {
        let mut b = live_flows();
        let mut c = Catalogue::new(CatalogueConfig::default()).unwrap();
        for t in 1..=2 {
            let ev = b.ingest(&[sample(2, t, false)], &[], (100 + t) * SEC);
            c.update(&ev, &b, &counters, &stats, 1000);
        }
        value(
            &encode(&c.registry).unwrap(),
            r#"observer_bytes_acked_total{verdict="receive_window"}"#,
        )
    };
    assert!(one > 0.0);
    assert_eq!(acked, 3.0 * one, "{text}");
}

#[test]
fn limited_time_and_retransmits_carry_the_aggregation_labels() {
    let mut b = live_flows();
    let agg = Aggregation {
        comm: true,
        ..Aggregation::default()
    };
    let mut c = Catalogue::new(CatalogueConfig {
        aggregation: agg,
        max_label_sets: 100,
        ..CatalogueConfig::default()
    })
    .unwrap();
    let stats = PollStats::default();
    let counters = [0u64; Counter::COUNT as usize];
    // Two window-bound senders, one named curl that retransmits 4
    // segments a second.
    let at = |t: u64| {
        let mut curl = sample(2, t, false);
        curl.comm = *b"curl\0\0\0\0\0\0\0\0\0\0\0\0";
        curl.total_retrans = (4 * t) as u32;
        vec![sample(1, t, false), curl]
    };
    for t in 1..=3 {
        let ev = b.ingest(&at(t), &[], (100 + t) * SEC);
        c.update(&ev, &b, &counters, &stats, 1000);
    }
    let text = encode(&c.registry).unwrap();
    for comm in ["iperf3", "curl"] {
        // Two one-second steps after the first read: 56% of each
        // rwnd-limited, the rest busy (path).
        let rwnd = value(
            &text,
            &format!(r#"observer_limited_seconds_total{{comm="{comm}",reason="receive_window"}}"#),
        );
        assert!((rwnd - 2.0 * 0.56).abs() < 1e-6, "{comm}: {rwnd}\n{text}");
        let path = value(
            &text,
            &format!(r#"observer_limited_seconds_total{{comm="{comm}",reason="path"}}"#),
        );
        assert!((path - 2.0 * 0.44).abs() < 1e-6, "{comm}: {path}");
    }
    assert_eq!(
        value(
            &text,
            r#"observer_retransmitted_segments_total{comm="curl"}"#
        ),
        8.0
    );
    assert!(!text.contains(r#"observer_retransmitted_segments_total{comm="iperf3"}"#));
    // No old names, no old vocabulary.
    for gone in ["kernel_events_total", "reason=\"rwnd\"", "reason=\"app\""] {
        assert!(!text.contains(gone), "{gone}");
    }
}

#[test]
fn each_kernel_counter_and_program_has_its_own_series() {
    let b = live_flows();
    let mut c = Catalogue::new(CatalogueConfig::default()).unwrap();
    let mut counters = [0u64; Counter::COUNT as usize];
    for (i, n) in counters.iter_mut().enumerate() {
        *n = 10 * (i as u64 + 1);
    }
    c.update(&[], &b, &counters, &PollStats::default(), 1000);
    counters[Counter::RingbufDrops as usize] += 5;
    c.update(&[], &b, &counters, &PollStats::default(), 1000);
    c.programs(&[ProgramRuns {
        name: "observer_tcp_probe".into(),
        runs: 100,
        run_time_ns: 2_000_000,
    }]);
    c.programs(&[ProgramRuns {
        name: "observer_tcp_probe".into(),
        runs: 250,
        run_time_ns: 5_000_000,
    }]);
    let text = encode(&c.registry).unwrap();
    for (name, want) in [
        ("observer_probe_hits_total", 10.0),
        ("observer_flow_map_inserts_total", 20.0),
        ("observer_close_records_total", 30.0),
        ("observer_ring_drops_total", 45.0),
        ("observer_flow_map_evictions_total", 50.0),
        ("observer_kernel_read_errors_total", 60.0),
        ("observer_flow_map_errors_total", 70.0),
        ("observer_owner_updates_total", 80.0),
        ("observer_close_records_parked_total", 90.0),
        ("observer_recursion_misses_total", 0.0),
        (
            r#"observer_program_runs_total{program="observer_tcp_probe"}"#,
            250.0,
        ),
        (
            r#"observer_program_run_seconds_total{program="observer_tcp_probe"}"#,
            0.005,
        ),
    ] {
        assert_eq!(value(&text, name), want, "{name}");
    }
}

#[test]
fn a_start_waits_for_its_owner_with_owner_labels_on() {
    let mut b = live_flows();
    let mut c = Catalogue::new(CatalogueConfig {
        aggregation: Aggregation {
            comm: true,
            ..Aggregation::default()
        },
        max_label_sets: 100,
        ..CatalogueConfig::default()
    })
    .unwrap();
    let (stats, counters) = (PollStats::default(), [0u64; Counter::COUNT as usize]);
    // An accepted flow: no owner until the server reads from it.
    let accepted = |t: u64, owner: bool| {
        let mut s = sample(5, t, false);
        s.comm = [0; 16];
        if owner {
            s.pid = 4242;
            s.comm = *b"nginx\0\0\0\0\0\0\0\0\0\0\0";
        }
        s
    };
    // One that never gets an owner before it closes.
    let mut orphan = sample(6, 1, false);
    orphan.comm = [0; 16];
    let ev = b.ingest(&[accepted(1, false), orphan], &[], 101 * SEC);
    c.update(&ev, &b, &counters, &stats, 1000);
    assert!(
        !encode(&c.registry)
            .unwrap()
            .contains("observer_flows_started_total{")
    );
    let ev = b.ingest(&[accepted(2, true)], &[], 102 * SEC);
    c.update(&ev, &b, &counters, &stats, 1000);
    orphan.closed_ns = 103 * SEC;
    let ev = b.ingest(&[], &[orphan], 103 * SEC);
    c.update(&ev, &b, &counters, &stats, 1000);
    let text = encode(&c.registry).unwrap();
    assert_eq!(
        value(&text, r#"observer_flows_started_total{comm="nginx"}"#),
        1.0
    );
    assert_eq!(
        value(&text, r#"observer_flows_started_total{comm="unknown"}"#),
        1.0
    );
}

#[test]
fn idle_label_sets_lose_their_series_and_overflow_counts_sets() {
    const MIN: u64 = 60 * SEC;
    let mut b = live_flows();
    let mut c = Catalogue::new(CatalogueConfig {
        aggregation: Aggregation {
            local_port: true,
            ..Aggregation::default()
        },
        max_label_sets: 2,
        label_idle: Duration::from_secs(600),
        ..CatalogueConfig::default()
    })
    .unwrap();
    let (stats, counters) = (PollStats::default(), [0u64; Counter::COUNT as usize]);
    let poll = |c: &mut Catalogue,
                b: &mut LiveFlows,
                at: u64,
                open: &[FlowSample],
                closed: &[FlowSample]| {
        c.advance_to(at);
        let ev = b.ingest(open, closed, at);
        c.update(&ev, b, &counters, &stats, 1000);
        encode(&c.registry).unwrap()
    };
    // Three short flows from ports 40001-40003, two places under the cap.
    let short = |k: u64| sample(k, 1, true);
    let text = poll(
        &mut c,
        &mut b,
        100 * SEC,
        &[],
        &[short(1), short(2), short(3)],
    );
    assert!(text.contains(r#"observer_flows_started_total{local_port="40001"}"#));
    assert!(text.contains(r#"observer_flows_started_total{local_port="other"}"#));
    assert_eq!(value(&text, "observer_label_sets_overflow_total"), 1.0);
    // The same refused set again is not a new one.
    let text = poll(&mut c, &mut b, 101 * SEC, &[], &[short(1003)]);
    assert_eq!(value(&text, "observer_label_sets_overflow_total"), 1.0);
    // Ten minutes on, nothing used them: their series go, the places free.
    let text = poll(&mut c, &mut b, 100 * SEC + 10 * MIN, &[], &[]);
    assert!(!text.contains(r#"local_port="40001""#), "{text}");
    assert!(!text.contains(r#"local_port="40002""#), "{text}");
    let text = poll(&mut c, &mut b, 101 * SEC + 10 * MIN, &[], &[short(4)]);
    assert_eq!(
        value(&text, r#"observer_flows_started_total{local_port="40004"}"#),
        1.0
    );
}

#[test]
fn quiet_flows_count_their_idle_time_summed_or_flow_by_flow_under_a_filter() {
    let stats = PollStats::default();
    let counters = [0u64; Counter::COUNT as usize];
    // Flows 1 and 257 move at the first poll and then idle for 20 polls;
    // the filter selects flow 1 alone.
    let run = |filter: Option<&str>| {
        let mut c = Catalogue::new(CatalogueConfig {
            filter: filter.map(|f| crate::filter::Filter::parse(f).unwrap()),
            ..CatalogueConfig::default()
        })
        .unwrap();
        let cfg = LiveConfig {
            history: 1,
            idle_per_flow: c.idle_per_flow(),
            ..LiveConfig::default()
        };
        let mut b = LiveFlows::new(cfg, Clock::fixed(0, 250), 50 * SEC);
        let flows = [sample(1, 1, false), sample(257, 1, false)];
        let ev = b.ingest_changes(&flows, &[], 101 * SEC, false);
        c.update(&ev, &b, &counters, &stats, 1000);
        let before = value(
            &encode(&c.registry).unwrap(),
            r#"observer_limited_seconds_total{reason="application"}"#,
        );
        for t in 2..=21 {
            let ev = b.ingest_changes(&[], &[], (100 + t) * SEC, false);
            c.update(&ev, &b, &counters, &stats, 1000);
        }
        assert_eq!(b.quiet_len(), 2);
        let text = encode(&c.registry).unwrap();
        let idle = value(
            &text,
            r#"observer_limited_seconds_total{reason="application"}"#,
        ) - before;
        let active = value(&text, r#"observer_active_flows{verdict="application"}"#);
        (idle, active)
    };
    // 20 polls a second apart, two flows idle at every one.
    assert_eq!(run(None), (40.0, 2.0));
    assert_eq!(run(Some("dst 10.0.0.1")), (20.0, 1.0));
}

/// The top-N gauges (`--top-flows`, `--top-peers`).
#[path = "catalogue_top_tests.rs"]
mod top_n;
