//! The soak's load: paced connection churn counted by its own generator,
//! bulk flows held open, and CPU hogs that starve the agent.

use std::{
    collections::BTreeMap,
    io::{Read as _, Write as _},
    net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream},
    sync::{
        Arc, Mutex,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use pathemu::Namespace;
use pathemu::sockets::{ConnectError, connect_from};

/// Churn connects from 127.77.0.2 to 127.77.0.1: both ends' flows carry
/// remote subnet 127.77.0.0/16, which nothing else on the host uses.
pub const CHURN_SERVER: Ipv4Addr = Ipv4Addr::new(127, 77, 0, 1);
const CHURN_CLIENT: Ipv4Addr = Ipv4Addr::new(127, 77, 0, 2);
/// Bulk flows on 127.78.0.1.
const BULK_SERVER: Ipv4Addr = Ipv4Addr::new(127, 78, 0, 1);
const SERVER_PORTS: usize = 4;
const CLIENT_THREADS: usize = 2;
const BULK_FLOWS: usize = 3;
/// What each churn client sends before it closes.
pub const REQUEST: &[u8] = b"GET / HTTP/1.0\r\n\r\n";

/// What the generator counts of its own work, independent of observer.
#[derive(Default)]
pub struct Counts {
    pub stop: AtomicBool,
    /// Connections made and closed by both ends: two flows each.
    pub made: AtomicU64,
    /// Failed before connect(): no flow.
    pub failed_before: AtomicU64,
    /// Failed in connect(): one flow, opened and closed.
    pub failed_in_connect: AtomicU64,
    /// Requests ([`REQUEST`]) written whole: as many bytes each reach the
    /// server.
    pub requests: AtomicU64,
    pub errors: Mutex<BTreeMap<String, u64>>,
    pub bulk_bytes: AtomicU64,
}

impl Counts {
    /// Flows the churn made so far: both ends of every connection, and the
    /// client socket of each connect that failed (SYN_SENT, then closed).
    pub fn flows(&self) -> u64 {
        2 * self.made.load(Ordering::Relaxed) + self.failed_in_connect.load(Ordering::Relaxed)
    }
}

/// The running load; [`Load::stop`] ends it and joins its threads.
pub struct Load {
    pub counts: Arc<Counts>,
    threads: Vec<JoinHandle<()>>,
}

impl Load {
    /// Starts churn at `rate` connections a second (all client threads
    /// together) and the bulk flows, all in `ns`, and `hogs` threads that
    /// spin on a CPU each.
    pub fn start(ns: &Namespace, rate: u64, hogs: usize) -> Load {
        let counts = Arc::new(Counts::default());
        let mut threads = Vec::new();
        // Churn servers: accept, read the request to EOF, close.
        let mut servers = Vec::new();
        for _ in 0..SERVER_PORTS {
            let l = ns
                .run(|| TcpListener::bind((CHURN_SERVER, 0)).unwrap())
                .unwrap();
            servers.push(l.local_addr().unwrap());
            l.set_nonblocking(true).unwrap();
            let counts = Arc::clone(&counts);
            threads.push(std::thread::spawn(move || serve(&l, &counts)));
        }
        // Churn clients, spawned from a thread in the namespace so they
        // live there.
        for t in 0..CLIENT_THREADS {
            let counts = Arc::clone(&counts);
            let servers = servers.clone();
            let per_thread = (rate / CLIENT_THREADS as u64).max(1);
            threads.push(
                ns.run(|| {
                    std::thread::spawn(move || connect_paced(&servers, t, per_thread, &counts))
                })
                .unwrap(),
            );
        }
        threads.extend(bulk(ns, &counts));
        for _ in 0..hogs {
            let counts = Arc::clone(&counts);
            threads.push(std::thread::spawn(move || {
                while !counts.stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            }));
        }
        Load { counts, threads }
    }

    /// Stops every thread and waits for them.
    pub fn stop(self) -> Arc<Counts> {
        self.counts.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            t.join().unwrap();
        }
        self.counts
    }
}

fn serve(l: &TcpListener, counts: &Counts) {
    let mut buf = [0u8; 256];
    while !counts.stop.load(Ordering::Relaxed) {
        match l.accept() {
            Ok((mut c, _)) => {
                c.set_nonblocking(false).unwrap();
                while matches!(c.read(&mut buf), Ok(n) if n > 0) {}
            }
            Err(_) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

/// Connects, sends a request and closes, `per_thread` times a second.
fn connect_paced(servers: &[SocketAddr], t: usize, per_thread: u64, counts: &Counts) {
    let start = Instant::now();
    let mut n: u64 = 0;
    while !counts.stop.load(Ordering::Relaxed) {
        let due = start + Duration::from_micros(n * 1_000_000 / per_thread);
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let to = servers[(n as usize + t) % servers.len()];
        n += 1;
        match connect_from(CHURN_CLIENT, to) {
            Ok(mut c) => {
                if c.write_all(REQUEST).is_ok() {
                    counts.requests.fetch_add(1, Ordering::Relaxed);
                }
                drop(c);
                counts.made.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                let e = match e {
                    ConnectError::Before(e) => {
                        counts.failed_before.fetch_add(1, Ordering::Relaxed);
                        format!("before connect: {e}")
                    }
                    ConnectError::InConnect(e) => {
                        counts.failed_in_connect.fetch_add(1, Ordering::Relaxed);
                        format!("in connect: {e}")
                    }
                };
                if let Ok(mut m) = counts.errors.lock() {
                    *m.entry(e).or_default() += 1;
                }
            }
        }
    }
}

/// Bulk flows held open all along, 256 KiB every 10 ms each.
fn bulk(ns: &Namespace, counts: &Arc<Counts>) -> Vec<JoinHandle<()>> {
    let mut threads = Vec::new();
    let listener = ns
        .run(|| TcpListener::bind((BULK_SERVER, 0)).unwrap())
        .unwrap();
    let addr = listener.local_addr().unwrap();
    for _ in 0..BULK_FLOWS {
        let writer = Arc::clone(counts);
        let mut c = ns.run(|| TcpStream::connect(addr).unwrap()).unwrap();
        threads.push(std::thread::spawn(move || {
            let chunk = vec![7u8; 256 * 1024];
            while !writer.stop.load(Ordering::Relaxed) {
                // The reader may stop first at the end.
                if c.write_all(&chunk).is_err() {
                    break;
                }
                writer
                    .bulk_bytes
                    .fetch_add(chunk.len() as u64, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        }));
        let (mut s, _) = listener.accept().unwrap();
        let reader = Arc::clone(counts);
        threads.push(std::thread::spawn(move || {
            let mut buf = vec![0u8; 256 * 1024];
            while !reader.stop.load(Ordering::Relaxed) {
                if !matches!(s.read(&mut buf), Ok(n) if n > 0) {
                    break;
                }
            }
        }));
    }
    threads
}
