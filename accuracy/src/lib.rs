//! The accuracy harness: observer's verdicts over a space of emulated
//! situations whose limit is known by construction.
//!
//! ```text
//! space ──Situation──▶ truth ──Truth──┐
//!   │                                 ├──▶ score ──Report──▶ report (JSON, docs/accuracy.md)
//!   └──Situation──▶ run ──Outcome────┘
//! ```
//!
//! - [`space`]: what a situation is and how one is drawn from a seed,
//!   stratified by kind.
//! - [`stack`]: what the kernel makes of a setting (window per byte of
//!   buffer, ACK sizes) and the defaults the harness sets.
//! - [`sawtooth`]: CUBIC alone in a drop-tail queue, round by round.
//! - [`truth`]: every ceiling a situation sets, the tightest, and the
//!   verdicts each end should give. Pure arithmetic.
//! - [`outcome`]: what a run of one situation gave (a checkpoint line).
//! - [`score`]: the verdicts against the truth, and a run's figures.
//! - [`pairs`]: whether matched situations' ends name both limits.
//! - [`relax`]: the counterfactual: a limit relaxed, and the sample checked so.
//! - [`replayed`]: a recorded run replayed through the live flows.
//! - [`report`]: the figures as Markdown, in docs/accuracy.md.
//! - [`calibrate`]: each rule's record, as observer's table of measured
//!   confidences.
//!
//! The runner (root, pathemu and observer's probes) is in the binary.
//! docs/accuracy.md defines the space, the truth and the figures.

pub mod calibrate;
pub mod objects;
pub mod outcome;
pub mod pairs;
pub mod relax;
pub mod replayed;
pub mod report;
pub mod sawtooth;
pub mod score;
pub mod space;
pub mod stack;
pub mod truth;

#[cfg(test)]
mod score_tests;
#[cfg(test)]
mod space_tests;
#[cfg(test)]
mod truth_tests;
