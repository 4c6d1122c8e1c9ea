//! Failing safely: a host that cannot run observer gets one line naming the
//! fix and nothing stays attached; bad values are clap errors, never panics;
//! a full ring buffer is counted and the agent goes on; flows older than
//! observer are picked up at their next packet; SIGINT and SIGTERM detach
//! and exit 0; exported counters never go backwards.
//!
//! The precondition tests use the test-only overrides of
//! `observer::preflight` (`OBSERVER_BTF_PATH`, `OBSERVER_FAKE_KERNEL`,
//! `OBSERVER_MISSING_HOOK`), which only builds with debug assertions read.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "integration tests: a failure should panic the test"
)]

mod support;

use std::{
    collections::{BTreeSet, HashMap},
    io::{Read as _, Write as _},
    net::{TcpListener, TcpStream},
    process::{Child, Command, Output, Stdio},
    time::{Duration, Instant},
};

use observer::{
    book::{Book, BookConfig},
    clock::{Clock, kernel_hz},
    exporter::{Catalogue, encode, labels::Aggregation},
    monitor::{Monitor, PollStats},
    probes::{ProbeConfig, Probes},
};
use observer_common::{Counter, FlowSample};
use support::{NetNs, Observer, attached_programs, cookie, root_or_skip, tcp_info};

const BIN: &str = env!("CARGO_BIN_EXE_observer");

/// Tests that load programs (and compare what is loaded) run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Ids of loaded BPF programs that belong to an observer.
fn observer_programs() -> BTreeSet<u32> {
    aya::programs::loaded_programs()
        .filter_map(Result::ok)
        .filter(|p| p.name_as_str().is_some_and(|n| n.starts_with("observer_")))
        .map(|p| p.id())
        .collect()
}

/// Waits (the kernel frees programs after an RCU grace period) until no
/// observer program loaded since `before` is left; returns those left.
fn leftover(before: &BTreeSet<u32>) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<u32> = observer_programs().difference(before).copied().collect();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether the observer binary reads the test-only overrides (a build with
/// debug assertions, as `cargo test` makes by default).
fn overrides_honoured(test: &str) -> bool {
    if !cfg!(debug_assertions) {
        eprintln!("skipped {test}: release builds ignore the test-only overrides");
    }
    cfg!(debug_assertions)
}

/// Runs `observer ARGS` with `env` to completion and checks that no
/// program it loaded is left afterwards.
fn run_observer(env: &[(&str, &str)], args: &[&str]) -> Output {
    let before = observer_programs();
    let out = Command::new(BIN)
        .args(args)
        .envs(env.iter().copied())
        .env("RUST_BACKTRACE", "0")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        leftover(&before),
        Vec::<u32>::new(),
        "programs left loaded after `observer {}` with {env:?}",
        args.join(" ")
    );
    out
}

/// A failure as a user should see it: exit 1, nothing on stdout, exactly
/// one line on stderr, starting `observer: error: ` and containing each of
/// `says`.
#[track_caller]
fn assert_one_line(out: &Output, says: &[&str]) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty(), "stdout: {:?}", out.stdout);
    assert_eq!(err.lines().count(), 1, "not one line:\n{err}");
    assert!(err.starts_with("observer: error: "), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    for s in says {
        assert!(err.contains(s), "{err:?} does not say {s:?}");
    }
    // The cause is said once, not repeated by the error chain.
    let parts: Vec<&str> = err.trim_end().split(": ").collect();
    for (i, p) in parts.iter().enumerate().skip(1) {
        assert!(
            !parts[i + 1..].contains(p) || p.len() < 12,
            "{p:?} repeated in {err:?}"
        );
    }
    err
}

/// Small BTF blobs, encoded like the kernel's (Documentation/bpf/btf.rst).
struct BtfBuilder {
    types: Vec<u8>,
    strings: Vec<u8>,
}

