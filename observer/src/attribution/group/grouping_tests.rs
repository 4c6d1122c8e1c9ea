//! Which flows make a group (peer, prefix, process, namespace), the
//! `--by` values, when flows count as concurrent, and the engine's own
//! verdicts grouped.

use super::{GroupBy, GroupByError, fixtures::*, group, judge::Limit};
use crate::attribution::{Config, Verdict};
use crate::testkit::sample::v4;

#[test]
fn flows_overlapping_half_their_span_are_concurrent() {
    let path = |start_s| F {
        start_s,
        ..at_bottleneck(10e6, 30_000)
    };
    // 10 s each, 5 s together: half the shorter (group_concurrent_share).
    let g = only_group(&[path(0.0), path(5.0)]);
    assert_eq!((g.limit, g.rule), (Limit::Shared, "one_bottleneck"));
    assert_eq!(g.concurrent, 2);
    // 4.9 s together: not concurrent.
    let g = only_group(&[path(0.0), path(5.1)]);
    assert_eq!((g.limit, g.rule), (Limit::Unknown, "not_concurrent"));
    // Back to back: one at a time, and the rate over 20 s.
    let g = only_group(&[path(0.0), path(10.0)]);
    assert_eq!(g.concurrent, 1);
    assert!((g.rate_bps - 10e6).abs() < 1.0, "{}", g.rate_bps);
}

#[test]
fn flows_that_ran_together_add_their_rates_over_windows_of_any_length() {
    // top's windows end together (the poll) but last 1 to 2 s:
    // four uploads at 6.1 Mbit/s each, two judged over 1 s, two over 2 s.
    let upload = |secs: f64| F {
        start_s: 10.0 - secs,
        secs,
        rate_bps: 6.1e6,
        verdict: Verdict::ReceiveWindow,
        rule: "receive_window",
        ..F::default()
    };
    let g = only_group(&[upload(1.0), upload(1.0), upload(2.0), upload(2.0)]);
    assert_eq!(g.concurrent, 4);
    assert!((g.rate_bps - 24.4e6).abs() < 1.0, "{}", g.rate_bps);
    // With iperf3's control connection, idle and judged `application`
    // over a window that ended 8 s before the streams': no rate, no time.
    let control = F {
        start_s: 0.0,
        secs: 2.0,
        rate_bps: 0.0,
        verdict: Verdict::Application,
        rule: "mostly_idle",
        ..F::default()
    };
    let g = only_group(&[control, upload(1.0), upload(1.0), upload(2.0), upload(2.0)]);
    assert!((g.rate_bps - 24.4e6).abs() < 1.0, "{}", g.rate_bps);
    // Together for half the shorter (group_concurrent_share): the sum.
    let from = |start_s| F {
        start_s,
        ..upload(2.0)
    };
    let g = only_group(&[from(0.0), from(1.0)]);
    assert!((g.rate_bps - 12.2e6).abs() < 1.0, "{}", g.rate_bps);
    // For less: their bytes over the 3.5 s at least one was open,
    // 6.1 x (2 + 2) / 3.5 Mbit/s.
    let g = only_group(&[from(0.0), from(1.5)]);
    assert!(
        (g.rate_bps - 6.1e6 * 4.0 / 3.5).abs() < 1.0,
        "{}",
        g.rate_bps
    );
}

#[test]
fn groups_by_peer_prefix_process_and_namespace() {
    let fs = [
        F::default(),
        F {
            remote: v4(10, 0, 0, 3),
            ..F::default()
        },
        F {
            netns: 7,
            ..F::default()
        },
        F {
            remote: v4(10, 0, 1, 3),
            ..F::default()
        },
    ];
    let keys = |by| {
        judge_all(&fs, by)
            .iter()
            .map(|g| (g.netns, g.key.clone(), g.flows))
            .collect::<Vec<_>>()
    };
    let ns = 4_026_531_840;
    let mut by_peer = keys(GroupBy::Peer);
    by_peer.sort();
    assert_eq!(
        by_peer,
        [
            (7, "10.0.0.2".to_string(), 1),
            (ns, "10.0.0.2".to_string(), 1),
            (ns, "10.0.0.3".to_string(), 1),
            (ns, "10.0.1.3".to_string(), 1)
        ]
    );
    let mut by_prefix = keys("prefix/24".parse().unwrap());
    by_prefix.sort();
    assert_eq!(
        by_prefix,
        [
            (7, "10.0.0.0/24".to_string(), 1),
            (ns, "10.0.0.0/24".to_string(), 2),
            (ns, "10.0.1.0/24".to_string(), 1)
        ]
    );
    let by_16 = keys("prefix/16".parse().unwrap());
    assert!(
        by_16.contains(&(ns, "10.0.0.0/16".to_string(), 3)),
        "{by_16:?}"
    );
    assert_eq!(keys(GroupBy::Process).len(), 2);
    // IPv6 takes the second length, 64 by default.
    let v6 = |last: u8| {
        let mut a = [0u8; 16];
        a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        a[15] = last;
        F {
            remote: a,
            ..F::default()
        }
    };
    let g = judge_all(&[v6(1), v6(2)], "prefix/24".parse().unwrap());
    assert_eq!(g.len(), 1);
    assert_eq!(g[0].peer.as_deref(), Some("2001:db8::/64"));
    let g = judge_all(&[v6(2), v6(3)], "prefix/24,127".parse().unwrap());
    assert_eq!(g[0].peer.as_deref(), Some("2001:db8::2/127"));
    assert_eq!(g[0].flows, 2);
}

