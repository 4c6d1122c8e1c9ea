use super::*;
use crate::attribution::Verdict;
use crate::testkit::sample::SampleBuilder;

const SEC: u64 = 1_000_000_000;

/// A window-bound sender: 80,480 B window, 105 ms srtt, 6.13 Mbit/s.
fn sample(t_s: u64, closed: bool) -> FlowSample {
    let mut s = SampleBuilder::window_bound(9, t_s)
        .jiffies(1_000_000)
        .closed_if(closed)
        .build();
    s.seen_from_start = 1;
    s
}

/// Flow `cookie`'s [`sample`] at `t_s`.
fn flow_at(cookie: u64, t_s: u64, closed: bool) -> FlowSample {
    let mut s = sample(t_s, closed);
    s.cookie = cookie;
    s
}

/// Events in a fixed order, to compare two live flows' polls.
fn sorted(events: Vec<Event>) -> Vec<String> {
    let mut v: Vec<String> = events.iter().map(|e| format!("{e:?}")).collect();
    v.sort();
    v
}

/// Poll `poll` of a flow map `map` as the kernel holds it: each flow of
/// `moves` moves at the polls it lists, and `close` (cookie, poll) closes
/// one. Returns the changed samples, the close records and the whole map.
fn poll_reads(
    map: &mut HashMap<u64, FlowSample>,
    poll: u64,
    moves: &[(u64, &[u64])],
    close: (u64, u64),
) -> (Vec<FlowSample>, Vec<FlowSample>, Vec<FlowSample>) {
    let changed: Vec<FlowSample> = moves
        .iter()
        .filter(|(_, at)| at.contains(&poll))
        .map(|(cookie, _)| flow_at(*cookie, poll, false))
        .collect();
    let mut closed = Vec::new();
    if poll == close.1 {
        map.remove(&close.0);
        closed.push(flow_at(close.0, poll, true));
    }
    for s in &changed {
        map.insert(s.cookie, *s);
    }
    let all = map.values().copied().collect();
    (changed, closed, all)
}

fn live_flows(history: usize) -> LiveFlows {
    let cfg = LiveConfig {
        history,
        ..LiveConfig::default()
    };
    LiveFlows::new(cfg, Clock::fixed(0, 250), 50 * SEC)
}

#[test]
fn tracks_current_and_life_verdicts_and_emits_events() {
    let mut b = live_flows(3);
    let ev = b.ingest(&[sample(1, false)], &[], 101 * SEC);
    // Born in this run (first seen at 100 s, the live flows at 50 s): its first
    // second counts as soon as it is first read.
    match &ev[..] {
        [
            Event::Started { cookie: 9 },
            Event::Progress {
                bytes_acked,
                limited,
                ..
            },
        ] => {
            assert_eq!(*bytes_acked, 766_476);
            assert_eq!(limited.rwnd_us, 560_000);
        }
        other => panic!("{other:?}"),
    }
    for t in 2..=5 {
        let ev = b.ingest(&[sample(t, false)], &[], (100 + t) * SEC);
        match &ev[..] {
            [
                Event::Progress {
                    verdict,
                    bytes_acked,
                    limited,
                    ..
                },
            ] => {
                assert_eq!(*verdict, Verdict::ReceiveWindow);
                assert_eq!(*bytes_acked, 766_476);
                // 56% of one second rwnd-limited.
                assert_eq!(limited.rwnd_us, 560_000);
                assert_eq!(limited.idle_us, 0);
            }
            other => panic!("{other:?}"),
        }
    }
    let t = b.get(9).unwrap();
    assert_eq!(t.current.verdict, Verdict::ReceiveWindow);
    assert_eq!(t.life.verdict, Verdict::ReceiveWindow);
    // Born after the live flows started: life spans from first_seen (5 s).
    assert_eq!(t.life.evidence.interval_us, 5_000_000);
    // Current window: between one and two windows (1 s each) back.
    let span = t.current.evidence.interval_us;
    assert!((1_000_000..=2_000_000).contains(&span), "{span}");
    assert_eq!(t.history.len(), 3);
    assert!((t.history[2].rate_bps - 6.13e6).abs() < 0.01e6);
    assert_eq!(t.history[2].snd_wnd, 80_480);
}

