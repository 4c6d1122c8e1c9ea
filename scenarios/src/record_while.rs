//! `scenarios record-while`: records the host's flows while a command
//! runs (a real download, say), so a test can replay what observer saw
//! of it (`observer::track::recording`). Each run of the command is one
//! label; flows open before a run starts are left out of it.

use std::{collections::HashSet, path::Path, process::Command};

use anyhow::Context as _;
use observer::{
    filter::Filter, kernel::load::tick::kernel_hz, model::clock::monotonic_ns,
    track::recording::Recorder,
};

use crate::{monitor, run::POLL};

/// Runs `command` `runs` times one after another with observer attached,
/// recording every flow born during a run that `filter` (observer's
/// filter language, docs/filters.md) matches under the label `LABEL-N`
/// (N from 1) to `out`, and prints each run's exit status.
///
/// # Errors
/// The probes could not be loaded, the recording could not be written,
/// the command could not be started, or it failed.
pub fn record_while(
    out: &Path,
    label: &str,
    runs: u32,
    filter: Option<&str>,
    command: &[String],
) -> anyhow::Result<()> {
    let (program, args) = command
        .split_first()
        .context("no command given: name one after --")?;
    let filter = filter
        .map(Filter::parse)
        .transpose()
        .map_err(|e| anyhow::anyhow!("--filter: {e}"))?;
    let hz = kernel_hz()?.hz;
    let mut poller = monitor::start(hz)?;
    let mut recorder = Recorder::create(out, hz)
        .with_context(|| format!("creating the recording {}", out.display()))?;
    for run in 1..=runs {
        let label = format!("{label}-{run}");
        poller.poll().context("polling observer")?;
        let earlier: HashSet<u64> = poller.live().flows().map(|t| t.latest.cookie).collect();
        let mut record = |poller: &mut observer::track::poller::Poller| -> anyhow::Result<()> {
            poller.poll().context("polling observer")?;
            let ours = poller
                .live()
                .flows()
                .filter(|t| !earlier.contains(&t.latest.cookie))
                .filter(|t| filter.as_ref().is_none_or(|f| f.matches(&t.flow, None)))
                .map(|t| &*t.latest);
            recorder
                .poll(&label, monotonic_ns(), ours)
                .context("recording the poll")
        };
        record(&mut poller)?;
        let mut child = Command::new(program)
            .args(args)
            .spawn()
            .with_context(|| format!("starting {program}"))?;
        let status = loop {
            std::thread::sleep(POLL);
            record(&mut poller)?;
            if let Some(status) = child.try_wait().context("waiting for the command")? {
                break status;
            }
        };
        // Let the close records arrive.
        for _ in 0..2 {
            std::thread::sleep(POLL);
            record(&mut poller)?;
        }
        println!("{label}: {status}");
        if !status.success() {
            // What was recorded stays readable: the runs before, and this
            // one up to its end.
            recorder.finish().context("finishing the recording")?;
            anyhow::bail!("{label}: {program} failed: {status}");
        }
    }
    recorder.finish().context("finishing the recording")
}
