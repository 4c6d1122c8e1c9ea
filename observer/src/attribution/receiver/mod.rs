//! Verdicts made from the receiving end (a download as this host sees it).
//!
//! The receiver cannot read the sender's windows, but it sees what they
//! produce: how much data is in flight (the receive rate x the receiver
//! RTT) against the window this host advertises, whether its own reader
//! keeps up (unread bytes, a closed window), whether data arrives out of
//! order (loss upstream), and whether the sender pauses with the window
//! open (gaps between arrivals). The context of the interval is in
//! [`context`], the ordered rules in [`rules::RECEIVER_RULES`], their
//! explanations in `text`.

mod also;
pub mod context;
pub mod rules;
mod text;

use super::{
    assemble::assemble, config::Config, evidence::Evidence, rule::written, side::Side,
    verdict::Attribution,
};
use crate::model::flow::Flow;
use context::ReceiverCtx;

/// The receiver-side verdict for `ev`; `flow` is the flow at the end of
/// the interval (its buffer settings name the cause of a window limit).
pub fn attribute(ev: &Evidence, flow: &Flow, cfg: &Config) -> Attribution {
    let c = ReceiverCtx::new(ev, flow, cfg);
    let (rule, found) = written(rules::first(&c), |r| text::explain(r, &c));
    let also = also::also(&c, found.verdict);
    assemble(rule, Side::Receiver, found, also, ev, flow, cfg)
}

#[cfg(test)]
mod fixtures;
#[cfg(test)]
mod pace_tests;
#[cfg(test)]
mod pause_tests;
#[cfg(test)]
mod reader_tests;
#[cfg(test)]
mod request_tests;
#[cfg(test)]
mod rules_tests;
#[cfg(test)]
mod verdict_tests;
