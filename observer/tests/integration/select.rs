//! Choosing and streaming flows as an operator does: `--filter` in `flows`,
//! `top` and `run` over a mixed set of connections (ports, IPv4 and IPv6
//! prefixes, states, process names), and `flows --follow` in a pipeline.

use std::{
    collections::{BTreeSet, HashMap},
    io::{BufRead as _, BufReader, Read as _, Write as _},
    net::{Shutdown, SocketAddr, TcpListener, TcpStream},
    process::{Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use crate::support::{
    bpf::{attached_programs, observer_programs, read_hook_attached, wait_attached},
    cookie,
    http::{free_port, scrape, wait_serving},
    netns_id,
    process::BIN,
    root_or_skip, serial,
    tmux::Tmux,
};
use pathemu::{ChildGuard, Namespace};

/// One connection's two ends, as observer prints them (`local remote`).
#[derive(Clone, Debug)]
struct Ends {
    client: String,
    server: String,
}

fn key(local: SocketAddr, remote: SocketAddr) -> String {
    format!("{local} {remote}")
}

/// Four connections in a namespace of their own, kept busy (a byte each
/// way every 100 ms) until dropped, each end in a thread named for it
/// (the thread's name is the `comm` observer sees):
/// - `v4a`: 10.7.1.1 -> 10.7.1.1:7001, client thread `filt-alpha`;
/// - `v4b`: 10.7.2.1 -> 10.7.2.1:7002, client thread `filt-beta`;
/// - `v6`: [fd00:7::1] -> [fd00:7::1]:7003, client thread `v6-client`;
/// - `half`: 127.0.0.1 -> 127.0.0.1:7004, its client has shut down its
///   sending side (client FIN-WAIT-2, server CLOSE-WAIT); the server
///   sends a byte every 100 ms.
struct Mixed {
    ns: Namespace,
    v4a: Ends,
    v4b: Ends,
    v6: Ends,
    half: Ends,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Mixed {
    fn start() -> Mixed {
        let ns = Namespace::standalone().unwrap();
        for addr in ["10.7.1.1/32", "10.7.2.1/32"] {
            ip(&["-n", ns.name(), "addr", "add", addr, "dev", "lo"]);
        }
        ip(&[
            "-n",
            ns.name(),
            "addr",
            "add",
            "fd00:7::1/128",
            "dev",
            "lo",
            "nodad",
        ]);
        let pairs = ns
            .run(|| {
                // The IPv6 address's routes come from addrconf's work queue.
                let v6: std::net::IpAddr = "fd00:7::1".parse().unwrap();
                pathemu::wait_routable(v6, v6).unwrap();
                // Made under the client thread's name: connect() names the
                // owner when observer runs then (before Linux 6.3 the only
                // owner hook a client passes).
                let pair = |at: &str, comm: &str| {
                    let l = TcpListener::bind(at).unwrap();
                    set_comm(comm);
                    let c = pathemu::connect_routable(l.local_addr().unwrap()).unwrap();
                    let (s, _) = l.accept().unwrap();
                    (c, s)
                };
                [
                    pair("10.7.1.1:7001", "filt-alpha"),
                    pair("10.7.2.1:7002", "filt-beta"),
                    pair("[fd00:7::1]:7003", "v6-client"),
                    pair("127.0.0.1:7004", "fw2-client"),
                ]
            })
            .unwrap();
        let ends = |(c, s): &(TcpStream, TcpStream)| Ends {
            client: key(c.local_addr().unwrap(), c.peer_addr().unwrap()),
            server: key(s.local_addr().unwrap(), s.peer_addr().unwrap()),
        };
        let [a, b, v6, half] = pairs;
        let mut m = Mixed {
            v4a: ends(&a),
            v4b: ends(&b),
            v6: ends(&v6),
            half: ends(&half),
            ns,
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
        };
        for ((c, s), names) in [
            (a, ["filt-alpha", "srv-7001"]),
            (b, ["filt-beta", "srv-7002"]),
            (v6, ["v6-client", "srv-7003"]),
        ] {
            m.spawn(names[0], c, Ping::Ask);
            m.spawn(names[1], s, Ping::Answer);
        }
        let (c, s) = half;
        c.shutdown(Shutdown::Write).unwrap();
        m.spawn("fw2-client", c, Ping::Listen);
        m.spawn("srv-7004", s, Ping::Tell);
        m
    }

    /// Runs one end's loop in a thread named `name` until the stop flag.
    fn spawn(&mut self, name: &str, mut sock: TcpStream, role: Ping) {
        let stop = self.stop.clone();
        sock.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let t = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                let mut b = [0u8; 1];
                while !stop.load(Ordering::Relaxed) {
                    let ok = match role {
                        Ping::Ask => {
                            sock.write_all(b"?").is_ok() && sock.read_exact(&mut b).is_ok()
                        }
                        Ping::Answer => {
                            sock.read_exact(&mut b).is_ok() && sock.write_all(b"!").is_ok()
                        }
                        Ping::Tell => sock.write_all(b"!").is_ok(),
                        Ping::Listen => sock.read_exact(&mut b).is_ok(),
                    };
                    if !ok && matches!(role, Ping::Ask | Ping::Tell) {
                        break;
                    }
                    if matches!(role, Ping::Ask | Ping::Tell) {
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            })
            .unwrap();
        self.threads.push(t);
    }

    fn netns(&self) -> u32 {
        netns_id(&self.ns)
    }
}

impl Drop for Mixed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// What one end of a connection does in [`Mixed`].
#[derive(Clone, Copy)]
enum Ping {
    /// Sends a byte, waits for the answer, every 100 ms.
    Ask,
    /// Answers each byte.
    Answer,
    /// Sends a byte every 100 ms.
    Tell,
    /// Reads.
    Listen,
}

/// Names the calling thread (its `comm`).
fn set_comm(name: &str) {
    let c = std::ffi::CString::new(name).unwrap();
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes.
    let rc = unsafe { libc::prctl(libc::PR_SET_NAME, c.as_ptr()) };
    assert_eq!(rc, 0, "PR_SET_NAME: {}", std::io::Error::last_os_error());
}

fn ip(args: &[&str]) {
    let ok = Command::new("ip").args(args).status().unwrap();
    assert!(ok.success(), "ip {args:?}");
}

/// The filters and the ends each must select, over [`Mixed`].
fn cases(m: &Mixed) -> Vec<(&'static str, Vec<String>)> {
    let (a, b, v6, half) = (&m.v4a, &m.v4b, &m.v6, &m.half);
    // A read hook attached (Linux 6.3+, and not left out for the walks).
    let hooks = read_hook_attached();
    let mut v = vec![
        ("dport = :7002", vec![b.client.clone()]),
        // Either end, as tcpdump's `port`: the client's and the server's.
        ("port = :7002", vec![b.client.clone(), b.server.clone()]),
        // Neither end: `not port 7002`.
        (
            "port != 7002 and src 10.7.0.0/16",
            vec![a.client.clone(), a.server.clone()],
        ),
        (
            "sport == :7001 || sport eq 7003",
            vec![a.server.clone(), v6.server.clone()],
        ),
        (
            "src 10.7.0.0/16 and not dst 10.7.1.0/24",
            vec![b.client.clone(), b.server.clone()],
        ),
        (
            "dst [fd00:7::]/32",
            vec![v6.client.clone(), v6.server.clone()],
        ),
        (
            "state close-wait or state fin-wait-2",
            // Segments of a half-closed flow pass no tcp_probe (not
            // tcp_rcv_established): only a read hook (Linux 6.3+, where
            // the walks do not both run) samples one that was
            // half-closed before the agent started,
            // so the client end, which reads; the server end only sends
            // (sends have no hook) and is seen when it closes.
            if hooks {
                vec![half.client.clone()]
            } else {
                Vec::new()
            },
        ),
    ];
    // The connections are made before each observer starts, so their
    // thread names come from a read hook (Linux 6.3+, where the walks do
    // not both run): the owner walk names processes, and connect(), which
    // names the thread, was missed.
    if hooks {
        v.push(("comm filt-*", vec![a.client.clone(), b.client.clone()]));
        v.push((
            "(dport > :7000 and dport < :7003) and !comm filt-beta",
            vec![a.client.clone()],
        ));
    }
    v
}

fn sorted(v: impl IntoIterator<Item = String>) -> Vec<String> {
    v.into_iter().collect::<BTreeSet<_>>().into_iter().collect()
}

#[test]
fn a_filter_selects_exactly_the_expected_flows_in_flows() {
    if !root_or_skip("a_filter_selects_exactly_the_expected_flows_in_flows") {
        return;
    }
    let _serial = serial();
    let m = Mixed::start();
    for (expr, want) in cases(&m) {
        let filter = format!("netns = {} and ({expr})", m.netns());
        let out = Command::new(BIN)
            .args(["flows", "--duration", "1.5", "--json", "--filter", &filter])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{filter}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = sorted(String::from_utf8_lossy(&out.stdout).lines().map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            format!(
                "{} {}",
                v["local"].as_str().unwrap(),
                v["remote"].as_str().unwrap()
            )
        }));
        assert_eq!(got, sorted(want), "flows --filter '{filter}'");
    }
}

#[test]
fn a_filter_selects_exactly_the_expected_flows_in_run() {
    if !root_or_skip("a_filter_selects_exactly_the_expected_flows_in_run") {
        return;
    }
    let _serial = serial();
    let m = Mixed::start();
    for (expr, want) in cases(&m).into_iter().step_by(3) {
        let filter = format!("netns = {} and ({expr})", m.netns());
        let port = free_port();
        let mut child = ChildGuard::spawn(
            Command::new(BIN)
                .args(["run", "--interval", "250ms", "--top-flows", "20"])
                .args(["--listen", &format!("127.0.0.1:{port}")])
                .args(["--filter", &filter])
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
        )
        .unwrap();
        wait_serving(port, &mut child, Duration::from_secs(20));
        let want = sorted(want);
        let mut got = Vec::new();
        let end = Instant::now() + Duration::from_secs(5);
        while Instant::now() < end {
            let text = scrape(port);
            assert!(
                text.contains(&format!("observer_filter_info{{filter=\"{filter}\"}} 1")),
                "{text}"
            );
            got = sorted(
                text.lines()
                    .filter(|l| l.starts_with("observer_top_flow_info{"))
                    .map(|l| format!("{} {}", label(l, "local"), label(l, "remote"))),
            );
            if got == want {
                break;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        assert_eq!(got, want, "run --filter '{filter}'");
        child.signal(libc::SIGTERM).unwrap();
    }
}

/// The value of label `name` in one exposition line.
fn label<'a>(line: &'a str, name: &str) -> &'a str {
    let at = line.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
    let rest = &line[at..];
    &rest[..rest.find('"').unwrap()]
}

#[test]
fn a_filter_selects_exactly_the_expected_flows_in_top() {
    if !root_or_skip("a_filter_selects_exactly_the_expected_flows_in_top") {
        return;
    }
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("skipped a_filter_selects_exactly_the_expected_flows_in_top: no tmux");
        return;
    }
    let _serial = serial();
    let m = Mixed::start();
    let all: Vec<String> = [&m.v4a, &m.v4b, &m.v6, &m.half]
        .iter()
        .flat_map(|e| [e.client.clone(), e.server.clone()])
        .collect();
    for (i, (expr, want)) in cases(&m).into_iter().enumerate().skip(1).step_by(3) {
        let filter = format!("netns = {} and ({expr})", m.netns());
        let tmux = Tmux::start(
            &format!("filter{i}"),
            220,
            40,
            &[BIN, "top", "--interval", "250ms", "--filter", &filter],
        );
        // A row shows `local` then `remote` in their own columns.
        let shown = |screen: &str, ends: &str| {
            let (l, r) = ends.split_once(' ').unwrap();
            screen
                .lines()
                .any(|line| line.contains(l) && line.find(l) < line.find(r))
        };
        let screen = tmux.wait_for(
            &format!("the rows of '{filter}'"),
            Duration::from_secs(20),
            |s| want.iter().all(|w| shown(s, w)),
        );
        // Another poll, then nothing else may have come in.
        std::thread::sleep(Duration::from_millis(600));
        let screen2 = tmux.screen();
        for e in &all {
            assert_eq!(
                shown(&screen2, e),
                want.contains(e),
                "top --filter '{filter}': {e}\n{screen}\n{screen2}"
            );
        }
        tmux.keys(&["q"]);
    }
}

