//! Small helpers for running commands.

use std::process::Command;

use anyhow::{Context as _, bail};

/// Runs `cmd`, echoing it first; fails on a non-zero exit.
///
/// # Errors
/// The command could not start or exited non-zero.
pub fn run(cmd: &mut Command) -> anyhow::Result<()> {
    eprintln!("+ {}", describe(cmd));
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {}", describe(cmd)))?;
    if !status.success() {
        bail!("{} failed: {status}", describe(cmd));
    }
    Ok(())
}

/// The command line of `cmd`, for messages.
pub fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Whether `prog` is on PATH.
pub fn which(prog: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(prog).is_file()))
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A command that runs `program` as root: directly when we are root,
/// through `sudo -E` otherwise.
///
/// # Errors
/// Not root and no sudo.
pub fn as_root(program: &str) -> anyhow::Result<Command> {
    if is_root() {
        return Ok(Command::new(program));
    }
    if !which("sudo") {
        bail!(
            "observer must run as root (it loads eBPF programs): run this as root or install sudo"
        );
    }
    let mut c = Command::new("sudo");
    c.args(["-E", "--", program]);
    Ok(c)
}
