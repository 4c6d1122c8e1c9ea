//! The counterfactual: a situation with one of its limits relaxed
//! [`FACTOR`] times (or removed), and which situations are checked so.
//!
//! Relaxing the tightest limit must raise the rate; relaxing the second
//! must not (`crate::score::as_predicted`). A situation that fails is a
//! fault of the truth model, reported and not scored.

use crate::{
    space::{Cc, RcvLimit, Reader, Situation, SndLimit, Stall, Writer, rng_for},
    stack::{MSS, PACKET_BYTES, TCP_RMEM, TCP_WMEM},
    truth::{Limit, truth},
};
use rand::RngExt;

/// How far a limit is relaxed.
pub const FACTOR: u64 = 4;
/// The fastest link a relaxed situation may have (bits/s): pathemu keeps
/// time for one flow up to 300-600 Mbit/s.
pub const LINK_CAP_BPS: u64 = 400_000_000;
/// The share of clear situations checked by counterfactual, chosen from
/// the seed before any run.
pub const SAMPLE_SHARE: f64 = 0.25;
/// The draw stream of the sample (see [`rng_for`]).
const SAMPLE_STREAM: u64 = 1;

/// Whether situation `index` of (`seed`, `cc`) is in the counterfactual
/// sample: clear, and drawn with probability [`SAMPLE_SHARE`].
pub fn sampled(s: &Situation, seed: u64, cc: Cc) -> bool {
    let t = truth(s);
    t.clear
        && t.scorable()
        && rng_for(seed, cc, s.index, SAMPLE_STREAM).random::<f64>() < SAMPLE_SHARE
}

