//! The endpoint in this process, with clients on several loopback
//! addresses (all of 127/8 is loopback on Linux, so no root is needed)
//! and short header timeouts: the gate's decisions as a client meets them.

use crate::testkit::runtime::block_on;
use std::{collections::BTreeMap, net::Ipv4Addr};

use base64::Engine as _;
use tokio::{
    io::{AsyncReadExt as _, AsyncWriteExt as _},
    net::{TcpSocket, TcpStream},
};

use super::*;
use crate::sink::metrics::{auth::BasicAuth, registrar::Registrar};

/// The test user's password.
const PASSWORD: &str = "s3cret";

/// The endpoint on a free loopback port with `per_client` and `web`, a
/// header timeout of `shared` (2 s waiting in the reserve, as served), and
/// its registry.
async fn endpoint(
    per_client: usize,
    web: Web,
    shared: Duration,
) -> (SocketAddr, prometheus::Registry) {
    let timeouts = Timeouts {
        shared,
        ..Timeouts::default()
    };
    endpoint_with(per_client, web, timeouts).await
}

/// [`endpoint`] with all its `timeouts` given.
async fn endpoint_with(
    per_client: usize,
    web: Web,
    timeouts: Timeouts,
) -> (SocketAddr, prometheus::Registry) {
    let registry = prometheus::Registry::new();
    let refusals = super::super::endpoint::refusals(&Registrar {
        registry: &registry,
        aggregation: &[],
    })
    .unwrap();
    let web = Arc::new(web);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve(
        listener,
        Endpoint {
            registry: registry.clone(),
            health: Health::new(&[], Duration::from_secs(1)),
            gate: Gate::new(per_client, web.authenticates(), refusals),
            web,
            timeouts,
        },
    ));
    (addr, registry)
}

/// A header timeout no test step reaches: connections in shared slots
/// stay held throughout.
const LONG: Duration = Duration::from_secs(30);

/// Plain HTTP behind basic auth: user `prom`, password [`PASSWORD`].
fn with_auth() -> Web {
    let users = BTreeMap::from([("prom".to_string(), bcrypt::hash(PASSWORD, 4).unwrap())]);
    Web {
        auth: BasicAuth::new(&users),
        ..Web::plain()
    }
}

/// A connection to `server` from 127.0.0.`host`.
async fn connect(host: u8, server: SocketAddr) -> TcpStream {
    let s = TcpSocket::new_v4().unwrap();
    s.bind(SocketAddr::new(Ipv4Addr::new(127, 0, 0, host).into(), 0))
        .unwrap();
    s.connect(server).await.unwrap()
}

/// Whether the server closed `s` (it reads end of file within 50 ms).
async fn closed(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 1];
    matches!(
        tokio::time::timeout(Duration::from_millis(50), s.read(&mut b)).await,
        Ok(Ok(0) | Err(_))
    )
}

/// `GET path` on `s` with `password` (none: no Authorization), reading
/// until the server closes: the status and the body.
async fn get(s: &mut TcpStream, path: &str, password: Option<&str>) -> (u16, String) {
    let auth = password
        .map(|p| {
            let b64 = base64::engine::general_purpose::STANDARD.encode(format!("prom:{p}"));
            format!("Authorization: Basic {b64}\r\n")
        })
        .unwrap_or_default();
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\n{auth}Connection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut text = String::new();
    tokio::time::timeout(Duration::from_secs(5), s.read_to_string(&mut text))
        .await
        .expect("answered within 5 s")
        .unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head[9..12].parse().unwrap(), body.to_string())
}

/// The value of `observer_endpoint_connections_refused_total{reason}`.
fn refused(registry: &prometheus::Registry, reason: &str) -> u64 {
    let text = super::super::encode(registry).unwrap();
    let series = format!("observer_endpoint_connections_refused_total{{reason=\"{reason}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&series))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {series} in {text}"))
}

