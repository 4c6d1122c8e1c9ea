//! Bottleneck attribution: for a flow over an interval, say what limits its
//! throughput and show the numbers that prove it.
//!
//! Pure code, no I/O: it reads two [`Point`]s of one flow (or one point and
//! the flow's birth) and returns an [`Attribution`]. Verdicts are defined in
//! plain words in `docs/attribution.md`.
//!
//! Two signals are combined, because neither suffices alone:
//! - the kernel's chrono shares (busy, rwnd-limited, sndbuf-limited, as
//!   `tcp_info` reports them) and observer's cwnd-limited time: on an
//!   emulated 104 ms path a flow entirely bound by a 64 KB receiver window was
//!   rwnd-limited for only 56% of its busy time;
//! - the ceilings the sampled state implies (window / RTT) against the
//!   measured delivery rate, with the standing queue (srtt - min_rtt).
//!
//! Each side judges with an ordered table of named rules over a context
//! computed once per interval ([`rule`]; [`sender::rules::SENDER_RULES`],
//! [`receiver::rules::RECEIVER_RULES`]); every threshold is a field of
//! [`Config`].

/// `format!` for an explanation: an empty string, its arguments never
/// evaluated, when `cfg.explain` is off ([`Config::explain`]).
macro_rules! explain {
    ($cfg:expr, $($arg:tt)*) => {
        if $cfg.explain {
            format!($($arg)*)
        } else {
            String::new()
        }
    };
}

mod assemble;
pub mod calibration;
mod config;
mod evidence;
pub mod group;
mod matched;
mod measured;
mod point;
pub mod receiver;
pub mod rule;
pub mod sender;
mod side;
mod verdict;
mod verdict_text;
mod whatif;

pub use config::Config;
pub use evidence::{Ceilings, Evidence, LimitedTime, Receive, Shares};
pub use point::Point;
pub use side::Side;
pub use verdict::{Also, Attribution, Verdict, ends_agree, ends_agree_by_rule};
pub use whatif::{Bounds, PeerWindow, WhatIf, what_if};

use assemble::assemble;
use rule::Finding;

/// Attributes the interval from `from` (or the flow's birth, when `None`)
/// to `to`. Both points must be of the same flow.
pub fn attribute(from: Option<&Point>, to: &Point, cfg: &Config) -> Attribution {
    if from.is_none() && to.born_at_close {
        // No span to divide its counters by: say so rather than a rate.
        let ev = Evidence::between(Some(to), to);
        let side = if to.flow.bytes_received > to.flow.bytes_acked {
            Side::Receiver
        } else {
            Side::Sender
        };
        let explanation = explain!(
            cfg,
            "unknown: first seen at its close (observer never sampled it open)"
        );
        let found = Finding::new(Verdict::Unknown, 0.0, explanation);
        return assemble("first_seen_at_close", side, found, None, &ev, &to.flow, cfg);
    }
    let ev = Evidence::between(from, to);
    // The end that moved more data in the interval judges it; an interval
    // in which nothing moved (a window shut by a stalled reader) goes to
    // the end that has moved more over the flow's life.
    let receiving = if ev.bytes_received == 0 && ev.bytes_acked == 0 {
        to.flow.bytes_received > to.flow.bytes_acked
    } else {
        ev.bytes_received > ev.bytes_acked
    };
    if receiving {
        receiver::attribute(&ev, &to.flow, cfg)
    } else {
        sender::attribute(&ev, &to.flow, cfg)
    }
}

#[cfg(test)]
mod interval_tests;
#[cfg(test)]
mod rule_docs_tests;
#[cfg(test)]
mod whatif_tests;