#[test]
fn bad_filters_point_at_the_column_in_every_subcommand() {
    for sub in ["flows", "run", "top"] {
        let out = Command::new(BIN)
            .args([sub, "--filter", "dport = :nosuch"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{sub}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("at column 9"), "{sub}: {err}");
        assert!(err.contains("port"), "{sub}: {err}");
    }
}

#[test]
fn run_refuses_a_rate_term_in_one_line() {
    let out = Command::new(BIN)
        .args(["run", "--filter", "dport 443 and rate > 10M"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("run takes no rate term"), "{err}");
    assert!(err.contains("leave it out"), "{err}");
}

/// Makes `n` short connections in `ns` (connect, 100 bytes, close) and
/// returns the client ends' cookies.
fn short_connections(ns: &Namespace, n: usize) -> Vec<u64> {
    ns.run(move || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            for _ in 0..n {
                let (mut c, _) = listener.accept().unwrap();
                let mut b = [0u8; 100];
                c.read_exact(&mut b).unwrap();
            }
        });
        let mut cookies = Vec::with_capacity(n);
        for _ in 0..n {
            let mut c = TcpStream::connect(addr).unwrap();
            cookies.push(cookie(&c));
            c.write_all(&[1u8; 100]).unwrap();
        }
        server.join().unwrap();
        cookies
    })
    .unwrap()
}

