//! `observer top` as a user runs it: flag errors and no terminal, then the
//! real view under tmux showing a receive-window-limited transfer made in
//! a fresh network namespace, the flow listed by `c` once it has closed,
//! and a clean exit on `q` with the summary of what it saw.

use std::{
    io::{Read as _, Write as _},
    net::{TcpListener, TcpStream},
    process::{Command, Stdio},
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use crate::support::{process::BIN, root_or_skip, setsockopt_int, tmux::Tmux};
use pathemu::{Path, PathConfig, Side};

#[test]
fn unknown_sort_key_is_a_clap_error_listing_the_valid_ones() {
    let out = Command::new(BIN)
        .args(["top", "--sort", "bogus"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid value 'bogus' for '--sort <COLUMN>'"),
        "{err}"
    );
    assert!(
        err.contains("[possible values: netns, process, local, remote, rate, srtt"),
        "{err}"
    );
    let out = Command::new(BIN)
        .args(["top", "--interval", "0s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be greater than zero"));
    // The closed list's options: one clear line each, before anything loads.
    for (flag, value, says) in [
        ("--closed", "many", "'many' is not a count"),
        ("--closed", "100000", "give at most 10000"),
        ("--closed-for", "0", "must be greater than zero"),
    ] {
        let out = Command::new(BIN)
            .args(["top", flag, value])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err.lines().next().unwrap_or_default();
        assert!(
            first.contains(&format!("invalid value '{value}' for '{flag} "))
                && first.contains(says),
            "{flag} {value}: {err}"
        );
    }
}

#[test]
fn without_a_terminal_it_says_so_and_suggests_flows() {
    // Checked before the probes load: the same line for root and others.
    let out = Command::new(BIN)
        .arg("top")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("observer: error: observer top needs a terminal"),
        "{err}"
    );
    assert!(err.contains("observer flows"), "{err}");
}

/// Sets the flag on drop, so transfer threads stop even when the test panics.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// The shell script tmux runs, removed on drop.
struct Script(std::path::PathBuf);

impl Script {
    fn new(tag: &str) -> Script {
        let path = std::env::temp_dir().join(format!("obs-top-{}-{tag}.sh", std::process::id()));
        std::fs::write(&path, AFTER).unwrap();
        Script(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// After observer exits: its status, and whether the terminal is back in
/// cooked mode (`icanon echo`, not `-icanon -echo`); then waits for Enter.
const AFTER: &str = r#""$1" top --interval 500ms
echo "observer exited with $?"
echo "tty: $(stty -a | tr ' ;' '\n\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\n' ' ')"
read line
"#;

#[test]
fn shows_a_receive_window_limited_flow_and_quits_cleanly() {
    if !root_or_skip("shows_a_receive_window_limited_flow_and_quits_cleanly") {
        return;
    }
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("skipped shows_a_receive_window_limited_flow_and_quits_cleanly: no tmux");
        return;
    }
    let script = Script::new("flow");
    // 200 columns: the path's named namespaces add NETNS (11 cells),
    // given room after the windows' columns.
    let tmux = Tmux::start("flow", 200, 40, &["sh", script.path(), BIN]);
    wait_for_view(&tmux);
    // The reference path of the seed experiments: 35 Mbit/s, 104 ms RTT.
    let path = Path::new(PathConfig::bottleneck(
        35_000_000,
        Duration::from_millis(52),
        460_000,
    ))
    .unwrap();
    let stop = AtomicBool::new(false);
    {
        std::thread::scope(|scope| {
            let stop = &stop;
            let _stop = StopOnDrop(stop);
            // A 64 KB receive buffer at the receiver (iperf3 -w 64K): the
            // sender waits on the advertised window, about 5 Mbit/s.
            let bind = std::net::SocketAddr::new(path.ip(Side::B), 0);
            let listener = path
                .run_in(Side::B, move || {
                    let l = TcpListener::bind(bind).unwrap();
                    setsockopt_int(&l, libc::SOL_SOCKET, libc::SO_RCVBUF, 64 * 1024);
                    l
                })
                .unwrap();
            let server_addr = listener.local_addr().unwrap();
            scope.spawn(move || {
                let (mut c, _) = listener.accept().unwrap();
                let mut buf = vec![0u8; 256 * 1024];
                let end = Instant::now() + Duration::from_secs(60);
                while !stop.load(Ordering::Relaxed) && Instant::now() < end {
                    match c.read(&mut buf) {
                        Ok(n) if n > 0 => {}
                        _ => break,
                    }
                }
            });
            let mut client = path
                .run_in(Side::A, move || TcpStream::connect(server_addr).unwrap())
                .unwrap();
            client
                .set_write_timeout(Some(Duration::from_millis(200)))
                .unwrap();
            let local = client.local_addr().unwrap();
            scope.spawn(move || {
                let data = vec![7u8; 64 * 1024];
                let end = Instant::now() + Duration::from_secs(60);
                while !stop.load(Ordering::Relaxed) && Instant::now() < end {
                    match client.write(&data) {
                        Ok(_) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
                        Err(_) => break,
                    }
                }
            });
            // Narrow the view to this flow's port: the filter as a user types it.
            let port = format!(":{}", local.port());
            tmux.keys(&["/"]);
            tmux.keys(&["-l", &port]);
            tmux.keys(&["Enter"]);
            let want = local.to_string();
            // The sender's row, its verdict and, last, its advice; the
            // receiving end's row under the downloads' own titles. The
            // path's namespaces have `ip netns` names: NETNS leads.
            let sender_row = |s: &str| {
                s.lines()
                    .find(|l| {
                        let cells: Vec<&str> = l.split_whitespace().collect();
                        cells.get(2) == Some(&want.as_str()) && cells.contains(&"receive_window")
                    })
                    .map(str::to_string)
            };
            let screen = tmux.wait_for(
                "the sender's row to say receive_window, and the receiver's row",
                Duration::from_secs(30),
                |s| {
                    sender_row(s).is_some()
                        && s.lines()
                            .any(|l| l.starts_with("NETNS") && l.contains("RCV_RTT"))
                },
            );
            assert!(screen.contains(&format!("filter {port}")), "{screen}");
            let titles = screen
                .lines()
                .find(|l| l.starts_with("NETNS      PROCESS "))
                .unwrap_or_default();
            assert!(
                titles.contains(" SRTT ") && titles.trim_end().ends_with(" ADVICE"),
                "{screen}"
            );
            let downloads = screen
                .lines()
                .find(|l| l.starts_with("NETNS") && l.contains("RCV_RTT"))
                .unwrap_or_default();
            for title in ["CLOSED%", "FILL%", "RCV_WND"] {
                assert!(downloads.contains(title), "{title}: {screen}");
            }
            let row = sender_row(&screen).unwrap_or_default();
            let advice = row
                .split("receive_window")
                .nth(1)
                .unwrap_or_default()
                .trim();
            assert!(
                !advice.is_empty() && advice != "-",
                "the sender's row has no ADVICE: {screen}"
            );
            // Its detail pane explains the verdict. Both ends of the flow
            // match the filter; the pane follows the selection.
            let sender = format!("{want} -> {server_addr}");
            let receiver = format!("{server_addr} -> {want}");
            tmux.keys(&["/", "C-u"]);
            tmux.keys(&["-l", &want]);
            tmux.keys(&["Enter"]);
            tmux.keys(&["Enter"]);
            let screen = tmux.wait_for("the detail pane", Duration::from_secs(10), |s| {
                s.contains(&sender) || s.contains(&receiver)
            });
            // The two ends run at nearly one rate, so the rate sort can
            // swap them between refreshes: the other end may be the row
            // below or the row above by the time a key lands. Step down,
            // then up, until the sender's pane shows.
            let mut on_sender = screen.contains(&sender);
            for key in ["j", "k", "j", "k", "j", "k"] {
                if on_sender {
                    break;
                }
                tmux.keys(&[key]);
                std::thread::sleep(Duration::from_millis(700));
                on_sender = tmux.screen().contains(&sender);
            }
            let pane = tmux.wait_for("the sender's detail pane", Duration::from_secs(10), |s| {
                s.contains(&sender) && s.contains("receive_window  confidence")
            });
            // The pane gives the row's ADVICE whole.
            assert!(pane.contains("│advice   "), "{pane}");
            // The transfer ends; once its rows have left the live table,
            // `c` still lists it, with its verdict and advice.
            stop.store(true, Ordering::Relaxed);
            tmux.keys(&["Escape"]);
            tmux.keys(&["c"]);
            let closed = tmux.wait_for(
                "the closed flow in the closed list",
                Duration::from_secs(20),
                |s| {
                    // The closed table's titles (after NETNS: the ends
                    // are in named namespaces).
                    s.lines().any(|l| {
                        l.starts_with("NETNS ") && l.contains(" AGO ") && l.contains("VERDICT")
                    }) && s.lines().any(|l| {
                        l.contains(&want)
                            && l.contains(&server_addr.to_string())
                            && l.contains("receive_window")
                    })
                },
            );
            assert!(closed.contains("recently closed"), "{closed}");
            tmux.keys(&["q"]);
            let screen = tmux.wait_for("observer to exit", Duration::from_secs(10), |s| {
                s.contains("observer exited with")
            });
            assert!(screen.contains("observer exited with 0"), "{screen}");
            // The summary of what it saw, after the view: the flow's two
            // ends (the filter in force selects them), by peer.
            let summary = screen
                .split("observer top saw")
                .nth(1)
                .unwrap_or_else(|| panic!("no summary: {screen}"));
            assert!(summary.starts_with(" 2 flows in "), "{screen}");
            assert!(
                summary.contains("host: 2 flows in 2 groups by peer"),
                "{screen}"
            );
            assert!(
                summary.contains(&format!("peer {} upload", server_addr.ip())),
                "{screen}"
            );
        });
    }
    assert_restored_and_end(&tmux);
    drop(path);
}

/// The terminal is back after observer exited: main screen, cursor shown,
/// cooked mode; then the session ends.
fn assert_restored_and_end(tmux: &Tmux) {
    assert_eq!(tmux.var("alternate_on"), "0");
    assert_eq!(tmux.var("cursor_flag"), "1");
    let screen = tmux.wait_for("stty", Duration::from_secs(5), |s| s.contains("tty: "));
    assert!(screen.contains("tty: icanon echo"), "{screen}");
    tmux.keys(&["Enter"]);
    let end = Instant::now() + Duration::from_secs(5);
    while tmux.alive() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!tmux.alive(), "the tmux session outlived observer");
}

fn wait_for_view(tmux: &Tmux) {
    tmux.wait_for("the view", Duration::from_secs(30), |s| {
        assert!(!s.contains("observer: error"), "{s}");
        s.contains("ringbuf drops")
    });
}

#[test]
fn sigterm_and_sigint_restore_the_terminal() {
    if !root_or_skip("sigterm_and_sigint_restore_the_terminal") {
        return;
    }
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("skipped sigterm_and_sigint_restore_the_terminal: no tmux");
        return;
    }
    for sig in ["TERM", "INT"] {
        let script = Script::new(sig);
        let tmux = Tmux::start(sig, 100, 30, &["sh", script.path(), BIN]);
        wait_for_view(&tmux);
        // The shell's child is observer.
        let shell = tmux.var("pane_pid");
        let out = Command::new("pgrep").args(["-P", &shell]).output().unwrap();
        let pid = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(
            !pid.is_empty() && !pid.contains('\n'),
            "children of {shell}: {pid:?}"
        );
        let ok = Command::new("kill")
            .args(["-s", sig, &pid])
            .status()
            .unwrap();
        assert!(ok.success());
        let screen = tmux.wait_for("observer to exit", Duration::from_secs(10), |s| {
            s.contains("observer exited with")
        });
        assert!(
            screen.contains("observer exited with 0"),
            "SIG{sig}: {screen}"
        );
        assert_restored_and_end(&tmux);
    }
}
