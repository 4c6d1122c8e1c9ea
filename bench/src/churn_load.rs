//! The connection-churn generator: short loopback connections at a paced
//! rate, inside a namespace tuned for it. Each connection sends one byte
//! and closes (FIN); the server reads to EOF and closes. Every socket that
//! reached `connect()` is a flow observer must report closed: both ends of
//! a connection made, and the client end of a connect that failed.

use std::{
    io::Read as _,
    net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener},
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
    time::{Duration, Instant},
};

use anyhow::Context as _;
use pathemu::sockets::{ConnectError, connect_from};

use super::env::Netns;

/// Client threads pacing the connects.
const CLIENTS: usize = 4;
/// Listening ports, each with its own accepting threads.
const LISTENERS: usize = 4;
/// Accepting threads per listening port.
const ACCEPTORS: usize = 2;
/// Server address; clients bind 127.88.0.2..=127.88.0.9 (one per thread),
/// so each thread has its own ephemeral port space.
const SERVER: Ipv4Addr = Ipv4Addr::new(127, 88, 0, 1);

/// What one run made.
#[derive(Clone, Copy, Debug, Default)]
pub struct Made {
    /// Connections established (two flows each).
    pub connections: u64,
    /// Connects that failed in `connect()` (one flow each: the client's).
    pub failed_in_connect: u64,
    /// Sockets that failed before `connect()` (no flow).
    pub failed_before: u64,
}

impl Made {
    /// Flows observer must report closed.
    pub fn flows(&self) -> u64 {
        2 * self.connections + self.failed_in_connect
    }
}

/// Sets the namespace's sysctls for sustained churn
/// (`pathemu::sockets::tune_for_churn`).
///
/// # Errors
/// A sysctl cannot be written in the namespace.
pub fn tune(ns: &Netns) -> anyhow::Result<()> {
    pathemu::run_in_netns(&ns.name, pathemu::sockets::tune_for_churn)
        .context("tuning the churn namespace")?
        .context("tuning the churn namespace")
}

/// Makes `rate` connections per second for `secs` in `ns` (tuned with
/// [`tune`]), then waits until the servers have closed their ends.
///
/// # Errors
/// The listeners cannot be set up in the namespace.
pub fn run(ns: &Netns, rate: u64, secs: u64) -> anyhow::Result<Made> {
    let stop = AtomicBool::new(false);
    let connections = AtomicU64::new(0);
    let failed_in = AtomicU64::new(0);
    let failed_before = AtomicU64::new(0);
    let accepted = AtomicU64::new(0);
    pathemu::run_in_netns(&ns.name, || -> anyhow::Result<()> {
        let mut listeners = Vec::new();
        for _ in 0..LISTENERS {
            let l = TcpListener::bind((SERVER, 0))?;
            l.set_nonblocking(true)?;
            listeners.push(l);
        }
        let addrs: Vec<SocketAddrV4> = listeners
            .iter()
            .filter_map(|l| match l.local_addr() {
                Ok(SocketAddr::V4(a)) => Some(a),
                _ => None,
            })
            .collect();
        anyhow::ensure!(addrs.len() == LISTENERS, "listeners without IPv4 addresses");
        std::thread::scope(|scope| {
            for l in &listeners {
                for _ in 0..ACCEPTORS {
                    scope.spawn(|| serve(l, &stop, &accepted));
                }
            }
            let per_thread = (rate as f64 / CLIENTS as f64).max(1.0);
            let clients: Vec<_> = (0..CLIENTS)
                .map(|t| {
                    let (addrs, connections, failed_in, failed_before) =
                        (&addrs, &connections, &failed_in, &failed_before);
                    scope.spawn(move || {
                        let from = Ipv4Addr::new(127, 88, 0, 2 + t as u8);
                        let start = Instant::now();
                        let end = start + Duration::from_secs(secs);
                        let mut n = 0u64;
                        while Instant::now() < end {
                            let due = start + Duration::from_secs_f64(n as f64 / per_thread);
                            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                                std::thread::sleep(wait);
                            }
                            let to = addrs[(n as usize + t) % addrs.len()];
                            n += 1;
                            match connect_from(from, SocketAddr::V4(to)) {
                                Ok(mut c) => {
                                    let _ = std::io::Write::write_all(&mut c, &[1]);
                                    connections.fetch_add(1, Ordering::Relaxed);
                                }
                                Err(ConnectError::InConnect(_)) => {
                                    failed_in.fetch_add(1, Ordering::Relaxed);
                                }
                                Err(ConnectError::Before(_)) => {
                                    failed_before.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                        }
                    })
                })
                .collect();
            for c in clients {
                let _ = c.join();
            }
            // Let the servers take what is still queued.
            let deadline = Instant::now() + Duration::from_secs(5);
            while accepted.load(Ordering::Relaxed) < connections.load(Ordering::Relaxed)
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            stop.store(true, Ordering::Relaxed);
        });
        Ok(())
    })
    .context("running the churn in its namespace")??;
    Ok(Made {
        connections: connections.load(Ordering::Relaxed),
        failed_in_connect: failed_in.load(Ordering::Relaxed),
        failed_before: failed_before.load(Ordering::Relaxed),
    })
}

/// Accepts on `l` until `stop`: reads each connection to EOF, closes it.
fn serve(l: &TcpListener, stop: &AtomicBool, accepted: &AtomicU64) {
    let mut buf = [0u8; 64];
    while !stop.load(Ordering::Relaxed) {
        match l.accept() {
            Ok((mut c, _)) => {
                let _ = c.set_nonblocking(false);
                let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
                while matches!(c.read(&mut buf), Ok(n) if n > 0) {}
                accepted.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => std::thread::sleep(Duration::from_micros(200)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flows_count_both_ends_and_failed_connects() {
        let m = Made {
            connections: 10,
            failed_in_connect: 3,
            failed_before: 5,
        };
        assert_eq!(m.flows(), 23);
    }
}
