//! `scenarios demo`: the reference path of the seed experiments (35 Mbit/s,
//! 104 ms) and its three transfers ([`steps::STEPS`]), one after another,
//! shown live by `observer top` filtered to the path's two namespaces,
//! then a table of what observer measured of each beside the seed's
//! published figures.
//!
//! Each transfer is named as it starts, above the view's table (a caption
//! file it re-reads, [`caption`]) and in the terminal's title while the
//! view holds the screen (on stderr without a terminal), and the next
//! starts only once the last one's connections have closed. A second
//! observer (`observer flows --json`, on the same namespaces) records the
//! transfers for the table, printed when the view is quit.
//!
//! The path's two network namespaces are removed when the demo ends,
//! whether the transfers finish, the view is quit, or the demo is stopped
//! by SIGINT, SIGTERM or SIGHUP (or its parent dies): every wait below
//! polls for those, so the guards' drops run instead of the default
//! action that would leave the namespaces behind.

mod caption;
mod steps;

use std::{
    io::{IsTerminal as _, Write as _},
    process::{Command, ExitStatus, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::Context as _;
use caption::Caption;
use pathemu::{ChildGuard, Path, Side};
use steps::{Measured, STEPS};

/// How often a wait looks for a signal or an exited view.
const POLL: Duration = Duration::from_millis(100);

/// The iperf3 server's port.
const PORT: u16 = 5201;

/// The longest a transfer's connections may take to close after its
/// client exits before the next starts anyway.
const CLOSE_WAIT: Duration = Duration::from_secs(20);

/// Runs the demo; `Ok(false)` when the view failed or a signal stopped it.
///
/// # Errors
/// observer missing beside this binary, a path that cannot be built, a
/// transfer that fails.
pub fn demo() -> anyhow::Result<bool> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .with_context(|| format!("cannot handle signal {sig}"))?;
    }
    // SAFETY: prctl(PR_SET_PDEATHSIG) takes a signal number and changes
    // only this process's attributes. A parent (cargo xtask, sudo) killed
    // outright then ends the demo through the handler above.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) };
    let observer = std::env::current_exe()?
        .parent()
        .context("no directory for this binary")?
        .join("observer");
    anyhow::ensure!(
        observer.exists(),
        "{} is missing: build observer first",
        observer.display()
    );
    let path = Path::new(pathemu::PathConfig::bottleneck(
        35_000_000,
        Duration::from_millis(52),
        460_000,
    ))?;
    let mut server = path.command(Side::B, "iperf3");
    server
        .args(["-s", "-p", &PORT.to_string()])
        .stdout(Stdio::null());
    let _server = ChildGuard::spawn(&mut server)?;
    let dst = path.addr(Side::B).to_string();
    // Only the demo's own flows: another workload's would bury them. By
    // the names `ip netns` lists, as the view's NETNS column shows them.
    let filter = format!(
        "netns = \"{}\" or netns = \"{}\"",
        path.netns_name(Side::A),
        path.netns_name(Side::B)
    );
    let tty = std::io::stdout().is_terminal();
    eprintln!(
        "demo: {} transfers of {} s on an emulated 35 Mbit/s, 104 ms path, one after another:",
        STEPS.len(),
        steps::SECONDS
    );
    for s in STEPS {
        eprintln!("  iperf3 {}: {}", s.name, s.about);
    }
    let recorder = ChildGuard::spawn(
        Command::new(&observer)
            .args(["flows", "--json", "--duration", "1h", "--filter", &filter])
            .stdout(Stdio::piped())
            .stderr(Stdio::null()),
    )?;
    let caption = if tty {
        Some(Caption::new(&std::env::temp_dir())?)
    } else {
        None
    };
    let mut view = match &caption {
        Some(caption) => {
            eprintln!(
                "demo: `observer top --filter '{filter}'` shows them; the line above its table \
                 names the one running; q quits the view and prints the table"
            );
            std::thread::sleep(Duration::from_secs(3));
            Some(ChildGuard::spawn(
                Command::new(&observer)
                    .args(["top", "--interval", "1s", "--filter", &filter])
                    .arg("--caption-file")
                    .arg(caption.path()),
            )?)
        }
        None => {
            eprintln!("demo: no terminal, so no live view: the table follows the transfers");
            None
        }
    };
    let say = |line: &str| {
        if let Some(c) = &caption {
            c.set(line);
        }
        say(line, tty);
    };
    // The recorder and the view load their programs before the first
    // transfer starts.
    std::thread::sleep(Duration::from_secs(2));
    let mut clients: Vec<u32> = Vec::new();
    let mut ended: Option<Waited> = None;
    for (n, step) in STEPS.iter().enumerate() {
        say(&step.announce(n + 1));
        let mut client = path.command(Side::A, "iperf3");
        client
            .args(["-c", &dst, "-p", &PORT.to_string()])
            .args(["-t", &steps::SECONDS.to_string()])
            .args(step.args)
            .stdout(Stdio::null());
        let mut client = ChildGuard::spawn(&mut client)?;
        clients.push(client.id());
        match wait(&mut client, &stop, view.as_mut())? {
            Waited::Exited(status) => {
                anyhow::ensure!(status.success(), "iperf3 {} failed", step.name);
            }
            quit => {
                ended = Some(quit);
                break;
            }
        }
        if !closed(&path, &stop) {
            ended = Some(Waited::Signal);
            break;
        }
    }
    let ok = match ended {
        Some(Waited::Signal) => {
            if let Some(v) = view.as_mut() {
                end_view(v);
            }
            false
        }
        Some(Waited::ViewQuit(ok)) => ok,
        Some(Waited::Exited(_)) | None => match view.as_mut() {
            // The transfers are done; the view stays until the user quits it.
            Some(v) => {
                say(&format!(
                    "done: all {} transfers ended; c lists their flows, q quits and prints the table",
                    STEPS.len()
                ));
                match wait(v, &stop, None)? {
                    Waited::Exited(status) => status.success(),
                    Waited::ViewQuit(ok) => ok,
                    Waited::Signal => {
                        end_view(v);
                        false
                    }
                }
            }
            None => true,
        },
    };
    if tty {
        set_title("");
    }
    let records = recorded(recorder)?;
    let measured: Vec<Option<Measured>> = clients
        .iter()
        .map(|pid| Some(steps::measure(&records, *pid)))
        .collect();
    print!("{}", steps::table(&measured));
    Ok(ok)
}

