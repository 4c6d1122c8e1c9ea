//! The traffic of a situation: observer-free sockets in namespace A (the
//! sender) and B (the receiver) with the situation's settings, each
//! application as `crate::space` describes it, and the goodput the
//! receiving application measured.

use std::{
    io::{ErrorKind, Read as _, Write as _},
    net::{SocketAddr, TcpListener, TcpStream},
    time::{Duration, Instant},
};

use accuracy::space::{RcvLimit, Reader, Situation, SndLimit, Writer};
use anyhow::Context as _;
use pathemu::{Path, Side, sockets::set_int};
use socket2::{Domain, Socket, Type};

/// Payload per write of a bulk writer (bytes).
const WRITE_BYTES: usize = 64 * 1024;
/// A paced writer writes once per this long.
const PACE_TICK: Duration = Duration::from_millis(10);
/// Blocking calls wake this often to check the deadline.
const WAKE: Duration = Duration::from_millis(200);
/// Bytes of a request (the object size, big-endian).
const REQUEST_BYTES: usize = 8;

/// What the receiving application measured.
#[derive(Clone, Copy, Debug, Default)]
pub struct Received {
    /// Payload bytes read before the deadline.
    pub bytes: u64,
    /// From the first byte read to the last (s).
    pub span_s: f64,
}

impl Received {
    /// Goodput (bits/s).
    pub fn bps(&self) -> f64 {
        if self.span_s <= 0.0 {
            0.0
        } else {
            self.bytes as f64 * 8.0 / self.span_s
        }
    }

    fn add(&mut self, n: usize, first: &mut Option<Instant>) {
        let now = Instant::now();
        let f = *first.get_or_insert(now);
        self.bytes += n as u64;
        self.span_s = now.duration_since(f).as_secs_f64();
    }
}

/// The listening socket in B, with the receiver's window setting applied
/// before any connection (accepted sockets inherit it).
fn listener(path: &Path, rcv: Option<RcvLimit>) -> anyhow::Result<TcpListener> {
    let addr = SocketAddr::new(path.ip(Side::B), 0);
    let l = path.run_in(Side::B, move || -> std::io::Result<TcpListener> {
        let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
        match rcv {
            Some(RcvLimit::Rcvbuf(b)) => s.set_recv_buffer_size(b as usize)?,
            Some(RcvLimit::Clamp(b)) => {
                set_int(&s, libc::IPPROTO_TCP, libc::TCP_WINDOW_CLAMP, b as i32)?;
            }
            Some(RcvLimit::RmemMax(_)) | None => {}
        }
        s.set_reuse_address(true)?;
        s.bind(&addr.into())?;
        s.listen(64)?;
        Ok(s.into())
    })??;
    Ok(l)
}

/// A connection from A to `to`, with the sender's settings.
fn connect(path: &Path, s: &Situation, to: SocketAddr) -> anyhow::Result<TcpStream> {
    let (snd, cc, writer) = (s.snd, s.cc, s.writer);
    let stream = path.run_in(Side::A, move || -> std::io::Result<TcpStream> {
        let sock = Socket::new(Domain::IPV4, Type::STREAM, None)?;
        if let Some(SndLimit::Sndbuf(b)) = snd {
            sock.set_send_buffer_size(b as usize)?;
        }
        sock.set_tcp_congestion(cc.name().as_bytes())?;
        if let Writer::MaxPacing { bps } = writer {
            let bytes_per_s = i32::try_from(bps / 8).unwrap_or(i32::MAX);
            set_int(
                &sock,
                libc::SOL_SOCKET,
                libc::SO_MAX_PACING_RATE,
                bytes_per_s,
            )?;
        }
        sock.connect(&to.into())?;
        sock.set_write_timeout(Some(WAKE))?;
        sock.set_read_timeout(Some(WAKE))?;
        Ok(sock.into())
    })??;
    Ok(stream)
}

fn accept(l: &TcpListener, deadline: Instant) -> anyhow::Result<Option<TcpStream>> {
    l.set_nonblocking(true)?;
    loop {
        match l.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)?;
                s.set_read_timeout(Some(WAKE))?;
                s.set_write_timeout(Some(WAKE))?;
                return Ok(Some(s));
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    return Ok(None);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(e).context("accept"),
        }
    }
}

