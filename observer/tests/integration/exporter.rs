//! `observer run` as a deployment uses it: a real Prometheus server scrapes
//! it while transfers cross emulated paths, and the series stay bounded
//! while thousands of short flows come and go.

use std::{
    io::{Read as _, Write as _},
    net::{TcpListener, TcpStream},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use crate::support::{
    bpf::{attached_programs, bpf_links},
    http::{free_port, http_get, metric, sum},
    net::iperf,
    process::BIN,
    prom::Prometheus,
    root_or_skip, serial,
};
use pathemu::{ChildGuard, Namespace, Path, PathConfig};

/// `observer run` on a free loopback port, polling every 500 ms, once it
/// serves; returns the port. A port free when picked can be taken (an
/// outgoing connection's ephemeral port) before the agent binds it: then
/// it is tried again with another.
fn start_observer() -> (u16, ChildGuard) {
    start_observer_with(&[])
}

/// [`start_observer`] with `env` added to the agent's environment.
fn start_observer_with(env: &[(&str, &str)]) -> (u16, ChildGuard) {
    for _ in 0..5 {
        let port = free_port();
        let mut k = ChildGuard::spawn(
            Command::new(BIN)
                .envs(env.iter().copied())
                .args([
                    "run",
                    "--listen",
                    &format!("127.0.0.1:{port}"),
                    "--interval",
                    "500ms",
                ])
                // Warnings and errors only: the pipe is read once it exits.
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .stderr(Stdio::piped()),
        )
        .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        while !http_get(port, "/healthz").is_some_and(|t| t.starts_with("ok: ")) {
            if !k.running() {
                let err = k.stderr_after_exit();
                assert!(
                    err.contains("Address already in use"),
                    "observer run exited:\n{err}"
                );
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "observer run never served"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        if k.running() {
            return (port, k);
        }
    }
    panic!("five free ports were all taken before observer could bind them");
}

#[test]
fn prometheus_sees_window_and_path_verdicts_move() {
    if !root_or_skip("prometheus_sees_window_and_path_verdicts_move") {
        return;
    }
    let _serial = serial();
    let (port, _observer) = start_observer();
    let prom = Prometheus::scraping(port);
    // A window-limited transfer (64 KB on 104 ms) and a path-limited one
    // (cubic into a 20 Mbit/s bottleneck), at the same time.
    let window = Path::new(PathConfig::bottleneck(
        35_000_000,
        Duration::from_millis(52),
        460_000,
    ))
    .unwrap();
    let full = Path::new(PathConfig::bottleneck(
        20_000_000,
        Duration::from_millis(25),
        125_000,
    ))
    .unwrap();
    let _window_iperf = iperf(&window, 12, &["-w", "64K"]);
    let _full_iperf = iperf(&full, 12, &["-C", "cubic"]);
    let moved = |verdict: &str| {
        prom.query(&format!(
            "sum(observer_bytes_acked_total{{verdict=\"{verdict}\"}})"
        ))
        .unwrap_or(0.0)
    };
    let deadline = Instant::now() + Duration::from_secs(25);
    let (mut rwnd, mut path) = (0.0, 0.0);
    while Instant::now() < deadline && (rwnd < 1e6 || path < 1e6) {
        std::thread::sleep(Duration::from_secs(1));
        rwnd = moved("receive_window");
        path = moved("path");
    }
    assert!(rwnd >= 1e6, "receive_window bytes in Prometheus: {rwnd}");
    assert!(path >= 1e6, "path bytes in Prometheus: {path}");
}

#[test]
fn series_stay_bounded_while_5000_short_flows_come_and_go() {
    if !root_or_skip("series_stay_bounded_while_5000_short_flows_come_and_go") {
        return;
    }
    let _serial = serial();
    let (port, _observer) = start_observer();
    let ns = Namespace::standalone().unwrap();
    let series = || {
        http_get(port, "/metrics")
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .count()
    };
    let done = std::sync::atomic::AtomicBool::new(false);
    let mut counts = std::thread::scope(|scope| {
        // Sample the exposition from the root namespace while flows churn.
        let sampler = scope.spawn(|| {
            let mut counts = Vec::new();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                counts.push(series());
                std::thread::sleep(Duration::from_millis(1500));
            }
            counts
        });
        ns.run(|| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            let server = std::thread::spawn(move || {
                for _ in 0..5000 {
                    let (mut c, _) = l.accept().unwrap();
                    let mut b = [0u8; 64];
                    let _ = c.read(&mut b);
                }
            });
            for _ in 0..10 {
                for _ in 0..500 {
                    let mut c = TcpStream::connect(addr).unwrap();
                    c.write_all(&[7u8; 64]).unwrap();
                }
                std::thread::sleep(Duration::from_millis(600));
            }
            server.join().unwrap();
        })
        .unwrap();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        sampler.join().unwrap()
    });
    std::thread::sleep(Duration::from_secs(2));
    counts.push(series());
    // Without aggregation labels the catalogue's series are fixed: verdicts
    // x a handful of counters, histogram buckets, self metrics.
    const BOUND: usize = 600;
    assert!(
        counts.iter().all(|c| *c > 0 && *c <= BOUND),
        "series counts {counts:?}"
    );
    let text = http_get(port, "/metrics").unwrap();
    let closed = sum(&text, "observer_flows_closed_total", "");
    assert!(closed >= 10_000.0, "closed flows counted: {closed}");
}

/// deploy/observer.service is `Type=notify`: the agent says READY=1 on
/// `$NOTIFY_SOCKET` once its programs are attached and it serves.
#[test]
fn tells_systemd_it_is_ready_once_attached() {
    if !root_or_skip("tells_systemd_it_is_ready_once_attached") {
        return;
    }
    let _serial = serial();
    let dir = std::env::temp_dir().join(format!("observer-notify-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("notify");
    let sock = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let before = crate::support::bpf::observer_programs();
    let (port, _observer) = start_observer_with(&[("NOTIFY_SOCKET", path.to_str().unwrap())]);
    let mut buf = [0u8; 256];
    let n = sock.recv(&mut buf).unwrap();
    let attached = crate::support::bpf::observer_programs()
        .difference(&before)
        .count();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(String::from_utf8_lossy(&buf[..n]), "READY=1\n");
    assert_eq!(attached, attached_programs());
    let health = http_get(port, "/healthz").unwrap_or_default();
    assert!(health.starts_with("ok: "), "{health}");
}

#[test]
fn programs_attached_counts_the_kernel_links() {
    if !root_or_skip("programs_attached_counts_the_kernel_links") {
        return;
    }
    let _serial = serial();
    let attached = |env: &[(&str, &str)]| {
        let (port, observer) = start_observer_with(env);
        let text = http_get(port, "/metrics").unwrap();
        let reported = metric(&text, "observer_programs_attached").unwrap();
        (reported, bpf_links(observer.id()))
    };
    // The gauge against the process's links, and both against the hooks
    // this kernel's BTF offers (4 before Linux 6.3, 5 from it).
    let (reported, links) = attached(&[]);
    assert_eq!(
        reported, links as f64,
        "the gauge against the process's links"
    );
    assert_eq!(links, attached_programs());
    if cfg!(debug_assertions) {
        // A hook the kernel lacks is not counted.
        let (reported, fewer) = attached(&[("OBSERVER_MISSING_HOOK", "tcp_destroy_sock")]);
        assert_eq!(fewer, links - 1);
        assert_eq!(reported, fewer as f64);
    }
}

/// A program that goes while the agent runs (unloaded: its link goes with
/// it) turns `/healthz` to 503 and `observer_programs_attached` down.
#[test]
fn healthz_fails_when_a_program_is_gone() {
    if !root_or_skip("healthz_fails_when_a_program_is_gone") || !cfg!(debug_assertions) {
        return;
    }
    let _serial = serial();
    let (port, _observer) =
        start_observer_with(&[("OBSERVER_UNLOAD_PROGRAM", "observer_set_state")]);
    let links = attached_programs();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    // http_get answers None for anything but a 200.
    while http_get(port, "/healthz").is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "/healthz still ok after the unload"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let text = http_get(port, "/metrics").unwrap();
    assert_eq!(
        metric(&text, "observer_programs_attached"),
        Some((links - 1) as f64)
    );
    let body = crate::support::http::http_get_any(port, "/healthz").unwrap();
    assert!(body.0 == 503, "{body:?}");
    assert!(
        body.1
            .contains(&format!("{} of the {links} programs attached", links - 1)),
        "{body:?}"
    );
}

/// The metric names in docs/metrics.md's `observer run` table (`process_*` as
/// written, the rest with the `observer_` prefix the table leaves out).
fn readme_metrics() -> std::collections::BTreeSet<String> {
    let readme = include_str!("../../../docs/metrics.md");
    let start = readme
        .find("| metric | type | labels | meaning |")
        .expect("docs/metrics.md's metric table");
    let mut names = std::collections::BTreeSet::new();
    for line in readme[start..].lines().skip(2) {
        if !line.starts_with('|') {
            break;
        }
        let first = line.split('|').nth(1).unwrap();
        // Label lists in parentheses are not metric names.
        let mut depth = 0;
        let first: String = first
            .chars()
            .filter(|c| {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                depth == 0 && *c != ')'
            })
            .collect();
        for name in first.split('`').skip(1).step_by(2) {
            names.insert(if name.starts_with("process_") {
                name.to_string()
            } else {
                format!("observer_{name}")
            });
        }
    }
    names
}

/// Every family `/metrics` serves is in docs/metrics.md's table, and every
/// table row is served, once the agent has seen flows start, move, close
/// and rank (each labelled family appears at its first series).
#[test]
fn the_metrics_page_lists_every_metric_served() {
    if !root_or_skip("the_metrics_page_lists_every_metric_served") {
        return;
    }
    let _serial = serial();
    let port = free_port();
    let mut agent = ChildGuard::spawn(
        Command::new(BIN)
            .args([
                "run",
                "--interval",
                "250ms",
                "--top-flows",
                "3",
                "--top-peers",
                "3",
            ])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
    .unwrap();
    crate::support::http::wait_serving(port, &mut agent, Duration::from_secs(20));
    let ns = Namespace::standalone().unwrap();
    // Open until the scrape: the top-flow and top-peer gauges show open
    // flows only.
    let _long = ns
        .run(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let server = std::thread::spawn(move || {
                for _ in 0..11 {
                    let (mut c, _) = listener.accept().unwrap();
                    std::thread::spawn(move || {
                        let mut sink = Vec::new();
                        let _ = c.read_to_end(&mut sink);
                    });
                }
            });
            // One flow moving data for a second and a half, ten short ones.
            let mut long = TcpStream::connect(addr).unwrap();
            let end = Instant::now() + Duration::from_millis(1500);
            while Instant::now() < end {
                long.write_all(&[1u8; 64 * 1024]).unwrap();
                std::thread::sleep(Duration::from_millis(5));
            }
            for _ in 0..10 {
                let mut c = TcpStream::connect(addr).unwrap();
                c.write_all(&[2u8; 1000]).unwrap();
            }
            server.join().unwrap();
            long
        })
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let text = http_get(port, "/metrics").unwrap();
    let served: std::collections::BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .map(str::to_string)
        .collect();
    // Prometheus' own lint of the exposition: names, units, help, types.
    if let Ok(mut lint) = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        lint.stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let out = lint.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "promtool check metrics:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let listed = readme_metrics();
    let unlisted: Vec<_> = served.difference(&listed).collect();
    let unserved: Vec<_> = listed.difference(&served).collect();
    assert!(
        unlisted.is_empty() && unserved.is_empty(),
        "served but not in docs/metrics.md: {unlisted:?}; in docs/metrics.md but not served: {unserved:?}"
    );
}

/// Connections that open, send and close between two polls: all their
/// bytes count (they once counted 0: only what moved after a flow's first
/// poll did).
#[test]
fn short_flows_count_every_byte_they_moved() {
    if !root_or_skip("short_flows_count_every_byte_they_moved") {
        return;
    }
    let _serial = serial();
    let ns = Namespace::standalone().unwrap();
    let port = free_port();
    let mut agent = ChildGuard::spawn(
        Command::new(BIN)
            .args(["run", "--interval", "1s"])
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .args([
                "--filter",
                &format!("netns = {}", crate::support::netns_id(&ns)),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
    .unwrap();
    crate::support::http::wait_serving(port, &mut agent, Duration::from_secs(20));
    const N: usize = 20;
    const BYTES: usize = 200_000;
    ns.run(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            for _ in 0..N {
                let (mut c, _) = listener.accept().unwrap();
                let mut sink = Vec::new();
                c.read_to_end(&mut sink).unwrap();
                assert_eq!(sink.len(), BYTES);
            }
        });
        for _ in 0..N {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(&[3u8; BYTES]).unwrap();
        }
        server.join().unwrap();
    })
    .unwrap();
    let want = (N * BYTES) as f64;
    let mut got = (0.0, 0.0);
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let text = http_get(port, "/metrics").unwrap_or_default();
        got = (
            sum(&text, "observer_bytes_acked_total", ""),
            sum(&text, "observer_bytes_received_total", ""),
        );
        if got.0 >= want && got.1 >= want {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    // Each end counts its SYN and FIN as the kernel does: a few bytes over.
    for (what, n) in [("acked", got.0), ("received", got.1)] {
        assert!(
            n >= want && n <= want + 4.0 * N as f64,
            "bytes {what}: {n} of {want}"
        );
    }
}
