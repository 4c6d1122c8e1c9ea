//! `bench`: observer's overhead and scale benchmarks. Run it through
//! `cargo xtask bench [--quick]`, which builds it and runs it as root.

use std::process::ExitCode;

use anyhow::Context as _;
use bench::{agent, breakdown, churn, env, fixed_load, peer, report::Results, rr, throughput};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "observer's overhead and scale benchmarks")]
struct Cli {
    #[command(subcommand)]
    command: Option<Cmd>,
    /// Fewer rounds, shorter runs, no 100k-flow step.
    #[arg(long)]
    quick: bool,
    /// Where to write the markdown table (default: docs/benchmarks.md for
    /// a whole run, target/bench/benchmarks.md with --only, so that a
    /// partial run leaves the committed page alone).
    #[arg(long)]
    markdown: Option<std::path::PathBuf>,
    /// Where to write the JSON results.
    #[arg(long, default_value = "target/bench/results.json")]
    json: std::path::PathBuf,
    /// Run only these parts (for trying one out; the table then shows the
    /// others as not run).
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Vec<Part>,
    /// Measure nothing: write the markdown page again from a JSON results
    /// file of an earlier run.
    #[arg(long, value_name = "JSON")]
    render: Option<std::path::PathBuf>,
}

/// The parts of the benchmark.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Part {
    /// observer's programs per segment against a one-map bpftrace counter
    /// (bulk at 1 and 4 streams, request/response at 1 and 16).
    Peer,
    /// Request/response transactions (1 and 16 connections).
    Rr,
    Throughput,
    /// Where the per-packet program's time goes, stage by stage (bulk at
    /// 1 and 4 streams, request/response at 1 connection).
    Stages,
    Agent,
    Churn,
}

#[derive(Subcommand)]
enum Cmd {
    /// (internal) Hold N loopback connections open with light traffic.
    #[command(hide = true)]
    Hold {
        /// Connections.
        n: usize,
    },
}

