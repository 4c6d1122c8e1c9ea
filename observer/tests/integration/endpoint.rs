//! The metrics endpoint under abuse, from loopback clients bounded in
//! count and time: garbage gets a 400 and the connection closed, a client
//! that never finishes its headers is closed after the header timeout,
//! connections past the cap are closed at once (and scrapes come back once
//! the idle ones time out), one client holding 600 connections gets its
//! cap of them and another client is served meanwhile, clients that send
//! requests and never read the answers lose their slots after 5 s, a
//! scraper behind a capped client's address is served past the cap if it
//! authenticates, and 100 concurrent scrapers are all answered within 100
//! lone scrapes' time (2 s at least).

use std::{
    io::{Read as _, Write as _},
    net::TcpStream,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use crate::support::{
    abuse::{self, PER_CLIENT, SCRAPE_TIMEOUT},
    http::{free_port, http_get, metric, wait_serving},
    process::BIN,
    root_or_skip,
    scratch::Scratch,
    serial,
};
use pathemu::ChildGuard;

/// `observer run` on a free loopback port, once it serves.
fn agent() -> (u16, ChildGuard) {
    agent_with(&[])
}

/// `observer run ARGS` on a free loopback port, once it serves.
fn agent_with(args: &[&str]) -> (u16, ChildGuard) {
    let port = free_port();
    let mut agent = ChildGuard::spawn(
        Command::new(BIN)
            .args(["run", "--interval", "500ms"])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
    .unwrap();
    wait_serving(port, &mut agent, Duration::from_secs(20));
    (port, agent)
}

/// Sends `bytes` and reads until the server closes (or 10 s pass).
fn exchange(port: u16, bytes: &[u8]) -> Vec<u8> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(bytes).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    out
}

#[test]
fn garbage_gets_a_400_and_nothing_else() {
    if !root_or_skip("garbage_gets_a_400_and_nothing_else") {
        return;
    }
    let _serial = serial();
    let (port, _agent) = agent();
    for (what, bytes, status) in [
        ("not HTTP", b"HELLO WORLD\r\n\r\n".to_vec(), "400"),
        (
            "a TLS hello",
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\x00\x00\r\n\r\n".to_vec(),
            "400",
        ),
        (
            "an unknown version",
            b"GET /metrics HTTP/9.9\r\nHost: x\r\n\r\n".to_vec(),
            "400",
        ),
        (
            "a 500 kB header",
            [
                b"GET /metrics HTTP/1.1\r\nX-A: ".as_slice(),
                &[b'a'; 500_000],
                b"\r\n\r\n",
            ]
            .concat(),
            "431",
        ),
    ] {
        let reply = String::from_utf8_lossy(&exchange(port, &bytes)).into_owned();
        assert!(
            reply.starts_with(&format!("HTTP/1.1 {status} ")),
            "{what}: {reply}"
        );
        // Headers, an empty body, and the connection closed (read_to_end
        // returned): nothing of /metrics.
        let (head, body) = reply.split_once("\r\n\r\n").unwrap();
        assert!(head.contains("content-length: 0"), "{what}: {reply}");
        assert!(body.is_empty(), "{what}: {reply}");
    }
    assert!(http_get(port, "/metrics").is_some_and(|t| t.contains("observer_build_info")));
}

#[test]
fn a_client_that_never_finishes_its_headers_is_closed() {
    if !root_or_skip("a_client_that_never_finishes_its_headers_is_closed") {
        return;
    }
    let _serial = serial();
    let (port, _agent) = agent();
    // A real scrape meanwhile is answered at once.
    let headers = b"GET /metrics HTTP/1.1\r\nHost: x\r\n";
    abuse::stalled_clients_are_closed(
        50,
        || abuse::stalled(port, headers),
        || http_get(port, "/metrics").is_some(),
    );
}

#[test]
fn connections_past_the_cap_are_closed_and_scrapes_come_back() {
    if !root_or_skip("connections_past_the_cap_are_closed_and_scrapes_come_back") {
        return;
    }
    let _serial = serial();
    let (port, agent) = agent();
    abuse::the_cap_holds(port, agent.id(), || http_get(port, "/healthz").is_some());
}

/// The refusals the agent counted for `reason`, in the `/metrics` `text`.
fn refused(text: &str, reason: &str) -> f64 {
    metric(
        text,
        &format!("observer_endpoint_connections_refused_total{{reason=\"{reason}\"}}"),
    )
    .unwrap_or_else(|| panic!("no refusals of {reason} in:\n{text}"))
}

#[test]
fn one_client_at_its_cap_leaves_another_served() {
    if !root_or_skip("one_client_at_its_cap_leaves_another_served") {
        return;
    }
    let _serial = serial();
    abuse::raise_nofile(2048);
    let (port, _agent) = agent();
    // 127.0.0.2 opens 600: the first 64 (the default cap) are held, the
    // rest closed as soon as they are accepted, before a byte is read.
    let mut flood: Vec<TcpStream> = (0..600).map(|_| abuse::connect_from(2, port)).collect();
    let refused_n = abuse::wait_closed(&flood[PER_CLIENT..], Duration::from_secs(5));
    assert_eq!(refused_n, 600 - PER_CLIENT, "closed at accept");
    // It keeps the 64 busy: each answers a request, which restarts its
    // header timeout, so they stay held through what follows.
    let held = abuse::busy(&mut flood[..PER_CLIENT]);
    assert_eq!(held, PER_CLIENT, "held of 600");
    // Another client's scrape, within Prometheus's scrape timeout.
    let (answer, took) = abuse::get_from(3, port, "/metrics", None);
    let (status, body) = answer.expect("a scrape from 127.0.0.3 answered");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("observer_build_info{"), "{body}");
    assert!(took < SCRAPE_TIMEOUT, "{took:?}");
    assert_eq!(refused(&body, "client_cap"), (600 - PER_CLIENT) as f64);
    assert_eq!(refused(&body, "total_cap"), 0.0);
    // Still at its cap: its 64 answer again, and one more of its
    // connections is closed unread (no answer, no byte).
    assert_eq!(abuse::busy(&mut flood[..PER_CLIENT]), PER_CLIENT);
    let (more, _) = abuse::get_from(2, port, "/metrics", None);
    assert!(more.is_none(), "{more:?}");
    eprintln!(
        "127.0.0.2: {held} of 600 held, {refused_n} closed at accept; 127.0.0.3's scrape: \
         {status} in {:.1} ms, {} bytes",
        took.as_secs_f64() * 1e3,
        body.len()
    );
}

