//! `scenarios`: runs the scenario suite (or the demo) with observer
//! attached. Run it through `cargo xtask scenarios` / `cargo xtask demo`,
//! which build it and run it as root.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use observer::{kernel::load::tick::kernel_hz, track::recording::Recorder};
use scenarios::{catalog, monitor, run};

mod demo;
mod record_while;

#[derive(Parser)]
#[command(about = "observer's scenario suite on emulated WAN paths")]
struct Cli {
    #[command(subcommand)]
    command: Option<Cmd>,
    /// Run only these scenarios (repeat the flag for several).
    #[arg(long)]
    only: Vec<String>,
    /// One JSON object per flow instead of text.
    #[arg(long)]
    json: bool,
    /// Shorter transfers (8 s instead of 10-11 s).
    #[arg(long)]
    quick: bool,
    /// List the scenarios and exit.
    #[arg(long)]
    list: bool,
    /// Congestion control for the scenarios that do not pin one (the
    /// sending namespace's default; without it, the host's, bbr here), so
    /// the suite can be run once per algorithm.
    #[arg(long, value_name = "NAME")]
    cc: Option<String>,
    /// Record every poll's samples of the scenarios' flows to FILE
    /// (gzip-compressed NDJSON, `observer::track::recording`), for replay.
    #[arg(long, value_name = "FILE")]
    record: Option<std::path::PathBuf>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Build the reference-A path, run its transfers one after another while
    /// observer shows them live, then print observer's figures beside the seed's.
    Demo,
    /// Record the host's flows while COMMAND runs, RUNS times one after
    /// another (labels LABEL-1, LABEL-2, ...), to FILE, for a test to
    /// replay: `record-while --out mirror.rec.gz --runs 5 -- apt-get
    /// download llvm-22-dev`.
    /// `--filter 'port = 80'` keeps other traffic out.
    RecordWhile {
        /// The recording to write (gzip-compressed NDJSON).
        #[arg(long, value_name = "FILE")]
        out: std::path::PathBuf,
        /// The label's stem.
        #[arg(long, default_value = "run")]
        label: String,
        /// How many times to run the command.
        #[arg(long, default_value_t = 1)]
        runs: u32,
        /// Record only the flows this filter matches (`port = 80`).
        #[arg(long, value_name = "EXPR")]
        filter: Option<String>,
        /// The command and its arguments.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

fn suite(cli: &Cli) -> anyhow::Result<bool> {
    let all = catalog::all();
    if cli.list {
        for s in &all {
            println!("{:<16} {}", s.name, s.about);
        }
        return Ok(true);
    }
    for o in &cli.only {
        anyhow::ensure!(
            all.iter().any(|s| s.name == o),
            "unknown scenario '{o}'; --list shows the names"
        );
    }
    // A leaked name: the catalogue holds &'static str, and this one name
    // lives as long as the run.
    let cc: Option<&'static str> = cli.cc.clone().map(|c| &*c.leak());
    let chosen: Vec<_> = all
        .into_iter()
        .filter(|s| cli.only.is_empty() || cli.only.iter().any(|o| o == s.name))
        .map(|mut s| {
            if s.cc.is_none() && s.snd_cc_default.is_none() {
                s.snd_cc_default = cc;
            }
            s
        })
        .collect();
    let hz = kernel_hz()?.hz;
    let mut poller = monitor::start(hz)?;
    let mut recorder = cli
        .record
        .as_deref()
        .map(|p| Recorder::create(p, hz))
        .transpose()?;
    let (mut passed, mut failed) = (0, 0);
    for sc in &chosen {
        let secs = if cli.quick { 8.min(sc.secs) } else { sc.secs };
        let report = run::run(&mut poller, sc, secs, recorder.as_mut())
            .with_context(|| format!("scenario {}", sc.name))?;
        if cli.json {
            for f in &report.flows {
                let mut v = serde_json::to_value(f)?;
                v["emulator_ok"] = report.emulator_ok.into();
                v["accuracy"] = report.accuracy.into();
                v["error"] = report.error.clone().into();
                v["group"] = serde_json::to_value(&report.group)?;
                println!("{v}");
            }
            if report.flows.is_empty() {
                // No data flow seen: still one line, so the run is visible.
                println!(
                    "{}",
                    serde_json::json!({
                        "scenario": report.scenario,
                        "flow": null,
                        "side": sc.view,
                        "throughput_bps": report.throughput_bps,
                        "expected": sc.expect.last().map(|e| e.verdict),
                        "verdict": null,
                        "accuracy": report.accuracy,
                        "emulator_ok": report.emulator_ok,
                        "error": report.error,
                        "pass": false,
                    })
                );
            }
        } else {
            print!("{}", report.text());
        }
        if report.ok() {
            passed += 1;
        } else {
            failed += 1;
            // The form libtest uses, which `cargo xtask test` collects.
            println!("test scenario {} ... FAILED", sc.name);
        }
    }
    if let Some(r) = recorder {
        r.finish()?;
    }
    if !cli.json {
        println!("{passed} passed, {failed} failed");
    } else {
        eprintln!("{passed} passed, {failed} failed");
    }
    Ok(failed == 0)
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Cmd::Demo) => demo::demo(),
        Some(Cmd::RecordWhile {
            ref out,
            ref label,
            runs,
            ref filter,
            ref command,
        }) => {
            record_while::record_while(out, label, runs, filter.as_deref(), command).map(|()| true)
        }
        None => suite(&cli),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("scenarios: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
