//! The shape of the engine: each side judges with an ordered table of named
//! rules over a context computed once per judgement. A rule recognises one
//! shape and returns a [`Finding`], or passes; the first finding decides.
//! The order is the table's, read top to bottom (docs/attribution.md lists
//! the rules in the same order, and a test holds the two together).
//!
//! A new rule touches: its side's table (`sender/rules.rs` or
//! `receiver/rules.rs`; the last rule always finds, so a new one goes
//! before it) with its judge function and, if it finds, a `Reason` variant
//! and its sentence in the side's `text.rs`; a test on its shape and just
//! outside it in the side's `rules_tests.rs`; a numbered item in
//! docs/attribution.md's list for the side, renumbering those after it
//! (`rule_docs_tests` checks names, order and numbers); every threshold
//! as a documented field of `Config`. Its confidence comes from the
//! accuracy harness: rejudge both seeds and regenerate `measured.rs`
//! (`cargo xtask accuracy --seed 1 --rejudge --calibrate
//! observer/src/attribution/measured.rs`).

use super::verdict::Verdict;

/// What a rule found: the verdict, how sure (0 to 1, before rounding), and
/// why, as the side's reason type (the explanation is written from it in
/// one place per side, and only when it is shown).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Finding<R> {
    /// The verdict.
    pub verdict: Verdict,
    /// Its confidence (0 to 1).
    pub confidence: f64,
    /// Which shape was found, with the figures the explanation needs
    /// beyond the context's.
    pub reason: R,
}

impl<R> Finding<R> {
    /// A finding of `verdict` at `confidence` for `reason`.
    pub fn new(verdict: Verdict, confidence: f64, reason: R) -> Finding<R> {
        Finding {
            verdict,
            confidence,
            reason,
        }
    }
}

/// The rule named where no rule of a table found (a table without its
/// last, always-finding rule): the verdict is then `unknown` at 0.
pub const NO_RULE: &str = "none";

/// The first finding of a table (`None`: no rule found) with its reason
/// written out by `explain`, and the rule's name.
pub fn written<R>(
    first: Option<(&'static str, Finding<R>)>,
    explain: impl FnOnce(R) -> String,
) -> (&'static str, Finding<String>) {
    match first {
        Some((rule, f)) => (
            rule,
            Finding::new(f.verdict, f.confidence, explain(f.reason)),
        ),
        None => (NO_RULE, Finding::new(Verdict::Unknown, 0.0, String::new())),
    }
}

/// One rule of a side's table; `J` is the side's test, a function from its
/// context to an optional finding (a type of its own per side, as the
/// context borrows the interval's evidence).
pub struct Rule<J> {
    /// Its name, as docs/attribution.md and the records' `rule` key give it.
    pub name: &'static str,
    /// What it recognises, in a line.
    pub recognises: &'static str,
    /// The test: a finding when the context has the rule's shape.
    pub judge: J,
}

/// A share used as a confidence: `share` held between `floor` (the least
/// confidence a verdict other than `unknown` is given at) and 1.
pub fn share_confidence(share: f64, floor: f64) -> f64 {
    share.clamp(floor, 1.0)
}

/// The confidence of a full bottleneck, which grows with the share of the
/// round trip spent queued: `floor` + `queue_us` / `rtt_us`, at most 1.
pub fn queue_confidence(queue_us: f64, rtt_us: f64, floor: f64) -> f64 {
    (floor + queue_us / rtt_us).min(1.0)
}
