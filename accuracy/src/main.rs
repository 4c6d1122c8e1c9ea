//! `accuracy`: runs the accuracy harness (docs/accuracy.md) as root, with
//! observer attached. Run it through `cargo xtask accuracy`, which builds
//! it and runs it from the repository root.

use std::{
    io::{BufRead as _, Write as _},
    path::{Path as FsPath, PathBuf},
    process::ExitCode,
};

use accuracy::{
    calibrate,
    outcome::{EndVerdict, Outcome, Rerun},
    relax::{apply_what_if, changes, relax, sampled},
    report,
    score::{End, is_right, judged, score},
    space::{Cc, Situation, draw},
    truth::truth,
};
use anyhow::Context as _;
use clap::Parser;
use observer::{kernel::load::tick::kernel_hz, track::poller::Poller};

mod rejudge;
mod runner;
mod traffic;

/// Which congestion controls to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Ccs {
    Cubic,
    Bbr,
    Both,
}

#[derive(Parser)]
#[command(about = "observer's verdicts over random emulated situations with a known limit")]
struct Cli {
    /// Situations per congestion control.
    #[arg(long, default_value_t = 100)]
    n: u32,
    /// The seed the situations are drawn from.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Congestion control(s).
    #[arg(long, value_enum, default_value_t = Ccs::Both)]
    cc: Ccs,
    /// Where the figures go (JSON); default target/accuracy/results-<seed>.json.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Keep the situations already run for this seed (the checkpoint
    /// target/accuracy/outcomes-<seed>.ndjson) and run only the others
    /// (and again those that failed).
    #[arg(long)]
    resume: bool,
    /// Write the figures into this Markdown page, in the seed's block
    /// (docs/accuracy.md).
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Skip the counterfactual reruns.
    #[arg(long)]
    no_counterfactual: bool,
    /// Run again only the situations of these indices (repeat the flag),
    /// keeping the rest of the checkpoint, for a second look at one.
    #[arg(long)]
    only: Vec<u32>,
    /// With --resume: run again the base run of each situation that has
    /// no recording yet, keeping its counterfactual reruns.
    #[arg(long, requires = "resume")]
    record: bool,
    /// Run nothing: judge every recorded run of the checkpoint again with
    /// this build (target/accuracy/recordings-<seed>/), and score that.
    #[arg(long, conflicts_with_all = ["resume", "only", "record"])]
    rejudge: bool,
    /// With --rejudge: write each rule's record over this seed as
    /// observer's table of measured confidences (the Rust source of
    /// observer/src/attribution/measured.rs) to FILE.
    #[arg(long, value_name = "FILE", requires = "rejudge")]
    calibrate: Option<PathBuf>,
}

const DIR: &str = "target/accuracy";

fn checkpoint(seed: u64) -> PathBuf {
    PathBuf::from(format!("{DIR}/outcomes-{seed}.ndjson"))
}

fn read_checkpoint(path: &FsPath) -> anyhow::Result<Vec<Outcome>> {
    let Ok(f) = std::fs::File::open(path) else {
        return Ok(Vec::new());
    };
    std::io::BufReader::new(f)
        .lines()
        .map(|l| {
            let l = l?;
            serde_json::from_str(&l).with_context(|| format!("a line of {}", path.display()))
        })
        .collect()
}

fn commit() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".to_string())
}

/// Runs `s`, and where it is in the sample, its counterfactual reruns.
fn one(poller: &mut Poller, s: &Situation, seed: u64, counterfactual: bool, hz: u32) -> Outcome {
    let mut o = Outcome {
        situation: s.clone(),
        bps: 0.0,
        sender: None,
        receiver: None,
        error: None,
        counterfactual: Vec::new(),
        what_if: None,
    };
    base_run(poller, &mut o, seed, hz);
    if counterfactual && o.error.is_none() {
        check_counterfactual(poller, &mut o, seed);
    }
    o
}

/// Runs `o`'s situation as drawn, recording it, into `o`'s rate and
/// verdicts (or its error).
fn base_run(poller: &mut Poller, o: &mut Outcome, seed: u64, hz: u32) {
    let s = &o.situation;
    let file = rejudge::recording_path(DIR, seed, s.cc, s.index);
    let made = file
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .with_context(|| format!("creating {}", file.display()));
    match made.and_then(|()| runner::run(poller, s, seed, Some((&file, hz)))) {
        Ok(r) => {
            o.bps = r.bps;
            o.sender = r.sender;
            o.receiver = r.receiver;
            o.error = None;
        }
        Err(e) => o.error = Some(format!("{e:#}")),
    }
}

