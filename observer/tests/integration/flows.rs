//! Root integration tests: real kernel TCP flows in a namespace made for
//! each test, observed through the attached probes, checked against the
//! kernel's own TCP_INFO for the same socket.

use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    time::Duration,
};

use crate::support::{Observer, cookie, netns_id, root_or_skip, setsockopt_int, tcp_info};
use pathemu::Namespace;

/// One jiffy at the slowest HZ (100), the chrono counters' resolution.
const JIFFY_US: u64 = 10_000;

fn within_jiffy_and_percent(ours: u64, kernel: u64) -> bool {
    ours.abs_diff(kernel) <= JIFFY_US + kernel / 100
}

/// Sends `n` bytes from a client to a server that reads them all and
/// answers "ok"; returns the client socket (still open) after the answer.
fn transfer(addr: &str, n: usize, rcvbuf: Option<i32>, slow_reader: bool) -> TcpStream {
    let listener = TcpListener::bind(addr).unwrap();
    if let Some(b) = rcvbuf {
        setsockopt_int(&listener, libc::SOL_SOCKET, libc::SO_RCVBUF, b);
    }
    let local = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut c, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 16 * 1024];
        let mut got = 0;
        while got < n {
            let chunk = if slow_reader { 2048 } else { buf.len() };
            let r = c.read(&mut buf[..chunk]).unwrap();
            assert!(r > 0, "peer closed early");
            got += r;
            if slow_reader {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        c.write_all(b"ok").unwrap();
        // Hold the connection open until the client is done comparing.
        let _ = c.read(&mut buf);
    });
    let mut client = TcpStream::connect(local).unwrap();
    client.write_all(&vec![7u8; n]).unwrap();
    let mut ok = [0u8; 2];
    client.read_exact(&mut ok).unwrap();
    assert_eq!(&ok, b"ok");
    // The server thread ends when the client closes; detach it.
    drop(server);
    client
}

#[test]
fn known_transfer_matches_tcp_info() {
    if !root_or_skip("known_transfer_matches_tcp_info") {
        return;
    }
    let mut obs = Observer::start();
    assert!(
        obs.probes.direct,
        "direct BTF-checked loads should verify on this kernel"
    );
    let ns = Namespace::standalone().unwrap();
    // Long enough to span several jiffies (busy time is counted in
    // jiffies: 8 MiB once took under one 4 ms jiffy, leaving it 0).
    const N: usize = 64 * 1024 * 1024;
    let (flow, info) = ns
        .run(|| {
            let client = transfer("127.0.0.1:0", N, None, false);
            let info = tcp_info(&client);
            let flow = obs.wait_for_flow(
                cookie(&client),
                Duration::from_secs(3),
                &format!("bytes_acked {}", info.bytes_acked),
                |f| f.bytes_acked == info.bytes_acked,
            );
            (flow, info)
        })
        .unwrap();
    // tcpi_bytes_acked counts the SYN's sequence number too.
    assert_eq!(info.bytes_acked, N as u64 + 1);
    assert_eq!(flow.bytes_acked, info.bytes_acked);
    assert_eq!(flow.bytes_received, info.bytes_received);
    assert_eq!(flow.bytes_sent, info.bytes_sent);
    assert_eq!(flow.netns, netns_id(&ns));
    assert_eq!(flow.local.ip().to_string(), "127.0.0.1");
    assert_eq!(flow.remote.ip().to_string(), "127.0.0.1");
    assert!(!flow.closed);
    // Exact: sampled after the last ACK was processed (the "ok" reply).
    assert_eq!(flow.snd_cwnd, info.snd_cwnd);
    assert_eq!(flow.snd_wnd, info.snd_wnd);
    assert_eq!(flow.srtt_us, info.rtt_us);
    assert_eq!(flow.min_rtt_us, info.min_rtt_us);
    assert_eq!(flow.mss, info.snd_mss);
    assert_eq!(flow.retransmits, info.total_retrans);
    assert!(info.busy_us > 0);
    assert!(
        within_jiffy_and_percent(flow.busy_us, info.busy_us),
        "busy {} vs {}",
        flow.busy_us,
        info.busy_us
    );
    assert!(within_jiffy_and_percent(
        flow.rwnd_limited_us,
        info.rwnd_limited_us
    ));
    assert!(within_jiffy_and_percent(
        flow.sndbuf_limited_us,
        info.sndbuf_limited_us
    ));
    assert_eq!(flow.pid, std::process::id());
    assert!(!flow.cc.is_empty());
}

