//! How much of the emulated bottleneck the traffic used: the ground truth
//! of whether the path was the limit at all.
//!
//! A full link is what the `path` verdict claims. Where a sample's verdict
//! window left the bottleneck well short of full (a sender's cwnd cut below
//! the path's BDP by a burst of losses, and still regrowing), the path did
//! not hold the flow back and something before it did; the judging
//! (`crate::judge`) takes that into account.

use std::{
    collections::VecDeque,
    time::{Duration, Instant},
};

use pathemu::{Direction, LinkStats, Path, PathConfig};

/// Marks older than this are dropped (the longest span a use is asked
/// over, with room).
const KEEP: Duration = Duration::from_secs(5);

/// The forward (A to B, the data's) direction's bytes forwarded, marked at
/// each poll, so that the bottleneck's use over any recent span can be
/// read.
#[derive(Debug)]
pub struct LinkMeter {
    /// The bottleneck's rate (bits/s of IP packet bytes); 0 where the
    /// forward link has none, or where its rate is not what limits it
    /// (a policer or random loss: the link is not full at their limit).
    rate_bps: u64,
    /// (when, bytes forwarded until then), oldest first.
    marks: VecDeque<(Instant, u64)>,
}

impl LinkMeter {
    /// A meter for `config`'s forward link. It measures nothing (every use
    /// is `None`) where that link has no rate, polices or drops at random:
    /// there a link short of full does not mean the path did not bind.
    pub fn new(config: &PathConfig) -> LinkMeter {
        let f = &config.forward;
        let plain = f.police_bps == 0 && f.loss == 0.0;
        LinkMeter {
            rate_bps: if plain { f.rate_bps } else { 0 },
            marks: VecDeque::new(),
        }
    }

    /// Marks `path`'s forward counters now.
    pub fn mark(&mut self, path: &Path) {
        self.mark_at(Instant::now(), &path.stats(Direction::Forward));
    }

    /// Marks `stats` as read at `at`.
    pub fn mark_at(&mut self, at: Instant, stats: &LinkStats) {
        self.marks.push_back((at, stats.bytes_forwarded));
        while self
            .marks
            .front()
            .is_some_and(|(t, _)| at.saturating_duration_since(*t) > KEEP)
        {
            self.marks.pop_front();
        }
    }

    /// The share (0..) of the bottleneck's rate the forwarded bytes used
    /// from the latest mark at least `span` before the newest mark to the
    /// newest; `None` without a rate or without two such marks.
    pub fn use_over(&self, span: Duration) -> Option<f64> {
        if self.rate_bps == 0 {
            return None;
        }
        let &(now, bytes_now) = self.marks.back()?;
        let &(then, bytes_then) = self
            .marks
            .iter()
            .rev()
            .find(|(t, _)| now.saturating_duration_since(*t) >= span)?;
        let secs = now.saturating_duration_since(then).as_secs_f64();
        (secs > 0.0).then(|| {
            bytes_now.saturating_sub(bytes_then) as f64 * 8.0 / (self.rate_bps as f64 * secs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pathemu::Link;

    fn stats(bytes: u64) -> LinkStats {
        LinkStats {
            bytes_forwarded: bytes,
            ..LinkStats::default()
        }
    }

    #[test]
    fn use_is_bytes_over_rate_from_the_mark_a_span_back() {
        let config = PathConfig::bottleneck(8_000_000, Duration::from_millis(20), 100_000);
        let mut m = LinkMeter::new(&config);
        let t0 = Instant::now();
        assert_eq!(m.use_over(Duration::from_secs(1)), None);
        // 1 MB/s is the whole 8 Mbit/s link; marks every 0.5 s.
        m.mark_at(t0, &stats(0));
        m.mark_at(t0 + Duration::from_millis(500), &stats(500_000));
        // Not yet a second back.
        assert_eq!(m.use_over(Duration::from_secs(1)), None);
        m.mark_at(t0 + Duration::from_millis(1000), &stats(1_000_000));
        let full = m.use_over(Duration::from_secs(1)).unwrap();
        assert!((full - 1.0).abs() < 1e-9, "{full}");
        // The next second carries half as much: measured from the mark
        // a second back (at 0.5 s), not from the first.
        m.mark_at(t0 + Duration::from_millis(1500), &stats(1_250_000));
        m.mark_at(t0 + Duration::from_millis(2000), &stats(1_500_000));
        let half = m.use_over(Duration::from_secs(1)).unwrap();
        assert!((half - 0.5).abs() < 1e-9, "{half}");
    }

    #[test]
    fn a_policed_lossy_or_unlimited_link_measures_nothing() {
        let delay = Duration::from_millis(20);
        let policed = PathConfig::new(
            Link::with_delay_only(delay)
                .rate(50_000_000)
                .police(5_000_000, 10_000),
            Link::with_delay_only(delay),
        );
        let lossy = PathConfig::new(
            Link::with_delay_only(delay).rate(50_000_000).loss(0.01),
            Link::with_delay_only(delay),
        );
        let unlimited = PathConfig::new(Link::with_delay_only(delay), Link::with_delay_only(delay));
        for config in [policed, lossy, unlimited] {
            let mut m = LinkMeter::new(&config);
            let t0 = Instant::now();
            m.mark_at(t0, &stats(0));
            m.mark_at(t0 + Duration::from_secs(1), &stats(1_000));
            assert_eq!(m.use_over(Duration::from_secs(1)), None, "{config:?}");
        }
    }
}
