//! Shared helpers for the root integration tests: TCP_INFO as the kernel's
//! oracle and an observer session (namespaces and child processes have
//! pathemu's guards, [`pathemu::Namespace`] and [`pathemu::ChildGuard`]). The
//! submodules hold the rest: what is loaded in the kernel ([`bpf`]), the
//! agent's HTTP endpoints and metrics ([`http`]), sockets bound the way a
//! test needs ([`net`]), the observer binary as a child ([`process`]),
//! the endpoint's abuse limits ([`abuse`]) and scratch folders ([`scratch`]).

use std::{
    os::fd::AsRawFd,
    time::{Duration, Instant},
};

use observer::{
    attribution::Point,
    kernel::load::tick::kernel_hz,
    kernel::{load::probe_config::ProbeConfig, probes::Probes},
    model::clock::{Clock, monotonic_ns},
    model::flow::Flow,
    track::snapshot::FlowTable,
};
use observer_common::FlowSample;
use pathemu::Namespace;

pub mod abuse;
pub mod bpf;
pub mod http;
pub mod net;
pub mod pod;
pub mod process;
pub mod prom;
pub mod scratch;
pub mod tmux;

/// Whether the tests can load eBPF programs; prints why not otherwise.
pub fn root_or_skip(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root {
        eprintln!("skipped {test}: needs root (run `cargo xtask test`)");
    }
    root
}

/// Tests that load programs (and compare what is loaded) or serve ports
/// run one at a time within a test binary.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The namespace's inode as observer reports it in `netns` (32 bits).
pub fn netns_id(ns: &Namespace) -> u32 {
    ns.inode() as u32
}

/// The subset of `struct tcp_info` (include/uapi/linux/tcp.h) the tests compare.
#[derive(Debug, Clone, Copy)]
pub struct TcpInfo {
    pub snd_mss: u32,
    pub rtt_us: u32,
    pub snd_cwnd: u32,
    /// Packets in flight as the kernel counts them (`tcp_packets_in_flight()`:
    /// unacked - sacked - lost + retransmitted).
    pub inflight: u32,
    /// `tcpi_notsent_bytes`: written and not yet sent.
    pub notsent: u32,
    pub total_retrans: u32,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub min_rtt_us: u32,
    pub busy_us: u64,
    pub rwnd_limited_us: u64,
    pub sndbuf_limited_us: u64,
    pub bytes_sent: u64,
    pub snd_wnd: u32,
    /// `tcpi_options`: TCPI_OPT_TIMESTAMPS 1, SACK 2, WSCALE 4.
    pub options: u8,
    pub snd_wscale: u8,
    pub rcv_wscale: u8,
    pub rcv_mss: u32,
    pub rcv_ssthresh: u32,
    pub rcv_rtt_us: u32,
    pub rcv_space: u32,
    pub segs_in: u32,
    pub data_segs_in: u32,
    pub rcv_ooopack: u32,
    /// `tcpi_rcv_wnd` (Linux 6.2 and later; None before).
    pub rcv_wnd: Option<u32>,
    /// `tcpi_delivery_rate` x 8 (bits/s).
    pub delivery_rate_bps: u64,
    /// `tcpi_rto` (µs).
    pub rto_us: u32,
    /// `tcpi_unacked`, `tcpi_sacked`, `tcpi_lost`, `tcpi_retrans` (segments).
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    /// `tcpi_last_data_sent`, `tcpi_last_data_recv`, `tcpi_last_ack_recv` (ms).
    pub last_data_sent_ms: u32,
    pub last_data_recv_ms: u32,
    pub last_ack_recv_ms: u32,
    pub reordering: u32,
    /// `tcpi_pacing_rate` (bytes/s; `u64::MAX`: not paced).
    pub pacing_rate: u64,
    pub delivered_ce: u32,
    pub dsack_dups: u32,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(b[at..at + 8].try_into().unwrap())
}