#[test]
fn close_emits_once_and_lingers() {
    let mut b = live_flows(0);
    b.ingest(&[sample(1, false)], &[], 101 * SEC);
    let ev = b.ingest(&[], &[sample(3, true)], 103 * SEC);
    let closed: Vec<_> = ev
        .iter()
        .filter(|e| matches!(e, Event::Closed { .. }))
        .collect();
    assert_eq!(closed.len(), 1);
    if let Event::Closed {
        life,
        duration_s,
        flow,
    } = closed[0]
    {
        assert_eq!(life.verdict, Verdict::ReceiveWindow);
        assert!((duration_s - 3.0).abs() < 1e-9);
        assert!(flow.closed);
    }
    // A stale map sample after the close changes nothing and emits nothing.
    let ev = b.ingest(&[sample(2, false)], &[], 104 * SEC);
    assert!(ev.is_empty());
    assert!(b.get(9).unwrap().is_closed());
    // Gone once the linger (5 s) has passed.
    b.ingest(&[], &[], 107 * SEC);
    assert_eq!(b.len(), 1);
    b.ingest(&[], &[], 108 * SEC);
    assert!(b.is_empty());
}

#[test]
fn without_linger_closed_flows_stay_until_dropped() {
    let mut b = LiveFlows::new(
        LiveConfig {
            linger: std::time::Duration::ZERO,
            ..LiveConfig::default()
        },
        Clock::fixed(0, 250),
        50 * SEC,
    );
    b.ingest(&[sample(1, false)], &[], 101 * SEC);
    // Closed: counted once, and still tracked for the sinks, which
    // look up the poll's events there (a flow first seen closed too).
    let mut other = sample(4, true);
    other.cookie = 10;
    let ev = b.ingest(&[], &[sample(3, true), other], 104 * SEC);
    assert_eq!(
        ev.iter()
            .filter(|e| matches!(e, Event::Closed { .. }))
            .count(),
        2
    );
    assert!(b.get(9).is_some_and(TrackedFlow::is_closed));
    assert!(b.get(10).is_some_and(TrackedFlow::is_closed));
    b.drop_closed();
    assert!(b.is_empty());
}

#[test]
fn flow_seen_only_at_close_still_counts() {
    let mut b = live_flows(0);
    let ev = b.ingest(&[], &[sample(4, true)], 104 * SEC);
    assert!(matches!(ev[0], Event::Started { .. }));
    // All it moved in its four seconds counts, though the agent never
    // saw it open (a short connection between two polls).
    assert!(matches!(
        ev[1],
        Event::Progress {
            bytes_acked: 3_065_904,
            ..
        }
    ));
    assert!(matches!(ev[2], Event::Closed { .. }));
    assert_eq!(ev.len(), 3);
    // One that was older than the live flows, first seen at its close, does not:
    // its counters cover a life the agent did not watch.
    let mut old = sample(4, true);
    old.seen_from_start = 0;
    old.cookie = 10;
    let ev = b.ingest(&[], &[old], 105 * SEC);
    assert_eq!(ev.len(), 2, "{ev:?}");
}

#[test]
fn flow_older_than_the_book_starts_unknown() {
    let mut b = LiveFlows::new(LiveConfig::default(), Clock::fixed(0, 250), 200 * SEC);
    b.ingest(&[sample(1, false)], &[], 201 * SEC);
    assert_eq!(b.get(9).unwrap().life.verdict, Verdict::Unknown);
}

