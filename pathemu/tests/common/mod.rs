//! Helpers shared by the root integration tests: skipping when not root,
//! UDP echo and blast tools with sockets opened inside a path's namespaces.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use pathemu::{Direction, LinkStats, Path, Side};

/// True when running as root; otherwise prints why `test` is skipped.
pub fn root_or_skip(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipped {test}: needs root");
    }
    root
}

/// Gives the calling thread SCHED_FIFO priority 5 (below the relay's 10), so
/// that measuring threads are not delayed by other load on the machine.
pub fn realtime_thread() {
    let param = libc::sched_param { sched_priority: 5 };
    // SAFETY: pid 0 is the calling thread; `param` is valid.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
}

/// Binds a UDP socket inside `side` of `path` to `addr:0`.
pub fn udp_in(path: &Path, side: Side, addr: std::net::IpAddr) -> UdpSocket {
    path.run_in(side, move || UdpSocket::bind(SocketAddr::new(addr, 0)))
        .unwrap()
        .unwrap()
}

/// Raises a socket's receive buffer to `bytes` (SO_RCVBUFFORCE, root).
pub fn force_rcvbuf(sock: &UdpSocket, bytes: i32) {
    // SAFETY: setsockopt with a valid int option value.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&raw const bytes).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "SO_RCVBUFFORCE");
}

/// A UDP echo server on its own thread; stops when dropped.
pub struct Echo {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Echo {
    /// Starts an echo server on `side`'s address (IPv4 or IPv6).
    pub fn start(path: &Path, side: Side, ip: std::net::IpAddr) -> Echo {
        let sock = udp_in(path, side, ip);
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let addr = sock.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = thread::spawn(move || {
            realtime_thread();
            let mut buf = [0u8; 2048];
            while !flag.load(Ordering::Relaxed) {
                if let Ok((n, from)) = sock.recv_from(&mut buf) {
                    let _ = sock.send_to(&buf[..n], from);
                }
            }
        });
        Echo {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Sends `count` probes from `client` to `server` one at a time, `gap` apart,
/// and returns the round-trip times of those answered within 1 s.
pub fn probe_rtts(
    client: &UdpSocket,
    server: SocketAddr,
    count: u32,
    gap: Duration,
) -> Vec<Duration> {
    client
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let mut rtts = Vec::new();
    let mut buf = [0u8; 64];
    for seq in 0..count {
        let sent = Instant::now();
        client.send_to(&seq.to_be_bytes(), server).unwrap();
        // Skip stale answers to earlier probes.
        while let Ok((n, _)) = client.recv_from(&mut buf) {
            if n == 4 && buf[..4] == seq.to_be_bytes() {
                rtts.push(sent.elapsed());
                break;
            }
        }
        thread::sleep(gap);
    }
    rtts
}

/// The median of `values` (sorted copy).
pub fn median(values: &[Duration]) -> Duration {
    let mut v = values.to_vec();
    v.sort();
    v[v.len() / 2]
}

/// Counts datagrams and bytes arriving on a socket, on its own thread,
/// until stopped (reads time out every 50 ms to check the flag).
pub struct Sink {
    pub packets: Arc<AtomicU64>,
    pub bytes: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Sink {
    /// Starts counting what `sock` receives.
    pub fn start(sock: UdpSocket) -> Sink {
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let packets = Arc::new(AtomicU64::new(0));
        let bytes = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, b, s) = (Arc::clone(&packets), Arc::clone(&bytes), Arc::clone(&stop));
        let thread = thread::spawn(move || {
            let mut buf = [0u8; 2048];
            while !s.load(Ordering::Relaxed) {
                if let Ok(n) = sock.recv(&mut buf) {
                    p.fetch_add(1, Ordering::Relaxed);
                    b.fetch_add(n as u64, Ordering::Relaxed);
                }
            }
        });
        Sink {
            packets,
            bytes,
            stop,
            thread: Some(thread),
        }
    }

    /// Stops the counter thread and returns (datagrams, payload bytes).
    pub fn finish(mut self) -> (u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        (
            self.packets.load(Ordering::Relaxed),
            self.bytes.load(Ordering::Relaxed),
        )
    }
}

/// Sends `count` datagrams of `payload` bytes from `sock` to `to`, paced at
/// `rate_bps` of IP bytes (payload + 28 header bytes) in bursts of `burst`;
/// returns the elapsed time from the first to the last send.
pub fn blast(
    sock: &UdpSocket,
    to: SocketAddr,
    count: u64,
    payload: usize,
    rate_bps: u64,
    burst: u64,
) -> Duration {
    let data = vec![0xa5u8; payload];
    let ip_bits = ((payload + 28) * 8) as f64;
    let start = Instant::now();
    let mut sent = 0u64;
    while sent < count {
        for _ in 0..burst.min(count - sent) {
            // ENOBUFS on a full device queue is retried after a pause.
            while sock.send_to(&data, to).is_err() {
                thread::sleep(Duration::from_micros(200));
            }
            sent += 1;
        }
        let due = Duration::from_secs_f64(sent as f64 * ip_bits / rate_bps as f64);
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            thread::sleep(wait);
        }
    }
    start.elapsed()
}

/// Waits until `direction` of `path` has nothing in flight (or `limit` passes).
pub fn drain(path: &Path, direction: Direction, limit: Duration) -> LinkStats {
    let start = Instant::now();
    loop {
        let s = path.stats(direction);
        if s.packets_in_flight == 0 || start.elapsed() > limit {
            return s;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Prints a direction's counters and lateness summary (shown with --nocapture).
pub fn report(label: &str, s: &LinkStats) {
    eprintln!(
        "{label}: in {} fwd {} ({} B) qdrop {} ldrop {} werr {} late mean {} us max {} us hist {:?}",
        s.packets_in,
        s.packets_forwarded,
        s.bytes_forwarded,
        s.packets_dropped_queue,
        s.packets_dropped_loss,
        s.write_errors,
        s.mean_lateness_ns() / 1000,
        s.lateness_max_ns / 1000,
        s.lateness_hist
    );
}