/// `getsockopt(TCP_INFO)` on `fd`; the byte offsets follow the uapi layout.
pub fn tcp_info(fd: &impl AsRawFd) -> TcpInfo {
    let mut buf = [0u8; 256];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `buf`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0, "TCP_INFO: {}", std::io::Error::last_os_error());
    // tcpi_snd_wnd (read below) ends at byte 232; Linux 6.1 stops there
    // (tcpi_rcv_wnd, bytes 232-236, arrived in 6.2).
    assert!(len >= 232, "kernel tcp_info too short: {len}");
    TcpInfo {
        snd_mss: u32_at(&buf, 16),
        rtt_us: u32_at(&buf, 68),
        snd_cwnd: u32_at(&buf, 80),
        inflight: (u32_at(&buf, 24) + u32_at(&buf, 36))
            .saturating_sub(u32_at(&buf, 28) + u32_at(&buf, 32)),
        notsent: u32_at(&buf, 144),
        total_retrans: u32_at(&buf, 100),
        bytes_acked: u64_at(&buf, 120),
        bytes_received: u64_at(&buf, 128),
        min_rtt_us: u32_at(&buf, 148),
        busy_us: u64_at(&buf, 168),
        rwnd_limited_us: u64_at(&buf, 176),
        sndbuf_limited_us: u64_at(&buf, 184),
        bytes_sent: u64_at(&buf, 200),
        snd_wnd: u32_at(&buf, 228),
        options: buf[5],
        snd_wscale: buf[6] & 0x0f,
        rcv_wscale: buf[6] >> 4,
        rcv_mss: u32_at(&buf, 20),
        rcv_ssthresh: u32_at(&buf, 64),
        rcv_rtt_us: u32_at(&buf, 92),
        rcv_space: u32_at(&buf, 96),
        segs_in: u32_at(&buf, 140),
        data_segs_in: u32_at(&buf, 152),
        rcv_ooopack: u32_at(&buf, 224),
        rcv_wnd: (len >= 236).then(|| u32_at(&buf, 232)),
        delivery_rate_bps: u64_at(&buf, 160).saturating_mul(8),
        rto_us: u32_at(&buf, 8),
        unacked: u32_at(&buf, 24),
        sacked: u32_at(&buf, 28),
        lost: u32_at(&buf, 32),
        retrans: u32_at(&buf, 36),
        last_data_sent_ms: u32_at(&buf, 44),
        last_data_recv_ms: u32_at(&buf, 52),
        last_ack_recv_ms: u32_at(&buf, 56),
        reordering: u32_at(&buf, 88),
        pacing_rate: u64_at(&buf, 104),
        delivered_ce: u32_at(&buf, 196),
        dsack_dups: u32_at(&buf, 216),
    }
}

/// Bytes received and not yet read (`ioctl(FIONREAD)`, which is
/// `rcv_nxt - copied_seq` less a received FIN).
pub fn unread(fd: &impl AsRawFd) -> u32 {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut n) };
    assert_eq!(rc, 0, "FIONREAD: {}", std::io::Error::last_os_error());
    u32::try_from(n).unwrap()
}

/// `getsockopt(SO_COOKIE)`: the key observer reports the socket under.
pub fn cookie(fd: &impl AsRawFd) -> u64 {
    let mut v: u64 = 0;
    let mut len = 8 as libc::socklen_t;
    // SAFETY: the kernel writes 8 bytes into `v`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_COOKIE,
            (&mut v as *mut u64).cast(),
            &mut len,
        )
    };
    assert_eq!(rc, 0, "SO_COOKIE: {}", std::io::Error::last_os_error());
    v
}

/// Sets an integer socket option; panics if the kernel refuses.
pub fn setsockopt_int(fd: &impl AsRawFd, level: i32, opt: i32, value: i32) {
    if let Err(e) = pathemu::sockets::set_int(fd, level, opt, value) {
        panic!("setsockopt({level}, {opt}, {value}): {e}");
    }
}