impl BtfBuilder {
    fn new() -> Self {
        BtfBuilder {
            types: Vec::new(),
            strings: vec![0],
        }
    }
    fn s(&mut self, name: &str) -> u32 {
        let off = self.strings.len() as u32;
        self.strings.extend_from_slice(name.as_bytes());
        self.strings.push(0);
        off
    }
    fn words(&mut self, w: &[u32]) {
        for x in w {
            self.types.extend_from_slice(&x.to_le_bytes());
        }
    }
    /// Type 1 must be this `unsigned int`.
    fn int(&mut self) {
        let n = self.s("unsigned int");
        self.words(&[n, 1 << 24, 4, 32]);
    }
    fn strukt(&mut self, name: &str, size: u32, members: &[(&str, u32, u32)]) {
        let n = self.s(name);
        self.words(&[n, (4 << 24) | members.len() as u32, size]);
        for (m, ty, off) in members {
            let mn = self.s(m);
            self.words(&[mn, *ty, *off]);
        }
    }
    fn bytes(&self) -> Vec<u8> {
        let mut out = vec![0x9f, 0xeb, 1, 0];
        for w in [
            24u32,
            0,
            self.types.len() as u32,
            self.types.len() as u32,
            self.strings.len() as u32,
        ] {
            out.extend_from_slice(&w.to_le_bytes());
        }
        out.extend_from_slice(&self.types);
        out.extend_from_slice(&self.strings);
        out
    }
}

/// A scratch directory removed on drop.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let p = std::env::temp_dir().join(format!("observer-faults-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Scratch(p)
    }
    fn file(&self, name: &str, data: &[u8]) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, data).unwrap();
        p.to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process killed on drop (a failing test leaves nothing running).
struct Kill(Option<Child>);

impl Kill {
    fn pid(&self) -> i32 {
        self.0.as_ref().map_or(0, |c| c.id() as i32)
    }
    /// Sends `sig` and waits for the exit.
    fn stop(mut self, sig: i32) -> Output {
        let child = self.0.take().unwrap();
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(child.id() as i32, sig) };
        child.wait_with_output().unwrap()
    }
}

impl Drop for Kill {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Waits until `n` more observer programs than `before` are loaded.
fn wait_attached(before: &BTreeSet<u32>, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while observer_programs().difference(before).count() < n {
        assert!(Instant::now() < deadline, "observer never attached");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `GET path` from 127.0.0.1:port: the body of a 200 answer, else None.
fn http_get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_string())
}

/// The value of the series `name{labels}` (exactly as printed) in `text`.
fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|v| v.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
}

// ---------------------------------------------------------------------------
// Preconditions
// ---------------------------------------------------------------------------

#[test]
fn missing_btf_names_the_kernel_option_and_loads_nothing() {
    if !root_or_skip("missing_btf_names_the_kernel_option_and_loads_nothing")
        || !overrides_honoured("missing_btf")
    {
        return;
    }
    let _serial = serial();
    let missing = "/nonexistent/observer-test/vmlinux";
    for args in [
        &["flows", "--duration", "1s"][..],
        &["run", "--listen", "127.0.0.1:0"][..],
    ] {
        let out = run_observer(&[("OBSERVER_BTF_PATH", missing)], args);
        assert_one_line(
            &out,
            &[
                &format!("{missing} is missing"),
                "CONFIG_DEBUG_INFO_BTF=y",
                "install such a kernel",
            ],
        );
    }
}

#[test]
fn too_old_kernel_says_upgrade_and_loads_nothing() {
    if !root_or_skip("too_old_kernel_says_upgrade_and_loads_nothing")
        || !overrides_honoured("too_old_kernel")
    {
        return;
    }
    let _serial = serial();
    for release in ["4.19.0-27-amd64", "5.7.19"] {
        let out = run_observer(
            &[("OBSERVER_FAKE_KERNEL", release)],
            &["flows", "--duration", "1s"],
        );
        assert_one_line(
            &out,
            &[
                &format!("kernel {release} is too old"),
                "Linux 5.8 or later",
                "upgrade the kernel",
            ],
        );
    }
}