fn timed_out(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// Writes as `writer` says until `deadline`, then closes its side.
fn write(mut s: TcpStream, writer: Writer, deadline: Instant) {
    let buf = vec![0x5au8; WRITE_BYTES];
    let start = Instant::now();
    let mut next = start;
    let mut owed = 0usize;
    while Instant::now() < deadline {
        let (tick, bytes) = match writer {
            Writer::Paced { bps } => (
                PACE_TICK,
                (bps as f64 / 8.0 * PACE_TICK.as_secs_f64()) as usize,
            ),
            Writer::Chunks { bytes, period_ms } => {
                (Duration::from_millis(period_ms), bytes as usize)
            }
            _ => (Duration::ZERO, WRITE_BYTES),
        };
        if !tick.is_zero() {
            let now = Instant::now();
            if now < next {
                std::thread::sleep(next - now);
            }
            next += tick;
            owed += bytes;
        } else {
            owed = bytes;
        }
        while owed > 0 && Instant::now() < deadline {
            match s.write(&buf[..owed.min(buf.len())]) {
                Ok(n) => owed -= n,
                Err(e) if timed_out(&e) => {}
                Err(_) => return,
            }
        }
    }
    let _ = s.shutdown(std::net::Shutdown::Write);
}

/// Reads as `reader` says until `deadline` or the end of the data: as it
/// arrives, or at most a chunk in each period, waiting within the period
/// for the rest of the chunk, then sleeping to the period's end.
fn read(
    mut s: TcpStream,
    reader: Reader,
    deadline: Instant,
    got: &mut Received,
    first: &mut Option<Instant>,
) {
    let mut buf = vec![0u8; 256 * 1024];
    let (chunk, period) = match reader {
        Reader::Continuous => (usize::MAX, Duration::ZERO),
        Reader::Chunks { bytes, period_ms } => (bytes as usize, Duration::from_millis(period_ms)),
    };
    let mut next = Instant::now();
    while Instant::now() < deadline {
        let period_end = (next + period).min(deadline);
        let mut left = chunk;
        while left > 0 {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            if !period.is_zero() && now >= period_end {
                break;
            }
            let wait = if period.is_zero() {
                WAKE
            } else {
                (period_end - now).min(WAKE)
            };
            let _ = s.set_read_timeout(Some(wait.max(Duration::from_millis(1))));
            let want = left.min(buf.len());
            match s.read(&mut buf[..want]) {
                Ok(0) => return,
                Ok(n) => {
                    got.add(n, first);
                    left -= n;
                }
                Err(e) if timed_out(&e) => {}
                Err(_) => return,
            }
        }
        next += period;
        let now = Instant::now();
        if now < next {
            std::thread::sleep((next - now).min(deadline.saturating_duration_since(now)));
        }
    }
}

/// Request/response: B asks for an object of `bytes`, reads it whole,
/// asks again, until `deadline`.
fn requests(
    path: &Path,
    sit: &Situation,
    l: &TcpListener,
    bytes: u64,
    deadline: Instant,
) -> anyhow::Result<Received> {
    let to = l.local_addr()?;
    let server = connect(path, sit, to)?;
    let mut client = accept(l, deadline)?.context("the connection never arrived")?;
    // As request/response servers and clients do: Nagle would hold each
    // response's last partial segment for the ACK of the rest.
    server.set_nodelay(true)?;
    client.set_nodelay(true)?;
    let mut got = Received::default();
    let mut first = None;
    std::thread::scope(|scope| {
        scope.spawn(move || {
            let mut server = server;
            let buf = vec![0x5au8; WRITE_BYTES];
            let mut req = [0u8; REQUEST_BYTES];
            while Instant::now() < deadline {
                match server.read_exact(&mut req) {
                    Ok(()) => {}
                    Err(e) if timed_out(&e) => continue,
                    Err(_) => return,
                }
                let mut owed = u64::from_be_bytes(req) as usize;
                while owed > 0 {
                    match server.write(&buf[..owed.min(buf.len())]) {
                        Ok(n) => owed -= n,
                        Err(e) if timed_out(&e) && Instant::now() < deadline => {}
                        Err(_) => return,
                    }
                }
            }
        });
        let mut buf = vec![0u8; 256 * 1024];
        'outer: while Instant::now() < deadline {
            if client.write_all(&bytes.to_be_bytes()).is_err() {
                break;
            }
            let mut owed = bytes as usize;
            while owed > 0 {
                let want = owed.min(buf.len());
                match client.read(&mut buf[..want]) {
                    Ok(0) => break 'outer,
                    Ok(n) => {
                        got.add(n, &mut first);
                        owed -= n;
                    }
                    Err(e) if timed_out(&e) && Instant::now() < deadline => {}
                    Err(_) => break 'outer,
                }
            }
        }
        let _ = client.shutdown(std::net::Shutdown::Both);
    });
    Ok(got)
}

/// A new connection per object of `bytes`, one after the other, until `deadline`.
fn short(
    path: &Path,
    sit: &Situation,
    l: &TcpListener,
    bytes: u64,
    deadline: Instant,
) -> anyhow::Result<Received> {
    let to = l.local_addr()?;
    let mut got = Received::default();
    let mut first = None;
    let buf = vec![0x5au8; WRITE_BYTES];
    while Instant::now() < deadline {
        let mut tx = connect(path, sit, to)?;
        let Some(rx) = accept(l, deadline)? else {
            break;
        };
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let mut owed = bytes as usize;
                while owed > 0 && Instant::now() < deadline {
                    match tx.write(&buf[..owed.min(buf.len())]) {
                        Ok(n) => owed -= n,
                        Err(e) if timed_out(&e) => {}
                        Err(_) => break,
                    }
                }
                let _ = tx.shutdown(std::net::Shutdown::Write);
            });
            read(rx, Reader::Continuous, deadline, &mut got, &mut first);
        });
    }
    Ok(got)
}

/// Runs `sit`'s traffic over `path` for its length, calling `poll` about
/// every `every` meanwhile; returns what the receiving application measured.
///
/// # Errors
/// A socket could not be set up or connected.
pub fn run(
    path: &Path,
    sit: &Situation,
    every: Duration,
    mut poll: impl FnMut() -> anyhow::Result<()>,
) -> anyhow::Result<Received> {
    let l = listener(path, sit.rcv)?;
    let deadline = Instant::now() + Duration::from_secs(sit.secs);
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| -> anyhow::Result<Received> {
            match sit.writer {
                Writer::Requests { bytes } => requests(path, sit, &l, bytes, deadline),
                Writer::Short { bytes } => short(path, sit, &l, bytes, deadline),
                w => {
                    let tx = connect(path, sit, l.local_addr()?)?;
                    let rx = accept(&l, deadline)?.context("the connection never arrived")?;
                    let mut got = Received::default();
                    let mut first = None;
                    std::thread::scope(|inner| {
                        inner.spawn(move || write(tx, w, deadline));
                        read(rx, sit.reader, deadline, &mut got, &mut first);
                    });
                    Ok(got)
                }
            }
        });
        while !worker.is_finished() {
            std::thread::sleep(every);
            poll()?;
        }
        worker
            .join()
            .map_err(|_| anyhow::anyhow!("the traffic thread panicked"))?
    })
}
