//! `cargo xtask test`: formatting, lints, then every unit and integration
//! test. Integration tests load eBPF programs, so test binaries run as root
//! (through sudo when this is not root).

use std::process::Command;

use anyhow::Context as _;

use crate::{setup, util};

/// Runs the whole test suite.
///
/// # Errors
/// The first failing step.
pub fn test() -> anyhow::Result<()> {
    setup::setup()?;
    util::run(Command::new("cargo").args(["fmt", "--all", "--", "--check"]))
        .context("formatting differs: run `cargo fmt --all`")?;
    util::run(Command::new("cargo").args([
        "clippy",
        "--workspace",
        "--exclude",
        "observer-ebpf",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    if util::is_root() {
        return util::run(Command::new("cargo").args([
            "test",
            "--workspace",
            "--exclude",
            "observer-ebpf",
        ]));
    }
    // Not root: build the test binaries as this user, run them through sudo.
    let out = Command::new("cargo")
        .args([
            "test",
            "--workspace",
            "--exclude",
            "observer-ebpf",
            "--no-run",
            "--message-format=json",
        ])
        .output()
        .context("cannot run cargo test --no-run")?;
    if !out.status.success() {
        anyhow::bail!(
            "building the tests failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["profile"]["test"] == true
            && let Some(exe) = msg["executable"].as_str()
        {
            util::run(&mut util::as_root(exe)?)?;
        }
    }
    Ok(())
}
