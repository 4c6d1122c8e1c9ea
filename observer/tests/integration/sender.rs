//! Root integration tests of the sending end's limited-time clocks, on an
//! emulated path: cwnd-limited time is time with the congestion window
//! actually full (checked against TCP_INFO sampled while the flow runs),
//! and a send buffer that holds a bursty sender back is counted although
//! the kernel's own sndbuf-limited clock never starts for it.

use std::{
    io::{Read, Write},
    net::TcpStream,
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use crate::support::{
    Observer, TcpInfo, bpf::owner_hook, cookie, net::connect_across, root_or_skip, serial,
    setsockopt_int, tcp_info,
};
use observer::model::flow::Flow;
use pathemu::{Path, PathConfig, Side};

/// 100 Mbit/s, 10 ms each way, a 250 KB drop-tail queue: the path of the
/// send-buffer case in issue 14.
fn path() -> Path {
    Path::new(PathConfig::bottleneck(
        100_000_000,
        Duration::from_millis(10),
        250_000,
    ))
    .unwrap()
}

/// What a sender did, seen by TCP_INFO every millisecond while it ran.
struct Sampled {
    /// Samples with data outstanding.
    busy: u32,
    /// Of those, samples with the window full as observer defines it:
    /// in-flight >= cwnd, or more than a segment waiting with under a
    /// third of it open.
    full: u32,
    /// `tcpi_delivery_rate` (bits/s) at each sample, with its time.
    delivery: Vec<(Instant, u64)>,
}

impl Sampled {
    /// The fastest delivery-rate sample TCP_INFO showed in the `last`
    /// before the transfer ended (bits/s).
    fn delivery_max(&self, last: Duration) -> u64 {
        let end = self.delivery.last().map_or_else(Instant::now, |d| d.0);
        self.delivery
            .iter()
            .filter(|(at, _)| end.duration_since(*at) <= last)
            .map(|d| d.1)
            .max()
            .unwrap_or(0)
    }
}

/// Runs a transfer A -> B on `path` for `secs`: `sndbuf` sets SO_SNDBUF on
/// the sender, `chunk` bytes are written per `pause` (none: as fast as the
/// buffer takes them). The receiver reads everything. Returns the sender's
/// cookie, its TCP_INFO samples, and the sender itself, still open.
fn transfer(
    path: &Path,
    secs: f64,
    sndbuf: Option<i32>,
    chunk: usize,
    pause: Option<Duration>,
) -> (u64, Sampled, TcpStream) {
    let (mut rx, tx) = connect_across(path, Side::B, path.ip(Side::B));
    if let Some(b) = sndbuf {
        setsockopt_int(&tx, libc::SOL_SOCKET, libc::SO_SNDBUF, b);
    }
    let done = AtomicBool::new(false);
    let probe = tx.try_clone().unwrap();
    let sampled = std::thread::scope(|scope| {
        let done = &done;
        scope.spawn(move || {
            // Reads until the writer is done and nothing more arrives (the
            // sender stays open: its figures are compared afterwards).
            rx.set_read_timeout(Some(Duration::from_millis(200)))
                .unwrap();
            let mut buf = vec![0u8; 256 * 1024];
            loop {
                match rx.read(&mut buf) {
                    Ok(n) if n > 0 => {}
                    Err(e)
                        if e.kind() == std::io::ErrorKind::WouldBlock
                            && !done.load(Ordering::Relaxed) => {}
                    _ => break,
                }
            }
        });
        let mut writer = tx.try_clone().unwrap();
        scope.spawn(move || {
            let data = vec![7u8; chunk];
            let end = Instant::now() + Duration::from_secs_f64(secs);
            while Instant::now() < end {
                writer.write_all(&data).unwrap();
                if let Some(p) = pause {
                    std::thread::sleep(p);
                }
            }
            done.store(true, Ordering::Relaxed);
        });
        let mut s = Sampled {
            busy: 0,
            full: 0,
            delivery: Vec::new(),
        };
        while !done.load(Ordering::Relaxed) {
            let info = tcp_info(&probe);
            s.delivery.push((Instant::now(), info.delivery_rate_bps));
            if info.inflight > 0 {
                s.busy += 1;
                let open = info.snd_cwnd.saturating_sub(info.inflight);
                if info.inflight >= info.snd_cwnd
                    || (info.notsent > info.snd_mss && open * 3 < info.snd_cwnd)
                {
                    s.full += 1;
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        s
    });
    (cookie(&tx), sampled, tx)
}

/// The sender `tx` (cookie `c`) as observer reports it once it has caught
/// up with TCP_INFO's bytes acked, and that TCP_INFO; closes `tx`.
fn observed(obs: &mut Observer, c: u64, tx: TcpStream) -> (Flow, TcpInfo) {
    let info = tcp_info(&tx);
    let flow = obs.wait_for_flow(c, Duration::from_secs(3), "the sender", |f| {
        f.bytes_acked == info.bytes_acked
    });
    drop(tx);
    (flow, info)
}

/// A 16 KB SO_SNDBUF on a 20 ms, 100 Mbit/s path: the sender moves in
/// bursts and delivers about half the link. Its window is full only part
/// of the time: observer's cwnd-limited share must match the share of
/// TCP_INFO samples with in-flight >= cwnd (the kernel's is_cwnd_limited
/// flag, which observer used to count, said 95%), and the time the writer
/// waited on the buffer must be counted.
#[test]
fn a_bursty_send_buffer_is_not_cwnd_limited() {
    if !root_or_skip("a_bursty_send_buffer_is_not_cwnd_limited") {
        return;
    }
    let _serial = serial();
    let mut obs = Observer::start();
    let path = path();
    let (c, sampled, tx) = transfer(&path, 3.0, Some(16 * 1024), 256 * 1024, None);
    let (flow, info) = observed(&mut obs, c, tx);
    assert!(sampled.busy > 500, "{} busy samples", sampled.busy);
    let full = f64::from(sampled.full) / f64::from(sampled.busy);
    let busy = flow.busy_us as f64;
    let cwnd = flow.cwnd_limited_us as f64 / busy;
    let sndbuf = flow.sndbuf_full_us as f64 / busy;
    eprintln!(
        "TCP_INFO: window full in {full:.2} of busy samples; observer: cwnd-limited {cwnd:.2}, \
         send buffer {sndbuf:.2} of busy; tcpi_sndbuf_limited {} µs",
        info.sndbuf_limited_us
    );
    assert!(cwnd < 0.7, "cwnd-limited {cwnd:.2} of busy");
    assert!(
        (cwnd - full).abs() < 0.25,
        "observer {cwnd:.2}, TCP_INFO {full:.2}"
    );
    assert!(sndbuf > 0.25, "send buffer {sndbuf:.2} of busy");
    assert!(cwnd + sndbuf <= 1.0 + 1e-9, "{cwnd} + {sndbuf}");
    // The recent best delivery-rate sample agrees with the best TCP_INFO
    // showed in the transfer's last seconds, and lies at or above the mean
    // rate over busy time (24 against 15 Mbit/s here, 50.6 against 44.2 on
    // the 6.12 VM) and below the 100 Mbit/s link.
    let mean = flow.bytes_acked as f64 * 8e6 / flow.busy_us.max(1) as f64;
    let best = flow.delivery_rate_max_bps as f64;
    let seen = sampled.delivery_max(Duration::from_secs(2)) as f64;
    eprintln!(
        "delivery rate: observer's recent best {best:.0} bit/s, TCP_INFO's best of the last 2 s {seen:.0}, mean {mean:.0}"
    );
    assert!(best > 0.95 * mean, "best {best:.0} vs mean {mean:.0}");
    assert!(best < 1.15e8, "best {best:.0} above the 100 Mbit/s link");
    assert!(best < 1.25 * seen, "observer {best:.0}, TCP_INFO {seen:.0}");
    // observer notes every delivery-rate sample the kernel takes at an ACK
    // (one segment late, at the next segment's tcp_probe, in that CPU's
    // slot): its best matched TCP_INFO's within 4% in three runs here. The
    // lower bound is loose because the windows differ: observer's recent
    // best spans one or two epochs (DELIVERY_EPOCH_NS), the loop's the
    // last 2 s. In the 6.1 VM (no read hook) it still missed a lone
    // near-link sample in 1 of 4 runs (53 against 97 Mbit/s, 2026-12-04;
    // docs/kernels.md), so the bound holds where the read hook exists.
    if owner_hook() {
        assert!(best > 0.6 * seen, "observer {best:.0}, TCP_INFO {seen:.0}");
    }
}

/// A sender that writes 8 KB every 10 ms, about 6.5 Mbit/s on a 100 Mbit/s
/// path: 16 KB per 20 ms round trip, about its initial window (10
/// segments, 14.5 KB). Only its first round trips, before the window
/// grows, may fill it; it never waits on its buffer.
#[test]
fn an_application_limited_sender_is_neither() {
    if !root_or_skip("an_application_limited_sender_is_neither") {
        return;
    }
    let _serial = serial();
    let mut obs = Observer::start();
    let path = path();
    let (c, sampled, tx) = transfer(&path, 2.0, None, 8 * 1024, Some(Duration::from_millis(10)));
    let (flow, _) = observed(&mut obs, c, tx);
    let full = f64::from(sampled.full) / f64::from(sampled.busy.max(1));
    let cwnd = flow.cwnd_limited_us as f64 / flow.busy_us.max(1) as f64;
    eprintln!(
        "TCP_INFO: window full in {full:.3} of busy samples; observer: cwnd-limited {cwnd:.3}"
    );
    assert!(
        full < 0.05,
        "TCP_INFO saw the window full in {full:.3} of busy samples"
    );
    assert!(flow.busy_us > 100_000, "busy {} µs", flow.busy_us);
    assert!(cwnd < 0.1, "cwnd-limited {cwnd:.3} of busy");
    assert_eq!(flow.sndbuf_full_us, 0);
}

/// A PMTU black hole (every packet over 1,300 bytes dropped, 5 ms each
/// way): the sender's full-sized segments all vanish, so no ACK comes and
/// no segment samples it. Its retransmission timeouts do (the
/// `tcp_retransmit_skb` hook; on a kernel that refuses the storage
/// iterator no walk reaches the path's namespaces either): its figures
/// show the timeouts and the engine names the stall.
#[test]
fn a_sender_whose_segments_all_vanish_is_seen_stalled() {
    if !root_or_skip("a_sender_whose_segments_all_vanish_is_seen_stalled") {
        return;
    }
    let _serial = serial();
    let each_way = Duration::from_millis(5);
    let path = Path::new(PathConfig::new(
        pathemu::Link::with_delay_only(each_way).drop_over(1300),
        pathemu::Link::with_delay_only(each_way),
    ))
    .unwrap();
    let mut obs = Observer::start();
    let (_rx, mut tx) = connect_across(&path, Side::B, path.ip(Side::B));
    tx.set_nonblocking(true).unwrap();
    // What the send buffer takes: nothing of it ever arrives.
    let sent = tx.write(&vec![7u8; 256 * 1024]).unwrap();
    assert!(sent > 4 * 1448, "{sent}");
    let key = cookie(&tx);
    // Timeouts at about 0.2, 0.6, 1.4 and 3.0 s (RTO doubling from its
    // 200 ms floor); each sample shows the ones before it.
    let flow = obs.wait_for_flow(
        key,
        Duration::from_secs(6),
        "three retransmissions in TCP_CA_Loss",
        |f| f.retransmits >= 3 && f.ca_state == 4,
    );
    assert!(flow.bytes_acked <= 1, "{}", flow.bytes_acked);
    assert_eq!(flow.snd_cwnd, 1);
    let point = obs.point(key).unwrap();
    let a = observer::attribution::attribute(None, &point, &Default::default());
    assert_eq!(
        a.verdict,
        observer::attribution::Verdict::Path,
        "{}",
        a.explanation
    );
    assert_eq!(a.rule, "stalled");
    assert!(
        a.explanation
            .contains("a PMTU black hole where only full-sized segments vanish"),
        "{}",
        a.explanation
    );
}