#[test]
fn uploads_and_downloads_to_one_peer_are_two_groups() {
    use crate::attribution::{Side, group::Direction};
    let down = at_bottleneck(10e6, 30_000);
    let up = F {
        side: Side::Sender,
        ..at_bottleneck(4e6, 30_000)
    };
    // One end of a local transfer each way: the two directions' bytes are
    // not added up.
    let g = judge_all(&[down, down, up], GroupBy::Peer);
    let found: Vec<_> = g
        .iter()
        .map(|g| (g.key.as_str(), g.direction, g.flows))
        .collect();
    assert_eq!(
        found,
        [
            ("10.0.0.2", Direction::Download, 2),
            ("10.0.0.2", Direction::Upload, 1)
        ]
    );
    // The same two downloads alone: one group.
    assert_eq!(judge_all(&[down, down], GroupBy::Peer).len(), 1);
}

#[test]
fn parses_groupings_and_refuses_bad_ones() {
    assert_eq!("peer".parse(), Ok(GroupBy::Peer));
    assert_eq!("process".parse(), Ok(GroupBy::Process));
    assert_eq!("workload".parse(), Ok(GroupBy::Workload));
    assert_eq!("prefix/24".parse(), Ok(GroupBy::Prefix { v4: 24, v6: 64 }));
    assert_eq!("prefix/0,48".parse(), Ok(GroupBy::Prefix { v4: 0, v6: 48 }));
    assert_eq!(
        "prefix/99".parse::<GroupBy>(),
        Err(GroupByError::BadPrefix("prefix/99".into()))
    );
    assert_eq!(
        "prefix/24,129".parse::<GroupBy>(),
        Err(GroupByError::BadPrefix("prefix/24,129".into()))
    );
    assert_eq!(
        "prefix/x".parse::<GroupBy>(),
        Err(GroupByError::BadPrefix("prefix/x".into()))
    );
    let e = "host".parse::<GroupBy>().unwrap_err();
    assert_eq!(
        e.to_string(),
        "'host' is not a grouping: use peer, prefix/24 (prefix/V4[,V6], IPv6 64 by default), process or workload"
    );
}

#[test]
fn the_engine_s_own_verdicts_group_per_flow() {
    // Four uploads judged by the engine itself (reference A's window-bound
    // sender, at four rates), then grouped.
    use crate::attribution::sender::fixtures::{point, verdict_between, window_bound_pair};
    let judged: Vec<_> = [1_532_952u64, 1_532_952, 1_000_000, 1_532_952]
        .iter()
        .map(|acked| {
            let (a, b) = window_bound_pair(*acked);
            (point(b).flow, verdict_between(a, b))
        })
        .collect();
    assert!(
        judged
            .iter()
            .all(|(_, a)| a.verdict == Verdict::ReceiveWindow)
    );
    let g = group(&pairs(&judged), GroupBy::Peer, &Config::default());
    assert_eq!(g.len(), 1);
    assert_eq!((g[0].limit, g[0].rule), (Limit::PerFlow, "own_limits"));
    // 3 x 6.13 + 4.0 = 22.4 Mbit/s over the 2 s.
    assert!(
        (g[0].rate_bps - 22.39e6).abs() < 0.01e6,
        "{}",
        g[0].rate_bps
    );
    assert_eq!(g[0].what_if[0].knob, "peer_window");
    // The four at once have shown the path no more than they carried
    // together (5.6 Mbit/s each): what a bigger window buys is not known.
    assert!(!g[0].what_if[0].helps);
    assert!(
        g[0].what_if[0]
            .summary
            .contains("each with 4 at once, no more than they ran"),
        "{}",
        g[0].what_if[0].summary
    );
}

#[test]
fn concurrency_is_found_whatever_the_order() {
    let at = |start_s| F {
        start_s,
        ..at_bottleneck(10e6, 30_000)
    };
    // Only the flows from 20 s and 25 s overlap (5 s of 10), listed last.
    let g = only_group(&[at(40.0), at(0.0), at(20.0), at(25.0)]);
    assert_eq!((g.limit, g.rule), (Limit::Shared, "one_bottleneck"));
    assert_eq!(g.concurrent, 2);
    let g = only_group(&[at(40.0), at(0.0), at(20.0), at(30.0)]);
    assert_eq!((g.limit, g.rule), (Limit::Unknown, "not_concurrent"));
}

#[test]
fn the_group_table_ends_with_a_rule_that_always_finds() {
    use super::{
        Figures,
        judge::{GROUP_RULES, GroupCtx},
    };
    assert_eq!(GROUP_RULES.last().map(|r| r.name), Some("own_limits"));
    // Even over nothing: no flow, no bytes, no rate.
    let fig = Figures {
        by: GroupBy::Peer,
        key: String::new(),
        flows: 0,
        bytes: 0,
        rate_bps: 0.0,
        fastest_bps: 0.0,
        shown_bps: 0.0,
        path_bps: 0.0,
        concurrent: 0,
    };
    let cfg = Config::default();
    let c = GroupCtx::new(&fig, &[], &cfg);
    let last = GROUP_RULES.last().map(|r| (r.judge)(&c));
    assert!(
        matches!(last, Some(Some(ref j)) if j.rule == "own_limits"),
        "{last:?}"
    );
}
