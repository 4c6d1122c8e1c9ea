//! Root integration tests of the receiving end's figures: what observer
//! reports for a socket that received data, against the kernel's own
//! TCP_INFO and FIONREAD for the same socket.

use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    time::Duration,
};

use crate::support::{
    Observer, cookie, net::connect_across, root_or_skip, setsockopt_int, tcp_info, unread,
};
use observer::model::flow::Flow;
use pathemu::{Link, Namespace, Path, PathConfig, Side};

/// Connects a sender to a listener on loopback in the current namespace;
/// `rcvbuf` sets SO_RCVBUF on the listener first (the accepted socket
/// inherits it). Returns (sender, receiver).
fn pair(rcvbuf: Option<i32>) -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    if let Some(b) = rcvbuf {
        setsockopt_int(&listener, libc::SOL_SOCKET, libc::SO_RCVBUF, b);
    }
    let sender = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (receiver, _) = listener.accept().unwrap();
    (sender, receiver)
}

/// Sends `n` bytes from `tx` while `rx` reads all of them; returns `tx`,
/// still open, once both are done.
fn bulk(mut tx: TcpStream, rx: &mut TcpStream, n: usize) -> TcpStream {
    let writer = std::thread::spawn(move || {
        tx.write_all(&vec![7u8; n]).unwrap();
        tx
    });
    let mut buf = vec![0u8; 64 * 1024];
    let mut got = 0;
    while got < n {
        let r = rx.read(&mut buf).unwrap();
        assert!(r > 0, "sender closed early");
        got += r;
    }
    writer.join().unwrap()
}

/// A bulk transfer read to the end, then quiet: the read that drains the
/// socket is sampled after the kernel updated its receive state, so every
/// receive-side figure must equal TCP_INFO exactly.
#[test]
fn drained_receiver_matches_tcp_info() {
    if !root_or_skip("drained_receiver_matches_tcp_info") {
        return;
    }
    let mut obs = Observer::start();
    let ns = Namespace::standalone().unwrap();
    const N: usize = 16 * 1024 * 1024;
    let (flow, info, pending) = ns
        .run(|| {
            let (tx, mut rx) = pair(None);
            let tx = bulk(tx, &mut rx, N);
            let info = tcp_info(&rx);
            let flow = obs.wait_for_flow(
                cookie(&rx),
                Duration::from_secs(3),
                &format!("bytes_received {}", info.bytes_received),
                |f| f.bytes_received == info.bytes_received && f.segs_in == info.segs_in,
            );
            let pending = unread(&rx);
            drop(tx);
            (flow, info, pending)
        })
        .unwrap();
    assert_eq!(info.bytes_received, N as u64);
    assert_eq!(pending, 0);
    assert_eq!(flow.unread_bytes, pending);
    assert_eq!(flow.segs_in, info.segs_in);
    assert_eq!(flow.data_segs_in, info.data_segs_in);
    assert!(info.data_segs_in > 100, "{}", info.data_segs_in);
    assert_eq!(flow.rcv_ssthresh, info.rcv_ssthresh);
    assert_eq!(flow.rcv_space, info.rcv_space);
    assert_eq!(flow.rcv_ooopack, info.rcv_ooopack);
    assert_eq!(flow.rcv_rtt_us, info.rcv_rtt_us);
    assert_eq!(flow.rcv_mss, info.rcv_mss);
    assert_eq!(flow.rcv_wscale, info.rcv_wscale);
    assert_eq!(flow.snd_wscale, info.snd_wscale);
    assert_eq!(flow.tstamp_ok, info.options & 1 != 0);
    assert_eq!(flow.sack_ok, info.options & 2 != 0);
    assert_eq!(flow.wscale_ok, info.options & 4 != 0);
    assert!(flow.wscale_ok && flow.tstamp_ok && flow.sack_ok);
    if let Some(w) = info.rcv_wnd {
        assert_eq!(flow.rcv_wnd_internal, w);
    }
    assert!(flow.rcv_wnd > 0 && flow.rcv_wnd <= flow.rcv_wnd_internal);
    assert!(!flow.rcvbuf_locked);
    // The namespace's own net.ipv4.tcp_rmem maximum.
    let rmem = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_rmem").unwrap();
    let max: u32 = rmem.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert_eq!(flow.tcp_rmem_max, max);
    assert!(flow.window_clamp >= flow.rcv_ssthresh);
}