/// A connection to the agent on `port` from 127.0.0.`host` with a 2 KiB
/// receive buffer that sends 600 pipelined `GET /healthz` at once and
/// never reads: its answers fill both sides' buffers and stop.
fn slow_reader(host: u8, port: u16) -> TcpStream {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.set_recv_buffer_size(2048).unwrap();
    let from = std::net::SocketAddr::from(([127, 0, 0, host], 0));
    s.bind(&from.into()).unwrap();
    let to = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    s.connect(&to.into()).unwrap();
    let mut s: TcpStream = s.into();
    s.set_nonblocking(true).unwrap();
    let _ = s.write(&b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".repeat(600));
    s
}

#[test]
fn clients_that_do_not_read_give_their_slots_back() {
    if !root_or_skip("clients_that_do_not_read_give_their_slots_back") {
        return;
    }
    let _serial = serial();
    abuse::raise_nofile(2048);
    let (port, _agent) = agent();
    // Eight clients, 62 connections each: every shared slot, each
    // connection stuck writing answers nobody reads.
    let start = Instant::now();
    let stuck: Vec<TcpStream> = (0..abuse::SHARED_SLOTS)
        .map(|i| slow_reader(2 + (i / 62) as u8, port))
        .collect();
    let (refused_at_first, _) = abuse::get_from(20, port, "/metrics", None);
    assert!(refused_at_first.is_none(), "{refused_at_first:?}");
    // No write moves for 5 s: each is closed, and 127.0.0.20 is served
    // again, within Prometheus's scrape timeout of the flood.
    let served = loop {
        let (answer, _) = abuse::get_from(20, port, "/metrics", None);
        if let Some((200, body)) = answer {
            break body;
        }
        assert!(
            start.elapsed() < SCRAPE_TIMEOUT,
            "127.0.0.20 not served {:?} after the slow readers came",
            start.elapsed()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let took = start.elapsed();
    assert!(took >= Duration::from_secs(4), "served after {took:?}");
    assert!(refused(&served, "total_cap") >= 1.0, "{served}");
    eprintln!(
        "{} connections that did not read held every shared slot; 127.0.0.20 served {:.1} s \
         after they came",
        stuck.len(),
        took.as_secs_f64()
    );
}

/// The password of the test's scraper `prom`.
const PASSWORD: &str = "s3cret";

/// The Authorization header of `prom` with `password`.
fn basic(password: &str) -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("prom:{password}"))
    )
}

