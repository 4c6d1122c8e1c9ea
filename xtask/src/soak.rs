//! `cargo xtask soak [--minutes N]`: `observer run` (release build) under
//! connection churn and bulk flows for N minutes, checking that its RSS
//! stays flat, the kernel flow map stays within max_entries, every closed
//! flow is reported once and no closed-flow record is dropped. The test
//! itself is `observer/tests/integration/soak.rs` (ignored by a plain `cargo test`);
//! `cargo xtask test` runs it for [`TEST_SECONDS`].

use std::process::Command;

use anyhow::Context as _;

use crate::{setup, test, test::Tally, util};

/// Length of the short soak in `cargo xtask test`.
pub const TEST_SECONDS: u64 = 45;

/// Builds the soak test in release mode and runs it as root for `seconds`.
///
/// # Errors
/// A failed build, or a test binary that could not start.
pub fn soak(seconds: u64) -> anyhow::Result<Tally> {
    setup::setup()?;
    let out = Command::new("cargo")
        .args([
            "test",
            "--release",
            "-p",
            "observer",
            "--test",
            test::INTEGRATION,
        ])
        .args(["--no-run", "--message-format=json"])
        .output()
        .context("cannot run cargo test --no-run")?;
    if !out.status.success() {
        anyhow::bail!(
            "building the soak test failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let exe = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|m| m["profile"]["test"] == true && m["target"]["name"] == test::INTEGRATION)
        .find_map(|m| m["executable"].as_str().map(str::to_string))
        .context("cargo built no soak test binary")?;
    let mut c = util::as_root(&exe)?;
    c.args(["--ignored", "--nocapture", "--test-threads", "1"])
        .arg(test::module_filter("soak"))
        .env("OBSERVER_SOAK_SECONDS", seconds.to_string());
    eprintln!("soak: {seconds} s of churn and bulk flows against observer run");
    test::run_counting(&mut c)
}

/// `cargo xtask soak`: fails unless the soak passed.
///
/// # Errors
/// A failed build or a failed soak.
pub fn command(minutes: u64) -> anyhow::Result<()> {
    soak(minutes.max(1) * 60)?.finish()
}