/// A reader that stops with data left unread, and a fixed SO_RCVBUF: the
/// unread bytes must equal FIONREAD (the sample of the last segment
/// carries its bytes forward), the lock must show, and the time with the
/// window closed must be counted.
#[test]
fn unread_bytes_and_a_closed_window_are_reported() {
    if !root_or_skip("unread_bytes_and_a_closed_window_are_reported") {
        return;
    }
    let mut obs = Observer::start();
    let ns = Namespace::standalone().unwrap();
    let (flow, pending) = ns
        .run(|| {
            let (mut tx, rx) = pair(Some(64 * 1024));
            // Fill the receive buffer: the window closes, the sender blocks.
            tx.set_nonblocking(true).unwrap();
            let chunk = vec![7u8; 64 * 1024];
            let mut sent = 0;
            let deadline = std::time::Instant::now() + Duration::from_secs(2);
            while std::time::Instant::now() < deadline {
                match tx.write(&chunk) {
                    Ok(n) => sent += n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    Err(e) => panic!("write: {e}"),
                }
            }
            assert!(sent > 64 * 1024, "sent only {sent}");
            let pending = unread(&rx);
            let flow = obs.wait_for_flow(
                cookie(&rx),
                Duration::from_secs(3),
                &format!("unread_bytes {pending}"),
                |f| f.unread_bytes == pending,
            );
            drop((tx, rx));
            (flow, pending)
        })
        .unwrap();
    assert!(pending > 32 * 1024, "FIONREAD {pending}");
    assert_eq!(flow.unread_bytes, pending);
    assert!(flow.rcvbuf_locked);
    // Closed for most of the 2 s the sender spent blocked.
    assert!(
        flow.rwnd_closed_us > 1_000_000,
        "rwnd_closed_us {}",
        flow.rwnd_closed_us
    );
    assert!(flow.rcv_wnd < 2 * flow.rcv_mss, "rcv_wnd {}", flow.rcv_wnd);
}

/// Window scaling off: the kernel keeps an unclamped `rcv_wnd` that grows
/// past 64 KB, but the wire carries at most 65,535 bytes. observer's
/// `rcv_wnd` must be what was advertised: the sender's snd_wnd.
#[test]
fn without_window_scaling_rcv_wnd_is_what_the_sender_was_told() {
    if !root_or_skip("without_window_scaling_rcv_wnd_is_what_the_sender_was_told") {
        return;
    }
    let mut obs = Observer::start();
    let ns = Namespace::standalone().unwrap();
    const N: usize = 8 * 1024 * 1024;
    let (flow, told) = ns
        .run(|| {
            // This thread is in the namespace: the sysctl is the namespace's.
            std::fs::write("/proc/sys/net/ipv4/tcp_window_scaling", "0").unwrap();
            let (tx, mut rx) = pair(None);
            let tx = bulk(tx, &mut rx, N);
            // Let the window update after the last read reach the sender.
            std::thread::sleep(Duration::from_millis(50));
            let told = tcp_info(&tx).snd_wnd;
            let flow = obs.wait_for_flow(
                cookie(&rx),
                Duration::from_secs(3),
                &format!("rcv_wnd {told}"),
                |f| f.bytes_received == N as u64 && f.rcv_wnd == told,
            );
            drop(tx);
            (flow, told)
        })
        .unwrap();
    assert!(!flow.wscale_ok);
    assert_eq!(flow.rcv_wscale, 0);
    assert_eq!(flow.rcv_wnd, told);
    assert!(flow.rcv_wnd <= 65_535, "rcv_wnd {}", flow.rcv_wnd);
    // The kernel's own value is past what can be advertised: without the
    // clamp observer would report it.
    assert!(
        flow.rcv_wnd_internal > 65_535,
        "rcv_wnd_internal {}",
        flow.rcv_wnd_internal
    );
}

