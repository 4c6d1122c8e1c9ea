//! A recorded run replayed through the live flows as the harness judged
//! it live (`scenarios::monitor::live_config`): the ends its recording's
//! label names, and each poll's flows, for `--rejudge` and for a look at
//! a recording by hand (`examples/samples.rs`).

use std::collections::HashSet;

use observer::{
    model::clock::Clock,
    track::{
        live::LiveFlows,
        recording::{Poll, Recording},
        replay::split,
    },
};

/// The network namespaces of a run's two ends (inode numbers), as the
/// samples carry them: A sends the data, B receives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ends {
    /// The sending end's.
    pub a: u32,
    /// The receiving end's.
    pub b: u32,
}

impl Ends {
    /// The label a recording of the run files its polls under: `"A B"`.
    pub fn label(self) -> String {
        format!("{} {}", self.a, self.b)
    }

    /// The ends a recording's label names; `None` for another label.
    pub fn from_label(label: &str) -> Option<Ends> {
        let (a, b) = label.split_once(' ')?;
        Some(Ends {
            a: a.parse().ok()?,
            b: b.parse().ok()?,
        })
    }
}

/// Replays every poll of `rec` through new live flows (born a nanosecond
/// before its first poll, so its flows count as born in the run), calling
/// `after` with each poll and the live flows once they have taken it in.
pub fn replay(rec: &Recording, mut after: impl FnMut(&Poll, &LiveFlows)) {
    let start = rec.polls.first().map_or(0, |p| p.now_ns.saturating_sub(1));
    let cfg = scenarios::monitor::live_config(rec.hz);
    let mut live = LiveFlows::new(cfg, Clock::fixed(0, rec.hz), start);
    let mut closed_seen: HashSet<u64> = HashSet::new();
    for p in &rec.polls {
        let (active, closed) = split(p, &mut closed_seen);
        live.ingest_changes(&active, &closed, p.now_ns, false);
        after(p, &live);
    }
}

#[cfg(test)]
mod tests {
    use super::Ends;

    #[test]
    fn a_recordings_label_names_the_runs_ends() {
        let ends = Ends {
            a: 4_026_532_000,
            b: 4_026_532_001,
        };
        assert_eq!(ends.label(), "4026532000 4026532001");
        assert_eq!(Ends::from_label(&ends.label()), Some(ends));
        assert_eq!(Ends::from_label("bbr/rx-bufferbloat"), None);
    }
}