fn commit() -> String {
    std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// Writes the page for the results in `json` (an earlier run's).
fn render(cli: &Cli, json: &std::path::Path) -> anyhow::Result<()> {
    let text =
        std::fs::read_to_string(json).with_context(|| format!("reading {}", json.display()))?;
    let mut r: Results =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", json.display()))?;
    // Results written before these figures were kept.
    r.derive();
    let markdown = cli.markdown_path();
    std::fs::write(&markdown, r.markdown())
        .with_context(|| format!("writing {}", markdown.display()))
}

fn bench(cli: &Cli) -> anyhow::Result<()> {
    // Another observer's programs run on the same segments as the agent
    // the bench starts, and their runs would count as its own.
    let others = throughput::prog_costs("observer_");
    anyhow::ensure!(
        others.is_empty(),
        "another observer's programs are loaded (ids {}): stop it (and `rm -r` the `--pin` directory of a pinned one), or its runs count as the bench's",
        others
            .keys()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _stats = throughput::BpfStats::enable()?;
    let (rounds, secs) = if cli.quick { (3, 3) } else { (9, 4) };
    let (kernel, model, cpus) = env::machine();
    let mut r = Results {
        date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        kernel,
        cpu: format!("{model} ({cpus} CPUs)"),
        commit: commit(),
        quick: cli.quick,
        ..Results::default()
    };
    let runs = |p: Part| cli.only.is_empty() || cli.only.contains(&p);
    for (p, name) in [
        (Part::Peer, "peer"),
        (Part::Rr, "rr"),
        (Part::Throughput, "throughput"),
        (Part::Stages, "stages"),
        (Part::Agent, "agent"),
        (Part::Churn, "churn"),
    ] {
        if runs(p) {
            r.parts.push(name.to_string());
        }
    }
    if runs(Part::Peer) {
        eprintln!(
            "bench: observer against a one-map bpftrace counter, {rounds} rounds of {secs} s each side"
        );
        r.peer = peer::all(rounds, secs)?;
        r.peer_ratio_bulk = peer::worst(&r.peer, "bulk");
        r.peer_ratio_rr = peer::worst(&r.peer, "rr");
    }
    if runs(Part::Rr) {
        measure_rr(&mut r, rounds, secs)?;
    }
    if runs(Part::Throughput) {
        measure_throughput(&mut r, rounds, secs)?;
    }
    if runs(Part::Stages) {
        measure_stages(&mut r, if cli.quick { 1 } else { 3 }, secs)?;
    }
    if runs(Part::Agent) {
        measure_agent(&mut r, cli.quick)?;
    }
    let rates: &[u64] = if cli.quick {
        &[1_000, 10_000]
    } else {
        &[1_000, 2_000, 5_000, 10_000]
    };
    if runs(Part::Churn) {
        eprintln!("bench: connection churn at {rates:?} per second");
        r.churn = churn::steps(rates, if cli.quick { 3 } else { 5 })?;
    }
    churn_figures(&mut r);
    r.derive();
    write(cli, &r)
}

/// Request/response with/without at 1 and 16 connections.
fn measure_rr(r: &mut Results, rounds: usize, secs: u64) -> anyhow::Result<()> {
    eprintln!(
        "bench: request/response, 1 and 16 connections, {rounds} rounds of {secs} s each side"
    );
    for connections in [1, 16] {
        let o = rr::overhead(connections, rounds, secs)?;
        if connections == 1 {
            r.rr_ratio_1 = o.ratio.median;
        } else {
            r.rr_ratio_16 = o.ratio.median;
        }
        r.rr.push(o);
    }
    eprintln!(
        "bench: CPU per transaction at a fixed load, {} connections, {rounds} rounds of {secs} s",
        fixed_load::CONNECTIONS
    );
    let f = fixed_load::overhead(rounds, secs)?;
    r.rr_cpu_ratio = f.ratio.median;
    r.fixed_load = Some(f);
    Ok(())
}

/// With/without throughput at 1 and 4 streams, then the candidate
/// flow-state lookups.
fn measure_throughput(r: &mut Results, rounds: usize, secs: u64) -> anyhow::Result<()> {
    eprintln!("bench: throughput, 1 and 4 streams, {rounds} rounds of {secs} s each side");
    for streams in [1, 4] {
        let o = throughput::overhead(streams, rounds, secs)?;
        if streams == 1 {
            r.throughput_ratio = o.ratio.median;
            r.probe_ns_per_hit = o.probe_ns_per_hit;
            r.floor_ns_per_hit = o.floor_ns_per_hit;
        } else {
            r.throughput_ratio_p4 = o.ratio.median;
        }
        r.throughput.push(o);
    }
    eprintln!("bench: candidate flow-state lookups, {secs} s each");
    r.candidates = breakdown::candidates(secs, r.floor_ns_per_hit)?;
    Ok(())
}

/// The per-packet program cut short after each stage: bulk at 1 and 4
/// streams, request/response at 1 connection, `passes` passes of `secs`
/// per stage.
fn measure_stages(r: &mut Results, passes: usize, secs: u64) -> anyhow::Result<()> {
    for (load, what) in [
        (breakdown::Load::Bulk(1), "one stream"),
        (breakdown::Load::Bulk(4), "four streams"),
        (breakdown::Load::RequestResponse, "request/response"),
    ] {
        eprintln!(
            "bench: where the per-packet time goes, {what}, {passes} pass(es) of {secs} s per stage"
        );
        let stages = breakdown::stages(load, secs, passes)?;
        match load {
            breakdown::Load::Bulk(1) => r.stages = stages,
            breakdown::Load::Bulk(_) => r.stages_bulk4 = stages,
            breakdown::Load::RequestResponse => r.stages_rr = stages,
        }
    }
    Ok(())
}

/// The agent at 1k, 10k and (not `quick`) 100k open flows, then with
/// `--poll-read` at 10k and (not `quick`) 100k.
fn measure_agent(r: &mut Results, quick: bool) -> anyhow::Result<()> {
    let sizes: &[(usize, bool)] = if quick {
        &[(1_000, false), (10_000, false), (10_000, true)]
    } else {
        &[
            (1_000, false),
            (10_000, false),
            (100_000, false),
            (10_000, true),
            (100_000, true),
        ]
    };
    for &(flows, walk) in sizes {
        let with = if walk { " and --poll-read" } else { "" };
        eprintln!("bench: agent with {flows} open flows{with}");
        let a = agent::scale(flows, if quick { 5 } else { 10 }, walk)?;
        match (flows, walk) {
            (10_000, false) => r.agent_cpu_pct_10k_flows = a.cpu_pct,
            (10_000, true) => r.agent_cpu_pct_10k_flows_walk = a.cpu_pct,
            (100_000, false) => {
                r.poll_ms_100k_flows = a.poll_ms;
                r.rss_mib_100k_flows = a.rss_mib;
                r.ss_poll_ms_100k_flows = a.ss_ms.median;
            }
            (100_000, true) => r.poll_ms_100k_flows_walk = a.poll_ms,
            _ => {}
        }
        r.scale.push(a);
    }
    Ok(())
}

/// The summary figures of the churn steps (10k/s, the first loss, the
/// cost per run at the highest rate).
fn churn_figures(r: &mut Results) {
    if let Some(c) = r.churn.iter().find(|c| c.target_per_s == 10_000) {
        r.churn_reported_ratio = c.reported_ratio;
        r.churn_drops_10k = c.ringbuf_drops;
    }
    r.churn_first_loss_per_s = r
        .churn
        .iter()
        .find(|c| c.reported_ratio < 1.0 || c.ringbuf_drops > 0)
        .map_or(0.0, |c| c.made_per_s);
    r.probe_ns_per_hit_churn = r.churn.last().map_or(0.0, |c| c.probe_ns_per_hit);
}

impl Cli {
    /// Where the page goes: `--markdown`, else docs/benchmarks.md for a
    /// whole run and target/bench/benchmarks.md for a partial one.
    fn markdown_path(&self) -> std::path::PathBuf {
        match &self.markdown {
            Some(p) => p.clone(),
            None if self.only.is_empty() => "docs/benchmarks.md".into(),
            None => "target/bench/benchmarks.md".into(),
        }
    }
}

/// Writes the JSON results and the page, and prints the page.
fn write(cli: &Cli, r: &Results) -> anyhow::Result<()> {
    if let Some(dir) = cli.json.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&cli.json, serde_json::to_string_pretty(r)?)
        .with_context(|| format!("writing {}", cli.json.display()))?;
    let markdown = cli.markdown_path();
    if let Some(dir) = markdown.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(&markdown, r.markdown())
        .with_context(|| format!("writing {}", markdown.display()))?;
    print!("{}", r.markdown());
    eprintln!(
        "bench: wrote {} and {}",
        markdown.display(),
        cli.json.display()
    );
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Cmd::Hold { n }) => agent::hold(n),
        None => match &cli.render {
            Some(json) => render(&cli, json),
            None => bench(&cli),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