/// Twelve gaps of `pause` between writes of `chunk` bytes; the receiver
/// reads `read` bytes at a time, sleeping `nap` after each read, until
/// it has them all. Returns the receiver's flow once observer counted
/// every byte.
fn gaps_of(
    obs: &mut Observer,
    rcvbuf: Option<i32>,
    pause: Duration,
    read: usize,
    nap: Duration,
) -> Flow {
    const CHUNK: usize = 256 * 1024;
    const CHUNKS: usize = 12;
    let (mut tx, mut rx) = pair(rcvbuf);
    let writer = std::thread::spawn(move || {
        for _ in 0..CHUNKS {
            tx.write_all(&[7u8; CHUNK]).unwrap();
            std::thread::sleep(pause);
        }
        tx
    });
    let mut buf = vec![0u8; read];
    let mut got = 0;
    while got < CHUNK * CHUNKS {
        let r = rx.read(&mut buf).unwrap();
        assert!(r > 0, "sender closed early");
        got += r;
        std::thread::sleep(nap);
    }
    let tx = writer.join().unwrap();
    let flow = obs.wait_for_flow(
        cookie(&rx),
        Duration::from_secs(3),
        &format!("bytes_received {got}"),
        |f| f.bytes_received == got as u64,
    );
    drop((tx, rx));
    flow
}

/// The sender's own pauses are told from those a reader imposes: a
/// sender that rests 60 ms between 256 KB writes to a reader that keeps
/// up pauses with the window open (none of its gaps shut); a sender that
/// always has data, to a reader taking 64 KB every 50 ms from a 64 KB
/// buffer, is silent only while the reader keeps the window shut.
#[test]
fn the_senders_own_pauses_are_told_from_a_readers() {
    if !root_or_skip("the_senders_own_pauses_are_told_from_a_readers") {
        return;
    }
    let mut obs = Observer::start();
    let ns = Namespace::standalone().unwrap();
    let (own, imposed) = ns
        .run(|| {
            let own = gaps_of(
                &mut obs,
                None,
                Duration::from_millis(60),
                1 << 20,
                Duration::ZERO,
            );
            let imposed = gaps_of(
                &mut obs,
                Some(64 * 1024),
                Duration::ZERO,
                64 * 1024,
                Duration::from_millis(50),
            );
            (own, imposed)
        })
        .unwrap();
    for (what, f) in [("own", &own), ("imposed", &imposed)] {
        eprintln!(
            "{what}: {} gaps, {} µs, {} µs of them shut; closed {} µs",
            f.rx_gaps, f.rx_gap_us, f.rx_gap_shut_us, f.rwnd_closed_us
        );
    }
    // Eleven rests end with the next write (the twelfth is after the last).
    assert!(own.rx_gaps >= 10, "rx_gaps {}", own.rx_gaps);
    assert!(own.rx_gap_us >= 10 * 50_000, "rx_gap_us {}", own.rx_gap_us);
    assert!(
        own.rx_gap_shut_us * 20 <= own.rx_gap_us,
        "rx_gap_shut_us {} of {}",
        own.rx_gap_shut_us,
        own.rx_gap_us
    );
    // 3 MB through a 64 KB buffer at 64 KB a 50 ms nap: tens of gaps.
    assert!(imposed.rx_gaps >= 10, "rx_gaps {}", imposed.rx_gaps);
    assert!(
        imposed.rx_gap_shut_us * 10 >= imposed.rx_gap_us * 8,
        "rx_gap_shut_us {} of {}",
        imposed.rx_gap_shut_us,
        imposed.rx_gap_us
    );
    // Neither sender waited for data from this host.
    assert_eq!(own.rx_gap_asked_us, 0);
    assert_eq!(imposed.rx_gap_asked_us, 0);
}

