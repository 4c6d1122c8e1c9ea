//! Small helpers: running commands, finding programs and the workspace's
//! directories, and the test binaries cargo builds.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

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

/// Replaces this process with `cmd`, echoing it first; returns only if
/// it could not start.
///
/// For a command that runs until it is stopped (`cargo xtask demo`): a
/// signal sent to xtask's pid (SIGTERM from `kill`, a supervisor) then
/// reaches the command itself, or `sudo`, which relays it. Waiting on
/// the command and forwarding signals to it would not do: sudo drops a
/// signal sent by a process in its own process group (the waiting
/// xtask's), so the demo under it would never see one. Ctrl-C reaches
/// the whole foreground process group either way.
pub fn exec(cmd: &mut Command) -> anyhow::Error {
    use std::os::unix::process::CommandExt as _;
    eprintln!("+ {}", describe(cmd));
    let e = cmd.exec();
    anyhow::Error::new(e).context(format!("cannot start {}", describe(cmd)))
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
    which::which(prog).is_ok()
}

/// The workspace root (the directory above xtask).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The cargo target directory of the workspace.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}

/// Builds test binaries with `cargo test ARGS --no-run
/// --message-format=json`, for `target` when one is given, and returns the
/// artifacts cargo reports; cargo's own output is shown only when the build
/// of `what` fails.
///
/// # Errors
/// cargo could not start or the build failed.
pub fn build_tests(
    args: &[&str],
    target: Option<&StaticTarget>,
    what: &str,
) -> anyhow::Result<Vec<cargo_metadata::Artifact>> {
    let mut c = Command::new("cargo");
    c.arg("test").args(args);
    if let Some(t) = target {
        t.apply(&mut c);
    }
    let out = c
        .args(["--no-run", "--message-format=json"])
        .output()
        .context("cannot run cargo test --no-run")?;
    if !out.status.success() {
        bail!(
            "building {what} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(cargo_artifacts(&out.stdout))
}

/// The host's target triple, given to cargo explicitly, with glibc linked
/// in: `-C target-feature=+crt-static` through
/// `CARGO_TARGET_<TRIPLE>_RUSTFLAGS` reaches only the target's crates, not
/// build scripts, proc macros or the eBPF build. Every release build of
/// `cargo xtask test` (the image, the runners, the soak) uses it, so their
/// dependencies compile once into `target/<triple>/release`.
pub struct StaticTarget {
    triple: String,
}

impl StaticTarget {
    /// The host's triple, from `rustc -vV`.
    ///
    /// # Errors
    /// rustc cannot run or names no host.
    pub fn host() -> anyhow::Result<Self> {
        let out = Command::new("rustc")
            .arg("-vV")
            .output()
            .context("cannot run rustc -vV")?;
        let triple = String::from_utf8_lossy(&out.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("host: "))
            .map(str::to_string)
            .context("rustc -vV printed no host triple")?;
        Ok(Self { triple })
    }

    /// Adds `--target TRIPLE` and the static-linking flags to a cargo
    /// command.
    pub fn apply<'c>(&self, c: &'c mut Command) -> &'c mut Command {
        let var = format!(
            "CARGO_TARGET_{}_RUSTFLAGS",
            self.triple.to_uppercase().replace(['-', '.'], "_")
        );
        c.arg("--target")
            .arg(&self.triple)
            .env(var, "-C target-feature=+crt-static")
    }

    /// Where its release binaries go: `target/<triple>/release`.
    pub fn release_dir(&self) -> PathBuf {
        target_dir().join(&self.triple).join("release")
    }
}

/// The compiler artifacts (built binaries, test binaries) in the output of
/// `cargo ... --message-format=json`, read with cargo_metadata's message
/// parser; other messages and lines that are not JSON are skipped.
pub fn cargo_artifacts(json: &[u8]) -> Vec<cargo_metadata::Artifact> {
    cargo_metadata::Message::parse_stream(json)
        .filter_map(|m| match m {
            Ok(cargo_metadata::Message::CompilerArtifact(a)) => Some(a),
            _ => None,
        })
        .collect()
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
