//! Faults while running: a slow poll does not fill the ring (a thread
//! drains it; a full ring is `parking`'s); flows
//! older than observer are picked up at their next packet; SIGINT and
//! SIGTERM detach and exit 0.

use std::{
    io::{Read as _, Write as _},
    net::{Ipv4Addr, TcpListener, TcpStream},
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

use crate::support::{
    Observer,
    bpf::{attached_programs, leftover, observer_programs, wait_attached},
    cookie,
    http::{free_port, kernel_event, scrape, sum, wait_serving},
    netns_id,
    process::BIN,
    root_or_skip, serial, tcp_info,
};
use pathemu::sockets::connect_from;
use pathemu::{ChildGuard, Namespace};

#[test]
fn slow_polls_do_not_fill_the_ring_buffer() {
    if !root_or_skip("slow_polls_do_not_fill_the_ring_buffer") {
        return;
    }
    // Connections from 127.79.0.2 to 127.79.0.1: both ends' flows carry
    // remote subnet 127.79.0.0/16, unlike the scrapes of /metrics.
    const SERVER: Ipv4Addr = Ipv4Addr::new(127, 79, 0, 1);
    const CLIENT: Ipv4Addr = Ipv4Addr::new(127, 79, 0, 2);
    const LABEL: &str = r#"remote_subnet="127.79.0.0/16""#;
    const CONNECTIONS: usize = 150;
    let _serial = serial();
    let before = observer_programs();
    let port = free_port();
    // Four pages hold ~37 closed-flow records (424 bytes + 8 of header
    // each), and the polls are 10 s apart: only the thread draining the
    // ring every 50 ms keeps it from filling.
    let ring = (4 * observer::args::page_size()).to_string();
    let mut child = ChildGuard::spawn(
        Command::new(BIN)
            .args(["run", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--interval", "10s", "--ringbuf-bytes", &ring])
            .args(["--label-remote-subnet", "16"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
    .unwrap();
    wait_attached(&before, attached_programs());
    // It serves once its first poll, which starts the drain thread, is done.
    wait_serving(port, &mut child, Duration::from_secs(10));
    let ns = Namespace::standalone().unwrap();
    // A steady ~200 closes a second, ~10 per drain period (a quarter of
    // the ring), but fifty rings' worth between two polls.
    ns.run(|| {
        let l = TcpListener::bind((SERVER, 0)).unwrap();
        let addr = l.local_addr().unwrap();
        for _ in 0..CONNECTIONS {
            let c = connect_from(CLIENT, addr).unwrap();
            let (s, _) = l.accept().unwrap();
            drop(c);
            drop(s);
            std::thread::sleep(Duration::from_millis(10));
        }
    })
    .unwrap();
    // The next poll reports them.
    let expected = 2.0 * CONNECTIONS as f64;
    let closed = |t: &str| sum(t, "observer_flows_closed_total", LABEL);
    let deadline = Instant::now() + Duration::from_secs(25);
    let mut text = scrape(port);
    while closed(&text) < expected && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        text = scrape(port);
    }
    // Parked records are host-wide: other closes on the host share the page.
    let parked = kernel_event(&text, "observer_close_records_parked_total");
    let others = sum(&text, "observer_flows_closed_total", "") - closed(&text);
    assert_eq!(
        parked,
        0.0,
        "closes the full ring left in the flow map ({} of {expected} closes reported, {others} \
         other closes on the host)",
        closed(&text)
    );
    assert_eq!(
        closed(&text),
        expected,
        "closes reported: both ends of every connection, once"
    );
    let out = child.stop(libc::SIGINT).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(leftover(&before), Vec::<u32>::new());
}

#[test]
fn flow_open_before_start_is_picked_up_at_its_next_packet() {
    if !root_or_skip("flow_open_before_start_is_picked_up_at_its_next_packet") {
        return;
    }
    let _serial = serial();
    let ns = Namespace::standalone().unwrap();
    const BEFORE: usize = 256 * 1024;
    const AFTER: usize = 1024 * 1024;
    let (mut client, mut server) = ns
        .run(|| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let (mut s, _) = l.accept().unwrap();
            c.write_all(&vec![1u8; BEFORE]).unwrap();
            let mut buf = vec![0u8; BEFORE];
            s.read_exact(&mut buf).unwrap();
            (c, s)
        })
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let mut obs = Observer::start();
    let (ckey, skey) = (cookie(&client), cookie(&server));
    // Idle since before the start: not known yet.
    assert!(obs.flow(ckey).is_none(), "an idle old flow was sampled");
    // Its next packets bring it in, with the kernel's cumulative counts.
    let srv = std::thread::spawn(move || {
        let mut buf = vec![0u8; AFTER];
        server.read_exact(&mut buf).unwrap();
        server.write_all(b"ok").unwrap();
        server
    });
    client.write_all(&vec![2u8; AFTER]).unwrap();
    let mut ok = [0u8; 2];
    client.read_exact(&mut ok).unwrap();
    let server = srv.join().unwrap();
    let (ci, si) = (tcp_info(&client), tcp_info(&server));
    assert_eq!(ci.bytes_acked, (BEFORE + AFTER) as u64 + 1);
    let flow = obs.wait_for_flow(
        ckey,
        Duration::from_secs(5),
        &format!("the client's bytes_acked of TCP_INFO {ci:?}"),
        |f| f.bytes_acked == ci.bytes_acked,
    );
    assert_eq!(flow.bytes_received, ci.bytes_received);
    assert_eq!(flow.netns, netns_id(&ns));
    assert!(!flow.closed);
    obs.wait_for_flow(
        skey,
        Duration::from_secs(5),
        &format!("the server's bytes_received {}", si.bytes_received),
        |f| f.bytes_received == si.bytes_received,
    );
    assert_eq!(si.bytes_received, (BEFORE + AFTER) as u64);
}

/// `observer SUBCOMMAND` stopped by `sig` once attached: exit 0, detached.
fn stops_cleanly_on(sig: i32, args: &[&str]) -> Output {
    let before = observer_programs();
    let child = ChildGuard::spawn(
        Command::new(BIN)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .unwrap();
    wait_attached(&before, attached_programs());
    assert!(child.id() > 0);
    let out = child.stop(sig).unwrap();
    assert!(
        out.status.success(),
        "{args:?} on signal {sig}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        leftover(&before),
        Vec::<u32>::new(),
        "{args:?} left programs after signal {sig}"
    );
    out
}

#[test]
fn sigint_and_sigterm_detach_and_exit_0() {
    if !root_or_skip("sigint_and_sigterm_detach_and_exit_0") {
        return;
    }
    let _serial = serial();
    let listen = format!("127.0.0.1:{}", free_port());
    let out = stops_cleanly_on(libc::SIGINT, &["run", "--listen", &listen]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("stopping: detaching probes"));
    // flows stops early on either signal and still prints what it saw.
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let out = stops_cleanly_on(sig, &["flows", "--duration", "1h", "--json"]);
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            serde_json::from_str::<serde_json::Value>(line).unwrap();
        }
    }
}