/// A flow accepted by a listener whose owner only sends (it never reads,
/// so no read hook sees its process) gets its owner from the owner walk:
/// this test process holds the socket.
#[test]
fn an_accepted_flow_that_only_sends_has_its_owner() {
    if !root_or_skip("an_accepted_flow_that_only_sends_has_its_owner") {
        return;
    }
    let mut obs = Observer::start();
    if !obs.probes.attached().contains(&"iter:task_file") {
        eprintln!("skipped: this kernel refuses the owner walk");
        return;
    }
    let ns = Namespace::standalone().unwrap();
    let flow = ns
        .run(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (mut server, _) = listener.accept().unwrap();
            server.write_all(&[7u8; 256 * 1024]).unwrap();
            let mut got = vec![0u8; 256 * 1024];
            client.read_exact(&mut got).unwrap();
            let flow =
                obs.wait_for_flow(cookie(&server), Duration::from_secs(5), "an owner", |f| {
                    f.pid != 0
                });
            let local = server.local_addr().unwrap();
            drop((client, server));
            (flow, local)
        })
        .unwrap();
    let (flow, local) = flow;
    assert_eq!(flow.local, local);
    assert_eq!(flow.pid, std::process::id());
    assert!(!flow.comm.is_empty());
    assert!(flow.cgroup_id != 0);
}

/// An accepted flow closed by its owner before any poll (so before the
/// owner walk could reach it, and without a read) has its owner in its
/// final record: close() is the owner's own call.
#[test]
fn an_accepted_flow_closed_before_a_poll_has_its_owner() {
    if !root_or_skip("an_accepted_flow_closed_before_a_poll_has_its_owner") {
        return;
    }
    let mut obs = Observer::start();
    let ns = Namespace::standalone().unwrap();
    let (flow, local) = ns
        .run(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (mut server, _) = listener.accept().unwrap();
            let key = cookie(&server);
            let local = server.local_addr().unwrap();
            server.write_all(b"bye").unwrap();
            drop(server);
            let mut got = Vec::new();
            client.read_to_end(&mut got).unwrap();
            let flow = obs.wait_for_flow(key, Duration::from_secs(5), "closed", |f| f.closed);
            (flow, local)
        })
        .unwrap();
    assert_eq!(flow.local, local);
    assert_eq!(flow.pid, std::process::id());
    assert!(!flow.comm.is_empty());
}

/// Both ends of a bulk transfer that then goes quiet (no answer, no
/// close, the sender never reads). The sample gate holds back most of
/// their segments; the ACK that acknowledges everything (sender) and the
/// reads that drain the socket (receiver) must still leave their figures
/// exact, or the last jiffy would be missing for as long as the flow idles.
#[test]
fn quiet_flow_matches_tcp_info_at_both_ends() {
    if !root_or_skip("quiet_flow_matches_tcp_info_at_both_ends") {
        return;
    }
    let mut obs = Observer::start();
    let ns = Namespace::standalone().unwrap();
    const N: usize = 32 * 1024 * 1024;
    let (flow, info, sent, sinfo) = ns
        .run(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let sender = std::thread::spawn(move || {
                let mut c = TcpStream::connect(addr).unwrap();
                c.write_all(&vec![7u8; N]).unwrap();
                c
            });
            let (mut server, _) = listener.accept().unwrap();
            let mut buf = vec![0u8; 64 * 1024];
            let mut got = 0;
            while got < N {
                let r = server.read(&mut buf).unwrap();
                assert!(r > 0, "sender closed early");
                got += r;
            }
            // Keep the sender open: no FIN may refresh the receiver's entry.
            let client = sender.join().unwrap();
            let info = tcp_info(&server);
            let flow = obs.wait_for_flow(
                cookie(&server),
                Duration::from_secs(3),
                &format!("bytes_received {}", info.bytes_received),
                |f| f.bytes_received == info.bytes_received,
            );
            let sinfo = tcp_info(&client);
            let sent = obs.wait_for_flow(
                cookie(&client),
                Duration::from_secs(3),
                &format!("bytes_acked {}", sinfo.bytes_acked),
                |f| f.bytes_acked == sinfo.bytes_acked,
            );
            drop(client);
            (flow, info, sent, sinfo)
        })
        .unwrap();
    assert_eq!(info.bytes_received, N as u64);
    // tcpi_bytes_acked counts the SYN's sequence number too.
    assert_eq!(sinfo.bytes_acked, N as u64 + 1);
    assert_eq!(sent.bytes_sent, sinfo.bytes_sent);
    // Not compared: what the last segment itself changes in the kernel
    // (srtt and cwnd from the last ACK, snd_wnd from a window update).
    // `tcp_probe` fires before the segment is processed and only the
    // acked and received byte counts are carried forward, so a sender
    // that never reads again shows them one segment old.
    assert_eq!(flow.bytes_received, info.bytes_received);
    assert_eq!(flow.bytes_acked, info.bytes_acked);
    assert!(!flow.closed);
}

