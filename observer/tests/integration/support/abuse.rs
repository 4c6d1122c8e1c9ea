//! The endpoint's abuse limits, checked the same way over plain HTTP
//! (`endpoint::`) and TLS (`tls::`): stalled clients closed after the
//! header timeout, and the connection cap.

use std::{
    io::{Read, Write as _},
    net::TcpStream,
    time::{Duration, Instant},
};

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

/// 600 idle clients on `port` of the agent `pid`: 512 are held (until the
/// header timeout), the rest closed as soon as they are accepted; once
/// the idle ones time out, `scrape` is answered again within 10 s.
pub fn the_cap_holds(port: u16, pid: u32, scrape: impl Fn() -> bool) {
    let base = fds(pid);
    let idle: Vec<TcpStream> = (0..600)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let held = fds(pid) - base;
    assert!(
        (500..=512).contains(&held),
        "{held} connections held past the {base} fds at start"
    );
    let mut closed_at_once = 0;
    for mut s in idle.iter() {
        s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let mut b = [0u8; 1];
        if matches!(s.read(&mut b), Ok(0)) {
            closed_at_once += 1;
        }
    }
    assert!(
        closed_at_once >= 88,
        "{closed_at_once} of 600 closed at once"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !scrape() {
        assert!(Instant::now() < deadline, "no answer 10 s after the flood");
        std::thread::sleep(Duration::from_millis(200));
    }
    drop(idle);
}
