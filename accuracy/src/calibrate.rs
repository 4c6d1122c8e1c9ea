//! The rules' measured confidences: each rule's record over a seed's
//! scored ends (clear and matched), written as observer's table
//! (`observer/src/attribution/measured.rs`, read by
//! `observer::attribution::calibration`).

use std::collections::BTreeMap;

use observer::attribution::{receiver::rules::RECEIVER_RULES, sender::rules::SENDER_RULES};

use crate::score::{End, ScoredEnd};

/// One rule's record: ends decided, and right.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// Ends it decided.
    pub ends: u32,
    /// Of those, right.
    pub right: u32,
}

/// The record of every rule that gave a verdict other than `unknown` in
/// `judged`, by end (`Sender` first) and the rule's place in its side's
/// table. An end is taken as its side: the data's sender is judged by the
/// sender's rules, its receiver by the receiver's; a rule the side's
/// table does not have (a receiving end judged by the sender's rules
/// because nothing moved) is left out.
pub fn records(judged: &[ScoredEnd]) -> Vec<(End, &'static str, Record)> {
    let sender: Vec<&'static str> = SENDER_RULES.iter().map(|r| r.name).collect();
    let receiver: Vec<&'static str> = RECEIVER_RULES.iter().map(|r| r.name).collect();
    let mut by: BTreeMap<(u8, usize), (End, &'static str, Record, bool)> = BTreeMap::new();
    for j in judged {
        let (side, table) = match j.end {
            End::Sender => (0, &sender),
            End::Receiver => (1, &receiver),
        };
        let Some(place) = table.iter().position(|r| *r == j.rule) else {
            continue;
        };
        let e = by
            .entry((side, place))
            .or_insert((j.end, table[place], Record::default(), false));
        e.2.ends += 1;
        e.2.right += u32::from(j.right);
        e.3 |= j.given == "unknown";
    }
    by.into_values()
        .filter(|(_, _, _, unknown)| !unknown)
        .map(|(end, rule, r, _)| (end, rule, r))
        .collect()
}

/// observer's table of `records`, measured on `seed` at `commit`, as the
/// Rust source of `observer/src/attribution/measured.rs` (as `cargo fmt`
/// leaves it).
pub fn source(records: &[(End, &'static str, Record)], seed: u64, commit: &str) -> String {
    let mut s = format!(
        "//! Written by `cargo xtask accuracy --seed {seed} --rejudge --calibrate\n\
         //! observer/src/attribution/measured.rs` at {commit}: each rule's record\n\
         //! over the accuracy harness's tuning seed ([`super::calibration`]). Do\n\
         //! not edit by hand; write it again after a change that moves verdicts.\n\
         \n\
         use super::{{calibration::Measured, side::Side}};\n\
         \n\
         /// The tuning seed's records, by side and rule.\n\
         pub const MEASURED: &[Measured] = &[\n"
    );
    for (end, rule, r) in records {
        let side = match end {
            End::Sender => "Sender",
            End::Receiver => "Receiver",
        };
        s.push_str(&format!(
            "    Measured {{\n        side: Side::{side},\n        rule: \"{rule}\",\n        \
             ends: {},\n        right: {},\n    }},\n",
            r.ends, r.right
        ));
    }
    s.push_str("];\n");
    s
}