#[test]
fn follow_in_a_pipeline_ends_when_head_has_three_records() {
    if !root_or_skip("follow_in_a_pipeline_ends_when_head_has_three_records") {
        return;
    }
    let _serial = serial();
    let ns = Namespace::standalone().unwrap();
    let before = observer_programs();
    let attached = attached_programs();
    let script = format!(
        "set -o pipefail; '{BIN}' flows --follow --json --filter 'netns = {}' | head -n 3",
        netns_id(&ns)
    );
    let child = ChildGuard::spawn(
        // bash, or where there is none (the kernel matrix's VM) busybox's
        // sh, which has pipefail too (dash has not).
        Command::new(if std::path::Path::new("/bin/bash").exists() {
            "bash"
        } else {
            "sh"
        })
        .args(["-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped()),
    )
    .unwrap();
    wait_attached(&before, attached);
    let start = Instant::now();
    // Two connections: four closes, one more than head takes.
    short_connections(&ns, 2);
    let out = child.wait_with_output().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );
    // pipefail: observer's own status too, not only head's.
    assert!(
        out.status.success(),
        "{}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    for l in lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        assert_eq!(v["closed"], true, "{l}");
        assert_eq!(v["state"], "close", "{l}");
        assert_eq!(v["netns"], netns_id(&ns), "{l}");
        for k in ["cookie", "verdict", "evidence", "bytes_acked", "last_seen"] {
            assert!(v.get(k).is_some(), "{k} missing: {l}");
        }
    }
    let left = crate::support::bpf::leftover(&before);
    assert!(left.is_empty(), "programs left attached: {left:?}");
}

#[test]
fn follow_prints_each_of_a_thousand_short_connections_once() {
    if !root_or_skip("follow_prints_each_of_a_thousand_short_connections_once") {
        return;
    }
    let _serial = serial();
    let ns = Namespace::standalone().unwrap();
    let before = observer_programs();
    let attached = attached_programs();
    let netns = netns_id(&ns);
    let mut child = ChildGuard::spawn(
        Command::new(BIN)
            .args(["flows", "--follow", "--json", "--every", "1s"])
            .args(["--filter", &format!("netns = {netns}")])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .unwrap();
    let stdout = child.child_mut().unwrap().stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map(Result::unwrap)
            .collect::<Vec<String>>()
    });
    wait_attached(&before, attached);
    const N: usize = 1000;
    let clients = short_connections(&ns, N);
    // Long enough for the last closes and one `--every` record of the
    // flows still open (none now: every connection has closed).
    std::thread::sleep(Duration::from_secs(3));
    child.signal(libc::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = reader.join().unwrap();
    // Where the connections take longer than `--every` (an emulated VM),
    // a record of the flows open then may show some still connecting;
    // each must close later in the stream, and no flow may be left open.
    let mut seen: HashMap<u64, usize> = HashMap::new();
    let mut open_then: Vec<(u64, &str)> = Vec::new();
    let mut closed = 0;
    for l in &lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let c = v["cookie"].as_u64().unwrap();
        if v["closed"] == true {
            *seen.entry(c).or_default() += 1;
            closed += 1;
            open_then.retain(|(o, _)| *o != c);
        } else {
            open_then.push((c, l));
        }
    }
    assert!(
        open_then.is_empty(),
        "flows shown open and never closed: {open_then:?}"
    );
    assert_eq!(
        closed,
        2 * N,
        "close records; observer said: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(seen.values().all(|n| *n == 1), "a flow printed twice");
    for c in &clients {
        assert_eq!(seen.get(c), Some(&1), "client {c}");
    }
}
