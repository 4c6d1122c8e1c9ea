//! `cargo xtask soak [--minutes N]`: `observer run` (release build) under
//! connection churn and bulk flows for N minutes, checking that its RSS
//! stays flat, the kernel flow map stays within max_entries, every closed
//! flow is reported once and no closed-flow record is dropped. The test
//! itself is `observer/tests/integration/soak.rs` (ignored by a plain `cargo test`);
//! `cargo xtask test` runs it for [`TEST_SECONDS`].

use anyhow::Context as _;

use crate::{
    integration::{INTEGRATION, module_filter},
    setup,
    tally::{self, Tally},
    util,
};

/// Length of the short soak in `cargo xtask test`.
pub const TEST_SECONDS: u64 = 45;

/// Builds the soak test in release mode and runs it as root for `seconds`.
///
/// # Errors
/// A failed build, or a test binary that could not start.
pub fn soak(seconds: u64) -> anyhow::Result<Tally> {
    setup::setup_for(&[setup::Group::Tools])?;
    let exe = util::build_tests(
        &["--release", "-p", "observer", "--test", INTEGRATION],
        "the soak test",
    )?
    .into_iter()
    .filter(|a| a.profile.test && a.target.name == INTEGRATION)
    .find_map(|a| a.executable)
    .context("cargo built no soak test binary")?;
    let mut c = util::as_root(exe.as_str())?;
    c.args(["--ignored", "--nocapture", "--test-threads", "1"])
        .arg(module_filter("soak"))
        .env("OBSERVER_SOAK_SECONDS", seconds.to_string());
    eprintln!("soak: {seconds} s of churn and bulk flows against observer run");
    tally::run_counting(&mut c)
}

/// `cargo xtask soak`: fails unless the soak passed.
///
/// # Errors
/// A failed build or a failed soak.
pub fn command(minutes: u64) -> anyhow::Result<()> {
    soak(minutes.max(1) * 60)?.finish()
}