/// `s` with `limit` relaxed [`FACTOR`] times, and what was changed;
/// `None` where it cannot be (a link already at [`LINK_CAP_BPS`]).
pub fn relax(s: &Situation, limit: Limit) -> Option<(Situation, String)> {
    let mut r = s.clone();
    let f = FACTOR;
    let change = match limit {
        Limit::Link => {
            let bps = (s.link_bps * f).min(LINK_CAP_BPS);
            if bps <= s.link_bps * 2 {
                return None;
            }
            r.queue_bytes = s.queue_bytes * bps / s.link_bps;
            r.link_bps = bps;
            format!("link {} -> {bps} bit/s", s.link_bps)
        }
        Limit::Queue => {
            if let Writer::Requests { bytes } | Writer::Short { bytes } = s.writer {
                // Objects meet the link's queue as bursts of up to an
                // object (`crate::objects`): a queue that holds one
                // removes the limit where 4 times the queue would not.
                let burst = bytes.div_ceil(MSS) * PACKET_BYTES;
                r.queue_bytes = (s.queue_bytes * f).max(burst);
                let change = if r.queue_bytes > s.queue_bytes * f {
                    format!("queue {} B, an object's burst", r.queue_bytes)
                } else {
                    format!("queue x{f}")
                };
                return Some((r, change));
            }
            // The slowest stage's queue (or bucket), as the truth takes it.
            let police = s.police.map_or(u64::MAX, |(bps, _)| bps);
            let shaper = s.shaper.map_or(u64::MAX, |(bps, _)| bps);
            if police < shaper.min(s.link_bps) {
                r.police = s.police.map(|(bps, b)| (bps, b * f));
            } else if shaper < s.link_bps {
                r.shaper = s.shaper.map(|(bps, q)| (bps, q * f));
            } else {
                r.queue_bytes = s.queue_bytes * f;
            }
            format!("queue x{f}")
        }
        Limit::Shaper => {
            let (bps, q) = s.shaper?;
            r.shaper = Some((bps * f, q * f));
            format!("shaper x{f}")
        }
        Limit::Policer => {
            let (bps, b) = s.police?;
            r.police = Some((bps * f, b * f));
            format!("policer x{f}")
        }
        Limit::Loss => {
            r.loss_fwd = s.loss_fwd / f as f64;
            format!("loss / {f}")
        }
        Limit::Window => {
            r.rcv = Some(match s.rcv? {
                RcvLimit::RmemMax(b) => RcvLimit::RmemMax(b * f),
                // SO_RCVBUF is capped at rmem_max: go to tcp_rmem instead.
                RcvLimit::Rcvbuf(b) => RcvLimit::RmemMax(2 * b * f),
                RcvLimit::Clamp(b) => RcvLimit::Clamp(b * f),
            });
            format!("window x{f}")
        }
        Limit::DefaultWindow => {
            r.rcv = Some(RcvLimit::RmemMax(TCP_RMEM[2] * f));
            format!("tcp_rmem max x{f}")
        }
        Limit::SendBuffer => {
            r.snd = Some(match s.snd? {
                SndLimit::WmemMax(b) => SndLimit::WmemMax(b * f),
                SndLimit::Sndbuf(b) => SndLimit::WmemMax(2 * b * f),
            });
            format!("send buffer x{f}")
        }
        Limit::DefaultSendBuffer => {
            r.snd = Some(SndLimit::WmemMax(TCP_WMEM[2] * f));
            format!("tcp_wmem max x{f}")
        }
        Limit::Writer | Limit::Pacing => {
            r.writer = match s.writer {
                Writer::Paced { bps } => Writer::Paced { bps: bps * f },
                Writer::Chunks { bytes, period_ms } => Writer::Chunks {
                    bytes: bytes * f,
                    period_ms,
                },
                Writer::MaxPacing { bps } => Writer::MaxPacing { bps: bps * f },
                _ => return None,
            };
            format!("writer x{f}")
        }
        Limit::Reader => {
            let Reader::Chunks { bytes, period_ms } = s.reader else {
                return None;
            };
            r.reader = Reader::Chunks {
                bytes: bytes * f,
                period_ms,
            };
            format!("reader x{f}")
        }
        Limit::Requests | Limit::SlowStart => match s.writer {
            // Removed: the objects as one stream. Scaling them would not
            // do: where a shallow queue drops each object's burst, 4
            // times the object pays the same drops (`crate::objects`).
            Writer::Requests { .. } | Writer::Short { .. } => {
                r.writer = Writer::Bulk;
                "objects as one stream".to_string()
            }
            Writer::Bulk => {
                // A bulk flow's slow start: a transfer 4 times as long.
                r.secs = s.secs * f;
                format!("transfer x{f}")
            }
            _ => return None,
        },
        Limit::AckPath => {
            let (bps, q) = s.reverse?;
            r.reverse = Some((bps * f, q));
            format!("reverse x{f}")
        }
        Limit::Outage => {
            let Some(Stall::Outage { for_ms, every_ms }) = s.stall else {
                return None;
            };
            r.stall = Some(Stall::Outage {
                for_ms: for_ms / f,
                every_ms,
            });
            format!("outage / {f}")
        }
        Limit::BlackHole => {
            r.stall = None;
            "black hole removed".to_string()
        }
        Limit::Host => return None,
    };
    Some((r, change))
}

/// What the counterfactual reruns of `s` change, as [`relax`] words it:
/// its tightest limit, then its second (where that can be relaxed).
pub fn changes(s: &Situation) -> Vec<String> {
    truth(s)
        .ceilings
        .iter()
        .take(2)
        .map_while(|c| relax(s, c.limit).map(|(_, change)| change))
        .collect()
}

/// The gain in rate the truth predicts for `s` with `limit` relaxed: the
/// tightest ceiling after over the tightest before. 1 where the tightest
/// does not depend on `limit`; more where it adds `limit`'s time to its
/// own (an object's round trips plus its time through the link).
pub fn predicted_gain(s: &Situation, limit: Limit) -> Option<f64> {
    let before = truth(s).tightest().bps;
    let (r, _) = relax(s, limit)?;
    Some(truth(&r).tightest().bps / before.max(1.0))
}

