//! `cargo xtask test`: formatting, lints, then every unit and integration
//! test. Integration tests load eBPF programs, so test binaries run as root
//! (through sudo when this is not root); observer's integration binary runs
//! once per module ([`integration_modules`]).

use std::{
    io::{BufRead as _, BufReader},
    process::{Command, Stdio},
};

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
    let mut total = Tally::default();
    if util::is_root() {
        // Root: cargo runs the documentation tests too.
        let mut c = Command::new("cargo");
        c.args(["test", "--workspace", "--exclude", "observer-ebpf", "--doc"]);
        total.add(run_counting(&mut c)?);
    }
    // Build the test binaries as this user, run them as root (through sudo
    // when this is not root).
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
        if msg["profile"]["test"] != true {
            continue;
        }
        let Some(exe) = msg["executable"].as_str() else {
            continue;
        };
        // In the package's folder, as `cargo test` runs them.
        let dir = msg["manifest_path"]
            .as_str()
            .and_then(|m| std::path::Path::new(m).parent());
        let run = |filter: Option<String>| -> anyhow::Result<Tally> {
            let mut c = util::as_root(exe)?;
            c.args(filter);
            if let Some(d) = dir {
                c.current_dir(d);
            }
            run_counting(&mut c)
        };
        if msg["target"]["name"] == INTEGRATION {
            for module in integration_modules(exe)? {
                total.add(run(Some(module_filter(&module)))?);
            }
        } else {
            total.add(run(None)?);
        }
    }
    total.add(scenarios(&[])?);
    total.add(vm_matrix()?);
    total.add(short_fuzz_and_soak()?);
    total.finish()
}

/// observer's integration test binary (`observer/tests/integration/`): one
/// module per part of the program under test.
pub const INTEGRATION: &str = "integration";

/// The modules of the integration test binary `exe` that hold tests (`cli`,
/// `flows`, ...), from its `--list`. Each runs in a process of its own, as
/// when each was its own test binary: tests in different modules never
/// overlap.
///
/// # Errors
/// The binary could not list its tests, or a module's filter
/// ([`module_filter`]) would also pick tests of another module.
pub fn integration_modules(exe: &str) -> anyhow::Result<Vec<String>> {
    let out = Command::new(exe)
        .arg("--list")
        .output()
        .with_context(|| format!("cannot run {exe} --list"))?;
    if !out.status.success() {
        anyhow::bail!("{exe} --list failed: {}", out.status);
    }
    modules_of(exe, &String::from_utf8_lossy(&out.stdout))
}

/// The modules in libtest's `--list` output `list` of binary `exe`.
fn modules_of(exe: &str, list: &str) -> anyhow::Result<Vec<String>> {
    let tests: Vec<&str> = list
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .collect();
    if let Some(t) = tests.iter().find(|t| !t.contains("::")) {
        anyhow::bail!("{exe}: test {t} is in no module");
    }
    let mut modules: Vec<String> = tests
        .iter()
        .filter_map(|t| t.split_once("::").map(|(m, _)| m.to_string()))
        .collect();
    modules.sort();
    modules.dedup();
    for m in &modules {
        let filter = module_filter(m);
        if let Some(t) = tests
            .iter()
            .find(|t| t.contains(&filter) && !t.starts_with(&filter))
        {
            anyhow::bail!("the filter {filter} would also run {t}: rename the module or the test");
        }
    }
    Ok(modules)
}

/// The libtest filter that picks the tests of integration module `module`.
pub fn module_filter(module: &str) -> String {
    format!("{module}::")
}

/// A short fuzz run of every target and a short soak, counted in the tally.
fn short_fuzz_and_soak() -> anyhow::Result<Tally> {
    let mut t = crate::fuzz::fuzz(crate::fuzz::TEST_SECONDS, &[])?;
    t.add(crate::soak::soak(crate::soak::TEST_SECONDS)?);
    Ok(t)
}

