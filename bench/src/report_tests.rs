//! The benchmark page's rendering: targets judged, parts not run said so.

use super::{Stat, agent::Scale, churn::ChurnStep, report::*};

fn row<'a>(page: &'a str, name: &str) -> &'a str {
    page.lines()
        .find(|l| l.starts_with(&format!("| {name} |")))
        .unwrap_or_else(|| panic!("no row {name} in\n{page}"))
}

fn agent_only(quick: bool, sizes: &[usize]) -> Results {
    Results {
        parts: vec!["agent".into()],
        quick,
        agent_cpu_pct_10k_flows: 0.3,
        scale: sizes
            .iter()
            .map(|&flows| Scale {
                flows,
                ..Scale::default()
            })
            .collect(),
        ..Results::default()
    }
}

/// The committed page is what `--render docs/benchmarks.json` writes:
/// the renderer's output, byte for byte, for a real run's figures.
#[test]
fn committed_page_renders_from_committed_json() {
    let mut r: Results = serde_json::from_str(include_str!("../../docs/benchmarks.json"))
        .expect("docs/benchmarks.json parses");
    r.derive();
    assert_eq!(r.markdown(), include_str!("../../docs/benchmarks.md"));
}

#[test]
fn quick_run_says_the_100k_step_did_not_run() {
    let page = agent_only(true, &[1_000, 10_000]).markdown();
    for name in ["poll of 100k flows", "agent RSS at 100k flows"] {
        let r = row(&page, name);
        assert!(r.ends_with("| not run (--quick) |"), "{r}");
        assert!(r.contains("| - |"), "{r}");
    }
    assert!(row(&page, "agent CPU at 10k flows, 1 s interval").ends_with("| met |"));
    assert!(!page.contains("MISSED"), "{page}");
    assert!(page.contains("- run: `--quick`"));
}

#[test]
fn full_run_judges_the_100k_step_and_rows_without_target_stay_blank() {
    let mut r = agent_only(false, &[1_000, 10_000, 100_000]);
    r.poll_ms_100k_flows = 150.0;
    r.rss_mib_100k_flows = 54.0;
    r.parts.push("throughput".into());
    r.floor_ns_per_hit = 70.0;
    let page = r.markdown();
    assert!(row(&page, "poll of 100k flows").ends_with("| MISSED |"));
    assert!(row(&page, "agent RSS at 100k flows").ends_with("| met |"));
    let floor = row(
        &page,
        "kernel ns per hit of an empty program on the same hook (the floor here)",
    );
    assert!(floor.ends_with("| - |  |"), "{floor}");
    assert!(row(&page, "kernel ns per program run (churn)").ends_with("| not run |"));
    assert!(!page.contains("First loss") && !page.contains("No loss"));
}

#[test]
fn churn_states_the_first_loss_rate_or_that_there_was_none() {
    let step = |made_per_s: f64| ChurnStep {
        made_per_s,
        ..ChurnStep::default()
    };
    let mut r = Results {
        parts: vec!["churn".into()],
        churn: vec![step(1000.0), step(9998.0)],
        ..Results::default()
    };
    assert!(
        r.markdown()
            .contains("No loss at any rate up to 9998 connections/s")
    );
    r.churn_first_loss_per_s = 9998.0;
    assert!(
        r.markdown()
            .contains("First loss (a flow not reported, or a ring-buffer drop) at 9998")
    );
}

#[test]
fn request_response_rows_are_judged_and_missed_ones_explained() {
    use super::rr::RrOverhead;
    let ratio = |median: f64| Stat {
        median,
        min: median - 0.02,
        max: median + 0.02,
        n: 3,
    };
    let rr = |connections: u32, median: f64| RrOverhead {
        connections,
        ratio: ratio(median),
        aa_ratio: ratio(1.0),
        without_tps: ratio(20_000.0),
        with_tps: ratio(20_000.0 * median),
        segments_per_transaction: 2.0,
        programs_ns_per_segment: 400.0,
        programs: Vec::new(),
    };
    let r = Results {
        parts: vec!["rr".into()],
        rr_ratio_1: 0.95,
        rr_ratio_16: 0.99,
        rr: vec![rr(1, 0.95), rr(16, 0.99)],
        ..Results::default()
    };
    let page = r.markdown();
    assert!(
        row(
            &page,
            "request/response transactions/s with/without, 1 connection"
        )
        .ends_with("| 0.950 | >= 0.97 | MISSED |")
    );
    assert!(
        row(
            &page,
            "request/response transactions/s with/without, 16 connections"
        )
        .ends_with("| 0.990 | >= 0.97 | met |")
    );
    // The table: median (min-max), transactions/s, ns per segment.
    assert!(
        page.contains(
            "| 1 | 0.950 (0.930-0.970) | 1.000 (0.980-1.020) | 20000 | 19000 | 2.00 | 400 |"
        ),
        "{page}"
    );
    // The 1-connection miss is explained, with the programs' 800 ns per
    // transaction (2 segments at 400 ns) against 50 us per transaction.
    assert!(
        page.contains("Request/response, 1 connection(s): missed by 0.020"),
        "{page}"
    );
    assert!(page.contains("800 ns per transaction"), "{page}");
    assert!(page.contains("about 50000 ns of CPU"), "{page}");
    assert!(!page.contains("16 connection(s): missed"), "{page}");
}

