//! Five real downloads from this machine's package mirror (`apt-get
//! download llvm-22-dev`, 52.4 MB each, one after another), recorded
//! with `scenarios record-while` (docs/cases/2026-12-07-mirror-pairs.md):
//! the mirror and apt's reader are matched, and whichever comes first,
//! every run must name the same set of limits.

use std::{
    collections::{BTreeSet, HashMap},
    path::PathBuf,
};

use super::{
    recording::Recording,
    replay::{Scope, replay},
};
use crate::attribution::{self, Verdict};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/recordings")
        .join(name)
}

/// Each label's largest flow (bytes received or acked over the
/// recording) and its `observer flows` verdict with its `also`.
fn downloads() -> Vec<(String, Verdict, Option<Verdict>, String)> {
    let rec = Recording::read(&fixture("mirror.rec.gz")).expect("the recording reads");
    let mut bytes: HashMap<(String, u64), u64> = HashMap::new();
    for p in &rec.polls {
        for s in &p.samples {
            let b = bytes.entry((p.label.clone(), s.cookie)).or_default();
            *b = (*b).max(s.bytes_received.max(s.bytes_acked));
        }
    }
    let lines = replay(&rec, &attribution::Config::default());
    rec.labels()
        .into_iter()
        .map(|label| {
            let largest = lines
                .iter()
                .filter(|l| l.label == label && l.judged == Scope::Flows)
                .max_by_key(|l| bytes.get(&(label.to_string(), l.cookie)))
                .expect("each run has a flow");
            (
                label.to_string(),
                largest.verdict,
                largest.also,
                largest.explanation.clone(),
            )
        })
        .collect()
}

#[test]
fn five_mirror_downloads_name_the_same_limits() {
    let runs = downloads();
    assert_eq!(runs.len(), 5, "five runs recorded");
    let sets: Vec<BTreeSet<&'static str>> = runs
        .iter()
        .map(|(_, v, also, _)| {
            std::iter::once(v.name())
                .chain(also.map(Verdict::name))
                .collect()
        })
        .collect();
    for ((label, v, also, explanation), set) in runs.iter().zip(&sets) {
        assert_ne!(*v, Verdict::Unknown, "{label}: {explanation}");
        assert_eq!(
            set, &sets[0],
            "{label} names {v} + {also:?}, the first run {:?}: {explanation}",
            sets[0]
        );
    }
}