#[test]
fn helper_reads_fallback_matches_tcp_info_too() {
    if !root_or_skip("helper_reads_fallback_matches_tcp_info_too") {
        return;
    }
    let probes =
        observer::kernel::probes::Probes::load(observer::kernel::load::probe_config::ProbeConfig {
            helper_reads: true,
            ..Default::default()
        })
        .unwrap();
    assert!(!probes.direct);
    let mut obs = Observer::with(probes);
    let ns = Namespace::standalone().unwrap();
    const N: usize = 2 * 1024 * 1024;
    let (flow, info) = ns
        .run(|| {
            let client = transfer("127.0.0.1:0", N, None, false);
            let key = cookie(&client);
            let info = tcp_info(&client);
            let mut flow = None;
            assert!(obs.wait_until(Duration::from_secs(3), |o| {
                flow = o.flow(key);
                flow.as_ref()
                    .is_some_and(|f| f.bytes_acked == info.bytes_acked)
            }));
            (flow.unwrap(), info)
        })
        .unwrap();
    assert_eq!(flow.bytes_acked, N as u64 + 1);
    assert_eq!(flow.snd_cwnd, info.snd_cwnd);
    assert_eq!(flow.snd_wnd, info.snd_wnd);
    assert_eq!(flow.srtt_us, info.rtt_us);
    assert!(within_jiffy_and_percent(flow.busy_us, info.busy_us));
}

/// 1 MiB to a slow reader behind a 4 KB receive buffer, in a namespace of
/// its own, under a fresh observer: the flow as observer last saw it (once
/// it has every ACK) and TCP_INFO of the same socket.
fn rwnd_limited_transfer() -> (observer::model::flow::Flow, crate::support::TcpInfo) {
    let mut obs = Observer::start();
    let ns = Namespace::standalone().unwrap();
    const N: usize = 1024 * 1024;
    ns.run(|| {
        let client = transfer("127.0.0.1:0", N, Some(4096), true);
        let key = cookie(&client);
        let info = tcp_info(&client);
        let mut flow = None;
        assert!(obs.wait_until(Duration::from_secs(3), |o| {
            flow = o.flow(key);
            flow.as_ref()
                .is_some_and(|f| f.bytes_acked == info.bytes_acked)
        }));
        (flow.unwrap(), info)
    })
    .unwrap()
}

#[test]
fn small_receive_buffer_makes_sender_rwnd_limited() {
    if !root_or_skip("small_receive_buffer_makes_sender_rwnd_limited") {
        return;
    }
    let (flow, info) = rwnd_limited_transfer();
    assert!(info.rwnd_limited_us > info.busy_us / 2, "kernel: {info:?}");
    assert!(
        within_jiffy_and_percent(flow.rwnd_limited_us, info.rwnd_limited_us),
        "rwnd_limited {} vs TCP_INFO {}",
        flow.rwnd_limited_us,
        info.rwnd_limited_us
    );
    assert!(within_jiffy_and_percent(flow.busy_us, info.busy_us));
    assert_eq!(flow.snd_wnd, info.snd_wnd);
}

