//! Traffic the scenarios make: iperf3 runs (either way round), and
//! observer's own senders where iperf3 cannot impose the constraint (a small
//! send buffer only at the sender, a rate that changes mid-flow). HTTP
//! downloads are in [`crate::http`].

use std::{
    io::{Read as _, Write as _},
    net::{SocketAddr, TcpListener, TcpStream},
    os::fd::AsRawFd,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use pathemu::{ChildGuard, Path, Side};

pub use pathemu::sockets::set_int;

/// Sets the congestion control of a socket (`TCP_CONGESTION`).
pub fn set_cc(fd: &impl AsRawFd, cc: &str) -> std::io::Result<()> {
    // SAFETY: a pointer to the name's bytes, with their length.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            cc.as_ptr().cast(),
            cc.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// An iperf3 run; results from the client's JSON. A sends either way: the
/// server in B and the client in A, or (`-R`) the server in A and the
/// client in B.
pub struct Iperf {
    _server: ChildGuard,
    client: ChildGuard,
}

/// Per-stream results of an iperf3 client (`-J`).
#[derive(Clone, Debug, Default)]
pub struct IperfResult {
    /// (client-side local port, sender throughput in bits/s) per stream.
    pub streams: Vec<(u16, f64)>,
    /// Total sender throughput (bits/s).
    pub sum_bps: f64,
    /// (client-side local port, receiver throughput in bits/s) per stream:
    /// what a `-R` client measured itself.
    pub received: Vec<(u16, f64)>,
    /// Total receiver throughput (bits/s).
    pub sum_received_bps: f64,
    /// The client's own error message, if it reported one.
    pub error: Option<String>,
}

/// Parses iperf3's `-J` output.
pub fn parse_iperf(json: &str) -> anyhow::Result<IperfResult> {
    let v: serde_json::Value = serde_json::from_str(json).context("iperf3 printed no JSON")?;
    if let Some(e) = v["error"].as_str() {
        return Ok(IperfResult {
            error: Some(e.to_string()),
            ..IperfResult::default()
        });
    }
    let ports: Vec<(i64, u16)> = v["start"]["connected"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| {
                    Some((
                        c["socket"].as_i64()?,
                        u16::try_from(c["local_port"].as_u64()?).ok()?,
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let per_stream = |end: &str| -> Vec<(u16, f64)> {
        v["end"]["streams"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| {
                        let sock = s[end]["socket"].as_i64()?;
                        let port = ports.iter().find(|(k, _)| *k == sock)?.1;
                        Some((port, s[end]["bits_per_second"].as_f64()?))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok(IperfResult {
        streams: per_stream("sender"),
        sum_bps: v["end"]["sum_sent"]["bits_per_second"]
            .as_f64()
            .unwrap_or(0.0),
        received: per_stream("receiver"),
        sum_received_bps: v["end"]["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap_or(0.0),
        error: None,
    })
}

impl Iperf {
    /// Starts the server in `side`.
    pub fn server(path: &Path, side: Side) -> anyhow::Result<ChildGuard> {
        let mut cmd = path.command(side, "iperf3");
        cmd.args(["-s", "-p", "5201"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let server = ChildGuard::spawn(&mut cmd)
            .with_context(|| format!("starting iperf3 -s in {side:?}"))?;
        wait_listening(path, side, 5201)?;
        Ok(server)
    }

    /// Starts a client in `side` for `secs` with `args` (`-R` among them
    /// when the client is in B), against a server running in the other.
    pub fn start(
        path: &Path,
        server: ChildGuard,
        side: Side,
        secs: u64,
        cc: Option<&str>,
        args: &[String],
    ) -> anyhow::Result<Iperf> {
        let mut cmd = path.command(side, "iperf3");
        cmd.args([
            "-c",
            &path.addr(side.peer()).to_string(),
            "-p",
            "5201",
            "-J",
            "-t",
            &secs.to_string(),
        ]);
        if let Some(cc) = cc {
            cmd.args(["-C", cc]);
        }
        cmd.args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let client = ChildGuard::spawn(&mut cmd)
            .with_context(|| format!("starting the iperf3 client in {side:?}"))?;
        Ok(Iperf {
            _server: server,
            client,
        })
    }

    /// Whether the client has exited.
    pub fn done(&mut self) -> bool {
        self.client
            .child_mut()
            .is_none_or(|c| c.try_wait().map(|s| s.is_some()).unwrap_or(true))
    }

    /// Waits for the client and parses its results.
    pub fn finish(self) -> anyhow::Result<IperfResult> {
        let out = self
            .client
            .wait_with_output()
            .context("waiting for iperf3")?;
        parse_iperf(&String::from_utf8_lossy(&out.stdout))
    }
}

/// Waits until something accepts connections on `side`'s `port` (tried
/// from inside that namespace, so without crossing the path).
pub(crate) fn wait_listening(path: &Path, side: Side, port: u16) -> anyhow::Result<()> {
    let addr = SocketAddr::new(path.ip(side), port);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let up = path
            .run_in(side, move || {
                TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
            })
            .unwrap_or(false);
        if up {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "nothing listens on {addr} in {side:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A sender of observer's own in A and a receiver in B, connected.
pub struct OwnFlow {
    /// The sending socket (in A).
    pub sender: TcpStream,
    /// The accepted socket (in B).
    pub receiver: TcpStream,
}

impl OwnFlow {
    /// Connects A to B; `sndbuf` sets SO_SNDBUF on the sender first.
    pub fn connect(
        path: &Path,
        sndbuf: Option<i32>,
        cc: Option<&'static str>,
    ) -> anyhow::Result<OwnFlow> {
        let bind = SocketAddr::new(path.ip(Side::B), 0);
        let listener = path.run_in(Side::B, move || TcpListener::bind(bind))??;
        let dst = listener.local_addr()?;
        let sender = path.run_in(Side::A, move || -> std::io::Result<TcpStream> {
            let s = socket_for(dst)?;
            if let Some(b) = sndbuf {
                set_int(&s, libc::SOL_SOCKET, libc::SO_SNDBUF, b)?;
            }
            if let Some(cc) = cc {
                set_cc(&s, cc)?;
            }
            connect(s, dst)
        })??;
        let (receiver, _) = listener.accept()?;
        Ok(OwnFlow { sender, receiver })
    }
}

/// An unconnected TCP socket for `dst`'s family (so options apply before connect).
fn socket_for(dst: SocketAddr) -> std::io::Result<std::os::fd::OwnedFd> {
    let family = if dst.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain socket(2); the fd is owned below.
    let fd = unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nothing else owns.
    Ok(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

fn connect(fd: std::os::fd::OwnedFd, dst: SocketAddr) -> std::io::Result<TcpStream> {
    let SocketAddr::V4(v4) = dst else {
        return Err(std::io::Error::other("own flows use IPv4"));
    };
    let sa = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: v4.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from(*v4.ip()).to_be(),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: a valid sockaddr_in and its length.
    let rc = unsafe {
        libc::connect(
            fd.as_raw_fd(),
            (&sa as *const libc::sockaddr_in).cast(),
            size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(TcpStream::from(fd))
}

/// How the reader in B reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// As fast as data arrives.
    Continuous,
    /// Sleeps the period, then reads everything waiting, over and over: it
    /// leaves the data unread in between.
    Chunks(Duration),
    /// Reads as fast as data arrives for `read`, then not at all for
    /// `stall` (a reader that stalls on its disk or its CPU), over and over.
    Stalls {
        /// How long each reading stretch lasts.
        read: Duration,
        /// How long each stall lasts.
        stall: Duration,
    },
}

/// Reads everything until EOF as `reading` says; returns (bytes, seconds
/// from first to last byte).
pub fn drain(mut s: TcpStream, reading: Reading) -> (u64, f64) {
    let mut buf = vec![0u8; 256 * 1024];
    let mut total = 0u64;
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    let done = |total: u64, first: Option<Instant>, last: Instant| {
        (
            total,
            first.map_or(0.0, |f| last.duration_since(f).as_secs_f64()),
        )
    };
    let period = match reading {
        Reading::Chunks(p) => Some(p),
        _ => None,
    };
    if period.is_some() && s.set_nonblocking(true).is_err() {
        return (0, 0.0);
    }
    let started = Instant::now();
    loop {
        if let Some(p) = period {
            std::thread::sleep(p);
        }
        if let Reading::Stalls { read, stall } = reading {
            // Into a stall once each reading stretch is over.
            let cycle = read + stall;
            let into = Duration::from_nanos(
                (started.elapsed().as_nanos() % cycle.as_nanos().max(1)) as u64,
            );
            if into >= read {
                std::thread::sleep(cycle - into);
            }
        }
        // One visit: everything waiting (blocking mode: one read at a time).
        loop {
            match s.read(&mut buf) {
                Ok(0) => return done(total, first, last),
                Ok(n) => {
                    first.get_or_insert_with(Instant::now);
                    last = Instant::now();
                    total += n as u64;
                    if period.is_none() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => return done(total, first, last),
            }
        }
    }
}

/// Writes for `secs`: at `rate_bps` for the first `paced_secs`, then as fast
/// as the socket takes it. Closes the connection at the end.
pub fn send(mut s: TcpStream, secs: u64, rate_bps: u64, paced_secs: u64) {
    let chunk = vec![0x5au8; 64 * 1024];
    let start = Instant::now();
    let end = start + Duration::from_secs(secs);
    let paced_end = start + Duration::from_secs(paced_secs);
    let tick = Duration::from_millis(10);
    let per_tick = (rate_bps / 8 / 100).max(1) as usize;
    let mut next = start;
    while Instant::now() < end {
        let now = Instant::now();
        let ok = if now < paced_end {
            if now < next {
                std::thread::sleep(next - now);
            }
            next += tick;
            s.write_all(&chunk[..per_tick.min(chunk.len())])
        } else {
            s.write_all(&chunk)
        };
        if ok.is_err() {
            break;
        }
    }
    let _ = s.shutdown(std::net::Shutdown::Write);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_iperf_json() {
        let json = r#"{"start":{"connected":[{"socket":5,"local_port":40000},{"socket":7,"local_port":40002}]},
            "end":{"streams":[{"sender":{"socket":5,"bits_per_second":5.0e6},"receiver":{"socket":5,"bits_per_second":4.9e6}},
                              {"sender":{"socket":7,"bits_per_second":6.0e6}}],
                   "sum_sent":{"bits_per_second":11.0e6},"sum_received":{"bits_per_second":10.8e6}}}"#;
        let r = parse_iperf(json).unwrap();
        assert_eq!(r.streams, vec![(40000, 5.0e6), (40002, 6.0e6)]);
        assert_eq!(r.sum_bps, 11.0e6);
        assert_eq!(r.received, vec![(40000, 4.9e6)]);
        assert_eq!(r.sum_received_bps, 10.8e6);
        let e = parse_iperf(r#"{"error":"unable to connect"}"#).unwrap();
        assert_eq!(e.error.as_deref(), Some("unable to connect"));
        assert!(parse_iperf("nope").is_err());
    }
}