#[test]
fn a_poll_asks_for_the_workloads_of_new_unresolved_and_moved_to_another_cgroup_flows_only() {
    use crate::model::workload::Workload;
    let mut b = live_flows(0);
    let with_cgroup = |cookie: u64, t_s: u64, cgroup: u64| {
        let mut s = sample(t_s, false);
        s.cookie = cookie;
        s.cgroup_id = cgroup;
        s
    };
    let mut asked = Vec::new();
    let resolve = |asked: &mut Vec<u64>, id: u64| {
        asked.push(id);
        // Cgroup 7 resolves; cgroup 8 (gone, say) never does.
        (id == 7).then(|| Arc::new(Workload::default()))
    };
    b.ingest(
        &[with_cgroup(9, 1, 7), with_cgroup(10, 1, 8)],
        &[],
        101 * SEC,
    );
    b.resolve_workloads(|id| resolve(&mut asked, id));
    asked.sort_unstable();
    assert_eq!(asked, [7, 8]);
    assert!(b.get(9).is_some_and(|t| t.flow.workload.is_resolved()));
    // Both move: the resolved one keeps its workload, the other is asked
    // again, once.
    asked.clear();
    b.ingest(
        &[with_cgroup(9, 2, 7), with_cgroup(10, 2, 8)],
        &[],
        102 * SEC,
    );
    b.resolve_workloads(|id| resolve(&mut asked, id));
    assert_eq!(asked, [8]);
    // Its owner moves to cgroup 7: asked for that one, then resolved.
    asked.clear();
    b.ingest(
        &[with_cgroup(9, 3, 7), with_cgroup(10, 3, 7)],
        &[],
        103 * SEC,
    );
    b.resolve_workloads(|id| resolve(&mut asked, id));
    // Cgroup 8 is asked until a prune finds none of its flows waiting.
    asked.sort_unstable();
    assert_eq!(asked, [7, 8]);
    assert!(b.get(10).is_some_and(|t| t.flow.workload.is_resolved()));
    for poll in 0..crate::track::pending::PRUNE_EVERY {
        asked.clear();
        b.ingest(&[with_cgroup(9, 4 + poll, 7)], &[], (104 + poll) * SEC);
        b.resolve_workloads(|id| resolve(&mut asked, id));
    }
    assert!(asked.is_empty(), "{asked:?}");
    assert!(b.unresolved.is_empty());
}

#[test]
fn a_read_of_the_changes_alone_advances_the_book_as_a_whole_read_does() {
    let mut whole = live_flows(2);
    let mut changes = live_flows(2);
    // The flow map as the kernel holds it.
    let mut map: HashMap<u64, FlowSample> = HashMap::new();
    for poll in 1..=12u64 {
        // Flow 9 moves at the first four polls and then idles; flow 10 at
        // the first and the fifth, and closes at the eighth; flow 11 once.
        let moves: [(u64, &[u64]); 3] = [(9, &[1, 2, 3, 4]), (10, &[1, 5]), (11, &[2])];
        let (changed, closed, all) = poll_reads(&mut map, poll, &moves, (10, 8));
        let now = (100 + poll) * SEC;
        let a = whole.ingest(&all, &closed, now);
        let b = changes.ingest_changes(&changed, &closed, now, false);
        assert_eq!(sorted(a), sorted(b), "poll {poll}");
        for cookie in [9, 10, 11] {
            let (x, y) = (whole.get(cookie), changes.get(cookie));
            assert_eq!(
                x.map(|t| (&t.current, &t.life, &t.history)),
                y.map(|t| (&t.current, &t.life, &t.history)),
                "flow {cookie} at poll {poll}"
            );
        }
    }
}

#[test]
fn a_receiving_end_with_too_little_to_say_and_a_byte_unread_settles() {
    let mut b = live_flows(0);
    // A receiving end: 1 byte arrived long ago and waits unread, the
    // window open (64 KB of room left).
    let mut s = SampleBuilder::new(12).seen(100 * SEC, 100 * SEC).build();
    s.seen_from_start = 1;
    s.bytes_received = 1;
    s.unread = 1;
    s.rcv_wnd_left = 65_536;
    s.rcv_mss = 1448;
    s.srtt_us = 50;
    for poll in 1..=4u64 {
        b.ingest(&[s], &[], (100 + poll) * SEC);
    }
    let t = b.get(12).expect("tracked");
    assert_eq!(t.current.verdict, Verdict::Unknown, "{:?}", t.current);
    assert!(t.settled_idle());
    // Two segments' worth waiting: the reader rule may yet speak.
    let mut b = live_flows(0);
    s.unread = 2 * 1448;
    s.bytes_received = 2 * 1448;
    for poll in 1..=4u64 {
        b.ingest(&[s], &[], (100 + poll) * SEC);
    }
    assert!(!b.get(12).expect("tracked").settled_idle());
}

