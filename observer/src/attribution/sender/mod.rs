//! Verdicts made from the sending end: the context of the interval
//! ([`context`]), the ordered rules ([`rules::SENDER_RULES`]) and their
//! explanations (`text`).

mod also;
pub mod context;
pub mod rules;
mod text;

use super::{
    assemble::assemble, config::Config, evidence::Evidence, rule::written, side::Side,
    verdict::Attribution,
};
use crate::model::flow::Flow;
use context::SenderCtx;

/// The sender-side verdict for `ev`; `flow` is the flow at the interval's
/// end.
pub fn attribute(ev: &Evidence, flow: &Flow, cfg: &Config) -> Attribution {
    let c = SenderCtx::new(ev, flow, cfg);
    let (rule, found) = written(rules::first(&c), |r| text::explain(r, &c));
    let also = also::also(&c, found.verdict);
    assemble(rule, Side::Sender, found, also, ev, flow, cfg)
}

#[cfg(test)]
mod early_rules_tests;
#[cfg(test)]
pub(super) mod fixtures;
#[cfg(test)]
mod real_world_tests;
#[cfg(test)]
mod rules_tests;
#[cfg(test)]
mod verdict_tests;