/// `s` with the setting behind a window verdict's what-if scaled from
/// the window now (`from`, bytes) to the window it asks for (`to`): the
/// receiver's buffer for `receive_window`, the sender's for
/// `send_buffer`, as the situation sets it (or the default maximum).
/// `None` for other verdicts, or a what-if that asks for no more.
pub fn apply_what_if(
    s: &Situation,
    verdict: &str,
    from: u64,
    to: u64,
) -> Option<(Situation, String)> {
    if from == 0 || to <= from {
        return None;
    }
    let scale = |b: u64| (b as f64 * to as f64 / from as f64).ceil() as u64;
    let mut r = s.clone();
    let change = match verdict {
        "receive_window" => {
            let rmem = match s.rcv {
                Some(RcvLimit::RmemMax(b)) => scale(b),
                // SO_RCVBUF is capped at rmem_max: the same buffer as tcp_rmem.
                Some(RcvLimit::Rcvbuf(b)) => scale(2 * b),
                Some(RcvLimit::Clamp(_)) => return None,
                None => scale(TCP_RMEM[2]),
            };
            r.rcv = Some(RcvLimit::RmemMax(rmem));
            format!("tcp_rmem max {rmem}")
        }
        "send_buffer" => {
            let wmem = match s.snd {
                Some(SndLimit::WmemMax(b)) => scale(b),
                Some(SndLimit::Sndbuf(b)) => scale(2 * b),
                None => scale(TCP_WMEM[2]),
            };
            r.snd = Some(SndLimit::WmemMax(wmem));
            format!("tcp_wmem max {wmem}")
        }
        _ => return None,
    };
    Some((r, change))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::space::draw;

    #[test]
    fn relaxing_a_clear_situations_tightest_limit_raises_its_truth() {
        let mut checked = 0;
        for i in 0..600 {
            let s = draw(11, Cc::Cubic, i);
            let t = truth(&s);
            if !t.clear || !t.scorable() {
                continue;
            }
            let Some((r, change)) = relax(&s, t.tightest().limit) else {
                continue;
            };
            checked += 1;
            // The truth's own prediction for the first counterfactual rerun.
            let after = truth(&r).tightest().bps;
            assert!(
                after >= crate::score::RELAXED_GAIN * t.tightest().bps,
                "#{i} {change}: {} -> {after}",
                t.tightest().bps
            );
        }
        assert!(checked > 300, "{checked}");
    }

    #[test]
    fn a_what_if_scales_the_setting_behind_the_window() {
        let mut s = draw(11, Cc::Cubic, 4);
        s.rcv = Some(RcvLimit::Rcvbuf(100_000));
        // A window of 122 KB now, 244 KB asked for: twice the buffer.
        let (r, change) = apply_what_if(&s, "receive_window", 122_000, 244_000).unwrap();
        assert_eq!(r.rcv, Some(RcvLimit::RmemMax(400_000)));
        assert_eq!(change, "tcp_rmem max 400000");
        s.snd = None;
        let (r, _) = apply_what_if(&s, "send_buffer", 100, 150).unwrap();
        assert_eq!(r.snd, Some(SndLimit::WmemMax(6_291_456)));
        // No more window, or a verdict with no setting: nothing to apply.
        assert!(apply_what_if(&s, "receive_window", 100, 100).is_none());
        assert!(apply_what_if(&s, "congestion_window", 100, 200).is_none());
    }

    #[test]
    fn the_sample_is_a_quarter_of_the_clear_situations() {
        let clear: Vec<_> = (0..2_000)
            .map(|i| draw(5, Cc::Bbr, i))
            .filter(|s| truth(s).clear && truth(s).scorable())
            .collect();
        let n = clear.iter().filter(|s| sampled(s, 5, Cc::Bbr)).count() as f64;
        let share = n / clear.len() as f64;
        assert!((0.2..0.3).contains(&share), "{share}");
    }
}
