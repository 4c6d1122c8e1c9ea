//! `cargo xtask fuzz [--seconds N] [TARGET...]`: runs the cargo-fuzz
//! targets in `fuzz/` (every parser of data the kernel or a user hands
//! observer) for N seconds each, from the committed seeds in
//! `fuzz/seeds/TARGET` plus what earlier runs found (`fuzz/corpus/TARGET`,
//! not committed).
//!
//! It works with the stable toolchain: `--sanitizer none` leaves out the
//! only nightly flag cargo-fuzz passes (`-Zsanitizer`); the coverage
//! instrumentation (`-Cpasses=sancov-module`, `-Cllvm-args=...`) is stable,
//! and libfuzzer-sys builds libFuzzer with the system C++ compiler. Safe
//! Rust needs no AddressSanitizer to turn a bug into a crash: panics,
//! overflows (debug assertions are on) and hangs (`-timeout`) are what the
//! targets look for.

use std::{path::Path, process::Command};

use anyhow::Context as _;

use crate::{setup, tally::Tally, util};

/// Every target, with the longest input it takes (0: libFuzzer's default).
pub const TARGETS: &[(&str, usize)] = &[
    ("btf", 16_384),
    ("cli_values", 256),
    ("kernel_samples", 8_192),
    ("top_view", 1_024),
    ("iperf_json", 4_096),
    ("filter", 1_024),
];

/// Seconds per target in `cargo xtask test`.
pub const TEST_SECONDS: u64 = 12;

fn cargo_fuzz(root: &Path) -> Command {
    let mut c = Command::new("cargo");
    c.current_dir(root).args(["fuzz"]);
    c
}

/// Builds the targets, then runs each for `seconds`; a target passes when
/// libFuzzer finds no crash, panic, hang or leak of memory past its limit.
/// Prints `N passed, M failed` for the test tally. `dev` builds them with
/// cargo's dev profile (`cargo fuzz --dev`: overflow checks and debug
/// assertions on, minutes less to compile, fewer runs a second), as the
/// short run of `cargo xtask test` does; otherwise optimised.
///
/// # Errors
/// cargo-fuzz missing or the targets failing to build.
pub fn fuzz(seconds: u64, only: &[String], dev: bool) -> anyhow::Result<Tally> {
    setup::setup_for(&[setup::Group::Fuzz])?;
    let root = util::workspace_root();
    let targets: Vec<(&str, usize)> = TARGETS
        .iter()
        .copied()
        .filter(|(t, _)| only.is_empty() || only.iter().any(|o| o == t))
        .collect();
    if targets.is_empty() {
        let names: Vec<&str> = TARGETS.iter().map(|(t, _)| *t).collect();
        anyhow::bail!("no such fuzz target; there are: {}", names.join(", "));
    }
    util::run(
        cargo_fuzz(&root)
            .args(["build", "--sanitizer", "none", "--fuzz-dir", "fuzz"])
            .args(dev.then_some("--dev")),
    )
    .context("building the fuzz targets (cargo fuzz build --sanitizer none)")?;
    let mut tally = Tally::default();
    for (target, max_len) in targets {
        tally.add(run_target(&root, target, max_len, seconds, dev)?);
    }
    tally.print();
    Ok(tally)
}

/// Runs one target for `seconds` from its corpus and seeds, libFuzzer's
/// output in a log; one check, passed or failed. `dev`: as [`fuzz`].
fn run_target(
    root: &Path,
    target: &str,
    max_len: usize,
    seconds: u64,
    dev: bool,
) -> anyhow::Result<Tally> {
    let corpus = root.join("fuzz/corpus").join(target);
    std::fs::create_dir_all(&corpus).with_context(|| format!("creating {}", corpus.display()))?;
    let seeds = root.join("fuzz/seeds").join(target);
    let mut c = cargo_fuzz(root);
    c.args(["run", "--sanitizer", "none", "--fuzz-dir", "fuzz"])
        .args(dev.then_some("--dev"))
        .arg(target)
        .arg(&corpus)
        .arg(&seeds)
        .args([
            "--".to_string(),
            format!("-max_total_time={seconds}"),
            "-timeout=10".to_string(),
            "-rss_limit_mb=2048".to_string(),
            "-print_final_stats=1".to_string(),
        ]);
    if max_len > 0 {
        c.arg(format!("-max_len={max_len}"));
    }
    // libFuzzer's progress goes to a log, not the terminal: a CI log's
    // tail must show the results, not thousands of progress lines.
    let log_path = util::target_dir().join(format!("fuzz-{target}.log"));
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("creating {}", log_path.display()))?;
    c.stderr(log);
    eprintln!(
        "fuzz: {target} for {seconds} s (libFuzzer's output: {})",
        log_path.display()
    );
    match util::run(&mut c) {
        Ok(()) => {
            println!("fuzz {target} ... ok");
            Ok(Tally::one(true))
        }
        Err(e) => {
            let why = failure_lines(&log_path);
            let input = newest_artifact(&root.join("fuzz/artifacts").join(target));
            let dev = if dev { " --dev" } else { "" };
            println!(
                "fuzz {target} ... FAILED ({e}); the input is in fuzz/artifacts/{target}/, \
                 replay it with `cargo fuzz run --sanitizer none{dev} --fuzz-dir fuzz {target} FILE`\n{why}"
            );
            Ok(Tally::failure(format!(
                "fuzz {target}: {why} input: {input}"
            )))
        }
    }
}

/// The lines of a libFuzzer log that say why it stopped (a panic message,
/// libFuzzer's ERROR and SUMMARY lines), joined with `; `.
fn failure_lines(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.contains("panicked at")
                || l.starts_with("==") && l.contains("ERROR")
                || l.starts_with("SUMMARY")
                || l.starts_with("artifact_prefix")
                || l.contains("Test unit written to")
        })
        .take(8)
        .collect();
    let mut why = lines.join("; ");
    // A panic message is on the line after `panicked at`.
    if let Some(i) = text.lines().position(|l| l.contains("panicked at"))
        && let Some(msg) = text.lines().nth(i + 1)
    {
        why.push_str("; ");
        why.push_str(msg);
    }
    why
}

/// The newest file in `dir` as `NAME (hex of its first 256 bytes)`, so a
/// crash found on a CI machine can be rebuilt from the log alone.
fn newest_artifact(dir: &Path) -> String {
    let newest = std::fs::read_dir(dir).ok().and_then(|rd| {
        rd.filter_map(Result::ok)
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .max()
    });
    let Some((_, path)) = newest else {
        return "none written".to_string();
    };
    let bytes = std::fs::read(&path).unwrap_or_default();
    let hex: String = bytes.iter().take(256).map(|b| format!("{b:02x}")).collect();
    format!("{} ({} bytes, hex {hex})", path.display(), bytes.len())
}
