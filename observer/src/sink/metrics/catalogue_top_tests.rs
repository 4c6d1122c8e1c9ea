//! The top-N gauges: the fastest flows (`--top-flows`) and the busiest
//! peers (`--top-peers`), capped and removed when stale.

use super::*;

#[test]
fn top_flows_are_capped_and_stale_series_go() {
    let mut b = live_flows();
    let mut c = Catalogue::new(CatalogueConfig {
        max_label_sets: 100,
        top_flows: 2,
        programs_attached: 4,
        ..CatalogueConfig::default()
    })
    .unwrap();
    let stats = PollStats::default();
    let counters = [0u64; Counter::COUNT as usize];
    let flows: Vec<FlowSample> = (1..=5).map(|k| sample(k, 1, false)).collect();
    b.ingest(&flows, &[], 101 * SEC);
    let flows: Vec<FlowSample> = (1..=5).map(|k| sample(k, 2, false)).collect();
    let ev = b.ingest(&flows, &[], 102 * SEC);
    c.update(&ev, &b, &counters, &stats, 1000);
    let text = encode(&c.registry).unwrap();
    let top = text
        .lines()
        .filter(|l| l.starts_with("observer_top_flow_rate_bytes_per_second{"))
        .count();
    assert_eq!(top, 2);
    assert_eq!(
        value(&text, r#"observer_active_flows{verdict="receive_window"}"#),
        5.0
    );
    // All closed: the per-flow series disappear.
    let closed: Vec<FlowSample> = (1..=5).map(|k| sample(k, 3, true)).collect();
    let ev = b.ingest(&[], &closed, 103 * SEC);
    c.update(&ev, &b, &counters, &stats, 1000);
    let text = encode(&c.registry).unwrap();
    assert!(!text.contains("observer_top_flow_rate_bytes_per_second{"));
}

#[test]
fn a_top_flow_info_series_carries_its_namespace_name() {
    let mut b = live_flows();
    let mut c = Catalogue::new(CatalogueConfig {
        max_label_sets: 100,
        top_flows: 2,
        programs_attached: 4,
        ..CatalogueConfig::default()
    })
    .unwrap();
    let stats = PollStats::default();
    let counters = [0u64; Counter::COUNT as usize];
    b.ingest(&[sample(1, 1, false), sample(2, 1, false)], &[], 101 * SEC);
    b.name_namespaces(&[1], false, |_| Some("blue".into()));
    let ev = b.ingest(&[sample(1, 2, false), sample(2, 2, false)], &[], 102 * SEC);
    c.update(&ev, &b, &counters, &stats, 1000);
    let text = encode(&c.registry).unwrap();
    let info: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("observer_top_flow_info{"))
        .collect();
    assert_eq!(info.len(), 2, "{text}");
    for name in ["blue", ""] {
        let with = format!("netns_name=\"{name}\"");
        let n = info.iter().filter(|l| l.contains(&with)).count();
        assert_eq!(n, 1, "{name:?}: {text}");
    }
    // The second limit beside the verdict, as the flow's current judgement
    // names it ("" where none).
    for (k, l) in [1u64, 2].iter().zip(&info) {
        let also = b
            .get(*k)
            .and_then(|t| t.current.also.as_ref())
            .map_or("", |a| a.verdict.name());
        assert!(
            info.iter().any(|l| l.contains(&format!("also=\"{also}\""))),
            "{k}: {l}"
        );
    }
}

/// Reference A's iperf3 sender number `cookie` at second `t_s`, to the
/// peer 10.0.9.`peer`.
fn sample_to(cookie: u64, t_s: u64, peer: u8) -> FlowSample {
    SampleBuilder::window_bound(cookie, t_s)
        .ends(
            v4(10, 0, 0, 1),
            40_000 + cookie as u16,
            v4(10, 0, 9, peer),
            5201,
        )
        .comm("iperf3")
        .build()
}

/// The series of `name` whose labels contain `peer="ADDR"`, by value.
fn peer_series<'a>(text: &'a str, name: &str, addr: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter(|l| l.contains(&format!("peer=\"{addr}\"")))
        .collect()
}

#[test]
fn top_peers_are_the_groups_that_moved_the_most_bytes() {
    let mut b = live_flows();
    let mut c = Catalogue::new(CatalogueConfig {
        max_label_sets: 100,
        top_flows: 5,
        top_peers: 2,
        programs_attached: 4,
        ..CatalogueConfig::default()
    })
    .unwrap();
    let stats = PollStats::default();
    let counters = [0u64; Counter::COUNT as usize];
    // Three flows to .1, one each to .2 and .3: the top two peers are .1
    // and, of the two alike, .2 (by address).
    let peers = [(1, 1), (2, 1), (3, 1), (4, 2), (5, 3)];
    let at =
        |t: u64| -> Vec<FlowSample> { peers.iter().map(|&(k, p)| sample_to(k, t, p)).collect() };
    b.ingest(&at(1), &[], 101 * SEC);
    let ev = b.ingest(&at(2), &[], 102 * SEC);
    c.update(&ev, &b, &counters, &stats, 1000);
    let text = encode(&c.registry).unwrap();
    let rates = text
        .lines()
        .filter(|l| l.starts_with("observer_peer_throughput_bytes_per_second{"))
        .count();
    assert_eq!(rates, 2, "{text}");
    let flows = peer_series(&text, "observer_peer_flows", "10.0.9.1");
    assert_eq!(flows.len(), 1, "{text}");
    assert!(flows[0].ends_with(" 3"), "{}", flows[0]);
    // These flows send: the series says which way the data moves.
    assert!(flows[0].contains("direction=\"upload\""), "{}", flows[0]);
    assert_eq!(
        peer_series(&text, "observer_peer_flows", "10.0.9.2").len(),
        1
    );
    assert!(peer_series(&text, "observer_peer_flows", "10.0.9.3").is_empty());
    // The group's rate is its flows' together.
    let rate = |line: &str| -> f64 { line.rsplit(' ').next().unwrap().parse().unwrap() };
    let one: f64 = text
        .lines()
        .filter(|l| l.starts_with("observer_top_flow_rate_bytes_per_second{"))
        .filter(|l| l.contains("remote=\"10.0.9.1:5201\""))
        .map(rate)
        .sum();
    let group = rate(
        peer_series(
            &text,
            "observer_peer_throughput_bytes_per_second",
            "10.0.9.1",
        )[0],
    );
    assert!(
        one > 0.0 && (group - one).abs() <= 0.01 * one,
        "{group} vs {one}"
    );
    // Closed: the series go.
    let closed: Vec<FlowSample> = (1..=5).map(|k| sample(k, 3, true)).collect();
    let ev = b.ingest(&[], &closed, 103 * SEC);
    c.update(&ev, &b, &counters, &stats, 1000);
    let text = encode(&c.registry).unwrap();
    assert!(!text.contains("observer_peer_flows{"));
}