/// The short kernel matrix: the kernel-facing tests in a VM running
/// Debian's [`crate::vm::TEST_KERNEL`] (`cargo xtask vm-test`; no root
/// needed), counted in the tally.
fn vm_matrix() -> anyhow::Result<Tally> {
    let me = std::env::current_exe().context("cannot find the xtask binary")?;
    run_counting(Command::new(me).args(["vm-test", "--kernel", crate::vm::TEST_KERNEL]))
}

/// Builds the scenario runner (release: the path relay keeps exact time)
/// and runs it as root with `args`; returns its pass/fail counts.
///
/// # Errors
/// A failed build, or a runner that could not start.
pub fn scenarios(args: &[String]) -> anyhow::Result<Tally> {
    let mut c = runner()?;
    c.args(args);
    run_counting(&mut c)
}

/// `cargo xtask scenarios ARGS`: the runner's own output and exit status
/// (so `--list` and `--json` work as the runner defines them).
///
/// # Errors
/// A failed build, or a runner that failed or found failing scenarios.
pub fn scenarios_command(args: &[String]) -> anyhow::Result<()> {
    let mut c = runner()?;
    c.args(args);
    util::run(&mut c)
}

/// `cargo xtask demo`: the reference-A path with `observer top` on it.
///
/// # Errors
/// A failed build or demo.
pub fn demo() -> anyhow::Result<()> {
    util::run(runner()?.arg("demo"))
}

/// `cargo xtask bench`: the overhead and scale benchmarks, as root, from the
/// repository root (it writes docs/benchmarks.md).
///
/// # Errors
/// A failed build or benchmark.
pub fn bench(args: &[String], quick: bool) -> anyhow::Result<()> {
    runner()?;
    let bin = crate::target_dir().join("release").join("bench");
    let mut c = util::as_root(&bin.to_string_lossy())?;
    if quick {
        c.arg("--quick");
    }
    c.args(args);
    if let Some(root) = crate::target_dir().parent() {
        c.current_dir(root);
    }
    eprintln!("+ {}", util::describe(&c));
    let status = c
        .status()
        .with_context(|| format!("cannot start {}", util::describe(&c)))?;
    match status.code() {
        Some(0) => Ok(()),
        // A usage error: the runner has said what is wrong in clap's words.
        Some(2) => std::process::exit(2),
        _ => anyhow::bail!("the benchmark failed: {status}"),
    }
}

/// Builds observer and the scenario runner in release mode and returns a
/// command that runs the runner as root.
fn runner() -> anyhow::Result<Command> {
    setup::setup()?;
    let build = ["build", "--release", "-p", "observer", "-p", "scenarios"];
    util::run(Command::new("cargo").args(build))?;
    let bin = crate::target_dir().join("release").join("scenarios");
    util::as_root(&bin.to_string_lossy())
}

/// Passed and failed test counts, summed over test binaries.
#[derive(Default, Clone)]
pub struct Tally {
    passed: u64,
    failed: u64,
    /// What failed, one line each (test names, fuzz targets with their
    /// input), repeated at the end so a CI log's tail names them.
    failures: Vec<String>,
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
        }
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
/// runner prints the same form).
fn failed_name(line: &str) -> Option<&str> {
    line.trim()
        .strip_prefix("test ")?
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
        let t = parse_result("15 passed, 1 failed").unwrap();
        assert_eq!((t.passed, t.failed), (15, 1));
        assert!(parse_result("x passed, 1 failed").is_none());
    }

    #[test]
    fn integration_modules_from_the_list() {
        let list = "cli::a: test\nflows::b: test\nflows::c::d: test\ncli::e: test\n\n3 tests, 0 benchmarks\n";
        assert_eq!(modules_of("x", list).unwrap(), ["cli", "flows"]);
        // A test outside any module would not run.
        assert!(modules_of("x", "cli::a: test\nloose: test\n").is_err());
        // `flows::` would pick a test of module `top` too.
        assert!(modules_of("x", "flows::a: test\ntop::flows::b: test\n").is_err());
    }
}
