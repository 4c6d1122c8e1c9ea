//! `observer run --records`: each closed flow's record in a file, as many
//! as the agent counts written, each naming its host and boot, and an
//! unwritable path refused at start.

use std::{
    io::{Read as _, Write as _},
    net::{TcpListener, TcpStream},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use crate::support::{
    http::{free_port, http_get, metric},
    process::BIN,
    root_or_skip, serial,
};
use pathemu::ChildGuard;

/// Loopback connections the test makes.
const FLOWS: usize = 20;
/// Bytes each sends.
const BYTES: usize = 64 * 1024;

/// `observer run` writing the records of flows to `:dport` into `path`,
/// once it serves: its port and the child.
fn start(path: &std::path::Path, dport: u16, extra: &[&str]) -> (u16, ChildGuard) {
    let port = free_port();
    let mut k = ChildGuard::spawn(
        Command::new(BIN)
            .args([
                "run",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--interval",
                "200ms",
                "--records",
                path.to_str().unwrap(),
                "--filter",
                &format!("dport = :{dport}"),
            ])
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while !http_get(port, "/healthz").is_some_and(|t| t.starts_with("ok: ")) {
        assert!(
            k.running(),
            "observer run exited:\n{}",
            k.stderr_after_exit()
        );
        assert!(Instant::now() < deadline, "observer run never served");
        std::thread::sleep(Duration::from_millis(100));
    }
    (port, k)
}

/// A fresh directory for the records and a listener for the flows.
struct Setup {
    dir: std::path::PathBuf,
    path: std::path::PathBuf,
    server: TcpListener,
    dport: u16,
}

impl Setup {
    fn new(name: &str) -> Setup {
        let dir = std::env::temp_dir().join(format!("observer-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let server = TcpListener::bind("127.0.0.1:0").unwrap();
        let dport = server.local_addr().unwrap().port();
        Setup {
            path: dir.join("flows.ndjson"),
            dir,
            server,
            dport,
        }
    }
}

#[test]
fn each_closed_flow_is_one_record_naming_its_host() {
    if !root_or_skip("each_closed_flow_is_one_record_naming_its_host") {
        return;
    }
    let _serial = serial();
    let t = Setup::new("records");
    let (dir, path, server, dport) = (t.dir, t.path, t.server, t.dport);
    let (port, agent) = start(&path, dport, &[]);
    let reader = std::thread::spawn(move || {
        for _ in 0..FLOWS {
            let (mut s, _) = server.accept().unwrap();
            let mut buf = Vec::new();
            s.read_to_end(&mut buf).unwrap();
            assert_eq!(buf.len(), BYTES);
        }
    });
    for _ in 0..FLOWS {
        let mut c = TcpStream::connect(("127.0.0.1", dport)).unwrap();
        c.write_all(&vec![7u8; BYTES]).unwrap();
    }
    reader.join().unwrap();
    // Every client end closed: wait for the agent to have written them.
    let deadline = Instant::now() + Duration::from_secs(15);
    let written = loop {
        let text = http_get(port, "/metrics").unwrap_or_default();
        let n = metric(&text, "observer_records_written_total").unwrap_or(0.0);
        if n >= FLOWS as f64 || Instant::now() > deadline {
            assert_eq!(
                metric(&text, r#"observer_records_dropped_total{reason="write"}"#),
                Some(0.0)
            );
            break n;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    agent.stop(libc::SIGTERM).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The filter selects the clients' ends only; each written once.
    assert_eq!(written, FLOWS as f64, "{text}");
    assert_eq!(records.len(), FLOWS, "{text}");
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap();
    let mut cookies = std::collections::BTreeSet::new();
    for r in &records {
        assert_eq!(r["schema"], 1, "{r}");
        assert_eq!(r["record"], "final", "{r}");
        assert_eq!(r["host"], host.trim(), "{r}");
        assert_eq!(r["boot_id"], boot.trim(), "{r}");
        let remote = r["remote"].as_str().unwrap_or_default();
        assert!(remote.ends_with(&format!(":{dport}")), "{r}");
        assert_eq!(r["bytes_sent"], BYTES as u64, "{r}");
        // The life verdict, explained (the metrics' verdicts are not).
        assert!(r["verdict"].is_string(), "{r}");
        assert!(
            r["explanation"].as_str().is_some_and(|e| !e.is_empty()),
            "{r}"
        );
        assert!(cookies.insert(r["cookie"].as_u64().unwrap()), "twice: {r}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_long_flow_gets_update_records_then_its_final() {
    if !root_or_skip("a_long_flow_gets_update_records_then_its_final") {
        return;
    }
    let _serial = serial();
    let t = Setup::new("updates");
    let (dir, path, server, dport) = (t.dir, t.path, t.server, t.dport);
    let (_port, agent) = start(&path, dport, &["--records-every", "1s"]);
    let reader = std::thread::spawn(move || {
        let (mut s, _) = server.accept().unwrap();
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).unwrap();
        buf.len()
    });
    // 4 s sending 16 KB every 100 ms: older than 1 s, moving all along.
    let mut c = TcpStream::connect(("127.0.0.1", dport)).unwrap();
    let start = Instant::now();
    let mut sent = 0;
    while start.elapsed() < Duration::from_secs(4) {
        c.write_all(&[1u8; 16 * 1024]).unwrap();
        sent += 16 * 1024;
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(c);
    assert_eq!(reader.join().unwrap(), sent);
    // Its close reaches the agent at a poll after it.
    let deadline = Instant::now() + Duration::from_secs(15);
    while !std::fs::read_to_string(&path).is_ok_and(|t| t.contains(r#""record":"final""#)) {
        assert!(Instant::now() < deadline, "no final record");
        std::thread::sleep(Duration::from_millis(100));
    }
    agent.stop(libc::SIGTERM).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let records: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = records
        .iter()
        .map(|r| r["record"].as_str().unwrap())
        .collect();
    // Updates about once a second from its first second on, then the final.
    let updates = kinds.iter().filter(|k| **k == "update").count();
    assert!((2..=4).contains(&updates), "{kinds:?}\n{text}");
    assert_eq!(kinds.last(), Some(&"final"), "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "final").count(), 1);
    let cookie = &records[0]["cookie"];
    let mut last = 0;
    for r in &records {
        assert_eq!(&r["cookie"], cookie, "one flow: {r}");
        let sent = r["bytes_sent"].as_u64().unwrap();
        // Each update later than the one before (an update comes only
        // after data moved); the final may follow the last update with
        // nothing more sent. Each explained.
        if r["record"] == "update" {
            assert!(sent > last, "{text}");
        } else {
            assert!(sent >= last, "{text}");
        }
        last = sent;
        assert!(
            r["explanation"].as_str().is_some_and(|e| !e.is_empty()),
            "{r}"
        );
    }
    assert_eq!(last, sent as u64);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unwritable_records_path_is_one_line_before_loading() {
    if !root_or_skip("an_unwritable_records_path_is_one_line_before_loading") {
        return;
    }
    let _serial = serial();
    let out = Command::new(BIN)
        .args([
            "run",
            "--listen",
            &format!("127.0.0.1:{}", free_port()),
            "--records",
            "/nonexistent-dir/flows.ndjson",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("--records: cannot open /nonexistent-dir/flows.ndjson:"),
        "{err}"
    );
}
