//! Talking to `observer run`: a free port to listen on, a plain HTTP GET,
//! and series read from the Prometheus text it serves.

use std::{
    io::{Read as _, Write as _},
    net::{TcpListener, TcpStream},
    time::{Duration, Instant},
};

use pathemu::ChildGuard;

/// A port on 127.0.0.1 nothing listens on (at the time of the call).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` from 127.0.0.1:port: the body of a 200 answer, else None.
pub fn http_get(port: u16, path: &str) -> Option<String> {
    http_get_any(port, path).and_then(|(status, body)| (status == 200).then_some(body))
}

/// `GET path` from 127.0.0.1:port: the status and body of any answer.
pub fn http_get_any(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_string()))
}

/// Waits until the agent `child` answers `/healthz` with `ok` on `port`;
/// fails the test if it exits first or `timeout` passes.
pub fn wait_serving(port: u16, child: &mut ChildGuard, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while !http_get(port, "/healthz").is_some_and(|t| t.starts_with("ok: ")) {
        assert!(Instant::now() < deadline, "observer run never served");
        if !child.running() {
            panic!("observer run exited:\n{}", child.stderr_after_exit());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The text of `/metrics` on `port`, waiting up to 10 s for an answer.
pub fn scrape(port: u16) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(t) = http_get(port, "/metrics") {
            return t;
        }
        assert!(Instant::now() < deadline, "no /metrics on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The value of the series `name{labels}` (exactly as printed) in `text`.
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|v| v.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
}

/// Sum of every series of `name` whose labels contain `label` ("" for all).
pub fn sum(text: &str, name: &str, label: &str) -> f64 {
    text.lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|r| r.starts_with('{') || r.starts_with(' '))
        })
        .filter(|l| l.contains(label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The kernel self-counter metric `name` (`observer_ring_drops_total`, ...)
/// in `text` (0 if absent).
pub fn kernel_event(text: &str, name: &str) -> f64 {
    metric(text, name).unwrap_or(0.0)
}
