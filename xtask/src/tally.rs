//! Counting test results: libtest's summary lines (and the scenario
//! runner's `N passed, M failed`) summed over every test command that
//! `cargo xtask test`, `fuzz` and `soak` run.

use std::{
    io::{BufRead as _, BufReader},
    process::{Command, Stdio},
};

use anyhow::Context as _;

use crate::util;

/// Passed and failed test counts, summed over test binaries.
#[derive(Default, Clone)]
pub struct Tally {
    passed: u64,
    failed: u64,
    /// What failed, one line each (test names, fuzz targets with their
    /// input), repeated at the end so a CI log's tail names them.
    failures: Vec<String>,
    /// The last `made=N reported=N dropped=N lost=N` line a soak printed.
    totals: Option<String>,
}

impl Tally {
    /// One check that passed or failed.
    pub fn one(passed: bool) -> Tally {
        Tally {
            passed: u64::from(passed),
            failed: u64::from(!passed),
            ..Tally::default()
        }
    }

    /// One check called `what` that failed.
    pub fn failure(what: String) -> Tally {
        Tally {
            passed: 0,
            failed: 1,
            failures: vec![what],
            totals: None,
        }
    }

    /// The last soak totals line seen (`made=N reported=N dropped=N lost=N`).
    pub fn totals(&self) -> Option<&str> {
        self.totals.as_deref()
    }

    /// Prints the counts as `N passed, M failed`.
    pub fn print(&self) {
        println!("{} passed, {} failed", self.passed, self.failed);
    }

    /// Adds another binary's counts.
    pub fn add(&mut self, o: Tally) {
        self.passed += o.passed;
        self.failed += o.failed;
        self.failures.extend(o.failures);
        if o.totals.is_some() {
            self.totals = o.totals;
        }
    }

    /// Prints the closing line and fails if any test failed or none ran.
    pub fn finish(self) -> anyhow::Result<()> {
        for f in &self.failures {
            println!("FAILED: {f}");
        }
        println!("{} passed, {} failed", self.passed, self.failed);
        if self.failed > 0 {
            anyhow::bail!("{} tests failed", self.failed);
        }
        if self.passed == 0 {
            anyhow::bail!("no test ran");
        }
        Ok(())
    }
}

/// The test named by libtest's `test NAME ... FAILED` line (the scenario
/// runner prints the same form) or by a `FAILED: NAME` line (vm-test's list).
fn failed_name(line: &str) -> Option<&str> {
    let line = line.trim();
    // A nested xtask's own list (vm-test's `  FAILED: flows: exit status 101`).
    if let Some(name) = line.strip_prefix("FAILED: ") {
        return Some(name.trim());
    }
    line.strip_prefix("test ")?
        .strip_suffix(" ... FAILED")
        .map(str::trim)
}

/// Parses libtest's `test result: ok. N passed; M failed; ...` line, or the
/// scenario runner's plain `N passed, M failed`.
fn parse_result(line: &str) -> Option<Tally> {
    if let Some((p, f)) = line.trim().split_once(" passed, ")
        && let (Ok(passed), Some(Ok(failed))) = (
            p.parse::<u64>(),
            f.strip_suffix(" failed").map(str::parse::<u64>),
        )
    {
        return Some(Tally {
            passed,
            failed,
            ..Tally::default()
        });
    }
    let rest = line.trim().strip_prefix("test result: ")?;
    let num = |key: &str| -> Option<u64> {
        rest.split(';')
            .find_map(|part| part.trim().strip_suffix(key).map(str::trim))
            .map(|n| n.rsplit(' ').next().unwrap_or(n))
            .and_then(|n| n.parse().ok())
    };
    Some(Tally {
        passed: num("passed")?,
        failed: num("failed")?,
        ..Tally::default()
    })
}

/// Runs a test command, echoing its output, and counts its results.
pub fn run_counting(cmd: &mut Command) -> anyhow::Result<Tally> {
    eprintln!("+ {}", util::describe(cmd));
    let mut child = cmd
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {}", util::describe(cmd)))?;
    let mut tally = Tally::default();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines() {
            let line = line.context("reading test output")?;
            println!("{line}");
            // libtest may print the test's name on the same line first.
            if let Some(i) = line.find("made=") {
                tally.totals = Some(line[i..].to_string());
            }
            if let Some(t) = parse_result(&line) {
                tally.add(t);
            } else if let Some(name) = failed_name(&line) {
                tally.failures.push(name.to_string());
            }
        }
    }
    let status = child.wait().context("waiting for the tests")?;
    if !status.success() && tally.failed == 0 {
        // A crash or build failure: count it as a failure.
        tally.failed += 1;
        tally
            .failures
            .push(format!("{} ({status})", util::describe(cmd)));
    }
    Ok(tally)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_libtest_summary() {
        let t = parse_result(
            "test result: ok. 23 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.10s",
        )
        .unwrap();
        assert_eq!((t.passed, t.failed), (23, 0));
        let t = parse_result("test result: FAILED. 3 passed; 2 failed; 0 ignored").unwrap();
        assert_eq!((t.passed, t.failed), (3, 2));
        assert!(parse_result("running 4 tests").is_none());
        assert_eq!(
            failed_name("test faults::slow_polls ... FAILED"),
            Some("faults::slow_polls")
        );
        assert_eq!(failed_name("test faults::slow_polls ... ok"), None);
        assert_eq!(
            failed_name("  FAILED: flows: exit status 101"),
            Some("flows: exit status 101")
        );
        let t = parse_result("15 passed, 1 failed").unwrap();
        assert_eq!((t.passed, t.failed), (15, 1));
        assert!(parse_result("x passed, 1 failed").is_none());
    }
}
