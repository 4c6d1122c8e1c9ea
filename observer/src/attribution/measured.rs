//! Written by `cargo xtask accuracy --seed 1 --rejudge --calibrate
//! observer/src/attribution/measured.rs` at 39ee777: each rule's record
//! over the accuracy harness's tuning seed ([`super::calibration`]). Do
//! not edit by hand; write it again after a change that moves verdicts.

use super::{calibration::Measured, side::Side};

/// The tuning seed's records, by side and rule.
pub const MEASURED: &[Measured] = &[
    Measured {
        side: Side::Sender,
        rule: "stalled",
        ends: 8,
        right: 8,
    },
    Measured {
        side: Side::Sender,
        rule: "mostly_idle",
        ends: 8,
        right: 8,
    },
    Measured {
        side: Side::Sender,
        rule: "pacing_cap",
        ends: 7,
        right: 7,
    },
    Measured {
        side: Side::Sender,
        rule: "buffer_through_queue",
        ends: 3,
        right: 3,
    },
    Measured {
        side: Side::Sender,
        rule: "send_buffer",
        ends: 5,
        right: 5,
    },
    Measured {
        side: Side::Sender,
        rule: "peer_reader",
        ends: 12,
        right: 12,
    },
    Measured {
        side: Side::Sender,
        rule: "window_through_queue",
        ends: 3,
        right: 3,
    },
    Measured {
        side: Side::Sender,
        rule: "receive_window",
        ends: 9,
        right: 9,
    },
    Measured {
        side: Side::Sender,
        rule: "full_bottleneck",
        ends: 60,
        right: 60,
    },
    Measured {
        side: Side::Sender,
        rule: "congestion_window",
        ends: 23,
        right: 12,
    },
    Measured {
        side: Side::Sender,
        rule: "application",
        ends: 5,
        right: 5,
    },
    Measured {
        side: Side::Sender,
        rule: "pacing",
        ends: 56,
        right: 56,
    },
    Measured {
        side: Side::Receiver,
        rule: "reader",
        ends: 12,
        right: 12,
    },
    Measured {
        side: Side::Receiver,
        rule: "window_through_queue",
        ends: 2,
        right: 2,
    },
    Measured {
        side: Side::Receiver,
        rule: "receive_window",
        ends: 9,
        right: 9,
    },
    Measured {
        side: Side::Receiver,
        rule: "shared_bottleneck",
        ends: 10,
        right: 10,
    },
    Measured {
        side: Side::Receiver,
        rule: "loss_held",
        ends: 27,
        right: 16,
    },
    Measured {
        side: Side::Receiver,
        rule: "requests",
        ends: 1,
        right: 1,
    },
    Measured {
        side: Side::Receiver,
        rule: "sender_held",
        ends: 28,
        right: 19,
    },
    Measured {
        side: Side::Receiver,
        rule: "even_arrival",
        ends: 102,
        right: 96,
    },
];