#[test]
fn own_work_is_derived_from_the_probe_and_the_floor() {
    use super::throughput::{Overhead, ProgramShare};
    let mut r = Results {
        parts: vec!["throughput".into(), "churn".into()],
        probe_ns_per_hit: 229.0,
        floor_ns_per_hit: 79.0,
        probe_ns_per_hit_churn: 650.0,
        throughput: vec![Overhead {
            streams: 1,
            with_bps: Stat {
                median: 20e9,
                min: 20e9,
                max: 20e9,
                n: 1,
            },
            programs: vec![
                ProgramShare {
                    name: "observer_tcp_pr".into(),
                    ns_per_hit: 229.0,
                    hits_per_s: 60_000.0,
                    cpu_pct: 1.5,
                },
                ProgramShare {
                    name: "observer_recv_l".into(),
                    ns_per_hit: 300.0,
                    hits_per_s: 10_000.0,
                    cpu_pct: 0.5,
                },
            ],
            ..Overhead::default()
        }],
        ..Results::default()
    };
    r.derive();
    assert_eq!(r.own_ns_per_hit, 150.0);
    assert_eq!(r.own_ns_per_run_churn, 571.0);
    assert!((r.bulk_cpu_pct_per_gbps - 0.1).abs() < 1e-12);
    let page = r.markdown();
    assert!(
        row(
            &page,
            "observer's own ns per packet, above the floor (bulk)"
        )
        .ends_with("| 150 | <= 50 | MISSED |")
    );
    assert!(
        row(&page, "observer's programs per Gbit/s (bulk, 1 stream)")
            .ends_with("| 0.100% of a CPU | <= 0.1% | met |")
    );
}

#[test]
fn the_peer_rows_judge_the_worse_load_of_each_kind() {
    use super::peer::{PeerComparison, worst};
    let at = |load: &str, flows, median| PeerComparison {
        load: load.into(),
        flows,
        ratio: Stat {
            median,
            min: median,
            max: median,
            n: 3,
        },
        ..PeerComparison::default()
    };
    let peer = vec![
        at("bulk", 1, 0.8),
        at("bulk", 4, 1.3),
        at("rr", 1, 0.9),
        at("rr", 16, 0.7),
    ];
    assert_eq!(worst(&peer, "bulk"), 1.3);
    assert_eq!(worst(&peer, "rr"), 0.9);
    assert_eq!(worst(&peer, "none"), 0.0);
    let r = Results {
        parts: vec!["peer".into()],
        peer_ratio_bulk: worst(&peer, "bulk"),
        peer_ratio_rr: worst(&peer, "rr"),
        peer,
        ..Results::default()
    };
    let page = r.markdown();
    let name = "observer's programs per segment over a one-map bpftrace counter";
    let bulk = format!("{name}, bulk (the worse of 1 and 4 streams)");
    assert_eq!(
        row(&page, &bulk),
        format!("| {bulk} | 1.30 | <= 1 | MISSED |")
    );
    assert!(
        row(
            &page,
            &format!("{name}, request/response (the worse of 1 and 16 connections)")
        )
        .ends_with("| 0.90 | <= 1 | met |")
    );
    assert!(
        row(&page, "request/response").starts_with("| request/response | 1 | 0.90 (0.90-0.90) |")
    );
}