/// An attached observer and the flows it has seen.
pub struct Observer {
    pub probes: Probes,
    pub table: FlowTable,
    pub clock: Clock,
    /// One poll's read: (open flows, close records).
    buf: (Vec<FlowSample>, Vec<FlowSample>),
}

impl Observer {
    /// Loads and attaches the probes.
    pub fn start() -> Observer {
        Observer::with(Probes::load(ProbeConfig::default()).expect("load probes"))
    }

    /// Wraps probes loaded by the caller.
    pub fn with(probes: Probes) -> Observer {
        Observer {
            probes,
            table: FlowTable::new(),
            clock: Clock::new(kernel_hz().unwrap().hz),
            buf: (Vec::new(), Vec::new()),
        }
    }

    /// Reads the ring buffer and the flow map once.
    pub fn poll(&mut self) {
        let (active, closed) = &mut self.buf;
        self.probes.read(active, closed);
        self.table.ingest(active, closed, monotonic_ns());
    }

    /// The kernel sample of the flow with socket cookie `cookie`, read now,
    /// with the read time (monotonic ns).
    fn sample(&mut self, cookie: u64) -> Option<(FlowSample, u64)> {
        self.poll();
        let now = monotonic_ns();
        let s = self
            .table
            .flows()
            .into_iter()
            .find(|s| s.cookie == cookie)?;
        Some((*s, now))
    }

    /// The flow with socket cookie `cookie`, as the user would see it now.
    pub fn flow(&mut self, cookie: u64) -> Option<Flow> {
        let (s, now) = self.sample(cookie)?;
        Some(Flow::from_sample(&s, &self.clock, now))
    }

    /// The flow with socket cookie `cookie` as the user would have seen it
    /// at monotonic `at_ns` (a moment before this call; `Flow`'s ages are
    /// extrapolated to it): for comparing with a reading taken then, such
    /// as TCP_INFO, without the poll's own time between them (tens of
    /// milliseconds in an emulated VM). The flow must have been quiet
    /// since `at_ns`.
    pub fn flow_as_of(&mut self, cookie: u64, at_ns: u64) -> Option<Flow> {
        let (s, _) = self.sample(cookie)?;
        Some(Flow::from_sample(&s, &self.clock, at_ns))
    }

    /// The flow with socket cookie `cookie` as the engine reads it now:
    /// its figures and when they hold.
    pub fn point(&mut self, cookie: u64) -> Option<Point> {
        let (s, now) = self.sample(cookie)?;
        Some(Point::new(&s, &self.clock, now))
    }

    /// Every flow in namespace `netns`.
    pub fn flows_in(&mut self, netns: u32) -> Vec<Flow> {
        self.poll();
        let now = monotonic_ns();
        self.table
            .flows()
            .into_iter()
            .filter(|s| s.netns == netns)
            .map(|s| Flow::from_sample(s, &self.clock, now))
            .collect()
    }

    /// Polls until the flow with socket cookie `cookie` satisfies `pred`
    /// and returns it; panics after `timeout`, naming `what` was awaited
    /// and the flow as last seen.
    pub fn wait_for_flow(
        &mut self,
        cookie: u64,
        timeout: Duration,
        what: &str,
        mut pred: impl FnMut(&Flow) -> bool,
    ) -> Flow {
        let mut last = None;
        let held = self.wait_until(timeout, |o| {
            last = o.flow(cookie);
            last.as_ref().is_some_and(&mut pred)
        });
        match last {
            Some(f) if held => f,
            _ => panic!("observer never reported {what} (last: {last:?})"),
        }
    }

    /// Polls until `pred` holds or `timeout` passes; returns whether it held.
    pub fn wait_until(
        &mut self,
        timeout: Duration,
        mut pred: impl FnMut(&mut Observer) -> bool,
    ) -> bool {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if pred(self) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        pred(self)
    }
}
