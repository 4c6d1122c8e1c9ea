//! Faults while running: a full ring buffer is counted and the agent goes
//! on; a slow poll does not fill the ring (a thread drains it); flows
//! older than observer are picked up at their next packet; SIGINT and
//! SIGTERM detach and exit 0.

use std::{
    collections::HashMap,
    io::{Read as _, Write as _},
    net::{Ipv4Addr, TcpListener, TcpStream},
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

use crate::support::{
    Observer,
    bpf::{attached_programs, leftover, observer_programs, wait_attached},
    cookie,
    http::{free_port, http_get, kernel_event, metric, scrape, sum, wait_serving},
    netns_id,
    process::BIN,
    root_or_skip, serial, tcp_info,
};
use observer::{
    kernel::probes::{ProbeConfig, Probes},
    kernel::tick::kernel_hz,
    model::clock::Clock,
    sink::metrics::{Catalogue, CatalogueConfig, encode, labels::Aggregation},
    track::live::BookConfig,
    track::poller::{PollStats, Poller},
};
use observer_common::Counter;
use pathemu::sockets::connect_from;
use pathemu::{ChildGuard, Namespace};

/// `n` connections to `addr`, each sending a byte and closed by both ends,
/// as fast as they go; returns the client cookies.
fn churn(addr: std::net::SocketAddr, listener: &TcpListener, n: usize) -> Vec<u64> {
    let mut cookies = Vec::with_capacity(n);
    for _ in 0..n {
        let mut c = TcpStream::connect(addr).unwrap();
        let (mut s, _) = listener.accept().unwrap();
        cookies.push(cookie(&c));
        c.write_all(b"x").unwrap();
        let mut b = [0u8; 1];
        s.read_exact(&mut b).unwrap();
        drop(c);
        drop(s);
    }
    cookies
}

#[test]
fn full_ring_buffer_counts_drops_and_forgets_no_flow_twice() {
    if !root_or_skip("full_ring_buffer_counts_drops_and_forgets_no_flow_twice") {
        return;
    }
    let _serial = serial();
    let page = observer::args::page_size();
    // One page holds 9 closed-flow records (424 bytes + 8 of header each):
    // far fewer than the closes below make in one 50 ms drain period.
    let probes = Probes::load(ProbeConfig {
        ringbuf_bytes: page,
        ..ProbeConfig::default()
    })
    .unwrap();
    let max_flows = ProbeConfig::default().max_flows;
    let mut m = Poller::new(
        probes,
        Clock::new(kernel_hz().unwrap().hz),
        BookConfig::default(),
        max_flows,
    );
    m.poll().unwrap();
    let ns = Namespace::standalone().unwrap();
    let netns = netns_id(&ns);
    const HELD: usize = 200;
    let (listener, addr, held) = ns
        .run(|| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            let mut held = Vec::new();
            for _ in 0..HELD {
                let mut c = TcpStream::connect(addr).unwrap();
                let (s, _) = l.accept().unwrap();
                c.write_all(b"x").unwrap();
                held.push((c, s));
            }
            (l, addr, held)
        })
        .unwrap();
    // The book sees them all open...
    let open_in_ns = |m: &Poller| {
        m.book()
            .flows()
            .filter(|t| t.flow.netns == netns && !t.is_closed())
            .count()
    };
    m.poll().unwrap();
    assert_eq!(open_in_ns(&m), 2 * HELD);
    let drops_before = m.counters[Counter::RingbufDrops as usize];
    // ...then all 400 ends close at once: the ring overflows.
    drop(held);
    std::thread::sleep(Duration::from_millis(100));
    let (events, _) = m.poll().unwrap();
    let drops = m.counters[Counter::RingbufDrops as usize] - drops_before;
    let closed_now = events
        .iter()
        .filter(|e| matches!(e, observer::track::live::Event::Closed { flow, .. } if flow.netns == netns))
        .count();
    // The drain thread empties the page every 50 ms, so some closes get
    // through; the rest are counted as drops (host-wide, so at least).
    assert!(drops > 0, "{closed_now} closes reported, none dropped");
    assert!(
        closed_now as u64 + drops >= 2 * HELD as u64,
        "{closed_now} closes reported and {drops} dropped of {}",
        2 * HELD
    );
    // The exporter says so.
    let mut cat = Catalogue::new(CatalogueConfig {
        aggregation: Aggregation::default(),
        max_label_sets: 100,
        top_flows: 0,
        programs_attached: 4,
        filter: None,
        label_idle: std::time::Duration::ZERO,
    })
    .unwrap();
    cat.update(&[], m.book(), &m.counters, &PollStats::default(), max_flows);
    let text = encode(&cat.registry).unwrap();
    let exported = metric(&text, "observer_ring_drops_total").unwrap();
    assert_eq!(exported, m.counters[Counter::RingbufDrops as usize] as f64);
    // Flows whose close record was lost do not stay open in the book
    // forever: gone from the kernel map for two polls, they are forgotten.
    m.poll().unwrap();
    m.poll().unwrap();
    assert_eq!(
        open_in_ns(&m),
        0,
        "flows whose close record was dropped stay open in the book"
    );
    // The agent goes on: later closes, drained in time, are each reported
    // once. The page is shared with every TCP close on the host (other
    // tests running at the same time): a close may only go missing when
    // the drop counter says the ring was full again.
    let mut seen: HashMap<u64, usize> = HashMap::new();
    let drops_before_later = m.counters[Counter::RingbufDrops as usize];
    let mut later = Vec::new();
    for _ in 0..5 {
        let c = ns.run(|| churn(addr, &listener, 1)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(2);
        while c.iter().any(|c| !seen.contains_key(c)) && Instant::now() < deadline {
            let (events, _) = m.poll().unwrap();
            for e in events {
                if let observer::track::live::Event::Closed { flow, .. } = e {
                    *seen.entry(flow.cookie).or_default() += 1;
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        later.extend(c);
    }
    m.poll().unwrap();
    let dropped_again = m.counters[Counter::RingbufDrops as usize] > drops_before_later;
    let reported = later.iter().filter(|c| seen.contains_key(c)).count();
    for c in &later {
        assert!(
            seen.get(c).copied().unwrap_or(0) <= 1,
            "flow {c} closed {:?} times",
            seen.get(c)
        );
    }
    assert!(
        reported == later.len() || dropped_again,
        "{reported} of {} later closes reported (ring full again: {dropped_again})",
        later.len()
    );
}

#[test]
fn agent_exports_ring_buffer_drops_and_goes_on() {
    if !root_or_skip("agent_exports_ring_buffer_drops_and_goes_on") {
        return;
    }
    let _serial = serial();
    let before = observer_programs();
    let port = free_port();
    let page = observer::args::page_size().to_string();
    let child = ChildGuard::spawn(
        Command::new(BIN)
            .args(["run", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--interval", "2s", "--ringbuf-bytes", &page])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
    .unwrap();
    wait_attached(&before, attached_programs());
    let drops = |t: &str| metric(t, "observer_ring_drops_total").unwrap_or(0.0);
    let ns = Namespace::standalone().unwrap();
    // 300 connections (600 closes) in a burst, far more than one page of
    // ring buffer holds between two polls.
    ns.run(|| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let mut held = Vec::new();
        for _ in 0..300 {
            let c = TcpStream::connect(addr).unwrap();
            let (s, _) = l.accept().unwrap();
            held.push((c, s));
        }
        drop(held);
    })
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut text = scrape(port);
    while drops(&text) == 0.0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        text = scrape(port);
    }
    assert!(drops(&text) > 0.0, "no drops exported:\n{text}");
    // It goes on: still serving, and still counting closes.
    let closed = |t: &str| sum(t, "observer_flows_closed_total", "");
    let closed_before = closed(&text);
    ns.run(|| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        churn(l.local_addr().unwrap(), &l, 3)
    })
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while closed(&text) < closed_before + 6.0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        text = scrape(port);
    }
    assert!(
        closed(&text) >= closed_before + 6.0,
        "closes after the drops were not counted"
    );
    let health = http_get(port, "/healthz").unwrap_or_default();
    assert!(health.starts_with("ok: "), "{health}");
    let out = child.stop(libc::SIGINT).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("ringbuf drops "), "{err}");
    assert_eq!(leftover(&before), Vec::<u32>::new());
}

#[test]
fn slow_polls_do_not_fill_the_ring_buffer() {
    if !root_or_skip("slow_polls_do_not_fill_the_ring_buffer") {
        return;
    }
    // Connections from 127.79.0.2 to 127.79.0.1: both ends' flows carry
    // remote subnet 127.79.0.0/16, unlike the scrapes of /metrics.
    const SERVER: Ipv4Addr = Ipv4Addr::new(127, 79, 0, 1);
    const CLIENT: Ipv4Addr = Ipv4Addr::new(127, 79, 0, 2);
    const LABEL: &str = r#"remote_subnet="127.79.0.0/16""#;
    const CONNECTIONS: usize = 150;
    let _serial = serial();
    let before = observer_programs();
    let port = free_port();
    // Four pages hold ~37 closed-flow records (424 bytes + 8 of header
    // each), and the polls are 10 s apart: only the thread draining the
    // ring every 50 ms keeps it from filling.
    let ring = (4 * observer::args::page_size()).to_string();
    let mut child = ChildGuard::spawn(
        Command::new(BIN)
            .args(["run", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--interval", "10s", "--ringbuf-bytes", &ring])
            .args(["--label-remote-subnet", "16"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
    .unwrap();
    wait_attached(&before, attached_programs());
    // It serves once its first poll, which starts the drain thread, is done.
    wait_serving(port, &mut child, Duration::from_secs(10));
    let ns = Namespace::standalone().unwrap();
    // A steady ~200 closes a second, ~10 per drain period (a quarter of
    // the ring), but fifty rings' worth between two polls.
    ns.run(|| {
        let l = TcpListener::bind((SERVER, 0)).unwrap();
        let addr = l.local_addr().unwrap();
        for _ in 0..CONNECTIONS {
            let c = connect_from(CLIENT, addr).unwrap();
            let (s, _) = l.accept().unwrap();
            drop(c);
            drop(s);
            std::thread::sleep(Duration::from_millis(10));
        }
    })
    .unwrap();
    // The next poll reports them.
    let expected = 2.0 * CONNECTIONS as f64;
    let closed = |t: &str| sum(t, "observer_flows_closed_total", LABEL);
    let deadline = Instant::now() + Duration::from_secs(25);
    let mut text = scrape(port);
    while closed(&text) < expected && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        text = scrape(port);
    }
    // Drops are host-wide: other closes on the host share the page.
    let drops = kernel_event(&text, "observer_ring_drops_total");
    let others = sum(&text, "observer_flows_closed_total", "") - closed(&text);
    assert_eq!(
        drops,
        0.0,
        "ring-buffer drops ({} of {expected} closes reported, {others} other closes on the host)",
        closed(&text)
    );
    assert_eq!(
        closed(&text),
        expected,
        "closes reported: both ends of every connection, once"
    );
    let out = child.stop(libc::SIGINT).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(leftover(&before), Vec::<u32>::new());
}

#[test]
fn flow_open_before_start_is_picked_up_at_its_next_packet() {
    if !root_or_skip("flow_open_before_start_is_picked_up_at_its_next_packet") {
        return;
    }
    let _serial = serial();
    let ns = Namespace::standalone().unwrap();
    const BEFORE: usize = 256 * 1024;
    const AFTER: usize = 1024 * 1024;
    let (mut client, mut server) = ns
        .run(|| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let (mut s, _) = l.accept().unwrap();
            c.write_all(&vec![1u8; BEFORE]).unwrap();
            let mut buf = vec![0u8; BEFORE];
            s.read_exact(&mut buf).unwrap();
            (c, s)
        })
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let mut obs = Observer::start();
    let (ckey, skey) = (cookie(&client), cookie(&server));
    // Idle since before the start: not known yet.
    assert!(obs.flow(ckey).is_none(), "an idle old flow was sampled");
    // Its next packets bring it in, with the kernel's cumulative counts.
    let srv = std::thread::spawn(move || {
        let mut buf = vec![0u8; AFTER];
        server.read_exact(&mut buf).unwrap();
        server.write_all(b"ok").unwrap();
        server
    });
    client.write_all(&vec![2u8; AFTER]).unwrap();
    let mut ok = [0u8; 2];
    client.read_exact(&mut ok).unwrap();
    let server = srv.join().unwrap();
    let (ci, si) = (tcp_info(&client), tcp_info(&server));
    assert_eq!(ci.bytes_acked, (BEFORE + AFTER) as u64 + 1);
    let flow = obs.wait_for_flow(
        ckey,
        Duration::from_secs(5),
        &format!("the client's bytes_acked of TCP_INFO {ci:?}"),
        |f| f.bytes_acked == ci.bytes_acked,
    );
    assert_eq!(flow.bytes_received, ci.bytes_received);
    assert_eq!(flow.netns, netns_id(&ns));
    assert!(!flow.closed);
    obs.wait_for_flow(
        skey,
        Duration::from_secs(5),
        &format!("the server's bytes_received {}", si.bytes_received),
        |f| f.bytes_received == si.bytes_received,
    );
    assert_eq!(si.bytes_received, (BEFORE + AFTER) as u64);
}

/// `observer SUBCOMMAND` stopped by `sig` once attached: exit 0, detached.
fn stops_cleanly_on(sig: i32, args: &[&str]) -> Output {
    let before = observer_programs();
    let child = ChildGuard::spawn(
        Command::new(BIN)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .unwrap();
    wait_attached(&before, attached_programs());
    assert!(child.id() > 0);
    let out = child.stop(sig).unwrap();
    assert!(
        out.status.success(),
        "{args:?} on signal {sig}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        leftover(&before),
        Vec::<u32>::new(),
        "{args:?} left programs after signal {sig}"
    );
    out
}

#[test]
fn sigint_and_sigterm_detach_and_exit_0() {
    if !root_or_skip("sigint_and_sigterm_detach_and_exit_0") {
        return;
    }
    let _serial = serial();
    let listen = format!("127.0.0.1:{}", free_port());
    let out = stops_cleanly_on(libc::SIGINT, &["run", "--listen", &listen]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("stopping: detaching probes"));
    // flows stops early on either signal and still prints what it saw.
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let out = stops_cleanly_on(sig, &["flows", "--duration", "1h", "--json"]);
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            serde_json::from_str::<serde_json::Value>(line).unwrap();
        }
    }
}