/// Polls live flows of the whole map that visits every flow (two history
/// points keep it from listing any quiet) beside one fed the changes alone
/// that lists its settled idle flows quiet, window `window_s`: flow 9 moves
/// at the polls in `moves9`, flow 10 at the first and the twelfth polls
/// (and closes at the fourteenth), flow 11 at the first. Checks at each of
/// `polls` polls that both say the same, and returns how many flows were
/// quiet at each.
fn quiet_against_visits(window_s: u64, moves9: &[u64], polls: u64) -> Vec<usize> {
    let cfg = |history: usize| LiveConfig {
        history,
        window: Duration::from_secs(window_s),
        idle_per_flow: true,
        ..LiveConfig::default()
    };
    let mut visits = LiveFlows::new(cfg(2), Clock::fixed(0, 250), 50 * SEC);
    let mut quiet = LiveFlows::new(cfg(1), Clock::fixed(0, 250), 50 * SEC);
    let mut map: HashMap<u64, FlowSample> = HashMap::new();
    let mut quiet_at = Vec::new();
    for poll in 1..=polls {
        let moves: [(u64, &[u64]); 3] = [(9, moves9), (10, &[1, 12]), (11, &[1])];
        let (changed, closed, all) = poll_reads(&mut map, poll, &moves, (10, 14));
        let now = (100 + poll) * SEC;
        let a = visits.ingest(&all, &closed, now);
        let b = quiet.ingest_changes(&changed, &closed, now, false);
        assert_eq!(sorted(a), sorted(b), "poll {poll}");
        for cookie in [9, 10, 11] {
            let (x, y) = (visits.get(cookie), quiet.get(cookie));
            assert_eq!(
                x.map(|t| (&t.current, &t.life, t.history.back())),
                y.map(|t| (&t.current, &t.life, t.history.back())),
                "flow {cookie} at poll {poll}"
            );
        }
        let open_counts: Vec<(Verdict, u64)> = quiet.open_by_verdict().collect();
        let counted: Vec<(Verdict, u64)> = Verdict::ALL
            .iter()
            .map(|v| {
                let n = visits
                    .flows()
                    .filter(|t| !t.is_closed() && t.current.verdict == *v)
                    .count();
                (*v, n as u64)
            })
            .collect();
        assert_eq!(open_counts, counted, "poll {poll}");
        quiet_at.push(quiet.quiet_len());
    }
    quiet_at
}

#[test]
fn quiet_flows_are_passed_by_and_step_as_visits_would() {
    // One-second window: every poll rotates it.
    let q = quiet_against_visits(1, &[1, 2, 3, 4, 9], 16);
    // Flow 11 settles two polls after its move and flow 10 likewise; flow
    // 9 wakes at the ninth poll and settles again.
    assert_eq!(q[0], 0, "{q:?}");
    assert!(q[4..8].iter().all(|&n| n >= 2), "{q:?}");
    assert!(q[8] < q[7], "flow 9 woke: {q:?}");
    assert_eq!(
        *q.last().unwrap(),
        2,
        "flows 9 and 11 quiet, 10 closed: {q:?}"
    );
    // A three-second window rotates every third poll: a waking flow's
    // replayed rotations put its window where the visits put theirs.
    let q = quiet_against_visits(3, &[1, 2, 9], 16);
    assert!(q.iter().any(|&n| n >= 2), "{q:?}");
}

