//! Replays a [`Recording`] through what judges flows on a live host: the
//! live flows at every poll ([`LiveFlows`], as `observer run` and `top` judge),
//! and at the end of each label the flow table (`observer flows`). The
//! verdicts depend only on the recorded samples and times, so a replay
//! repeats exactly; the attribution's golden test uses it to show every
//! verdict a change to the engine moves.

use std::collections::HashSet;

use observer_common::FlowSample;
use serde::Serialize;

use super::{
    live::{LiveConfig, LiveFlows},
    recording::{Poll, Recording},
    snapshot::FlowTable,
};
use crate::{
    attribution::{self, Attribution, Side, Verdict},
    model::clock::Clock,
};

/// Which judgement of a flow a line gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The live flows' current verdict (its sliding window) after a poll.
    Current,
    /// The live flows' life verdict after a poll.
    Life,
    /// `observer flows`'s verdict at the end of the label's polls.
    Flows,
}

/// One verdict of one flow in a replay.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Line {
    /// The label (scenario) the polls belong to.
    pub label: String,
    /// The poll's index within its label (0-based); for
    /// [`Scope::Flows`], the number of polls.
    pub poll: usize,
    /// The flow's socket cookie on the recording host.
    pub cookie: u64,
    /// Which judgement.
    pub judged: Scope,
    /// The end the verdict was made from.
    pub side: Side,
    /// The verdict.
    pub verdict: Verdict,
    /// Its confidence (0 to 1, two decimals).
    pub confidence: f64,
    /// Its explanation.
    pub explanation: String,
    /// The second limit named beside the verdict, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub also: Option<Verdict>,
}

fn line(label: &str, poll: usize, cookie: u64, judged: Scope, a: &Attribution) -> Line {
    Line {
        label: label.to_string(),
        poll,
        cookie,
        judged,
        side: a.side,
        verdict: a.verdict,
        confidence: a.confidence,
        explanation: a.explanation.clone(),
        also: a.also.as_ref().map(|x| x.verdict),
    }
}

/// The samples of poll `p` as a live read hands them over: the open
/// flows', and the close records not met before (`closed_seen`, the
/// cookies closed so far, which it adds to), as (active, closed).
pub fn split(p: &Poll, closed_seen: &mut HashSet<u64>) -> (Vec<FlowSample>, Vec<FlowSample>) {
    let (closed, active): (Vec<FlowSample>, Vec<FlowSample>) =
        p.samples.iter().partition(|s| s.closed_ns != 0);
    let closed = closed
        .into_iter()
        .filter(|s| closed_seen.insert(s.cookie))
        .collect();
    (active, closed)
}

/// Every verdict of `rec` judged with `cfg`: each label replayed on its own
/// (new live flows and a table that start one nanosecond before its first poll,
/// so its flows count as born in the run), the live flows' current and life
/// verdicts of every open flow after each poll, then the table's report of
/// every flow. Lines of one poll are ordered by cookie.
pub fn replay(rec: &Recording, cfg: &attribution::Config) -> Vec<Line> {
    let clock = Clock::fixed(0, rec.hz);
    let mut out = Vec::new();
    for label in rec.labels() {
        let polls: Vec<_> = rec.polls.iter().filter(|p| p.label == label).collect();
        let Some(start) = polls.first().map(|p| p.now_ns.saturating_sub(1)) else {
            continue;
        };
        let cfg = &if rec.asked_known {
            *cfg
        } else {
            cfg.without_asking()
        };
        let live_cfg = LiveConfig {
            attribution: *cfg,
            ..LiveConfig::default()
        };
        let mut live = LiveFlows::new(live_cfg, clock, start);
        let mut table = FlowTable::new();
        let mut closed_seen: HashSet<u64> = HashSet::new();
        let mut now = start;
        for (i, p) in polls.iter().enumerate() {
            now = p.now_ns;
            let (active, closed) = split(p, &mut closed_seen);
            live.ingest_changes(&active, &closed, now, false);
            table.ingest(&active, &closed, now);
            let mut open: Vec<_> = live.flows().filter(|t| !t.is_closed()).collect();
            open.sort_by_key(|t| t.latest.cookie);
            for t in open {
                let cookie = t.latest.cookie;
                out.push(line(label, i, cookie, Scope::Current, &t.current));
                out.push(line(label, i, cookie, Scope::Life, &t.life));
            }
        }
        let mut reports = table.reports(&clock, now, start, cfg);
        reports.sort_by_key(|r| r.flow.cookie);
        for r in reports {
            out.push(line(
                label,
                polls.len(),
                r.flow.cookie,
                Scope::Flows,
                &r.attribution,
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::{
        collections::BTreeMap,
        io::{BufRead as _, Write as _},
        path::PathBuf,
    };

    use flate2::{Compression, read::GzDecoder, write::GzEncoder};

    use super::*;

    /// The recorded scenario suite (bbr and cubic runs) and its verdicts.
    fn fixture(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/recordings")
            .join(name)
    }

    /// Every verdict of the recorded suite, judged now, equals the golden
    /// file's: a change to the engine that moves a verdict, a confidence
    /// or an explanation fails here, with a count of the verdicts it
    /// moved. Confidences are the rules' own ([`attribution::Config::rules_own`]):
    /// the measured ones move with each calibration, whose own tests
    /// (`attribution::calibration`, `attribution::sender::verdict_tests`) check them. `OBSERVER_BLESS=1` writes the new golden file instead (for a
    /// change that means to move them: review its diff,
    /// `zdiff` of the old and new file).
    #[test]
    fn the_recorded_suite_judges_as_its_golden_file() {
        let rec = Recording::read(&fixture("suite.rec.gz")).expect("the recording reads");
        let lines: Vec<String> = replay(&rec, &attribution::Config::default().rules_own())
            .iter()
            .map(|l| serde_json::to_string(l).expect("a line serialises"))
            .collect();
        let golden = fixture("suite.verdicts.gz");
        if std::env::var_os("OBSERVER_BLESS").is_some() {
            let f = std::fs::File::create(&golden).expect("the golden file is writable");
            let mut gz = GzEncoder::new(f, Compression::best());
            for l in &lines {
                writeln!(gz, "{l}").expect("write");
            }
            gz.finish().expect("finish");
            return;
        }
        let f = std::fs::File::open(&golden).expect("the golden file reads");
        let want: Vec<String> = std::io::BufReader::new(GzDecoder::new(f))
            .lines()
            .collect::<Result<_, _>>()
            .expect("the golden file decompresses");
        assert_eq!(lines.len(), want.len(), "a different number of verdicts");
        // Which verdicts moved where, and the first line that differs.
        let verdict = |l: &str| {
            serde_json::from_str::<serde_json::Value>(l).expect("a golden line is JSON")["verdict"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        let mut moved: BTreeMap<(String, String), usize> = BTreeMap::new();
        let mut first = None;
        for (got, want) in lines.iter().zip(&want) {
            if got != want {
                first.get_or_insert((want.clone(), got.clone()));
                let (a, b) = (verdict(want), verdict(got));
                if a != b {
                    *moved.entry((a, b)).or_default() += 1;
                }
            }
        }
        if let Some((want, got)) = first {
            panic!(
                "the engine judges the recorded suite differently: verdicts moved {moved:?}; first difference:\n  golden: {want}\n  now:    {got}"
            );
        }
        // The recording holds real shapes: both ends, several verdicts.
        let sides: std::collections::HashSet<_> = lines
            .iter()
            .map(|l| l.contains("\"side\":\"receiver\""))
            .collect();
        assert_eq!(sides.len(), 2, "the recording has both ends");
    }
}
