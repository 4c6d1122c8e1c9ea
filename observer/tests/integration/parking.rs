//! A full ring buffer: the kernel keeps each close it cannot hand over in
//! the flow map (parked), the next poll reports it from there, once; only
//! the LRU can lose a parked close, and the agent counts each it lost.
//! The agent goes on, and exports and logs what happened.

use std::{
    collections::HashMap,
    io::{Read as _, Write as _},
    net::{SocketAddr, TcpListener, TcpStream},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use crate::support::{
    bpf::{attached_programs, leftover, observer_programs, wait_attached},
    cookie,
    http::{free_port, http_get, kernel_event, metric, scrape, sum},
    netns_id,
    process::BIN,
    root_or_skip, serial,
};
use observer::{
    kernel::load::tick::kernel_hz,
    kernel::{load::probe_config::ProbeConfig, probes::Probes},
    model::clock::Clock,
    sink::metrics::{Catalogue, CatalogueConfig, encode, labels::Aggregation},
    track::poller::{PollStats, Poller},
    track::{event::Event, live::LiveConfig},
};
use observer_common::Counter;
use pathemu::{ChildGuard, Namespace};

/// `n` connections to `addr`, each sending a byte and closed by both ends,
/// as fast as they go; returns the client cookies.
fn churn(addr: SocketAddr, listener: &TcpListener, n: usize) -> Vec<u64> {
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

/// `n` connections in `ns`, each end having sent a byte, held open.
fn held(ns: &Namespace, n: usize) -> Vec<(TcpStream, TcpStream)> {
    ns.run(|| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        (0..n)
            .map(|_| {
                let mut c = TcpStream::connect(addr).unwrap();
                let (mut s, _) = l.accept().unwrap();
                c.write_all(b"x").unwrap();
                s.write_all(b"y").unwrap();
                (c, s)
            })
            .collect()
    })
    .unwrap()
}

/// A poller whose ring buffer is one page (7 records of 560 bytes): far
/// fewer than a burst of closes makes in one 50 ms drain period.
fn one_page_poller(max_flows: u32) -> Poller {
    let probes = Probes::load(ProbeConfig {
        ringbuf_bytes: observer::args::page_size(),
        max_flows,
        ..ProbeConfig::default()
    })
    .unwrap();
    Poller::new(
        probes,
        Clock::new(kernel_hz().unwrap().hz),
        LiveConfig::default(),
        max_flows,
    )
}

/// Connections held open at once, closed in one burst by the tests.
const HELD: usize = 200;

/// A one-page poller with a flow map of `max_flows`, and [`HELD`]
/// connections open in a namespace of their own (its id), polled once.
fn burst(max_flows: u32) -> (Poller, Namespace, u32, Vec<(TcpStream, TcpStream)>) {
    let mut m = one_page_poller(max_flows);
    m.poll().unwrap();
    let ns = Namespace::standalone().unwrap();
    let netns = netns_id(&ns);
    let pairs = held(&ns, HELD);
    m.poll().unwrap();
    (m, ns, netns, pairs)
}

/// Flows of namespace `netns` open in `m`'s live.
fn open_in(m: &Poller, netns: u32) -> usize {
    m.live()
        .flows()
        .filter(|t| t.flow.netns == netns && !t.is_closed())
        .count()
}

/// Polls `m` until `done` holds of the closes seen so far in `netns` (by
/// cookie, with how many times each was reported) or `timeout` passes.
fn closes_in(
    m: &mut Poller,
    netns: u32,
    seen: &mut HashMap<u64, usize>,
    timeout: Duration,
    done: impl Fn(&HashMap<u64, usize>) -> bool,
) {
    let deadline = Instant::now() + timeout;
    loop {
        let (events, _) = m.poll().unwrap();
        for e in events {
            if let Event::Closed { flow, .. } = e
                && flow.netns == netns
            {
                *seen.entry(flow.cookie).or_default() += 1;
            }
        }
        if done(seen) || Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_full_ring_parks_every_close_in_the_flow_map() {
    if !root_or_skip("a_full_ring_parks_every_close_in_the_flow_map") {
        return;
    }
    let _serial = serial();
    let (mut m, ns, netns, pairs) = burst(ProbeConfig::default().max_flows);
    let open_in_ns = |m: &Poller| open_in(m, netns);
    assert_eq!(open_in_ns(&m), 2 * HELD);
    let before = m.counters;
    // All 400 ends close at once: the ring overflows.
    drop(pairs);
    std::thread::sleep(Duration::from_millis(100));
    let mut seen = HashMap::new();
    closes_in(&mut m, netns, &mut seen, Duration::from_secs(5), |s| {
        s.len() >= 2 * HELD
    });
    // Two more polls: nothing is reported twice.
    closes_in(&mut m, netns, &mut seen, Duration::ZERO, |_| false);
    closes_in(&mut m, netns, &mut seen, Duration::ZERO, |_| false);
    let delta = |c: Counter| m.counters[c as usize] - before[c as usize];
    let parked = delta(Counter::ClosesParked);
    assert!(parked > 0, "the ring never filled: nothing parked");
    assert_eq!(seen.len(), 2 * HELD, "closes reported ({parked} parked)");
    assert!(seen.values().all(|n| *n == 1), "a close reported twice");
    assert_eq!(delta(Counter::RingbufDrops), 0, "closes dropped");
    assert_eq!(m.probes().parked_evicted(), 0, "parked closes evicted");
    assert_eq!(open_in_ns(&m), 0, "flows left open in the live flows");
    // Read parked records are deleted from the map: none stays.
    let mut active = Vec::new();
    m.probes_mut().active(&mut active);
    let left: Vec<_> = active.iter().filter(|s| s.netns == netns).collect();
    assert!(
        left.is_empty(),
        "{} entries left in the flow map",
        left.len()
    );
    // The exporter says so.
    let mut cat = Catalogue::new(CatalogueConfig {
        aggregation: Aggregation::default(),
        max_label_sets: 100,
        top_flows: 0,
        top_peers: 0,
        attribution: observer::attribution::Config::default(),
        programs_attached: 4,
        filter: None,
        label_idle: Duration::ZERO,
    })
    .unwrap();
    let stats = PollStats {
        parked_evicted: m.probes().parked_evicted(),
        ..PollStats::default()
    };
    cat.update(&[], m.live(), &m.counters, &stats, m.max_flows);
    let text = encode(&cat.registry).unwrap();
    assert_eq!(
        metric(&text, "observer_close_records_parked_total").unwrap(),
        m.counters[Counter::ClosesParked as usize] as f64
    );
    // The agent goes on: later closes are each reported once.
    let later = ns
        .run(|| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            churn(l.local_addr().unwrap(), &l, 5)
        })
        .unwrap();
    closes_in(&mut m, netns, &mut seen, Duration::from_secs(3), |s| {
        later.iter().all(|c| s.contains_key(c))
    });
    for c in &later {
        assert_eq!(seen.get(c), Some(&1), "later close {c}");
    }
}

#[test]
fn parked_closes_the_lru_evicts_are_counted_and_forgotten() {
    if !root_or_skip("parked_closes_the_lru_evicts_are_counted_and_forgotten") {
        return;
    }
    let _serial = serial();
    // A map of 256 entries for 400 flows: closes of flows the LRU already
    // took are parked in new entries, which evict older parked ones.
    let (mut m, _ns, netns, pairs) = burst(256);
    let before = m.counters;
    let evicted_before = m.probes().parked_evicted();
    drop(pairs);
    std::thread::sleep(Duration::from_millis(100));
    let mut seen = HashMap::new();
    for _ in 0..4 {
        closes_in(&mut m, netns, &mut seen, Duration::ZERO, |_| false);
    }
    let evicted = m.probes().parked_evicted() - evicted_before;
    let parked =
        m.counters[Counter::ClosesParked as usize] - before[Counter::ClosesParked as usize];
    let reported = seen.len() as u64;
    eprintln!("parking: {reported} reported, {parked} parked, {evicted} counted evicted");
    assert!(parked > 0, "nothing parked");
    assert!(seen.values().all(|n| *n == 1), "a close reported twice");
    // Each close is reported or counted lost. Parked records are host-wide,
    // so other closes on the host may add to the evictions, never take
    // from them.
    assert!(
        reported + evicted >= 2 * HELD as u64 && reported <= 2 * HELD as u64,
        "{reported} closes reported and {evicted} counted evicted of {} ({parked} parked)",
        2 * HELD
    );
    assert!(
        evicted <= 2 * HELD as u64 - reported + 20,
        "{evicted} counted evicted, {reported} reported of {}",
        2 * HELD
    );
    // Flows whose close was lost do not stay open in the live flows.
    assert_eq!(
        open_in(&m, netns),
        0,
        "flows whose close was lost stay open"
    );
}

#[test]
fn agent_exports_parked_closes_and_goes_on() {
    if !root_or_skip("agent_exports_parked_closes_and_goes_on") {
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
            .args(["--log-every", "1s"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
    .unwrap();
    wait_attached(&before, attached_programs());
    let ns = Namespace::standalone().unwrap();
    // 300 connections (600 closes) in a burst, far more than one page of
    // ring buffer holds between two drains.
    drop(held(&ns, 300));
    let parked = |t: &str| metric(t, "observer_close_records_parked_total").unwrap_or(0.0);
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut text = scrape(port);
    let closed = |t: &str| sum(t, "observer_flows_closed_total", "");
    while (parked(&text) == 0.0 || closed(&text) < 600.0) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        text = scrape(port);
    }
    assert!(parked(&text) > 0.0, "no parked closes exported:\n{text}");
    assert!(
        closed(&text) >= 600.0,
        "{} closes counted of 600",
        closed(&text)
    );
    assert_eq!(kernel_event(&text, "observer_ring_drops_total"), 0.0);
    assert_eq!(
        metric(&text, "observer_parked_closes_evicted_total"),
        Some(0.0)
    );
    let health = http_get(port, "/healthz").unwrap_or_default();
    assert!(health.starts_with("ok: "), "{health}");
    // Let one summary line pass, then stop.
    std::thread::sleep(Duration::from_millis(2500));
    let out = child.stop(libc::SIGINT).unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let line = err
        .lines()
        .rev()
        .find(|l| l.contains("closes parked "))
        .unwrap_or_else(|| panic!("no summary line with the parked closes:\n{err}"));
    assert!(line.contains("closes lost 0"), "{line}");
    assert!(!line.contains("closes parked 0,"), "{line}");
    assert_eq!(leftover(&before), Vec::<u32>::new());
}