/// Names what runs now: in the terminal's title while the view holds the
/// screen (a line there would tear its frame; the view shows it from its
/// caption file), on stderr otherwise.
fn say(line: &str, tty: bool) {
    if tty {
        set_title(&format!("observer demo: {line}"));
    } else {
        eprintln!("demo: {line}");
    }
}

/// Sets the terminal's title (OSC 2), in one write so that it does not
/// interleave with the view's frames.
fn set_title(title: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(format!("\x1b]2;{title}\x07").as_bytes());
    let _ = err.flush();
}

/// Waits until no connection to the server's port is open in the
/// client's namespace (TIME-WAIT aside: those move no data), at most
/// [`CLOSE_WAIT`]; false when a signal came first.
fn closed(path: &Path, stop: &AtomicBool) -> bool {
    let started = Instant::now();
    while started.elapsed() < CLOSE_WAIT {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let out = path.command(Side::A, "ss").arg("-Htn").output();
        match out {
            Ok(o) if open_to(&String::from_utf8_lossy(&o.stdout), PORT) > 0 => {}
            // Closed, or ss cannot say: go on.
            _ => return true,
        }
        std::thread::sleep(POLL);
    }
    true
}

/// The connections to `port` in `ss -Htn`'s output that are not in
/// TIME-WAIT.
fn open_to(ss: &str, port: u16) -> usize {
    let suffix = format!(":{port}");
    ss.lines()
        .filter(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            cols.len() >= 5 && cols[0] != "TIME-WAIT" && cols[4].ends_with(&suffix)
        })
        .count()
}

/// Stops the recorder (SIGTERM: it prints what it holds and exits) and
/// returns its records.
fn recorded(recorder: ChildGuard) -> anyhow::Result<Vec<serde_json::Value>> {
    let out = recorder
        .stop(libc::SIGTERM)
        .context("cannot stop the recording observer")?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

/// How a wait ended.
enum Waited {
    /// The child exited with this status.
    Exited(ExitStatus),
    /// The user quit the view first (`q`, or Ctrl-C, which a terminal in
    /// raw mode hands the view as a key): whether it exited cleanly.
    ViewQuit(bool),
    /// A signal asked the demo to stop.
    Signal,
}

/// Asks the view to end (SIGTERM) and gives it a moment, so that `observer
/// top` restores the terminal (leaves the alternate screen and raw mode)
/// before its guard would kill it outright; then says why the demo ends,
/// on the restored terminal.
fn end_view(view: &mut ChildGuard) {
    if view.signal(libc::SIGTERM).is_ok() {
        for _ in 0..20 {
            if !view.running() {
                break;
            }
            std::thread::sleep(POLL);
        }
    }
    eprintln!("demo: stopped by a signal; removing its namespaces");
}

/// Waits for `child` to exit, or for a signal (`stop`), or for `view` to
/// exit first (the user quit it: the rest of the demo has nobody to show).
fn wait(
    child: &mut ChildGuard,
    stop: &AtomicBool,
    mut view: Option<&mut ChildGuard>,
) -> anyhow::Result<Waited> {
    loop {
        if stop.load(Ordering::Relaxed) {
            return Ok(Waited::Signal);
        }
        let c = child.child_mut().context("the child is gone")?;
        if let Some(status) = c.try_wait().context("waiting for a child")? {
            return Ok(Waited::Exited(status));
        }
        if let Some(v) = view.as_deref_mut()
            && let Some(status) = v
                .child_mut()
                .context("the view is gone")?
                .try_wait()
                .context("waiting for the view")?
        {
            return Ok(Waited::ViewQuit(status.success()));
        }
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transfer_is_over_when_only_time_wait_is_left() {
        let ss = "\
ESTAB      0 0 10.77.0.1:40002 10.77.0.2:5201
FIN-WAIT-1 0 1 10.77.0.1:40003 10.77.0.2:5201
TIME-WAIT  0 0 10.77.0.1:40001 10.77.0.2:5201
ESTAB      0 0 10.77.0.1:22    10.77.0.9:52010
";
        assert_eq!(open_to(ss, 5201), 2);
        assert_eq!(
            open_to(&ss.lines().skip(2).collect::<Vec<_>>().join("\n"), 5201),
            0
        );
        assert_eq!(open_to("", 5201), 0);
    }
}
