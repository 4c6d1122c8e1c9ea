//! Judges a run again from its recording: the samples observer read at
//! each poll, replayed through the live flows as the run judged them
//! (`accuracy::replayed`; `observer::track::replay` does the same for
//! the scenario suite). A
//! change to the engine is then measured over a whole seed in seconds,
//! on the very runs the checkpoint holds, instead of in the 40 minutes of
//! running them again.

use std::{
    collections::{HashMap, HashSet},
    path::{Path, PathBuf},
};

use accuracy::{
    outcome::EndVerdict,
    replayed::{Ends, replay},
    space::Cc,
};
use anyhow::Context as _;
use observer::track::recording::Recording;

use crate::runner::{end_verdicts, note};

/// Where the base run of situation `index` of (`seed`, `cc`) is recorded:
/// `target/accuracy/recordings-<seed>/<cc>-<index>.ndjson.gz`.
pub fn recording_path(dir: &str, seed: u64, cc: Cc, index: u32) -> PathBuf {
    PathBuf::from(format!(
        "{dir}/recordings-{seed}/{}-{index}.ndjson.gz",
        cc.name()
    ))
}

/// Each end's verdict, (sender, receiver), judged again by this build
/// from the recording at `file`, as `crate::runner::run` judged them live
/// (the same live-flow settings as `scenarios::monitor::start`).
///
/// # Errors
/// The recording cannot be read, or it is not of one run.
pub fn rejudge(file: &Path) -> anyhow::Result<(Option<EndVerdict>, Option<EndVerdict>)> {
    let rec = Recording::read(file).with_context(|| format!("reading {}", file.display()))?;
    let labels = rec.labels();
    let [label] = labels[..] else {
        anyhow::bail!("{}: not the recording of one run", file.display());
    };
    let ends = Ends::from_label(label)
        .with_context(|| format!("{}: label {label:?} names no ends", file.display()))?;
    let mut seen = HashMap::new();
    let none = HashSet::new();
    replay(&rec, |_, live| note(live, ends, &none, &mut seen));
    Ok(end_verdicts(&seen))
}
