//! Matched limits: a second limit named beside a verdict (docs/attribution.md,
//! "Matched limits"). Each side offers its candidates, each with how
//! strongly it binds; the strongest that passes its bar is named.

use super::{
    config::Config,
    verdict::{Also, Verdict},
};
use crate::units;

/// How a candidate binds, which sets the bar it must pass.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bar {
    /// A share of the interval (of busy time at the sender) in which the
    /// limit held the flow: at least `Config::also_share`.
    Share,
    /// The rate over the limit's ceiling: at least one over
    /// `Config::also_factor` (a ceiling within that factor of the rate),
    /// and at most `Config::max_fill` (a ceiling the rate outruns by more
    /// is not what held it).
    Ceiling,
}

/// A limit a side could name beside its verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// The limit, as a verdict of the side.
    pub verdict: Verdict,
    /// How strongly it binds (0 to 1): a share, or rate over ceiling.
    pub strength: f64,
    /// Which bar it must pass.
    pub bar: Bar,
    /// The figure that names it, in words.
    pub reason: String,
}

impl Candidate {
    /// A limit that held the flow `share` (0 to 1) of the interval by its
    /// own clock; `reason` says of what.
    pub fn share(verdict: Verdict, share: f64, reason: String) -> Candidate {
        Candidate {
            verdict,
            strength: share,
            bar: Bar::Share,
            reason,
        }
    }

    /// A limit whose ceiling (bits/s) at the round trip `rtt_us` (µs,
    /// named `rtt_name` in the text) lies near the flow's `rate` (bits/s,
    /// above 0): "`what` allows 9.5 Mbit/s at min_rtt 20 ms, 1.2 times
    /// the rate".
    pub fn ceiling(
        verdict: Verdict,
        rate: f64,
        ceiling: f64,
        what: &str,
        rtt_name: &str,
        rtt_us: f64,
    ) -> Candidate {
        Candidate {
            verdict,
            strength: rate / ceiling,
            bar: Bar::Ceiling,
            reason: format!(
                "{what} allows {} at {rtt_name} {}, {:.1} times the rate",
                units::rate(ceiling),
                units::time_us(rtt_us),
                ceiling / rate
            ),
        }
    }

    fn passes(&self, cfg: &Config) -> bool {
        match self.bar {
            Bar::Share => self.strength >= cfg.also_share,
            Bar::Ceiling => {
                cfg.also_factor > 0.0
                    && self.strength >= 1.0 / cfg.also_factor
                    && self.strength <= cfg.max_fill
            }
        }
    }
}

/// The strongest of `candidates` that passes its bar and is not `verdict`
/// itself (nor `unknown`), as the judgement's `also`; None where `verdict`
/// is `unknown` or none passes.
pub fn strongest(verdict: Verdict, candidates: Vec<Candidate>, cfg: &Config) -> Option<Also> {
    if verdict == Verdict::Unknown {
        return None;
    }
    candidates
        .into_iter()
        .filter(|c| c.verdict != verdict && c.verdict != Verdict::Unknown && c.passes(cfg))
        .max_by(|a, b| a.strength.total_cmp(&b.strength))
        .map(|c| Also {
            verdict: c.verdict,
            share: (c.strength.min(1.0) * 100.0).round() / 100.0,
            reason: if cfg.explain { c.reason } else { String::new() },
        })
}

/// `explanation` with the second limit said after it: "...; also
/// receive_window: rwnd-limited 34% of busy time".
pub fn with_also(explanation: String, also: Option<&Also>, cfg: &Config) -> String {
    match also {
        Some(a) if cfg.explain && !explanation.is_empty() => explanation + &a.clause(),
        _ => explanation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(verdict: Verdict, strength: f64, bar: Bar) -> Candidate {
        Candidate {
            verdict,
            strength,
            bar,
            reason: format!("{verdict} {strength}"),
        }
    }

    #[test]
    fn the_strongest_candidate_past_its_bar_is_named() {
        let cfg = Config::default();
        let also = strongest(
            Verdict::Path,
            vec![
                cand(Verdict::ReceiveWindow, 0.3, Bar::Share),
                cand(Verdict::Application, 0.45, Bar::Share),
            ],
            &cfg,
        )
        .expect("a candidate passes");
        assert_eq!(also.verdict, Verdict::Application);
        assert_eq!(also.share, 0.45);
        assert_eq!(also.reason, "application 0.45");
    }

    #[test]
    fn bars_hold_at_their_edge_and_just_under_it() {
        let cfg = Config::default();
        let one = |c: Candidate| strongest(Verdict::Path, vec![c], &cfg).map(|a| a.verdict);
        // A share: at also_share, and just under.
        assert_eq!(
            one(cand(Verdict::ReceiveWindow, cfg.also_share, Bar::Share)),
            Some(Verdict::ReceiveWindow)
        );
        assert_eq!(
            one(cand(
                Verdict::ReceiveWindow,
                cfg.also_share - 0.01,
                Bar::Share
            )),
            None
        );
        // A ceiling: within also_factor of the rate, and just beyond.
        let edge = 1.0 / cfg.also_factor;
        assert_eq!(
            one(cand(Verdict::ReceiveWindow, edge, Bar::Ceiling)),
            Some(Verdict::ReceiveWindow)
        );
        assert_eq!(
            one(cand(Verdict::ReceiveWindow, edge - 0.01, Bar::Ceiling)),
            None
        );
        // A ceiling the rate outruns by more than max_fill held nothing.
        assert_eq!(
            one(cand(Verdict::SendBuffer, cfg.max_fill, Bar::Ceiling)),
            Some(Verdict::SendBuffer)
        );
        assert_eq!(
            one(cand(Verdict::SendBuffer, cfg.max_fill + 0.01, Bar::Ceiling)),
            None
        );
    }

    #[test]
    fn the_verdict_itself_and_unknown_are_never_named_again() {
        let cfg = Config::default();
        assert_eq!(
            strongest(
                Verdict::Path,
                vec![cand(Verdict::Path, 0.9, Bar::Share)],
                &cfg
            ),
            None
        );
        assert_eq!(
            strongest(
                Verdict::Unknown,
                vec![cand(Verdict::Path, 0.9, Bar::Share)],
                &cfg
            ),
            None
        );
        let quiet = Config {
            explain: false,
            ..cfg
        };
        let also = strongest(
            Verdict::Path,
            vec![cand(Verdict::Sender, 0.5, Bar::Share)],
            &quiet,
        );
        assert_eq!(also.map(|a| a.reason), Some(String::new()));
    }
}
