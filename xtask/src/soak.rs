//! `cargo xtask soak [--minutes N] [--load]`: `observer run` (release
//! build) under connection churn and bulk flows for N minutes, checking
//! that its RSS stays flat, the kernel flow map stays within max_entries,
//! and that the flows made equal the flows reported plus those counted
//! lost, none lost. `--load` adds CPU hogs on every core, 10,000 closes a
//! second and random agent stalls of 1-3 s. The test itself is
//! `observer/tests/integration/soak/` (ignored by a plain `cargo test`);
//! `cargo xtask test` runs it loaded for [`TEST_SECONDS`]. The last line
//! printed is the totals, `made=N reported=N dropped=N lost=N`.

use anyhow::Context as _;

use crate::{
    integration::{INTEGRATION, module_filter},
    setup,
    tally::{self, Tally},
    util,
};

/// Length of the short loaded soak in `cargo xtask test`.
pub const TEST_SECONDS: u64 = 60;

/// Builds the soak test in release mode, static as the image's binary is
/// (its release dependencies are the image's), and runs it as root for
/// `seconds`, on a loaded host with agent stalls if `loaded`.
///
/// # Errors
/// A failed build, or a test binary that could not start.
pub fn soak(seconds: u64, loaded: bool) -> anyhow::Result<Tally> {
    setup::setup_for(&[setup::Group::Tools])?;
    let exe = util::build_tests(
        &["--release", "-p", "observer", "--test", INTEGRATION],
        Some(&util::StaticTarget::host()?),
        "the soak test",
    )?
    .into_iter()
    .filter(|a| a.profile.test && a.target.name == INTEGRATION)
    .find_map(|a| a.executable)
    .context("cargo built no soak test binary")?;
    let mut c = util::as_root(exe.as_str())?;
    c.args(["--ignored", "--nocapture", "--test-threads", "1"])
        .arg(module_filter("soak"))
        .env("OBSERVER_SOAK_SECONDS", seconds.to_string())
        .env("OBSERVER_SOAK_LOAD", if loaded { "1" } else { "0" });
    eprintln!(
        "soak: {seconds} s of churn and bulk flows against observer run{}",
        if loaded {
            ", loaded, with agent stalls"
        } else {
            ""
        }
    );
    tally::run_counting(&mut c)
}

/// `cargo xtask soak`: fails unless the soak passed; the totals line comes
/// last.
///
/// # Errors
/// A failed build or a failed soak.
pub fn command(minutes: u64, loaded: bool) -> anyhow::Result<()> {
    let t = soak(minutes.max(1) * 60, loaded)?;
    let totals = t.totals().map(str::to_string);
    let result = t.finish();
    match totals {
        Some(line) => println!("{line}"),
        None => println!("made=? reported=? dropped=? lost=? (the soak printed no totals)"),
    }
    result
}