#[test]
fn peer_programs_are_listed_costliest_first_without_the_prefix() {
    let programs: std::collections::BTreeMap<String, f64> = [
        ("observer_recv_l", 542.4),
        ("observer_set_st", 0.4),
        ("observer_tcp_pr", 575.0),
    ]
    .into_iter()
    .map(|(n, v)| (n.to_string(), v))
    .collect();
    assert_eq!(
        super::report::by_program(&programs),
        "tcp_pr 575, recv_l 542"
    );
    assert_eq!(super::report::by_program(&Default::default()), "-");
}

#[test]
fn the_request_response_stage_table_and_its_largest_steps_are_shown() {
    use super::{breakdown::StageCost, peer::PeerComparison};
    let stage = |stage: &str, ns_per_hit: f64, adds_ns: f64| StageCost {
        stage: stage.into(),
        ns_per_hit,
        adds_ns,
    };
    let r = Results {
        parts: vec!["peer".into(), "rr".into()],
        peer_ratio_rr: 1.6,
        peer: vec![PeerComparison {
            load: "rr".into(),
            flows: 1,
            ratio: Stat {
                median: 1.6,
                min: 1.5,
                max: 1.7,
                n: 3,
            },
            ..PeerComparison::default()
        }],
        stages_rr: vec![
            stage("an empty program on tcp_probe", 90.0, 90.0),
            stage("+ self-counter, bpf_skc_to_tcp_sock", 140.0, 50.0),
            stage(
                "+ socket cookie, segment flags, per-CPU sample gate",
                260.0,
                120.0,
            ),
            stage("+ flow-map (LRU hash) lookup", 380.0, 120.0),
            stage("+ refresh", 520.0, 140.0),
        ],
        ..Results::default()
    };
    let page = r.markdown();
    assert!(page.contains(
        "## Where the per-packet time goes (request/response, 1 connection: every segment ends a burst; the program cut short after each stage)"
    ));
    assert!(page.contains("| + refresh | 520 | +140 |"), "{page}");
    assert!(
        page.contains(
            "the per-packet program's largest steps: refresh (+140 ns); socket cookie, segment \
             flags, per-CPU sample gate (+120 ns); flow-map (LRU hash) lookup (+120 ns)."
        ),
        "{page}"
    );
}

#[test]
fn a_note_lists_only_the_floors_it_counted() {
    use super::report::counted_floors;
    let per_run: std::collections::BTreeMap<String, f64> = [
        ("bench_floor".to_string(), 55.0),
        ("bench_floor_rea".to_string(), 58.0),
    ]
    .into();
    let ran = |names: &[(&str, f64)]| -> std::collections::BTreeMap<String, f64> {
        names.iter().map(|(n, v)| (n.to_string(), *v)).collect()
    };
    assert_eq!(
        counted_floors(&per_run, &ran(&[("observer_tcp_pr", 241.0)])),
        "tcp_probe 55"
    );
    // A read program that ran 0 ns did not run.
    assert_eq!(
        counted_floors(
            &per_run,
            &ran(&[("observer_tcp_pr", 241.0), ("observer_recv_l", 0.0)])
        ),
        "tcp_probe 55"
    );
    assert_eq!(
        counted_floors(
            &per_run,
            &ran(&[("observer_tcp_pr", 241.0), ("observer_recv_l", 90.0)])
        ),
        "tcp_probe 55, sock_recv_length 58"
    );
    // Results that did not keep observer's programs: every floor.
    assert_eq!(
        counted_floors(&per_run, &ran(&[])),
        "tcp_probe 55, sock_recv_length 58"
    );
}

#[test]
fn a_fixed_load_without_the_counter_claims_no_fourth_side() {
    use super::fixed_load::FixedLoad;
    let mut r = Results {
        parts: vec!["rr".into()],
        rr: vec![super::rr::RrOverhead::default()],
        fixed_load: Some(FixedLoad {
            ratio: Stat::of(&[1.01]),
            aa_ratio: Stat::of(&[0.97, 1.04]),
            ..FixedLoad::default()
        }),
        ..Results::default()
    };
    let page = r.markdown();
    assert!(!page.contains("A fourth side"), "{page}");
    assert!(
        page.contains("observer's median 1.010 lies inside it."),
        "{page}"
    );
    r.fixed_load.as_mut().unwrap().peer_ratio = Stat::of(&[1.2]);
    let page = r.markdown();
    assert!(page.contains("A fourth side attaches the one-map bpftrace counter"));
    assert!(page.contains("the counter's 1.200 outside."), "{page}");
}