/// Where `o`'s situation is in the sample, runs it again with its
/// tightest limit relaxed, then its second, unless `o` already holds
/// those reruns (a checkpoint from an older truth may hold others: they
/// are replaced; one no longer sampled loses them).
fn check_counterfactual(poller: &mut Poller, o: &mut Outcome, seed: u64) {
    let s = o.situation.clone();
    if !sampled(&s, seed, s.cc) {
        o.counterfactual.clear();
        return;
    }
    let done: Vec<&str> = o.counterfactual.iter().map(|r| r.change.as_str()).collect();
    if !done.is_empty() && done == changes(&s) {
        return;
    }
    o.counterfactual.clear();
    let t = truth(&s);
    for (i, c) in t.ceilings.iter().take(2).enumerate() {
        // The second may be one nothing relaxes (the host): the first
        // rerun alone is then checked.
        let Some((relaxed, change)) = relax(&s, c.limit) else {
            if i == 0 {
                o.error = Some(format!("{:?} cannot be relaxed", c.limit));
            }
            return;
        };
        match runner::run(poller, &relaxed, seed, None) {
            Ok(r) => o.counterfactual.push(Rerun { change, bps: r.bps }),
            Err(e) => {
                o.error = Some(format!("counterfactual {change}: {e:#}"));
                return;
            }
        }
    }
}

/// Drops `o`'s what-if rerun where its verdicts no longer ask for the
/// setting it applied (judged again, or run again).
fn drop_stale_what_if(o: &mut Outcome) {
    let asked = [&o.sender, &o.receiver]
        .into_iter()
        .flatten()
        .find_map(|e| apply_what_if(&o.situation, &e.verdict, e.what_if_from?, e.what_if_window?));
    if o.what_if.as_ref().map(|w| &w.change) != asked.as_ref().map(|(_, c)| c) {
        o.what_if = None;
    }
}

/// Where an end's verdict gave a window what-if, runs `o`'s situation
/// again with that window's setting, once.
fn check_what_if(poller: &mut Poller, o: &mut Outcome, seed: u64) {
    if o.what_if.is_some() || o.error.is_some() {
        return;
    }
    let asked = [&o.sender, &o.receiver]
        .into_iter()
        .flatten()
        .find_map(|e| {
            let (from, to) = (e.what_if_from?, e.what_if_window?);
            apply_what_if(&o.situation, &e.verdict, from, to)
        });
    let Some((changed, change)) = asked else {
        return;
    };
    match runner::run(poller, &changed, seed, None) {
        Ok(r) => o.what_if = Some(Rerun { change, bps: r.bps }),
        Err(e) => eprintln!("#{} what-if {change}: {e:#}", o.situation.index),
    }
}

fn harness(cli: &Cli) -> anyhow::Result<()> {
    // The build measured is the one at the start.
    let commit = commit();
    std::fs::create_dir_all(DIR).with_context(|| format!("creating {DIR}"))?;
    let path = checkpoint(cli.seed);
    // Resuming keeps the situations that ran as this build draws them;
    // those that failed, saw no flow, or that an older space drew
    // otherwise, run again.
    // `--only` looks again at those situations and keeps the others.
    let mut outcomes = if cli.resume || !cli.only.is_empty() {
        read_checkpoint(&path)?
    } else {
        Vec::new()
    };
    outcomes.retain(|o| {
        !cli.only.contains(&o.situation.index)
            && o.error.is_none()
            && (o.sender.is_some() || o.receiver.is_some())
            && o.situation == draw(cli.seed, o.situation.cc, o.situation.index)
    });
    let hz = kernel_hz()?.hz;
    let mut poller = scenarios::monitor::start(hz)?;
    // Base runs recorded by no earlier build, run again to be.
    if cli.record {
        for o in &mut outcomes {
            let s = o.situation.clone();
            if !rejudge::recording_path(DIR, cli.seed, s.cc, s.index).exists() {
                base_run(&mut poller, o, cli.seed, hz);
                drop_stale_what_if(o);
                eprintln!("recorded {}/{} #{}", s.cc.name(), s.kind.name(), s.index);
            }
        }
        outcomes.retain(|o| o.error.is_none());
    }
    // Counterfactuals and what-ifs a checkpoint from an older build or
    // truth did not run yet.
    if !cli.no_counterfactual {
        for o in &mut outcomes {
            check_counterfactual(&mut poller, o, cli.seed);
            drop_stale_what_if(o);
            check_what_if(&mut poller, o, cli.seed);
        }
        outcomes.retain(|o| o.error.is_none());
    }
    let mut file =
        std::fs::File::create(&path).with_context(|| format!("opening {}", path.display()))?;
    for o in &outcomes {
        writeln!(file, "{}", serde_json::to_string(o)?)?;
    }
    let ccs: &[Cc] = match cli.cc {
        Ccs::Cubic => &[Cc::Cubic],
        Ccs::Bbr => &[Cc::Bbr],
        Ccs::Both => &[Cc::Cubic, Cc::Bbr],
    };
    for &cc in ccs {
        for i in 0..cli.n {
            if !cli.only.is_empty() && !cli.only.contains(&i) {
                continue;
            }
            if outcomes
                .iter()
                .any(|o| o.situation.cc == cc && o.situation.index == i)
            {
                continue;
            }
            let s = draw(cli.seed, cc, i);
            let mut o = one(&mut poller, &s, cli.seed, !cli.no_counterfactual, hz);
            if !cli.no_counterfactual {
                check_what_if(&mut poller, &mut o, cli.seed);
            }
            let t = truth(&s);
            eprintln!(
                "{}/{} #{i}: {:.2} Mbit/s, tightest {:?} {:.2}{}; sender {} receiver {}{}",
                cc.name(),
                s.kind.name(),
                o.bps / 1e6,
                t.tightest().limit,
                t.tightest().bps / 1e6,
                if t.clear { "" } else { " (matched)" },
                o.sender.as_ref().map_or("-", |e| e.verdict.as_str()),
                o.receiver.as_ref().map_or("-", |e| e.verdict.as_str()),
                o.error
                    .as_deref()
                    .map(|e| format!("; error: {e}"))
                    .unwrap_or_default(),
            );
            writeln!(file, "{}", serde_json::to_string(&o)?)?;
            file.flush()?;
            outcomes.push(o);
        }
    }
    write_figures(cli, &outcomes, &commit)
}