/// A sender that waits for this host's requests: the receiver thinks
/// 60 ms, then asks for the next 256 KB with a byte of its own, twelve
/// times. Every gap is one in which this host sent data.
#[test]
fn gaps_that_wait_for_this_hosts_request_are_told_as_asked() {
    if !root_or_skip("gaps_that_wait_for_this_hosts_request_are_told_as_asked") {
        return;
    }
    const CHUNK: usize = 256 * 1024;
    const CHUNKS: usize = 12;
    let mut obs = Observer::start();
    let ns = Namespace::standalone().unwrap();
    let flow = ns
        .run(|| {
            let (mut tx, mut rx) = pair(None);
            let server = std::thread::spawn(move || {
                let mut ask = [0u8; 1];
                for _ in 0..CHUNKS {
                    tx.read_exact(&mut ask).unwrap();
                    tx.write_all(&[7u8; CHUNK]).unwrap();
                }
                tx
            });
            let mut buf = vec![0u8; CHUNK];
            for _ in 0..CHUNKS {
                std::thread::sleep(Duration::from_millis(60));
                rx.write_all(b"?").unwrap();
                rx.read_exact(&mut buf).unwrap();
            }
            let tx = server.join().unwrap();
            let got = (CHUNK * CHUNKS) as u64;
            let flow = obs.wait_for_flow(
                cookie(&rx),
                Duration::from_secs(3),
                &format!("bytes_received {got}"),
                |f| f.bytes_received == got,
            );
            drop((tx, rx));
            flow
        })
        .unwrap();
    eprintln!(
        "asked: {} gaps, {} µs, {} µs of them after a request, {} µs shut",
        flow.rx_gaps, flow.rx_gap_us, flow.rx_gap_asked_us, flow.rx_gap_shut_us
    );
    // The first answer follows the connection's first data: eleven gaps.
    assert!(flow.rx_gaps >= 10, "rx_gaps {}", flow.rx_gaps);
    assert!(
        flow.rx_gap_us >= 10 * 50_000,
        "rx_gap_us {}",
        flow.rx_gap_us
    );
    // Every gap that follows a request is asked. A VM may also stall the
    // sender mid-chunk for over the 10 ms a gap must last (6.1 once: a
    // twelfth gap of 10.8 ms): such a gap is the sender's own, not asked,
    // and shorter than the 60 ms each request waits, so the time not
    // asked is at most 50 ms for each gap beyond the eleven.
    let own = flow.rx_gap_us - flow.rx_gap_asked_us;
    let extra = u64::from(flow.rx_gaps.saturating_sub(11));
    assert!(
        own <= extra * 50_000,
        "{own} µs of gaps not asked, {extra} gaps beyond the requests'"
    );
    assert!(
        flow.rx_gap_shut_us * 20 <= flow.rx_gap_us,
        "rx_gap_shut_us {} of {}",
        flow.rx_gap_shut_us,
        flow.rx_gap_us
    );
}

/// A client that asks for the next object the moment it has read the
/// last, across a 50 ms round trip: each gap waits for its request, sent
/// microseconds after the data before the gap, within the same jiffy.
/// The gaps are told as asked by when this end began sending
/// (`first_tx_mstamp`), not by a jiffy clock that cannot order the two.
#[test]
fn requests_sent_the_moment_an_object_is_read_are_told_as_asked() {
    if !root_or_skip("requests_sent_the_moment_an_object_is_read_are_told_as_asked") {
        return;
    }
    const OBJECT: usize = 128 * 1024;
    const OBJECTS: usize = 12;
    let mut obs = Observer::start();
    let one_way = Duration::from_millis(25);
    let path = Path::new(PathConfig::new(
        Link::with_delay_only(one_way),
        Link::with_delay_only(one_way),
    ))
    .unwrap();
    let (mut server, mut client) = connect_across(&path, Side::B, path.ip(Side::B));
    server.set_nodelay(true).unwrap();
    client.set_nodelay(true).unwrap();
    let answer = std::thread::spawn(move || {
        let mut ask = [0u8; 1];
        for _ in 0..OBJECTS {
            server.read_exact(&mut ask).unwrap();
            server.write_all(&[7u8; OBJECT]).unwrap();
        }
        server
    });
    let mut buf = vec![0u8; OBJECT];
    for _ in 0..OBJECTS {
        client.write_all(b"?").unwrap();
        client.read_exact(&mut buf).unwrap();
    }
    let server = answer.join().unwrap();
    let got = (OBJECT * OBJECTS) as u64;
    let flow = obs.wait_for_flow(
        cookie(&client),
        Duration::from_secs(3),
        &format!("bytes_received {got}"),
        |f| f.bytes_received == got,
    );
    drop((server, client));
    eprintln!(
        "asked at once: {} gaps, {} µs, {} µs of them after a request",
        flow.rx_gaps, flow.rx_gap_us, flow.rx_gap_asked_us
    );
    // Each object after the first follows a request a round trip (50 ms)
    // before: eleven gaps. Slow start may add gaps within the first
    // objects, the sender's own, each under a round trip.
    assert!(flow.rx_gaps >= 11, "rx_gaps {}", flow.rx_gaps);
    assert!(
        flow.rx_gap_asked_us >= 11 * 45_000,
        "{} µs asked of {} µs in {} gaps",
        flow.rx_gap_asked_us,
        flow.rx_gap_us,
        flow.rx_gaps
    );
    let own = flow.rx_gap_us - flow.rx_gap_asked_us;
    let extra = u64::from(flow.rx_gaps - 11);
    assert!(
        own <= extra * 55_000,
        "{own} µs of gaps not asked, {extra} gaps beyond the requests'"
    );
}