/// What a pod sees: no `/proc/timer_list`, no `/proc/config.gz`, no
/// `/boot`. observer learns HZ from the kernel itself, so the figures
/// counted in jiffies (busy, rwnd-limited) still equal TCP_INFO's.
#[test]
fn figures_in_jiffies_match_tcp_info_without_host_hz_files() {
    if !root_or_skip("figures_in_jiffies_match_tcp_info_without_host_hz_files") {
        return;
    }
    crate::support::pod::hide_hz_files();
    assert_eq!(std::fs::read_to_string("/proc/timer_list").unwrap(), "");
    assert_eq!(observer::model::clock::config_hz(), None);
    let hz = observer::kernel::load::tick::kernel_hz().unwrap();
    let measured = hz.measured.unwrap();
    assert!(
        (f64::from(hz.hz) - measured).abs() < f64::from(hz.hz) * 0.02,
        "{hz:?}"
    );
    let (flow, info) = rwnd_limited_transfer();
    // Several hundred ms of rwnd-limited time: a wrong HZ (100 or 1000
    // for 250) would put observer's figure off by 60% or more.
    assert!(info.rwnd_limited_us > 100_000, "kernel: {info:?}");
    assert!(
        within_jiffy_and_percent(flow.rwnd_limited_us, info.rwnd_limited_us),
        "rwnd_limited {} vs TCP_INFO {}",
        flow.rwnd_limited_us,
        info.rwnd_limited_us
    );
    assert!(
        within_jiffy_and_percent(flow.busy_us, info.busy_us),
        "busy {} vs TCP_INFO {}",
        flow.busy_us,
        info.busy_us
    );
}

#[test]
fn thousand_short_connections_close_exactly_once() {
    if !root_or_skip("thousand_short_connections_close_exactly_once") {
        return;
    }
    let mut obs = Observer::start();
    let ns = Namespace::standalone().unwrap();
    const COUNT: usize = 1000;
    let cookies = ns
        .run(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let server = std::thread::spawn(move || {
                for _ in 0..COUNT {
                    let (mut c, _) = listener.accept().unwrap();
                    let mut b = [0u8; 100];
                    c.read_exact(&mut b).unwrap();
                }
            });
            let mut cookies = Vec::with_capacity(COUNT);
            for _ in 0..COUNT {
                let mut c = TcpStream::connect(addr).unwrap();
                cookies.push(cookie(&c));
                c.write_all(&[1u8; 100]).unwrap();
            }
            server.join().unwrap();
            cookies
        })
        .unwrap();
    let netns = netns_id(&ns);
    let mut closed = Vec::new();
    // Generous: in an emulated VM on a busy host (the kernel matrix) a few
    // closes wait for retransmissions of dropped loopback segments.
    assert!(
        obs.wait_until(Duration::from_secs(30), |o| {
            closed = o.flows_in(netns).into_iter().filter(|f| f.closed).collect();
            closed.len() >= 2 * COUNT
        }),
        "only {} closed flows",
        closed.len()
    );
    // Both ends of every connection, each once.
    assert_eq!(closed.len(), 2 * COUNT);
    for c in &cookies {
        let n = closed.iter().filter(|f| f.cookie == *c).count();
        assert_eq!(n, 1, "client cookie {c} seen {n} times");
    }
    let client_side: Vec<_> = closed
        .iter()
        .filter(|f| cookies.contains(&f.cookie))
        .collect();
    assert!(
        client_side
            .iter()
            .all(|f| f.bytes_acked >= 101 && f.state == "close")
    );
}

#[test]
fn ipv6_flow_reports_v6_addresses() {
    if !root_or_skip("ipv6_flow_reports_v6_addresses") {
        return;
    }
    let mut obs = Observer::start();
    let ns = Namespace::standalone().unwrap();
    const N: usize = 256 * 1024;
    let (flow, local) = ns
        .run(|| {
            let client = transfer("[::1]:0", N, None, false);
            let key = cookie(&client);
            let local = client.local_addr().unwrap();
            let mut flow = None;
            assert!(obs.wait_until(Duration::from_secs(3), |o| {
                flow = o.flow(key);
                flow.as_ref().is_some_and(|f| f.bytes_acked == N as u64 + 1)
            }));
            (flow.unwrap(), local)
        })
        .unwrap();
    assert_eq!(flow.local, local);
    assert_eq!(flow.local.to_string(), format!("[::1]:{}", local.port()));
    assert_eq!(flow.remote.ip().to_string(), "::1");
}