/// Judges every recorded run of the checkpoint again with this build,
/// and scores that. A what-if applied for a verdict that no longer gives
/// it is dropped.
fn rejudge_all(cli: &Cli) -> anyhow::Result<()> {
    let commit = commit();
    let mut outcomes = read_checkpoint(&checkpoint(cli.seed))?;
    anyhow::ensure!(
        !outcomes.is_empty(),
        "no checkpoint for seed {}: run `cargo xtask accuracy --seed {}` first",
        cli.seed,
        cli.seed
    );
    let mut missing = 0;
    for o in &mut outcomes {
        let s = &o.situation;
        let file = rejudge::recording_path(DIR, cli.seed, s.cc, s.index);
        if !file.exists() {
            missing += 1;
            continue;
        }
        let (sender, receiver) = rejudge::rejudge(&file)?;
        // Each verdict this build moves, for review, marked right or wrong
        // by the truth.
        let t = truth(s);
        let said = |e: &Option<EndVerdict>, end| match e {
            Some(e) => format!(
                "{} ({})",
                e.verdict,
                if is_right(&t, end, e) {
                    "right"
                } else {
                    "wrong"
                }
            ),
            None => "- (wrong)".to_string(),
        };
        for (name, end, was, now) in [
            ("sender", End::Sender, &o.sender, &sender),
            ("receiver", End::Receiver, &o.receiver, &receiver),
        ] {
            let verdict = |e: &Option<EndVerdict>| e.as_ref().map(|e| e.verdict.clone());
            if verdict(was) != verdict(now) {
                eprintln!(
                    "moved {}/{} #{} {name}: {} -> {}: {}",
                    s.cc.name(),
                    s.kind.name(),
                    s.index,
                    said(was, end),
                    said(now, end),
                    now.as_ref().map_or("", |e| e.explanation.as_str())
                );
            }
        }
        o.sender = sender;
        o.receiver = receiver;
        drop_stale_what_if(o);
    }
    // The outcomes as judged again, beside the checkpoint (which keeps the
    // verdicts given live).
    let again = PathBuf::from(format!("{DIR}/rejudged-{}.ndjson", cli.seed));
    let lines: Vec<String> = outcomes
        .iter()
        .map(serde_json::to_string)
        .collect::<Result<_, _>>()?;
    std::fs::write(&again, lines.join("\n") + "\n")
        .with_context(|| format!("writing {}", again.display()))?;
    if missing > 0 {
        eprintln!(
            "{missing} situations have no recording and keep their verdicts: \
             `cargo xtask accuracy --seed {} --resume --record` records them",
            cli.seed
        );
    }
    if let Some(file) = &cli.calibrate {
        let table = calibrate::source(&calibrate::records(&judged(&outcomes)), cli.seed, &commit);
        std::fs::write(file, table).with_context(|| format!("writing {}", file.display()))?;
        eprintln!("measured confidences: {}", file.display());
    }
    write_figures(cli, &outcomes, &commit)
}

/// Scores `outcomes` and writes the figures: JSON, and the Markdown block
/// to stdout and into `--markdown`'s page.
fn write_figures(cli: &Cli, outcomes: &[Outcome], commit: &str) -> anyhow::Result<()> {
    let r = score(outcomes, cli.seed, commit);
    let json = cli
        .json
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{DIR}/results-{}.json", cli.seed)));
    std::fs::write(&json, serde_json::to_string_pretty(&r)?)
        .with_context(|| format!("writing {}", json.display()))?;
    // Every judged end, one per line, for a look at the misses by hand.
    let ends = PathBuf::from(format!("{DIR}/judged-{}.ndjson", cli.seed));
    let lines = judged(outcomes)
        .iter()
        .map(serde_json::to_string)
        .collect::<Result<Vec<_>, _>>()?;
    std::fs::write(&ends, lines.join("\n") + "\n")
        .with_context(|| format!("writing {}", ends.display()))?;
    let block = report::markdown(&r);
    print!("{block}");
    if let Some(md) = &cli.markdown {
        let doc = std::fs::read_to_string(md).unwrap_or_default();
        std::fs::write(md, report::splice(&doc, cli.seed, &block))
            .with_context(|| format!("writing {}", md.display()))?;
    }
    eprintln!("figures: {}", json.display());
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let done = if cli.rejudge {
        rejudge_all(&cli)
    } else {
        harness(&cli)
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("accuracy: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
