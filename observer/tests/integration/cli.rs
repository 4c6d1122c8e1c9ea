//! The `observer` binary as a user runs it: bad input, missing privilege,
//! a real flow in the output, and nothing left loaded afterwards.

use std::{
    io::{Read as _, Write as _},
    net::{TcpListener, TcpStream},
    process::{Command, Stdio},
    time::Duration,
};

use crate::support::{
    bpf::{attached_programs, leftover, observer_programs, wait_attached},
    cookie,
    http::free_port,
    netns_id,
    process::{BIN, stdout_of},
    root_or_skip, serial,
};
use pathemu::{ChildGuard, Namespace};

#[test]
fn zero_duration_is_rejected_like_clap_does() {
    let out = Command::new(BIN)
        .args(["flows", "--duration", "0s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("invalid value '0s' for '--duration"), "{err}");
    assert!(err.contains("must be greater than zero"), "{err}");
    let out = Command::new(BIN)
        .args(["flows", "--interval", "soon"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'soon' is not a duration (use e.g. 5s, 250ms, 1m, or 7 for seconds)"),
        "{err}"
    );
    let out = Command::new(BIN)
        .args(["flows", "--duration", "-5s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("'-5s' is not a duration"), "{err}");
}

#[test]
fn unprivileged_user_gets_one_clear_line() {
    if !root_or_skip("unprivileged_user_gets_one_clear_line") {
        return;
    }
    let _serial = serial();
    let before = observer_programs();
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--inh-caps=-all",
            BIN,
        ])
        .args(["flows", "--duration", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("observer: error: observer needs root"),
        "{err}"
    );
    assert!(err.contains("sudo"));
    assert!(out.stdout.is_empty());
    assert_eq!(leftover(&before), Vec::<u32>::new());
}

#[test]
fn flows_json_reports_a_transfer_and_detaches_on_exit() {
    if !root_or_skip("flows_json_reports_a_transfer_and_detaches_on_exit") {
        return;
    }
    let _serial = serial();
    let before = observer_programs();
    // Counted first: reading the kernel BTF is slow under emulation.
    let attached = attached_programs();
    let child = ChildGuard::spawn(
        Command::new(BIN)
            .args(["flows", "--duration", "3s", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .unwrap();
    // Wait until the programs are attached before making traffic.
    wait_attached(&before, attached);
    // Once attached it drops every capability, in every thread
    // (capabilities are per thread).
    let pid = child.id();
    let cap_eff = || -> Vec<String> {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
                    .filter_map(|s| {
                        s.lines()
                            .find(|l| l.starts_with("CapEff:"))
                            .and_then(|l| l.split_whitespace().nth(1).map(str::to_string))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let dropped =
        |caps: &[String]| !caps.is_empty() && caps.iter().all(|c| c == "0000000000000000");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !dropped(&cap_eff()) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(dropped(&cap_eff()), "{:?}", cap_eff());
    let ns = Namespace::standalone().unwrap();
    const N: usize = 1 << 20;
    let (key, local) = ns
        .run(|| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            let srv = std::thread::spawn(move || {
                let (mut c, _) = l.accept().unwrap();
                let mut sink = Vec::new();
                c.read_to_end(&mut sink).unwrap();
                sink.len()
            });
            let mut c = TcpStream::connect(addr).unwrap();
            let key = cookie(&c);
            let local = c.local_addr().unwrap();
            c.write_all(&vec![1u8; N]).unwrap();
            drop(c);
            assert_eq!(srv.join().unwrap(), N);
            (key, local)
        })
        .unwrap();
    // The ring-buffer drain thread, started by the first poll, has none
    // either.
    std::thread::sleep(Duration::from_millis(1200));
    let caps = cap_eff();
    assert!(dropped(&caps), "{caps:?}");
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let flows: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let f = flows
        .iter()
        .find(|f| f["cookie"] == key)
        .unwrap_or_else(|| panic!("flow {key} missing from {} flows", flows.len()));
    assert_eq!(f["local"], local.to_string());
    assert_eq!(f["netns"], netns_id(&ns));
    assert_eq!(f["closed"], true);
    // Data plus the SYN and FIN sequence numbers.
    assert_eq!(f["bytes_acked"], N as u64 + 2);
    assert_eq!(f["pid"], std::process::id());
    // The kernel frees programs after an RCU grace period, not at close().
    assert_eq!(
        leftover(&before),
        Vec::<u32>::new(),
        "programs left loaded after exit"
    );
}

#[test]
fn run_on_a_taken_port_says_so_and_loads_nothing() {
    if !root_or_skip("run_on_a_taken_port_says_so_and_loads_nothing") {
        return;
    }
    let _serial = serial();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let before = observer_programs();
    let out = Command::new(BIN)
        .args(["run", "--listen", &addr.to_string()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "cannot listen on {addr} (is another observer running? choose another --listen): "
        )),
        "{err}"
    );
    // The OS error once, at the end of the chain.
    assert_eq!(err.matches("Address already in use").count(), 1, "{err}");
    assert_eq!(leftover(&before), Vec::<u32>::new());
}

#[test]
fn bad_listen_address_is_a_clap_error() {
    let out = Command::new(BIN)
        .args(["run", "--listen", "nonsense"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid value 'nonsense' for '--listen <ADDR>'"),
        "{err}"
    );
}

#[test]
fn bad_grouping_is_a_clap_error() {
    // Refused before anything loads (no root needed): one line, exit 2.
    for (by, says) in [
        (
            "prefix/99",
            "'prefix/99': a prefix length is 0-32 for IPv4 and 0-128 for IPv6",
        ),
        ("host", "'host' is not a grouping: use peer, prefix/24"),
    ] {
        let out = Command::new(BIN)
            .args(["flows", "--by", by])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "--by {by}");
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err.lines().next().unwrap_or_default();
        assert!(
            first.starts_with(&format!(
                "observer: error: invalid value '{by}' for '--by <GROUPING>': {says}"
            )),
            "{err}"
        );
    }
}

#[test]
fn run_stops_on_sigterm_with_exit_0_and_detaches() {
    if !root_or_skip("run_stops_on_sigterm_with_exit_0_and_detaches") {
        return;
    }
    let _serial = serial();
    let before = observer_programs();
    // Counted first: reading the kernel BTF is slow under emulation.
    let attached = attached_programs();
    let port = free_port();
    let child = ChildGuard::spawn(
        Command::new(BIN)
            .args(["run", "--listen", &format!("127.0.0.1:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
    .unwrap();
    wait_attached(&before, attached);
    let out = child.stop(libc::SIGTERM).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("stopping: detaching probes"));
    assert_eq!(leftover(&before), Vec::<u32>::new());
}

/// Whether `prog` runs here; says why a test is skipped when not (the VM's
/// busybox userland has neither bash nor man).
fn have(prog: &str, test: &str) -> bool {
    let ok = Command::new("sh")
        .args(["-c", &format!("command -v {prog}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("{test}: skipped, no {prog} here");
    }
    ok
}

#[test]
fn bash_completion_loads() {
    if !have("bash", "bash_completion_loads") {
        return;
    }
    let text = stdout_of(Command::new("bash").args([
        "-c",
        &format!("source <({BIN} completions bash) && complete -p observer"),
    ]));
    assert!(
        text.contains("-F _observer") && text.trim_end().ends_with(" observer"),
        "{text}"
    );
    // It completes subcommands and their flags.
    let script = stdout_of(Command::new(BIN).args(["completions", "bash"]));
    for word in [
        "flows",
        "run",
        "top",
        "--duration",
        "--listen",
        "--log-every",
    ] {
        assert!(script.contains(word), "no {word} in the completion script");
    }
}

/// What bash offers after `observer WORDS...` and the word `cur`, from
/// the completion script as installed.
fn bash_offers(words: &[&str], cur: &str) -> Vec<String> {
    let prev = words.last().copied().unwrap_or("observer");
    let line = format!(
        "source <({BIN} completions bash) && COMP_WORDS=(observer {} '{cur}') && \
         COMP_CWORD=${{#COMP_WORDS[@]}} && COMP_CWORD=$((COMP_CWORD - 1)) && \
         _observer observer '{cur}' '{prev}' && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        words.join(" ")
    );
    stdout_of(Command::new("bash").args(["-c", &line]))
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_the_values_of_fixed_sets_not_file_names() {
    if !have(
        "bash",
        "bash_completes_the_values_of_fixed_sets_not_file_names",
    ) {
        return;
    }
    assert_eq!(
        bash_offers(&["flows", "--by"], ""),
        ["peer", "prefix/24", "prefix/24,64", "process", "workload"]
    );
    assert_eq!(
        bash_offers(&["flows", "--by"], "pre"),
        ["prefix/24", "prefix/24,64"]
    );
    assert_eq!(bash_offers(&["top", "--sort"], "rw"), ["rwnd_limited"]);
    assert_eq!(bash_offers(&["flows", "--poll-read"], "o"), ["on", "off"]);
    // A hidden flag (for fault tests) does not complete.
    let flags = bash_offers(&["run"], "--");
    assert!(flags.iter().any(|w| w == "--listen"), "{flags:?}");
    assert!(!flags.iter().any(|w| w.contains("ringbuf")), "{flags:?}");
}

#[test]
fn manual_pages_render() {
    if !have("man", "manual_pages_render") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("observer-man-{}", std::process::id()));
    let said = stdout_of(Command::new(BIN).args(["man", "--dir", dir.to_str().unwrap()]));
    assert_eq!(
        said.trim_end(),
        format!(
            "wrote 6 manual pages to {}: observer-flows.1, observer-run.1, observer-top.1, \
             observer-completions.1, observer-man.1, observer.1",
            dir.display()
        )
    );
    let render = |page: &str| {
        stdout_of(
            Command::new("man")
                .arg("-l")
                .arg(dir.join(page))
                .env("MANPAGER", "cat")
                .env("MANWIDTH", "100"),
        )
    };
    let top = render("observer.1");
    let flows = render("observer-flows.1");
    let run = render("observer-run.1");
    let live = render("observer-top.1");
    // Each page stands alone: an installed binary has no docs/ tree.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let page = entry.unwrap().file_name();
        let text = render(page.to_str().unwrap());
        assert!(!text.contains("docs/"), "{page:?} points into docs/");
        assert!(text.contains("SEE ALSO"), "{page:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
    for (section, says) in [
        ("KEYS", "Ctrl-C"),
        ("SCREEN", "dim rows"),
        ("FILTERS", "verdict NAME"),
    ] {
        let body = live
            .split(&format!("\n{section}\n"))
            .nth(1)
            .unwrap_or_default();
        assert!(body.contains(says), "observer-top(1) {section}: {live}");
    }
    for (section, says) in [
        ("VERDICTS", "receiver_application"),
        ("JSON FIELDS", "snd_wnd"),
        ("FILTERS", "verdict NAME"),
    ] {
        let body = flows
            .split(&format!("\n{section}\n"))
            .nth(1)
            .unwrap_or_default();
        assert!(body.contains(says), "observer-flows(1) {section}: {flows}");
    }
    assert!(
        top.contains("SUBCOMMANDS") && top.contains("observer-flows(1)"),
        "{top}"
    );
    assert!(
        flows.contains("--duration") && flows.contains("bare number"),
        "{flows}"
    );
    assert!(
        run.contains("--listen") && run.contains("--log-every"),
        "{run}"
    );
}

#[test]
fn a_reader_that_stops_early_is_no_error_for_the_manual_page_or_completions() {
    // `observer man | head -1`, at its most abrupt: the pipe is closed
    // before anything is written, so every write fails.
    for args in [&["man"][..], &["completions", "bash"]] {
        let mut child = Command::new(BIN)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("observer starts");
        drop(child.stdout.take());
        let done = child.wait_with_output().expect("observer ends");
        assert!(
            done.status.success() && done.stderr.is_empty(),
            "{args:?}: {:?}: {}",
            done.status,
            String::from_utf8_lossy(&done.stderr)
        );
    }
}