#[test]
fn full_flow_map_counts_evictions() {
    if !root_or_skip("full_flow_map_counts_evictions") {
        return;
    }
    let mut probes =
        observer::kernel::probes::Probes::load(observer::kernel::load::probe_config::ProbeConfig {
            max_flows: 16,
            ..Default::default()
        })
        .unwrap();
    let ns = Namespace::standalone().unwrap();
    ns.run(|| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        // 20 connections held open at once: 40 sockets for 16 slots.
        let clients: Vec<TcpStream> = (0..20).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let servers: Vec<TcpStream> = (0..20).map(|_| l.accept().unwrap().0).collect();
        assert_eq!(clients.len() + servers.len(), 40);
    })
    .unwrap();
    let c = probes.counters().unwrap();
    let evicted = c[observer_common::Counter::LruEvictions as usize];
    let created = c[observer_common::Counter::FlowsCreated as usize];
    assert!(created >= 40, "created {created}");
    assert!(evicted >= 40 - 16, "evicted {evicted} of {created}");
    let mut active = Vec::new();
    probes.active(&mut active);
    assert!(active.len() <= 16);
}

#[test]
fn idle_flow_older_than_observer_closes_with_its_port_and_no_rate() {
    if !root_or_skip("idle_flow_older_than_observer_closes_with_its_port_and_no_rate") {
        return;
    }
    let ns = Namespace::standalone().unwrap();
    // A connection that moved data and went idle before observer started.
    let (client, server, local) = ns
        .run(|| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let (mut s, _) = l.accept().unwrap();
            c.write_all(&vec![1u8; 1 << 20]).unwrap();
            let mut buf = vec![0u8; 1 << 20];
            s.read_exact(&mut buf).unwrap();
            let local = c.local_addr().unwrap();
            (c, s, local)
        })
        .unwrap();
    // Idle: the server has acknowledged every byte (a late delayed ACK
    // would reach the client after observer starts, a packet that creates
    // its entry before the close).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while tcp_info(&client).bytes_acked < 1 << 20 {
        assert!(std::time::Instant::now() < deadline, "data never acked");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    let mut obs = Observer::start();
    let key = cookie(&client);
    drop(client);
    drop(server);
    let mut flow = None;
    assert!(obs.wait_until(Duration::from_secs(3), |o| {
        flow = o.flow(key);
        flow.as_ref().is_some_and(|f| f.closed)
    }));
    let flow = flow.unwrap();
    assert_eq!(flow.local, local);
    let clock = obs.clock;
    let s = *obs
        .table
        .flows()
        .into_iter()
        .find(|s| s.cookie == key)
        .unwrap();
    assert_eq!(s.born_at_close, 1);
    let to = observer::attribution::Point::new(&s, &clock, observer::model::clock::monotonic_ns());
    let a = observer::attribution::attribute(None, &to, &Default::default());
    assert_eq!(a.verdict, observer::attribution::Verdict::Unknown);
    assert_eq!(a.evidence.rate_bps, 0.0);
}

/// A socket switched to another congestion control after connect
/// (`setsockopt(TCP_CONGESTION)`) is reported under the new name, as `ss`
/// shows it.
#[test]
fn congestion_control_switched_after_connect_is_reported() {
    if !root_or_skip("congestion_control_switched_after_connect_is_reported") {
        return;
    }
    let mut obs = Observer::start();
    let ns = Namespace::standalone().unwrap();
    let (before, after) = ns
        .run(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (mut server, _) = listener.accept().unwrap();
            client.write_all(&[1u8; 4096]).unwrap();
            let mut buf = [0u8; 4096];
            server.read_exact(&mut buf).unwrap();
            let key = cookie(&client);
            let before = obs.wait_for_flow(key, Duration::from_secs(3), "a cc name", |f| {
                !f.cc.is_empty()
            });
            // Whatever the namespace default is, switch to the other of the
            // two every kernel here allows.
            let other = if before.cc == "reno" { "bbr" } else { "reno" };
            // SAFETY: a pointer to the name's bytes, with their length.
            let rc = unsafe {
                libc::setsockopt(
                    std::os::fd::AsRawFd::as_raw_fd(&client),
                    libc::IPPROTO_TCP,
                    libc::TCP_CONGESTION,
                    other.as_ptr().cast(),
                    other.len() as libc::socklen_t,
                )
            };
            assert_eq!(
                rc,
                0,
                "TCP_CONGESTION {other}: {}",
                std::io::Error::last_os_error()
            );
            // Past the sample gate's jiffy for this process and CPU.
            std::thread::sleep(Duration::from_millis(30));
            client.write_all(&[2u8; 4096]).unwrap();
            server.read_exact(&mut buf).unwrap();
            let after = obs.wait_for_flow(key, Duration::from_secs(3), other, |f| f.cc == other);
            (before, after)
        })
        .unwrap();
    assert_ne!(before.cc, after.cc);
}