#[test]
fn malformed_btf_is_one_clear_line_at_every_cut() {
    if !root_or_skip("malformed_btf_is_one_clear_line_at_every_cut")
        || !overrides_honoured("malformed_btf")
    {
        return;
    }
    let _serial = serial();
    let real = std::fs::read(observer::probes::VMLINUX_BTF).unwrap();
    let dir = Scratch::new("btf");
    let mut cases: Vec<(String, Vec<u8>)> = [0usize, 2, 23, 24, 100, 4096, real.len() / 2]
        .into_iter()
        .chain([real.len() - 1])
        .map(|cut| (format!("cut-{cut}"), real[..cut].to_vec()))
        .collect();
    let mut bad_magic = real[..4096].to_vec();
    bad_magic[0] ^= 0xff;
    cases.push(("bad-magic".into(), bad_magic));
    // A header whose type section claims more bytes than the file has.
    let mut huge = real[..4096].to_vec();
    huge[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    cases.push(("huge-section".into(), huge));
    for (name, data) in cases {
        let path = dir.file(&name, &data);
        let out = run_observer(
            &[("OBSERVER_BTF_PATH", path.as_str())],
            &["flows", "--duration", "1s"],
        );
        assert_one_line(
            &out,
            &[
                &format!("{path} is not BTF observer can read (malformed BTF: "),
                "the running kernel's own BTF",
                "upgrade observer",
            ],
        );
    }
    // A directory where the file should be: the OS error, once.
    let out = run_observer(
        &[("OBSERVER_BTF_PATH", dir.0.to_str().unwrap())],
        &["flows", "--duration", "1s"],
    );
    assert_one_line(&out, &["cannot read BTF from", "Is a directory"]);
}

#[test]
fn btf_without_a_needed_type_or_member_names_it() {
    if !root_or_skip("btf_without_a_needed_type_or_member_names_it")
        || !overrides_honoured("btf_missing_type")
    {
        return;
    }
    let _serial = serial();
    let dir = Scratch::new("types");
    // Well-formed BTF with no struct tcp_sock at all.
    let mut b = BtfBuilder::new();
    b.int();
    b.strukt("sock", 8, &[("sk_rcvbuf", 1, 0)]);
    let no_struct = dir.file("no-struct", &b.bytes());
    // A struct tcp_sock without the members observer reads.
    let mut b = BtfBuilder::new();
    b.int();
    b.strukt("tcp_sock", 8, &[("snd_wnd", 1, 0)]);
    let no_member = dir.file("no-member", &b.bytes());
    for (path, says) in [
        (no_struct, "kernel BTF has no struct tcp_sock"),
        (
            no_member,
            "kernel BTF: struct tcp_sock has no member inet_conn",
        ),
    ] {
        let out = run_observer(
            &[("OBSERVER_BTF_PATH", path.as_str())],
            &["flows", "--duration", "1s"],
        );
        assert_one_line(
            &out,
            &[says, "observer cannot follow TCP sockets on this kernel"],
        );
    }
}

#[test]
fn missing_tracepoint_fails_cleanly_and_detaches_what_attached() {
    if !root_or_skip("missing_tracepoint_fails_cleanly_and_detaches_what_attached")
        || !overrides_honoured("missing_tracepoint")
    {
        return;
    }
    let _serial = serial();
    // tcp_probe is attached first: a missing inet_sock_set_state fails
    // with it already attached, and it must be gone after the exit.
    for hook in ["tcp_probe", "inet_sock_set_state"] {
        let out = run_observer(
            &[("OBSERVER_MISSING_HOOK", hook)],
            &["flows", "--duration", "1s"],
        );
        assert_one_line(
            &out,
            &[
                &format!("this kernel has no BTF tracepoint {hook} (no btf_trace_{hook}"),
                "upgrade the kernel",
            ],
        );
    }
}

#[test]
fn missing_optional_tracepoints_only_degrade() {
    if !root_or_skip("missing_optional_tracepoints_only_degrade")
        || !overrides_honoured("missing_optional_tracepoints")
    {
        return;
    }
    let _serial = serial();
    let out = run_observer(
        &[("OBSERVER_MISSING_HOOK", "sock_send_length,sock_recv_length")],
        &["flows", "--duration", "500ms", "--json"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for tp in ["sock_send_length", "sock_recv_length"] {
        assert!(
            err.contains(&format!(
                "kernel has no tracepoint {tp}: flows accepted by a listener show no pid or comm"
            )),
            "{err}"
        );
    }
}

// ---------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------

#[test]
fn bad_values_are_clap_errors_never_panics() {
    let huge = "99999999999999999999999";
    let cases: &[(&[&str], &str)] = &[
        (
            &["flows", "--max-flows", "0"],
            "for '--max-flows <MAX_FLOWS>'",
        ),
        (
            &["flows", "--max-flows", "-1"],
            "for '--max-flows <MAX_FLOWS>'",
        ),
        (
            &["top", "--max-flows", "0"],
            "for '--max-flows <MAX_FLOWS>'",
        ),
        (
            &["run", "--max-flows", huge],
            "for '--max-flows <MAX_FLOWS>'",
        ),
        (
            &["run", "--max-label-sets", "0"],
            "for '--max-label-sets <MAX_LABEL_SETS>'",
        ),
        (
            &["run", "--max-label-sets", "-5"],
            "for '--max-label-sets <MAX_LABEL_SETS>'",
        ),
        (
            &["run", "--top-flows", "-1"],
            "for '--top-flows <TOP_FLOWS>'",
        ),
        (
            &["run", "--top-flows", huge],
            "for '--top-flows <TOP_FLOWS>'",
        ),
        (
            &["run", "--label-remote-subnet", "33"],
            "IPv4 prefix must be 0-32",
        ),
        (&["run", "--label-remote-subnet", "24,129"], "IPv6 0-128"),
        (&["run", "--window", "0s"], "must be greater than zero"),
        (&["run", "--interval", "-1s"], "'-1s' is not a duration"),
        (&["top", "--interval", "-1s"], "'-1s' is not a duration"),
        (&["top", "--interval", "0ms"], "must be greater than zero"),
        (
            &["flows", "--duration", "500000000000y"],
            "must be at most a year",
        ),
        (&["run", "--interval", "400d"], "must be at most a year"),
        (&["top", "--sort", "bogus"], "[possible values: process,"),
        (&["top", "--sort", ""], "for '--sort <COLUMN>'"),
        (
            &["flows", "--target-rate", "0"],
            "must be greater than zero",
        ),
        (
            &["flows", "--target-rate", "-5M"],
            "must be greater than zero",
        ),
        (&["flows", "--target-rate", "1e400"], "must be at most"),
        (&["flows", "--target-rate", "nanM"], "is not a rate"),
        (&["flows", "--target-rate", "\u{3000}1kk"], "is not a rate"),
        (
            &["run", "--listen", "127.0.0.1:99999"],
            "for '--listen <LISTEN>'",
        ),
        (
            &["run", "--ringbuf-bytes", "12288"],
            "must be a power of two from the page size",
        ),
        (&["run", "--ringbuf-bytes", "0"], "must be a power of two"),
        (
            &["flows", "--no-such-flag"],
            "unexpected argument '--no-such-flag'",
        ),
        (&["frobnicate"], "unrecognized subcommand 'frobnicate'"),
    ];
    for (args, says) in cases {
        let out = Command::new(BIN)
            .args(*args)
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err:?} lacks {says:?}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn unwritable_stdout_is_one_line_and_detaches() {
    if !root_or_skip("unwritable_stdout_is_one_line_and_detaches") {
        return;
    }
    let _serial = serial();
    let before = observer_programs();
    // /dev/full: every write fails with ENOSPC. The table always has a
    // header line to write, even with no flow.
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = Command::new(BIN)
        .args(["flows", "--duration", "300ms"])
        .env("RUST_BACKTRACE", "0")
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    // Kernels before 6.3 first warn about their missing optional hooks.
    let err: String = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.contains("kernel has no tracepoint"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("observer: error: cannot write to stdout: No space left on device"),
        "{err}"
    );
    assert_eq!(leftover(&before), Vec::<u32>::new());
}

// ---------------------------------------------------------------------------
// Faults while running
// ---------------------------------------------------------------------------

/// `n` connections to `addr`, each sending a byte and closed by both ends,
/// as fast as they go; returns the client cookies.
fn churn(addr: std::net::SocketAddr, listener: &TcpListener, n: usize) -> Vec<u64> {
    let mut cookies = Vec::with_capacity(n);
    for _ in 0..n {
        let mut c = TcpStream::connect(addr).unwrap();
        let (mut s, _) = listener.accept().unwrap();
        cookies.push(cookie(&c));
        c.write_all(b"x").unwrap();
        let mut b = [0u8; 1];
        s.read_exact(&mut b).unwrap();
        drop(c);
        drop(s);
    }
    cookies
}

#[test]
fn full_ring_buffer_counts_drops_and_forgets_no_flow_twice() {
    if !root_or_skip("full_ring_buffer_counts_drops_and_forgets_no_flow_twice") {
        return;
    }
    let _serial = serial();
    let page = observer::args::page_size();
    // One page holds 14 closed-flow records (272 bytes + 8 of header each).
    let probes = Probes::load(ProbeConfig {
        ringbuf_bytes: page,
        ..ProbeConfig::default()
    })
    .unwrap();
    let max_flows = ProbeConfig::default().max_flows;
    let mut m = Monitor::new(
        probes,
        Clock::new(kernel_hz().unwrap()),
        BookConfig::default(),
        max_flows,
    );
    m.poll().unwrap();
    let ns = NetNs::new();
    let netns = ns.inode();
    const HELD: usize = 40;
    let (listener, addr, held) = ns.run(|| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let mut held = Vec::new();
        for _ in 0..HELD {
            let mut c = TcpStream::connect(addr).unwrap();
            let (s, _) = l.accept().unwrap();
            c.write_all(b"x").unwrap();
            held.push((c, s));
        }
        (l, addr, held)
    });
    // The book sees them all open...
    let open_in_ns = |m: &Monitor| {
        m.book()
            .flows()
            .filter(|t| t.flow.netns == netns && !t.is_closed())
            .count()
    };
    m.poll().unwrap();
    assert_eq!(open_in_ns(&m), 2 * HELD);
    let drops_before = m.counters[Counter::RingbufDrops as usize];
    // ...then all 80 ends close with no drain: the ring overflows.
    drop(held);
    std::thread::sleep(Duration::from_millis(100));
    let (events, _) = m.poll().unwrap();
    let drops = m.counters[Counter::RingbufDrops as usize] - drops_before;
    assert!(
        drops >= (2 * HELD - 14 * page as usize / 4096) as u64,
        "only {drops} drops"
    );
    let closed_now = events
        .iter()
        .filter(|e| matches!(e, observer::book::Event::Closed { flow, .. } if flow.netns == netns))
        .count();
    assert!(
        closed_now <= 14,
        "{closed_now} closed records from one page"
    );
    // The exporter says so.
    let mut cat = Catalogue::new(Aggregation::default(), 100, 0, 4).unwrap();
    cat.update(&[], m.book(), &m.counters, &PollStats::default(), max_flows);
    let text = encode(&cat.registry).unwrap();
    let exported = metric(
        &text,
        r#"observer_kernel_events_total{event="ringbuf_drops"}"#,
    )
    .unwrap();
    assert_eq!(exported, m.counters[Counter::RingbufDrops as usize] as f64);
    // Flows whose close record was lost do not stay open in the book
    // forever: gone from the kernel map for two polls, they are forgotten.
    m.poll().unwrap();
    m.poll().unwrap();
    assert_eq!(
        open_in_ns(&m),
        0,
        "flows whose close record was dropped stay open in the book"
    );
    // The agent goes on: later closes, drained in time, are each reported
    // once. The page is shared with every TCP close on the host (other
    // tests running at the same time): a close may only go missing when
    // the drop counter says the ring was full again.
    let mut seen: HashMap<u64, usize> = HashMap::new();
    let drops_before_later = m.counters[Counter::RingbufDrops as usize];
    let mut later = Vec::new();
    for _ in 0..5 {
        let c = ns.run(|| churn(addr, &listener, 1));
        let deadline = Instant::now() + Duration::from_secs(2);
        while c.iter().any(|c| !seen.contains_key(c)) && Instant::now() < deadline {
            let (events, _) = m.poll().unwrap();
            for e in events {
                if let observer::book::Event::Closed { flow, .. } = e {
                    *seen.entry(flow.cookie).or_default() += 1;
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        later.extend(c);
    }
    m.poll().unwrap();
    let dropped_again = m.counters[Counter::RingbufDrops as usize] > drops_before_later;
    let reported = later.iter().filter(|c| seen.contains_key(c)).count();
    for c in &later {
        assert!(
            seen.get(c).copied().unwrap_or(0) <= 1,
            "flow {c} closed {:?} times",
            seen.get(c)
        );
    }
    assert!(
        reported == later.len() || dropped_again,
        "{reported} of {} later closes reported (ring full again: {dropped_again})",
        later.len()
    );
}

#[test]
fn agent_exports_ring_buffer_drops_and_goes_on() {
    if !root_or_skip("agent_exports_ring_buffer_drops_and_goes_on") {
        return;
    }
    let _serial = serial();
    let before = observer_programs();
    let port = free_port();
    let page = observer::args::page_size().to_string();
    let child = Kill(Some(
        Command::new(BIN)
            .args(["run", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--interval", "2s", "--ringbuf-bytes", &page])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    wait_attached(&before, attached_programs());
    let scrape = || -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(t) = http_get(port, "/metrics") {
                return t;
            }
            assert!(Instant::now() < deadline, "no /metrics on {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let drops = |t: &str| {
        metric(t, r#"observer_kernel_events_total{event="ringbuf_drops"}"#).unwrap_or(0.0)
    };
    let ns = NetNs::new();
    // 300 connections (600 closes) in a burst, far more than one page of
    // ring buffer holds between two polls.
    ns.run(|| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let mut held = Vec::new();
        for _ in 0..300 {
            let c = TcpStream::connect(addr).unwrap();
            let (s, _) = l.accept().unwrap();
            held.push((c, s));
        }
        drop(held);
    });
    let deadline = Instant::now() + Duration::from_secs(15);
    let mut text = scrape();
    while drops(&text) == 0.0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        text = scrape();
    }
    assert!(drops(&text) > 0.0, "no drops exported:\n{text}");
    // It goes on: still serving, and still counting closes.
    let closed = |t: &str| -> f64 {
        t.lines()
            .filter(|l| l.starts_with("observer_flows_closed_total"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    let closed_before = closed(&text);
    ns.run(|| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        churn(l.local_addr().unwrap(), &l, 3)
    });
    let deadline = Instant::now() + Duration::from_secs(15);
    while closed(&text) < closed_before + 6.0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        text = scrape();
    }
    assert!(
        closed(&text) >= closed_before + 6.0,
        "closes after the drops were not counted"
    );
    assert_eq!(http_get(port, "/healthz").as_deref(), Some("ok\n"));
    let out = child.stop(libc::SIGINT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("ringbuf drops "), "{err}");
    assert_eq!(leftover(&before), Vec::<u32>::new());
}

#[test]
fn flow_open_before_start_is_picked_up_at_its_next_packet() {
    if !root_or_skip("flow_open_before_start_is_picked_up_at_its_next_packet") {
        return;
    }
    let _serial = serial();
    let ns = NetNs::new();
    const BEFORE: usize = 256 * 1024;
    const AFTER: usize = 1024 * 1024;
    let (mut client, mut server) = ns.run(|| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        c.write_all(&vec![1u8; BEFORE]).unwrap();
        let mut buf = vec![0u8; BEFORE];
        s.read_exact(&mut buf).unwrap();
        (c, s)
    });
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
    let mut flow = None;
    assert!(
        obs.wait_until(Duration::from_secs(5), |o| {
            flow = o.flow(ckey);
            flow.as_ref()
                .is_some_and(|f| f.bytes_acked == ci.bytes_acked)
        }),
        "client flow never matched TCP_INFO {ci:?}: {flow:?}"
    );
    let flow = flow.unwrap();
    assert_eq!(flow.bytes_received, ci.bytes_received);
    assert_eq!(flow.netns, ns.inode());
    assert!(!flow.closed);
    let mut sflow = None;
    assert!(obs.wait_until(Duration::from_secs(5), |o| {
        sflow = o.flow(skey);
        sflow
            .as_ref()
            .is_some_and(|f| f.bytes_received == si.bytes_received)
    }));
    assert_eq!(si.bytes_received, (BEFORE + AFTER) as u64);
}

/// `observer SUBCOMMAND` stopped by `sig` once attached: exit 0, detached.
fn stops_cleanly_on(sig: i32, args: &[&str]) -> Output {
    let before = observer_programs();
    let child = Kill(Some(
        Command::new(BIN)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    wait_attached(&before, attached_programs());
    assert!(child.pid() > 0);
    let out = child.stop(sig);
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

// ---------------------------------------------------------------------------
// Exported counters never go backwards
// ---------------------------------------------------------------------------

/// xorshift64*: a fixed-seed generator, so a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Every counter-like series (`_total`, histogram `_count` / `_sum` /
/// `_bucket`) in the exposition `text`.
fn counter_series(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (name, v) = l.rsplit_once(' ')?;
            let base = name.split('{').next()?;
            (base.ends_with("_total")
                || base.ends_with("_count")
                || base.ends_with("_sum")
                || base.ends_with("_bucket"))
            .then(|| Some((name.to_string(), v.parse().ok()?)))?
        })
        .collect()
}

#[test]
fn exported_counters_never_go_backwards_when_samples_do() {
    const SEC: u64 = 1_000_000_000;
    for seed in 1..=40u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let cfg = BookConfig {
            history: 4,
            ..BookConfig::default()
        };
        let mut book = Book::new(cfg, Clock::fixed(0, 250), 10 * SEC);
        let agg = Aggregation {
            comm: true,
            local_port: true,
            ..Aggregation::default()
        };
        let mut cat = Catalogue::new(agg, 8, 3, 4).unwrap();
        let mut flows: Vec<FlowSample> = Vec::new();
        let mut counters = [0u64; Counter::COUNT as usize];
        let mut last: HashMap<String, f64> = HashMap::new();
        let mut now = 20 * SEC;
        for poll in 0..60 {
            now += SEC / 2 + rng.below(SEC);
            // New flows, some born before the book.
            for _ in 0..rng.below(3) {
                let mut s = FlowSample::ZERO;
                s.cookie = rng.next();
                s.state = 1;
                s.mss = 1448;
                s.srtt_us = 1 + rng.below(200_000) as u32;
                s.min_rtt_us = s.srtt_us / 2;
                s.sport = rng.below(65536) as u16;
                s.dport = 5201;
                s.saddr[10..16].copy_from_slice(&[0xff, 0xff, 10, 0, 0, 1]);
                s.daddr[10..16].copy_from_slice(&[0xff, 0xff, 10, 0, 0, 2]);
                s.comm[0] = b'a' + rng.below(20) as u8;
                s.first_seen_ns = now - rng.below(30 * SEC).min(now);
                s.last_seen_ns = now;
                flows.push(s);
            }
            let mut active = Vec::new();
            let mut closed = Vec::new();
            for s in &mut flows {
                // Mostly growth; sometimes a drop (an LRU-evicted entry
                // re-created from zero, or a stale read), sometimes nothing.
                match rng.below(10) {
                    0 => {
                        s.cwnd_limited_ns = 0;
                        s.bytes_acked /= 1 + rng.below(4);
                        s.bytes_received /= 1 + rng.below(4);
                        s.chrono_stat = [0, 0, 0];
                        s.total_retrans = 0;
                        s.samples = 1;
                        s.first_seen_ns = now;
                    }
                    1 => {}
                    _ => {
                        s.bytes_acked += rng.below(10_000_000);
                        s.bytes_received += rng.below(100_000);
                        s.total_retrans += rng.below(5) as u32;
                        s.cwnd_limited_ns += rng.below(SEC);
                        for c in &mut s.chrono_stat {
                            *c = c.wrapping_add(rng.below(200) as u32);
                        }
                        s.chrono_type = rng.below(4) as u8;
                        s.chrono_start = rng.next() as u32;
                        s.jiffies = rng.below(1 << 40);
                        s.snd_cwnd = rng.below(1000) as u32;
                        s.snd_wnd = rng.below(1 << 24) as u32;
                        s.samples += 1 + rng.below(100);
                    }
                }
                s.last_seen_ns = now - rng.below(SEC / 2);
                if rng.below(15) == 0 {
                    let mut c = *s;
                    c.closed_ns = now;
                    c.state = 7;
                    closed.push(c);
                    s.cookie = 0;
                } else if rng.below(8) != 0 {
                    active.push(*s);
                }
            }
            flows.retain(|s| s.cookie != 0);
            for c in &mut counters {
                *c += rng.below(1000);
            }
            let events = book.ingest(&active, &closed, now);
            cat.update(&events, &book, &counters, &PollStats::default(), 1024);
            let text = encode(&cat.registry).unwrap();
            let series = counter_series(&text);
            for (name, v) in &series {
                assert!(v.is_finite(), "seed {seed} poll {poll}: {name} = {v}");
                if let Some(prev) = last.get(name) {
                    assert!(
                        v >= prev,
                        "seed {seed} poll {poll}: {name} went from {prev} to {v}"
                    );
                }
            }
            // A series, once exported, is not withdrawn.
            for name in last.keys() {
                assert!(
                    series.contains_key(name),
                    "seed {seed} poll {poll}: {name} vanished"
                );
            }
            last = series;
        }
    }
}