/// Waits up to 2 s for `reason`'s count to reach `n`.
async fn until_refused(registry: &prometheus::Registry, reason: &str, n: u64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    while refused(registry, reason) < n {
        assert!(tokio::time::Instant::now() < deadline, "{reason} never {n}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[test]
fn a_connection_that_sends_nothing_is_closed_after_the_header_timeout() {
    block_on(async {
        let (addr, _) = endpoint(4, Web::plain(), Duration::from_millis(300)).await;
        let t = tokio::time::Instant::now();
        let mut s = connect(2, addr).await;
        let mut buf = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut buf))
            .await
            .expect("closed")
            .unwrap();
        let took = t.elapsed();
        assert!(
            took >= Duration::from_millis(250) && took < Duration::from_secs(2),
            "{took:?}"
        );
    });
}

#[test]
fn a_client_at_its_cap_is_closed_unread_and_another_is_served() {
    block_on(async {
        let (addr, registry) = endpoint(3, Web::plain(), LONG).await;
        let mut mine = Vec::new();
        for _ in 0..5 {
            mine.push(connect(2, addr).await);
        }
        until_refused(&registry, "client_cap", 2).await;
        let mut held = 0;
        for s in &mut mine {
            if !closed(s).await {
                held += 1;
            }
        }
        assert_eq!(held, 3);
        // Another address, and the same one once a slot is free.
        let (status, body) = get(&mut connect(3, addr).await, "/metrics", None).await;
        assert_eq!(status, 200);
        assert!(
            body.contains("observer_endpoint_connections_refused_total{reason=\"client_cap\"} 2")
        );
        drop(mine);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(get(&mut connect(2, addr).await, "/", None).await.0, 200);
        assert_eq!(refused(&registry, "total_cap"), 0);
    });
}

#[test]
fn past_its_cap_only_a_request_that_authenticates_is_served() {
    block_on(async {
        let (addr, registry) = endpoint(1, with_auth(), LONG).await;
        let mut held = connect(2, addr).await;
        // Past the cap: the right password is served, and its connection
        // keeps its slot for the next request.
        let (status, body) = get(&mut connect(2, addr).await, "/metrics", Some(PASSWORD)).await;
        assert_eq!(status, 200, "{body}");
        assert!(body.contains("observer_endpoint_connections_refused_total"));
        // A wrong password, none, or an open path: 429, and closed.
        for password in [Some("wrong"), None] {
            for path in ["/metrics", "/healthz"] {
                let (status, body) = get(&mut connect(2, addr).await, path, password).await;
                assert_eq!(status, 429, "{path} {password:?}");
                assert_eq!(
                    body,
                    "127.0.0.2 has as many connections open as it allows; past that only \
                     requests that authenticate are served\n"
                );
            }
        }
        until_refused(&registry, "unauthenticated", 4).await;
        // One that sends nothing is closed after the reserve's timeout.
        let mut idle = connect(2, addr).await;
        let t = tokio::time::Instant::now();
        let mut buf = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(5), idle.read_to_end(&mut buf)).await;
        let took = t.elapsed();
        assert!(
            took >= Duration::from_millis(1500) && took < Duration::from_secs(4),
            "{took:?}"
        );
        until_refused(&registry, "unauthenticated", 5).await;
        assert!(!closed(&mut held).await, "the first stays held");
        assert_eq!(refused(&registry, "client_cap"), 0);
    });
}

#[test]
fn a_flood_past_the_cap_displaces_its_own_waiting_connections() {
    block_on(async {
        let (addr, registry) = endpoint(1, with_auth(), LONG).await;
        let _held = connect(2, addr).await;
        let mut flood = Vec::new();
        for _ in 0..20 {
            flood.push(connect(2, addr).await);
        }
        until_refused(&registry, "displaced", 16).await;
        // The four newest wait; a scraper past the cap still gets in.
        let mut open = 0;
        for s in &mut flood {
            if !closed(s).await {
                open += 1;
            }
        }
        assert_eq!(open, 4);
        let (status, _) = get(&mut connect(2, addr).await, "/metrics", Some(PASSWORD)).await;
        assert_eq!(status, 200);
        assert_eq!(refused(&registry, "displaced"), 17);
    });
}

/// A connection from 127.0.0.`host` with a 2 KiB receive buffer that
/// sends pipelined `GET /healthz` until the server stops taking them (its
/// answers fill both sides' buffers) and never reads.
async fn slow_reader(host: u8, server: SocketAddr) -> TcpStream {
    let s = TcpSocket::new_v4().unwrap();
    s.set_recv_buffer_size(2048).unwrap();
    s.bind(SocketAddr::new(Ipv4Addr::new(127, 0, 0, host).into(), 0))
        .unwrap();
    let s = s.connect(server).await.unwrap();
    let requests = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".repeat(100);
    let mut sent = 0;
    while let Ok(Ok(())) = tokio::time::timeout(Duration::from_millis(100), s.writable()).await {
        match s.try_write(&requests) {
            Ok(n) => sent += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert!(sent > 100_000, "the server took only {sent} bytes");
    s
}

/// Whether `GET /` from 127.0.0.`host` on a connection of its own is
/// answered 200.
async fn served(host: u8, server: SocketAddr) -> bool {
    let mut s = connect(host, server).await;
    let req = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    if s.write_all(req).await.is_err() {
        return false;
    }
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(2), s.read_to_end(&mut answer)).await;
    answer.starts_with(b"HTTP/1.1 200 ")
}

#[test]
fn a_client_that_does_not_read_its_answers_gives_its_slots_back() {
    block_on(async {
        let timeouts = Timeouts {
            shared: LONG,
            reserve: RESERVE_TIMEOUT,
            write: Duration::from_millis(500),
        };
        let (addr, registry) = endpoint_with(2, Web::plain(), timeouts).await;
        let t = tokio::time::Instant::now();
        let _stuck = [slow_reader(2, addr).await, slow_reader(2, addr).await];
        // Both held: a third from the same client is closed at accept.
        assert!(!served(2, addr).await);
        until_refused(&registry, "client_cap", 1).await;
        // Their answers stop moving; half a second later both are closed
        // and their client is served again, though they never closed.
        let mut tries = 0;
        while !served(2, addr).await {
            tries += 1;
            assert!(t.elapsed() < Duration::from_secs(5), "never served again");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let took = t.elapsed();
        assert!(tries >= 1 && took >= Duration::from_millis(450), "{took:?}");
        assert!(took < Duration::from_secs(3), "{took:?}");
    });
}