#[test]
fn past_the_cap_a_scraper_that_authenticates_is_served() {
    if !root_or_skip("past_the_cap_a_scraper_that_authenticates_is_served") {
        return;
    }
    let _serial = serial();
    abuse::raise_nofile(1024);
    let dir = Scratch::new("endpoint", "reserve");
    let hash = bcrypt::hash(PASSWORD, 4).unwrap();
    let cfg = dir.file("web.yml", format!("basic_auth_users:\n  prom: '{hash}'\n"));
    let (port, _agent) = agent_with(&["--web-config", &cfg]);
    let auth = basic(PASSWORD);
    // 127.0.0.2 opens 100: 64 held; past its cap each waits in the slots
    // kept for scrapers that authenticate, the newest 4 at most (each
    // newer one displaces its oldest), closed 2 s later unauthenticated.
    let mut flood: Vec<TcpStream> = (0..100).map(|_| abuse::connect_from(2, port)).collect();
    assert_eq!(abuse::busy(&mut flood[..PER_CLIENT]), PER_CLIENT);
    let closed = abuse::wait_closed(&flood[PER_CLIENT..], Duration::from_secs(5));
    assert_eq!(closed, 100 - PER_CLIENT);
    assert_eq!(abuse::busy(&mut flood[..PER_CLIENT]), PER_CLIENT);
    // A scraper behind the same address: with the password it is served,
    // without it answered 429 and closed.
    let (answer, took) = abuse::get_from(2, port, "/metrics", Some(&auth));
    let (status, body) = answer.expect("the scraper at 127.0.0.2 answered");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("observer_build_info{"), "{body}");
    assert!(took < SCRAPE_TIMEOUT, "{took:?}");
    let (answer, _) = abuse::get_from(2, port, "/metrics", None);
    assert_eq!(
        answer,
        Some((
            429,
            "127.0.0.2 has as many connections open as it allows; past that only requests \
             that authenticate are served\n"
                .to_string()
        ))
    );
    assert_eq!(abuse::busy(&mut flood[..PER_CLIENT]), PER_CLIENT);
    let (answer, _) = abuse::get_from(3, port, "/metrics", Some(&auth));
    let text = answer.expect("a scrape from 127.0.0.3").1;
    assert_eq!(refused(&text, "displaced"), 32.0);
    assert_eq!(refused(&text, "unauthenticated"), 5.0);
    assert_eq!(refused(&text, "client_cap"), 0.0);
    eprintln!(
        "127.0.0.2: 64 of 100 held, 32 displaced, 4 timed out; its scraper served in {:.1} ms",
        took.as_secs_f64() * 1e3
    );
}

#[test]
fn a_hundred_concurrent_scrapers_are_answered_promptly() {
    if !root_or_skip("a_hundred_concurrent_scrapers_are_answered_promptly") {
        return;
    }
    let _serial = serial();
    let (port, _agent) = agent();
    // A lone scrape first, the unit of the bound: on two cores a few
    // milliseconds, under the kernel matrix's emulated CPU far more.
    let mut alone: Vec<Duration> = (0..5)
        .map(|_| {
            let t = Instant::now();
            assert!(http_get(port, "/metrics").is_some());
            t.elapsed()
        })
        .collect();
    alone.sort();
    // Each scraper on a loopback address of its own, as 100 Prometheus
    // servers would be: one address holds at most 64 connections.
    let slowest = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..100u8)
            .map(|i| {
                scope.spawn(move || {
                    let mut slowest = Duration::ZERO;
                    for _ in 0..5 {
                        let (answer, took) = abuse::get_from(10 + i, port, "/metrics", None);
                        let (status, text) = answer.expect("a scrape answered");
                        assert_eq!(status, 200);
                        assert!(text.contains("observer_build_info"));
                        slowest = slowest.max(took);
                    }
                    slowest
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap())
            .max()
            .unwrap()
    });
    // One thread encodes every answer: the last of 100 waits for the 99
    // before it, and no longer.
    let bound = (alone[2] * 100).max(Duration::from_secs(2));
    assert!(
        slowest < bound,
        "slowest scrape {slowest:?}, over {bound:?} (a lone one took {:?})",
        alone[2]
    );
}
