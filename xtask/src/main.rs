//! Automation for observer: set-up, build, run, test.
//!
//! `cargo xtask run -- ARGS` builds everything and runs `observer ARGS` as
//! root; `cargo xtask test` runs every test. Both install what is missing
//! first (see `setup`).

use std::process::{Command, ExitCode};

use clap::{Parser, Subcommand};

mod apt_lock;
mod cycles;
mod fuzz;
mod image;
mod integration;
mod lint;
mod setup;
mod soak;
mod tally;
mod test;
mod util;
mod vm;

#[derive(Parser)]
#[command(about = "observer's build and test automation")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Install what building and testing needs (idempotent).
    Setup,
    /// Build observer (and its eBPF programs).
    Build {
        /// Build with optimisations.
        #[arg(long)]
        release: bool,
    },
    /// Build, then run `observer ARGS` as root (default: `top`, the live view).
    Run {
        /// Build with optimisations.
        #[arg(long)]
        release: bool,
        /// Arguments for observer.
        #[arg(last = true)]
        args: Vec<String>,
    },
    /// Build the container image of deploy/Containerfile (a static
    /// release binary, FROM scratch, offline) and print its reference.
    Image,
    /// Run every test: formatting, lints and the import-cycle check, unit
    /// and root integration tests, the container image, the scenario
    /// suite, the 6.1 VM, fuzz and a soak; prints its time by step.
    Test,
    /// Only the first phase of `test`: formatting, that no two modules
    /// import each other, and clippy on the host crates and on the eBPF
    /// crate (for bpfel-unknown-none).
    Lint,
    /// Run the scenario suite on emulated WAN paths (args go to the runner:
    /// --only NAME, --json, --quick, --list; a `--` before them is optional).
    Scenarios {
        /// Arguments for the scenario runner.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Build the reference-A path, run its transfers one after another
    /// while `observer top` shows them live, then print observer's figures
    /// for each beside the seed experiment's published ones.
    Demo,
    /// The accuracy harness: random emulated situations with a known
    /// limit, observer's verdicts scored against it (docs/accuracy.md).
    Accuracy {
        /// Arguments for the harness (`--n 100 --seed 1 --cc both --resume`...).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Soak `observer run` (release) under connection churn and bulk flows:
    /// RSS flat, flow map within bounds, flows made = reported + counted
    /// lost, none lost. The last line is `made=N reported=N dropped=N
    /// lost=N`.
    Soak {
        /// How long.
        #[arg(long, default_value_t = 10)]
        minutes: u64,
        /// Load the host: a spinning thread per CPU, 10,000 closes a second,
        /// and the agent stopped (SIGSTOP) for 1-3 s at random.
        #[arg(long)]
        load: bool,
    },
    /// Fuzz every parser of kernel or user input (cargo-fuzz targets in
    /// fuzz/, stable toolchain).
    Fuzz {
        /// Seconds per target.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        /// Targets to run (default: all).
        targets: Vec<String>,
    },
    /// Overhead and scale benchmarks; writes docs/benchmarks.md and
    /// target/bench/results.json. Other arguments go to the runner (a
    /// `--` before them is optional): --only peer,rr,throughput,stages,agent,churn
    /// (its page goes to target/bench/benchmarks.md); --markdown FILE;
    /// --json FILE; --render JSON (rewrite the page from an earlier run,
    /// measuring nothing).
    Bench {
        /// Arguments for the benchmark runner.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
        /// Fewer rounds, shorter runs, no 100k-flow step.
        #[arg(long)]
        quick: bool,
    },
    /// Boot Debian's 5.10, 6.1 and 6.12 kernels under qemu and run the
    /// kernel-facing tests inside; on 5.10, the refusal (docs/kernels.md).
    VmTest {
        /// Which kernel: 5.10, 6.1, 6.12 or all.
        #[arg(long, default_value = "all")]
        kernel: String,
        /// Also compare pathemu with the kernel's sch_netem in the VM.
        #[arg(long)]
        netem: bool,
        /// Seconds before a VM that has not finished is killed.
        #[arg(long, default_value_t = 1500)]
        timeout: u64,
        /// Run only these test steps (comma-separated: flows,cli,...).
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
    },
    /// Run inside a test VM by its init (see `vm-test`).
    #[command(hide = true)]
    VmGuest {
        /// The guest command and its arguments.
        args: Vec<String>,
    },
}

fn build(release: bool) -> anyhow::Result<std::path::PathBuf> {
    setup::setup_build()?;
    let mut c = Command::new("cargo");
    c.args(["build", "--package", "observer"]);
    if release {
        c.arg("--release");
    }
    util::run(&mut c)?;
    Ok(util::target_dir()
        .join(if release { "release" } else { "debug" })
        .join("observer"))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Setup => setup::setup().and_then(|()| vm::qemu::ensure().map(drop)),
        Cmd::Build { release } => build(release).map(|_| ()),
        Cmd::Run { release, args } => build(release).and_then(|bin| {
            let args = if args.is_empty() {
                vec!["top".to_string()]
            } else {
                args
            };
            // observer replaces xtask ([`util::exec`]): a SIGTERM to this
            // pid reaches it (through sudo where not root), and its exit
            // status is the command's.
            let mut c = util::as_root(&bin.to_string_lossy())?;
            c.args(&args);
            Err(util::exec(&mut c))
        }),
        Cmd::Image => image::build().map(|reference| println!("{reference}")),
        Cmd::Test => test::test(),
        Cmd::Lint => setup::setup_build().and_then(|()| lint::lint()),
        Cmd::Scenarios { args } => test::scenarios_command(&args),
        Cmd::Demo => test::demo(),
        Cmd::Accuracy { args } => test::accuracy(&args),
        Cmd::Soak { minutes, load } => soak::command(minutes, load),
        Cmd::Fuzz { seconds, targets } => {
            fuzz::fuzz(seconds, &targets, false).and_then(tally::Tally::finish)
        }
        Cmd::Bench { args, quick } => test::bench(&args, quick),
        Cmd::VmTest {
            kernel,
            netem,
            timeout,
            only,
        } => vm::vm_test(&kernel, netem, timeout, &only),
        Cmd::VmGuest { args } => vm::guest(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
