//! The endpoint's abuse limits, checked the same way over plain HTTP
//! (`endpoint::`) and TLS (`tls::`): stalled clients closed after the
//! header timeout, and the connection caps; and clients on loopback
//! addresses of their own (all of 127/8 is loopback on Linux), each a
//! client of its own to the per-client cap.

use std::{
    io::{Read, Write as _},
    net::{Ipv4Addr, SocketAddr, TcpStream},
    time::{Duration, Instant},
};

/// Slots open to any client (the endpoint's 512 less the 16 kept for
/// scrapers that authenticate).
pub const SHARED_SLOTS: usize = 496;

/// The default `--max-conns-per-client`.
pub const PER_CLIENT: usize = 64;

/// Prometheus's default scrape timeout: the bar a scrape beside an
/// abuser must pass.
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(10);

/// Raises this process's open-file limit to its hard limit, which must
/// hold `needed` descriptors (a test holding 600 connections needs more
/// than the usual soft limit of 1024 leaves beside cargo's own).
pub fn raise_nofile(needed: u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the struct we own.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim), 0);
        lim.rlim_cur = lim.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
    assert!(
        lim.rlim_max >= needed,
        "the hard open-file limit {} is under the {needed} this test holds: raise it (ulimit -Hn)",
        lim.rlim_max
    );
}

/// A connection to 127.0.0.1:`port` from 127.0.0.`host`.
pub fn connect_from(host: u8, port: u16) -> TcpStream {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    let from = SocketAddr::new(Ipv4Addr::new(127, 0, 0, host).into(), 0);
    s.bind(&from.into()).unwrap();
    let to = SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port);
    s.connect(&to.into()).unwrap();
    s.into()
}

/// Whether the server has closed `s` (end of file or a reset waiting
/// to be read), without blocking.
pub fn is_closed(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut b = [0u8; 1];
    let closed = match s.peek(&mut b) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    };
    s.set_nonblocking(false).unwrap();
    closed
}

/// Waits up to `within` for every one of `conns` to be closed by the
/// server; returns how many are.
pub fn wait_closed(conns: &[TcpStream], within: Duration) -> usize {
    let deadline = Instant::now() + within;
    loop {
        let n = conns.iter().filter(|s| is_closed(s)).count();
        if n == conns.len() || Instant::now() >= deadline {
            return n;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends `GET path` on the keep-alive connection `s` and reads one
/// answer: its status and body; None if the server closed it instead.
pub fn ask(s: &mut TcpStream, path: &str, authorization: Option<&str>) -> Option<(u16, String)> {
    let auth = authorization
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    s.set_read_timeout(Some(SCRAPE_TIMEOUT)).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}\r\n").ok()?;
    let mut got = Vec::new();
    let mut b = [0u8; 4096];
    let end = loop {
        if let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match s.read(&mut b) {
            Ok(0) | Err(_) => return None,
            Ok(n) => got.extend_from_slice(&b[..n]),
        }
    };
    let head = String::from_utf8_lossy(&got[..end]).into_owned();
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let len: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(str::to_string)
        })?
        .trim()
        .parse()
        .ok()?;
    while got.len() < end + len {
        match s.read(&mut b) {
            Ok(0) | Err(_) => return None,
            Ok(n) => got.extend_from_slice(&b[..n]),
        }
    }
    Some((
        status,
        String::from_utf8_lossy(&got[end..end + len]).into_owned(),
    ))
}

/// One `GET path` from 127.0.0.`host` on a connection of its own, with
/// `authorization`: status and body, and how long the answer took.
pub fn get_from(
    host: u8,
    port: u16,
    path: &str,
    authorization: Option<&str>,
) -> (Option<(u16, String)>, Duration) {
    let t = Instant::now();
    let mut s = connect_from(host, port);
    (ask(&mut s, path, authorization), t.elapsed())
}

/// How many of `conns` answer `GET /healthz` (keep-alive): each answer
/// also restarts its header timeout, as a busy abuser's requests do.
pub fn busy(conns: &mut [TcpStream]) -> usize {
    conns
        .iter_mut()
        .filter_map(|s| ask(s, "/healthz", None))
        .count()
}

/// Open file descriptors of process `pid`.
fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// A client on `port` that sends `first` and then nothing, reading with
/// a 15 s timeout.
pub fn stalled(port: u16, first: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.write_all(first).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    s
}

/// `n` clients that `open` connects and stalls: `scrape` (a real client,
/// true when answered) is answered within 2 s meanwhile, and each stalled
/// one is closed 4 to 9 s after it connected (the header timeout is 5 s).
pub fn stalled_clients_are_closed<S: Read>(
    n: usize,
    open: impl Fn() -> S,
    scrape: impl Fn() -> bool,
) {
    let start = Instant::now();
    let mut slow: Vec<S> = (0..n).map(|_| open()).collect();
    let t = Instant::now();
    assert!(scrape(), "a scrape beside the stalled clients");
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    for s in &mut slow {
        let mut buf = Vec::new();
        // The server closes it (maybe after a 408): the read ends.
        let _ = s.read_to_end(&mut buf);
    }
    let took = start.elapsed();
    assert!(
        took >= Duration::from_secs(4) && took < Duration::from_secs(9),
        "stalled clients closed after {took:?} (header timeout 5 s)"
    );
}

/// 600 idle clients on `port` of the agent `pid`, 60 on each of ten
/// loopback addresses (under the per-client cap): the first
/// [`SHARED_SLOTS`] are held (until the header timeout), the rest closed
/// as soon as they are accepted; once the idle ones time out, `scrape` is
/// answered again within 10 s.
pub fn the_cap_holds(port: u16, pid: u32, scrape: impl Fn() -> bool) {
    raise_nofile(2048);
    let base = fds(pid);
    let idle: Vec<TcpStream> = (0..600)
        .map(|i| connect_from(2 + (i / 60) as u8, port))
        .collect();
    let closed = wait_closed(&idle[SHARED_SLOTS..], Duration::from_secs(3));
    assert_eq!(closed, 600 - SHARED_SLOTS, "closed at once of 600");
    let held = idle[..SHARED_SLOTS]
        .iter()
        .filter(|s| !is_closed(s))
        .count();
    assert_eq!(held, SHARED_SLOTS, "held of 600");
    let agent_held = fds(pid) - base;
    assert!(
        (SHARED_SLOTS - 12..=SHARED_SLOTS).contains(&agent_held),
        "{agent_held} connections held past the {base} fds at start"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !scrape() {
        assert!(Instant::now() < deadline, "no answer 10 s after the flood");
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(idle);
}
