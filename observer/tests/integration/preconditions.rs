//! Failing safely on bad input: a host that cannot run observer (missing
//! or malformed BTF, a kernel too old, a missing tracepoint) gets one line
//! naming the fix and nothing stays attached; bad values are clap errors,
//! never panics; an unwritable stdout is one line and detaches.
//!
//! The precondition tests use the test-only overrides of
//! `observer::kernel::load::preflight` (`OBSERVER_BTF_PATH`, `OBSERVER_FAKE_KERNEL`,
//! `OBSERVER_MISSING_HOOK`), which only builds with debug assertions read.

use std::process::{Command, Output, Stdio};

use observer::testkit::btf::BtfBuilder;

use crate::support::{
    bpf::{leftover, observer_programs},
    process::BIN,
    root_or_skip,
    scratch::Scratch,
    serial,
};

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
        .env_remove("RUST_LOG")
        .envs(env.iter().copied())
        .env("RUST_BACKTRACE", "0")
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

/// The running kernel's BTF with the helper that sets the minimum
/// (`bpf_get_socket_ptr_cookie`, Linux 5.12) renamed, as an older kernel's
/// lacks it (on such a kernel, its BTF as it is).
fn btf_without_key_helper(dir: &Scratch) -> String {
    let mut data = std::fs::read(observer::kernel::load::env::VMLINUX_BTF).unwrap();
    let name = format!("\0{}\0", observer::kernel::load::preflight::KEY_HELPER);
    let name = name.as_bytes();
    let mut at = 0;
    while let Some(i) = data[at..].windows(name.len()).position(|w| w == name) {
        // The last letter: the string keeps its length and its offset.
        data[at + i + name.len() - 2] = b'X';
        at += i + name.len();
    }
    dir.file("no-key-helper", &data)
}

#[test]
fn too_old_kernel_says_upgrade_and_loads_nothing() {
    if !root_or_skip("too_old_kernel_says_upgrade_and_loads_nothing")
        || !overrides_honoured("too_old_kernel")
    {
        return;
    }
    let _serial = serial();
    let dir = Scratch::new("preconditions", "old");
    let no_helper = btf_without_key_helper(&dir);
    // Older than 5.12, with a BTF that lacks the helper: the helper and the
    // minimum named, for `flows` and `run` alike.
    for (release, args) in [
        ("5.10.0-32-cloud-amd64", &["flows", "--duration", "1s"][..]),
        ("5.11.22", &["run", "--listen", "127.0.0.1:0"][..]),
        ("4.19.0-27-amd64", &["flows", "--duration", "1s"][..]),
    ] {
        let out = run_observer(
            &[
                ("OBSERVER_FAKE_KERNEL", release),
                ("OBSERVER_BTF_PATH", no_helper.as_str()),
            ],
            args,
        );
        assert_one_line(
            &out,
            &[
                &format!("kernel {release} is too old: it has no bpf_get_socket_ptr_cookie"),
                "observer needs Linux 5.12 or later",
                "upgrade the kernel",
            ],
        );
    }
    // Older and without BTF at all.
    let out = run_observer(
        &[
            ("OBSERVER_FAKE_KERNEL", "4.19.0-27-amd64"),
            ("OBSERVER_BTF_PATH", "/nonexistent/observer-test/vmlinux"),
        ],
        &["flows", "--duration", "1s"],
    );
    assert_one_line(
        &out,
        &[
            "kernel 4.19.0-27-amd64 is too old",
            "Linux 5.12 or later built with CONFIG_DEBUG_INFO_BTF=y",
            "upgrade the kernel",
        ],
    );
}

#[test]
fn malformed_btf_is_one_clear_line_at_every_cut() {
    if !root_or_skip("malformed_btf_is_one_clear_line_at_every_cut")
        || !overrides_honoured("malformed_btf")
    {
        return;
    }
    let _serial = serial();
    let real = std::fs::read(observer::kernel::load::env::VMLINUX_BTF).unwrap();
    let dir = Scratch::new("preconditions", "btf");
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
    let dir = Scratch::new("preconditions", "types");
    // Well-formed BTF with no struct tcp_sock at all.
    let mut b = BtfBuilder::new();
    b.int("unsigned int", 4);
    b.strukt("sock", 8, &[("sk_rcvbuf", 1, 0)]);
    let no_struct = dir.file("no-struct", b.bytes());
    // A struct tcp_sock without the members observer reads.
    let mut b = BtfBuilder::new();
    b.int("unsigned int", 4);
    b.strukt("tcp_sock", 8, &[("snd_wnd", 1, 0)]);
    let no_member = dir.file("no-member", b.bytes());
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
        &[
            (
                "OBSERVER_MISSING_HOOK",
                "sock_recv_length,tcp_rcv_space_adjust,iter:bpf_sk_storage_map,iter:tcp",
            ),
            // A fallback that only costs more per packet is said at info.
            ("RUST_LOG", "info"),
        ],
        &["flows", "--duration", "500ms", "--json", "--poll-read"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // Asked for and refused: said, and the programs run without it.
    assert!(
        err.contains(
            "no poll-time read (cannot attach the poll-time read's iterator: iter:tcp hidden"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "kernel has no tracepoint sock_recv_length: flows accepted by a listener show no \
             pid or comm until the owner walk finds them at a poll, and idle flows' figures lag \
             their last received segment"
        ),
        "{err}"
    );
}

// ---------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------

#[test]
fn bad_values_are_clap_errors_never_panics() {
    let huge = "99999999999999999999999";
    let cases: &[(&[&str], &str)] = &[
        (&["flows", "--max-flows", "0"], "for '--max-flows <N>'"),
        (&["flows", "--max-flows", "-1"], "for '--max-flows <N>'"),
        (&["top", "--max-flows", "0"], "for '--max-flows <N>'"),
        (&["run", "--max-flows", huge], "for '--max-flows <N>'"),
        (
            &["run", "--max-label-sets", "0"],
            "for '--max-label-sets <N>'",
        ),
        (
            &["run", "--max-label-sets", "-5"],
            "for '--max-label-sets <N>'",
        ),
        (
            &["run", "--max-conns-per-client", "0"],
            "'0' is not a connection count from 1 to 496 (the endpoint holds 512 connections, \
             16 of them kept for scrapers that authenticate)",
        ),
        (
            &["run", "--max-conns-per-client", "-3"],
            "'-3' is not a connection count from 1 to 496",
        ),
        (
            &["run", "--max-conns-per-client", "513"],
            "'513' is not a connection count from 1 to 496",
        ),
        (
            &["run", "--top-flows", "-1"],
            "'-1' is not a count: give a whole number, 0 or more (0 turns it off)",
        ),
        (
            &["run", "--top-peers", "ten"],
            "'ten' is not a count: give a whole number, 0 or more (0 turns it off)",
        ),
        (&["run", "--top-flows", huge], "for '--top-flows <N>'"),
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
        (
            &["top", "--sort", "bogus"],
            "[possible values: netns, process,",
        ),
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
            "for '--listen <ADDR>'",
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
        assert!(err.starts_with("observer: error: "), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
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
    // Kernels before 6.3 first warn about their missing optional hooks
    // (a lost figure); a fallback that only costs more per packet (the
    // poll-time read reaching one namespace) is said at info, not here.
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
