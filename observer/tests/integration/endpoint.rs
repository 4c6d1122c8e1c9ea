//! The metrics endpoint under abuse, from loopback clients bounded in
//! count and time: garbage gets a 400 and the connection closed, a client
//! that never finishes its headers is closed after the header timeout,
//! connections past the cap are closed at once (and scrapes come back once
//! the idle ones time out), and 100 concurrent scrapers are all answered
//! within 100 lone scrapes' time (2 s at least).

use std::{
    io::{Read as _, Write as _},
    net::TcpStream,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use crate::support::{
    abuse,
    http::{free_port, http_get, wait_serving},
    process::BIN,
    root_or_skip, serial,
};
use pathemu::ChildGuard;

/// `observer run` on a free loopback port, once it serves.
fn agent() -> (u16, ChildGuard) {
    let port = free_port();
    let mut agent = ChildGuard::spawn(
        Command::new(BIN)
            .args(["run", "--interval", "500ms"])
            .args(["--listen", &format!("127.0.0.1:{port}")])
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
    let slowest = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..100)
            .map(|_| {
                scope.spawn(move || {
                    let mut slowest = Duration::ZERO;
                    for _ in 0..5 {
                        let t = Instant::now();
                        let text = http_get(port, "/metrics").expect("a scrape answered");
                        assert!(text.contains("observer_build_info"));
                        slowest = slowest.max(t.elapsed());
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