#[test]
fn a_quiet_flow_past_the_kept_polls_wakes_with_a_window_of_one_to_two_windows() {
    let cfg = LiveConfig {
        history: 1,
        window: Duration::from_secs(3),
        ..LiveConfig::default()
    };
    let mut b = LiveFlows::new(cfg, Clock::fixed(0, 250), 50 * SEC);
    b.ingest_changes(&[sample(1, false)], &[], 101 * SEC, false);
    let polls = 2 + 2 * super::super::quiet::POLLS_KEPT as u64;
    let mut quiet_steps = 0;
    for poll in 2..=polls {
        let ev = b.ingest_changes(&[], &[], (100 + poll) * SEC, false);
        for e in ev {
            match e {
                Event::Quiet { flows, limited } => {
                    assert_eq!(flows, 1);
                    // No chrono state at its last sample: idle.
                    assert_eq!(limited.idle_us, 1_000_000);
                    assert_eq!(limited.rwnd_us, 0);
                    quiet_steps += 1;
                }
                Event::Progress { bytes_acked: 0, .. } => {}
                other => panic!("poll {poll}: {other:?}"),
            }
        }
    }
    assert!(quiet_steps >= polls - 5, "{quiet_steps} of {polls}");
    assert_eq!(b.quiet_len(), 1);
    let now = 100 + polls + 1;
    let ev = b.ingest_changes(&[sample(now, false)], &[], now * SEC, false);
    assert!(
        ev.iter()
            .any(|e| matches!(e, Event::Progress { bytes_acked, .. } if *bytes_acked > 0)),
        "{ev:?}"
    );
    assert_eq!(b.quiet_len(), 0);
    let span = b.get(9).unwrap().current.evidence.interval_us;
    assert!((3_000_000..=6_000_000).contains(&span), "{span}");
}

#[test]
fn namespace_names_go_to_the_started_flows_or_to_all_and_stay() {
    let mut b = live_flows(0);
    b.ingest(
        &[flow_at(1, 1, false), flow_at(2, 1, false)],
        &[],
        101 * SEC,
    );
    let mut asked = Vec::new();
    b.name_namespaces(&[1], false, |ino| {
        asked.push(ino);
        Some("blue".into())
    });
    // Only the flow listed as started was asked about.
    assert_eq!(asked.len(), 1);
    let name = |b: &LiveFlows, c: u64| b.get(c).and_then(|t| t.flow.netns_name.clone());
    assert_eq!(name(&b, 1).as_deref(), Some("blue"));
    assert_eq!(name(&b, 2), None);
    // A later sample keeps it (a socket never changes namespace).
    b.ingest(
        &[flow_at(1, 2, false), flow_at(2, 2, false)],
        &[],
        102 * SEC,
    );
    assert_eq!(name(&b, 1).as_deref(), Some("blue"));
    // The names changed: every flow anew.
    b.name_namespaces(&[], true, |_| Some("red".into()));
    assert_eq!(name(&b, 1).as_deref(), Some("red"));
    assert_eq!(name(&b, 2).as_deref(), Some("red"));
}

#[test]
fn two_flows_of_one_inode_keep_the_names_they_were_first_seen_with() {
    // Flow 1 runs in namespace `tmpX` (inode 1 in both samples), closes,
    // and lingers; `tmpX` is deleted and the kernel gives its inode to
    // `tmpY`, where flow 2 starts.
    let mut b = live_flows(60);
    b.ingest(&[flow_at(1, 1, false)], &[], 101 * SEC);
    b.name_namespaces(&[1], false, |_| Some("tmpX".into()));
    b.ingest(&[], &[flow_at(1, 2, true)], 102 * SEC);
    assert!(b.get(1).is_some_and(TrackedFlow::is_closed));
    b.ingest(&[flow_at(2, 3, false)], &[], 103 * SEC);
    // The names changed (`tmpY` has the inode now): every open flow anew.
    b.name_namespaces(&[], true, |_| Some("tmpY".into()));
    b.name_namespaces(&[2], false, |_| Some("tmpY".into()));
    let name = |c: u64| b.get(c).and_then(|t| t.flow.netns_name.clone());
    assert_eq!(
        b.get(1).map(|t| t.flow.netns),
        b.get(2).map(|t| t.flow.netns)
    );
    assert_eq!(name(1).as_deref(), Some("tmpX"));
    assert_eq!(name(2).as_deref(), Some("tmpY"));
}
