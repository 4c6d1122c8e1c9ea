//! Helpers shared by the root integration tests: skipping when not root,
//! UDP echo and blast tools with sockets opened inside a path's namespaces.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
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

/// A socket's current MSS (`TCP_MAXSEG`: payload bytes per full-sized
/// segment, TCP options such as timestamps excluded).
pub fn tcp_mss(stream: &TcpStream) -> u32 {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes an int into `v`.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_MAXSEG,
            (&raw mut v).cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0, "getsockopt TCP_MAXSEG");
    u32::try_from(v).unwrap()
}

/// A connected TCP pair across `path`: (the client in A, the server's
/// accepted socket in B), using B's address `to_ip` (IPv4 or IPv6).
pub fn tcp_pair(path: &Path, to_ip: std::net::IpAddr) -> (TcpStream, TcpStream) {
    let listener = path
        .run_in(Side::B, move || {
            TcpListener::bind(SocketAddr::new(to_ip, 0))
        })
        .unwrap()
        .unwrap();
    let to = listener.local_addr().unwrap();
    let client = path
        .run_in(Side::A, move || TcpStream::connect(to))
        .unwrap()
        .unwrap();
    let (server, _) = listener.accept().unwrap();
    (client, server)
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

/// Waits until `direction` of `path` has read at least `sent` packets and
/// has nothing in flight (or `limit` passes): unlike [`drain`], safe to call
/// right after the last send, before the relay has read that packet.
pub fn drain_sent(path: &Path, direction: Direction, sent: u64, limit: Duration) -> LinkStats {
    let start = Instant::now();
    loop {
        let s = path.stats(direction);
        if (s.packets_in >= sent && s.packets_in_flight == 0) || start.elapsed() > limit {
            return s;
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// Prints a direction's counters and lateness summary (shown with --nocapture).
pub fn report(label: &str, s: &LinkStats) {
    eprintln!(
        "{label}: in {} fwd {} ({} B) qdrop {} ldrop {} pdrop {} sdrop {} odrop {} bigdrop {} \
         reordered {} werr {} late mean {} us max {} us hist {:?}",
        s.packets_in,
        s.packets_forwarded,
        s.bytes_forwarded,
        s.packets_dropped_queue,
        s.packets_dropped_loss,
        s.packets_dropped_police,
        s.packets_dropped_shaper,
        s.packets_dropped_outage,
        s.packets_dropped_oversize,
        s.packets_reordered,
        s.write_errors,
        s.mean_lateness_ns() / 1000,
        s.lateness_max_ns / 1000,
        s.lateness_hist
    );
}

/// What [`bulk_tcp`] measured in its window.
pub struct Bulk {
    /// Payload bytes the receiver read in the window.
    pub bytes: u64,
    /// The window's length.
    pub elapsed: Duration,
    /// The forward direction's counters over the window.
    pub forward: LinkStats,
}

impl Bulk {
    /// Goodput over the window (bits/s).
    pub fn goodput_bps(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.elapsed.as_secs_f64()
    }
}

/// Sends as fast as TCP allows from `sender` (a thread) to `receiver` for
/// `warmup`, then counts what arrives over the following `measure`.
pub fn bulk_tcp(
    path: &Path,
    sender: TcpStream,
    mut receiver: TcpStream,
    warmup: Duration,
    measure: Duration,
) -> Bulk {
    use std::io::{Read, Write};
    let done = Arc::new(AtomicBool::new(false));
    let stop = Arc::clone(&done);
    let writer = thread::spawn(move || {
        let mut sender = sender;
        let chunk = vec![0x5au8; 64 * 1024];
        while !stop.load(Ordering::Relaxed) {
            if sender.write_all(&chunk).is_err() {
                break;
            }
        }
    });
    receiver
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buf = vec![0u8; 256 * 1024];
    let start = Instant::now();
    while start.elapsed() < warmup {
        let _ = receiver.read(&mut buf);
    }
    let window = Instant::now();
    let before = path.stats(Direction::Forward);
    let mut bytes = 0u64;
    while window.elapsed() < measure {
        bytes += receiver.read(&mut buf).unwrap_or(0) as u64;
    }
    let elapsed = window.elapsed();
    let forward = path.stats(Direction::Forward).since(&before);
    done.store(true, Ordering::Relaxed);
    drop(receiver);
    writer.join().unwrap();
    Bulk {
        bytes,
        elapsed,
        forward,
    }
}

/// One numbered datagram as [`Numbered`] saw it arrive.
#[derive(Debug, Clone, Copy)]
pub struct Arrival {
    /// Its number (0, 1, ... in sending order).
    pub seq: u32,
    /// When it was sent ([`pathemu::now_ns`], ns).
    pub sent_ns: u64,
    /// When it was received (ns, same clock).
    pub recv_ns: u64,
}

impl Arrival {
    /// Its one-way delay (ns).
    pub fn one_way_ns(&self) -> u64 {
        self.recv_ns.saturating_sub(self.sent_ns)
    }
}

/// Sends `count` datagrams of `payload` bytes (at least 12) from `sock` to
/// `to`, numbered from 0 and stamped with their send time
/// ([`pathemu::now_ns`]), one every `gap` on an absolute schedule (no drift).
pub fn send_numbered(sock: &UdpSocket, to: SocketAddr, count: u32, payload: usize, gap: Duration) {
    assert!(payload >= 12);
    realtime_thread();
    let mut data = vec![0u8; payload];
    let start = Instant::now();
    for seq in 0..count {
        if let Some(wait) = (gap * seq).checked_sub(start.elapsed()) {
            thread::sleep(wait);
        }
        data[..4].copy_from_slice(&seq.to_be_bytes());
        data[4..12].copy_from_slice(&pathemu::now_ns().to_be_bytes());
        sock.send_to(&data, to).unwrap();
    }
}

/// Records numbered datagrams ([`send_numbered`]) arriving on a socket, on
/// its own thread, in arrival order, until finished.
pub struct Numbered {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<Arrival>>>,
}

impl Numbered {
    /// Starts recording what `sock` receives.
    pub fn start(sock: UdpSocket) -> Numbered {
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = thread::spawn(move || {
            realtime_thread();
            let mut seen = Vec::new();
            let mut buf = [0u8; 2048];
            while !flag.load(Ordering::Relaxed) {
                if let Ok(n) = sock.recv(&mut buf) {
                    let recv_ns = pathemu::now_ns();
                    if n >= 12 {
                        seen.push(Arrival {
                            seq: u32::from_be_bytes(buf[..4].try_into().unwrap()),
                            sent_ns: u64::from_be_bytes(buf[4..12].try_into().unwrap()),
                            recv_ns,
                        });
                    }
                }
            }
            seen
        });
        Numbered {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops recording and returns the arrivals in arrival order.
    pub fn finish(mut self) -> Vec<Arrival> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Numbered {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The number of arrivals that came after a higher-numbered one (overtaken).
pub fn overtaken(arrivals: &[Arrival]) -> usize {
    let mut highest = None;
    let mut late = 0;
    for a in arrivals {
        if highest.is_some_and(|h| a.seq < h) {
            late += 1;
        }
        highest = Some(highest.map_or(a.seq, |h: u32| h.max(a.seq)));
    }
    late
}

/// The `q`-quantile (0..=1) of `values` (sorted copy; nearest rank below).
pub fn quantile(values: &[u64], q: f64) -> u64 {
    let mut v = values.to_vec();
    v.sort_unstable();
    v[((v.len() - 1) as f64 * q) as usize]
}
