//! The connection-churn generator: short loopback connections at a paced
//! rate, inside a namespace tuned for it. Each connection sends one byte
//! and closes (FIN); the server reads to EOF and closes. Every socket that
//! reached `connect()` is a flow observer must report closed: both ends of
//! a connection made, and the client end of a connect that failed.

use std::{
    io::Read as _,
    net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream},
    os::fd::FromRawFd as _,
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
    time::{Duration, Instant},
};

use anyhow::Context as _;

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

/// Sets the namespace's sysctls for sustained churn: a wide ephemeral port
/// range, TIME_WAIT reuse for outgoing connections, a short FIN_WAIT2 and
/// deep accept queues.
///
/// # Errors
/// A sysctl cannot be written in the namespace.
pub fn tune(ns: &Netns) -> anyhow::Result<()> {
    pathemu::run_in_netns(&ns.name, || -> anyhow::Result<()> {
        for (path, value) in [
            ("/proc/sys/net/ipv4/ip_local_port_range", "10000 65000"),
            ("/proc/sys/net/ipv4/tcp_tw_reuse", "1"),
            ("/proc/sys/net/ipv4/tcp_fin_timeout", "5"),
            ("/proc/sys/net/core/somaxconn", "8192"),
            ("/proc/sys/net/ipv4/tcp_max_syn_backlog", "8192"),
        ] {
            std::fs::write(path, value).with_context(|| format!("writing {path}"))?;
        }
        Ok(())
    })
    .context("tuning the churn namespace")?
}

/// A TCP connection from `from` (port chosen at connect, so TIME_WAIT
/// reuse applies) to `to`. `Err((true, e))` when connect() itself failed.
fn connect_from(from: Ipv4Addr, to: SocketAddrV4) -> Result<TcpStream, (bool, std::io::Error)> {
    let sa = |a: SocketAddrV4| libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*a.ip()).to_be(),
        },
        sin_zero: [0; 8],
    };
    let len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: plain socket calls on a descriptor this function owns; it is
    // handed to TcpStream at once, which closes it on every path.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err((false, std::io::Error::last_os_error()));
        }
        let stream = TcpStream::from_raw_fd(fd);
        let one: libc::c_int = 1;
        libc::setsockopt(
            fd,
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&raw const one).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        );
        let local = sa(SocketAddrV4::new(from, 0));
        if libc::bind(fd, (&raw const local).cast(), len) != 0 {
            return Err((false, std::io::Error::last_os_error()));
        }
        let remote = sa(to);
        if libc::connect(fd, (&raw const remote).cast(), len) != 0 {
            return Err((true, std::io::Error::last_os_error()));
        }
        Ok(stream)
    }
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
                            match connect_from(from, to) {
                                Ok(mut c) => {
                                    let _ = std::io::Write::write_all(&mut c, &[1]);
                                    connections.fetch_add(1, Ordering::Relaxed);
                                }
                                Err((true, _)) => {
                                    failed_in.fetch_add(1, Ordering::Relaxed);
                                }
                                Err((false, _)) => {
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
