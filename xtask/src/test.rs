//! `cargo xtask test`: formatting, lints (see `lint`), then every unit and
//! integration test. Integration tests load eBPF programs, so test binaries
//! run as root (through sudo when this is not root); observer's integration
//! binary runs once per module ([`crate::integration`]).

use std::{
    process::Command,
    time::{Duration, Instant},
};

use anyhow::Context as _;

use crate::{
    fuzz, image,
    integration::{INTEGRATION, integration_modules, module_filter},
    lint, setup, soak,
    tally::{Tally, run_counting},
    util, vm,
};

/// Runs the whole test suite.
///
/// # Errors
/// The first failing step.
pub fn test() -> anyhow::Result<()> {
    let mut steps = Steps::default();
    steps.time("set-up", setup::setup)?;
    steps.time("lints", lint::lint)?;
    let mut total = Tally::default();
    // The deployment files (deploy/check.py), and the image the root test
    // `image::` runs as the DaemonSet would.
    let root = util::workspace_root();
    let started = Instant::now();
    total.add(run_counting(
        // Debian's python3, where apt's python3-yaml goes.
        Command::new(if std::path::Path::new("/usr/bin/python3").exists() {
            "/usr/bin/python3"
        } else {
            "python3"
        })
        .arg(root.join("deploy/check.py"))
        .arg("--require-tools"),
    )?);
    let image = image::build()?;
    steps.add("deployment files and image", started);
    let started = Instant::now();
    if util::is_root() {
        // Root: cargo runs the documentation tests too.
        let mut c = Command::new("cargo");
        c.args(["test", "--workspace", "--exclude", "observer-ebpf", "--doc"]);
        total.add(run_counting(&mut c)?);
    }
    // Build the test binaries as this user, run them as root (through sudo
    // when this is not root).
    let built = util::build_tests(
        &["--workspace", "--exclude", "observer-ebpf"],
        None,
        "the tests",
    )?;
    steps.add("doc tests, test build", started);
    let started = Instant::now();
    for a in built {
        let Some(exe) = a.executable.as_ref().filter(|_| a.profile.test) else {
            continue;
        };
        // In the package's folder, as `cargo test` runs them.
        let dir = a.manifest_path.parent();
        let run = |filter: Option<String>| -> anyhow::Result<Tally> {
            let mut c = util::as_root(exe.as_str())?;
            c.args(filter).env("OBSERVER_IMAGE", &image);
            if let Some(d) = dir {
                c.current_dir(d);
            }
            run_counting(&mut c)
        };
        if a.target.name == INTEGRATION {
            for module in integration_modules(exe.as_str())? {
                total.add(run(Some(module_filter(&module)))?);
            }
        } else {
            total.add(run(None)?);
        }
    }
    steps.add("unit and root integration tests", started);
    total.add(steps.time("scenarios", || scenarios(&[]))?);
    total.add(steps.time("6.1 VM", vm_matrix)?);
    total.add(steps.time("fuzz and soak", short_fuzz_and_soak)?);
    steps.print();
    total.finish()
}

/// How long each step of `cargo xtask test` took, printed at its end so a
/// CI log's tail shows where the time went (CI allows 90 minutes; the
/// suite aims at under 45 on two cores).
#[derive(Default)]
struct Steps(Vec<(&'static str, Duration)>);

impl Steps {
    /// Runs `f` as the step `name`.
    fn time<T>(&mut self, name: &'static str, f: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let out = f();
        self.add(name, started);
        out
    }

    /// Records the step `name`, begun at `started`.
    fn add(&mut self, name: &'static str, started: Instant) {
        let took = started.elapsed();
        eprintln!("xtask: {name} took {}", minutes(took));
        self.0.push((name, took));
    }

    /// One line per step, then the total.
    fn print(&self) {
        println!("time by step:");
        for (name, took) in &self.0 {
            println!("  {name}: {}", minutes(*took));
        }
        let total: Duration = self.0.iter().map(|(_, t)| *t).sum();
        println!("  total: {}", minutes(total));
    }
}

/// "12 m 05 s".
fn minutes(d: Duration) -> String {
    let s = d.as_secs();
    format!("{} m {:02} s", s / 60, s % 60)
}

/// A short fuzz run of every target and a short soak, counted in the tally.
fn short_fuzz_and_soak() -> anyhow::Result<Tally> {
    let mut t = fuzz::fuzz(fuzz::TEST_SECONDS, &[], true)?;
    t.add(soak::soak(soak::TEST_SECONDS, true)?);
    Ok(t)
}

/// The short kernel matrix: the kernel-facing tests in a VM running
/// Debian's [`vm::TEST_KERNEL`] (`cargo xtask vm-test`; no root
/// needed), counted in the tally.
fn vm_matrix() -> anyhow::Result<Tally> {
    let me = std::env::current_exe().context("cannot find the xtask binary")?;
    run_counting(Command::new(me).args(["vm-test", "--kernel", vm::TEST_KERNEL]))
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
/// The demo replaces xtask ([`util::exec`]), so a SIGTERM sent to
/// xtask's pid stops it and it removes its namespaces.
///
/// # Errors
/// A failed build, or a demo that could not start.
pub fn demo() -> anyhow::Result<()> {
    let bin = release_runners(&[setup::Group::Demo])?.join("scenarios");
    Err(util::exec(
        util::as_root(&bin.to_string_lossy())?.arg("demo"),
    ))
}

/// `cargo xtask bench`: the overhead and scale benchmarks, as root, from the
/// repository root (it writes docs/benchmarks.md).
///
/// # Errors
/// A failed build or benchmark.
pub fn bench(args: &[String], quick: bool) -> anyhow::Result<()> {
    let bin = release_runners(&[setup::Group::Tools, setup::Group::Bench])?.join("bench");
    let mut c = util::as_root(&bin.to_string_lossy())?;
    if quick {
        c.arg("--quick");
    }
    c.args(args);
    // The report goes to docs/ of the checkout, wherever the build went
    // (CARGO_TARGET_DIR may be outside it).
    c.current_dir(util::workspace_root());
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

/// `cargo xtask accuracy`: the accuracy harness, as root, from the
/// repository root (its checkpoint and figures go to target/accuracy/,
/// and with `--markdown docs/accuracy.md` to that page).
///
/// # Errors
/// A failed build or harness.
pub fn accuracy(args: &[String]) -> anyhow::Result<()> {
    let bin = release_runners(&[setup::Group::Tools])?.join("accuracy");
    let mut c = util::as_root(&bin.to_string_lossy())?;
    c.args(args);
    c.current_dir(util::workspace_root());
    util::run(&mut c)
}

/// Builds observer and the scenario runner in release mode and returns a
/// command that runs the runner as root.
fn runner() -> anyhow::Result<Command> {
    let bin = release_runners(&[setup::Group::Tools])?.join("scenarios");
    util::as_root(&bin.to_string_lossy())
}

/// Installs what `groups` need (and the build chain), then builds
/// observer, the scenario runner, the benchmark (its own crate, `bench/`)
/// and the accuracy harness in release mode, as the image's binary is
/// built ([`image::static_release`]: one set of release dependencies for
/// all); returns the folder that holds them.
fn release_runners(groups: &[setup::Group]) -> anyhow::Result<std::path::PathBuf> {
    setup::setup_for(groups)?;
    image::static_release(&["observer", "scenarios", "bench", "accuracy"])
}
