//! `scenarios demo`: the reference path of the seed experiments (35 Mbit/s,
//! 104 ms) and its three transfers, shown live by `observer top`.
//!
//! The path's two network namespaces are removed when the demo ends,
//! whether the transfers finish, the view is quit, or the demo is stopped
//! by SIGINT, SIGTERM or SIGHUP (or its parent dies): every wait below
//! polls for those, so the guards' drops run instead of the default
//! action that would leave the namespaces behind.

use std::{
    io::IsTerminal as _,
    process::{Command, ExitStatus, Stdio},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use anyhow::Context as _;
use pathemu::{ChildGuard, Path, Side};

/// How often a wait looks for a signal or an exited view.
const POLL: Duration = Duration::from_millis(100);

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
    server.args(["-s", "-p", "5201"]).stdout(Stdio::null());
    let _server = ChildGuard::spawn(&mut server)?;
    let dst = path.addr(Side::B).to_string();
    let runs: [&[&str]; 3] = [&["-C", "cubic"], &["-w", "64K"], &["-w", "64K", "-P", "4"]];
    let tty = std::io::stdout().is_terminal();
    let mut view = Command::new(&observer);
    if tty {
        view.args(["top", "--interval", "1s"]);
    } else {
        view.args(["flows", "--duration", "40s"]);
    }
    let mut view = ChildGuard::spawn(&mut view)?;
    if !tty {
        eprintln!("demo: no terminal, so `observer flows` collects for 40 s and prints");
    }
    std::thread::sleep(Duration::from_secs(2));
    for args in runs {
        let mut client = path.command(Side::A, "iperf3");
        client
            .args(["-c", &dst, "-p", "5201", "-t", "10"])
            .args(args)
            .stdout(Stdio::null());
        let mut client = ChildGuard::spawn(&mut client)?;
        match wait(&mut client, &stop, Some(&mut view))? {
            Waited::Exited(status) => anyhow::ensure!(status.success(), "iperf3 {args:?} failed"),
            Waited::ViewQuit(ok) => return Ok(ok),
            Waited::Signal => {
                end_view(&mut view);
                return Ok(false);
            }
        }
    }
    // The transfers are done; the view stays until the user quits it.
    Ok(match wait(&mut view, &stop, None)? {
        Waited::Exited(status) => status.success(),
        Waited::ViewQuit(ok) => ok,
        Waited::Signal => {
            end_view(&mut view);
            false
        }
    })
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
