//! Groups at one bottleneck: flows at the path, `shared` where their
//! senders' queues agree, `mixed` where they differ, and how the text
//! counts them.

use super::{fixtures::*, judge::Limit};
use crate::attribution::{Side, Verdict};

/// The same flow seen from its sending end (an upload), whose srtt
/// compares with other senders'.
fn uploading(rate: f64, queue_us: u32) -> F {
    F {
        side: Side::Sender,
        rule: "full_bottleneck",
        ..at_bottleneck(rate, queue_us)
    }
}

#[test]
fn a_shared_group_says_how_many_of_its_flows_are_at_the_path() {
    // A slow reader's download with a tenth of the bytes beside one at
    // the bottleneck: shared, and the text does not call one flow a
    // group.
    let reader = F {
        verdict: Verdict::ReceiverApplication,
        rule: "reader",
        ..at_bottleneck(2e6, 30_000)
    };
    let g = only_group(&[at_bottleneck(18e6, 30_000), reader]);
    assert_eq!((g.limit, g.rule), (Limit::Shared, "one_bottleneck"));
    assert!(
        g.explanation.starts_with(
            "shared limit: 1 of 2 flows at the path's bottleneck; the group ran 20.0 Mbit/s"
        ),
        "{}",
        g.explanation
    );
}

#[test]
fn four_cubic_downloads_through_one_bottleneck_are_shared() {
    let g = only_group(&[
        at_bottleneck(4.6e6, 60_000),
        at_bottleneck(5.3e6, 64_000),
        at_bottleneck(4.9e6, 58_000),
        at_bottleneck(5.0e6, 62_000),
    ]);
    assert_eq!((g.limit, g.rule), (Limit::Shared, "one_bottleneck"));
    assert_eq!(
        g.explanation,
        "shared limit: 4 flows at the path's bottleneck together ran 19.8 Mbit/s (the fastest alone 5.3 Mbit/s), no sender's queue to compare (a receiver's RTT estimate does not compare): one bottleneck; more streams would share it"
    );
    assert_eq!(g.what_if.len(), 1);
    assert!(!g.what_if[0].helps);
    // From the sending end the queues compare.
    let g = only_group(&[
        uploading(4.6e6, 60_000),
        uploading(5.3e6, 64_000),
        uploading(4.9e6, 58_000),
        uploading(5.0e6, 62_000),
    ]);
    assert_eq!((g.limit, g.rule), (Limit::Shared, "one_bottleneck"));
    assert!(
        g.explanation
            .contains("queue delay 58.0 ms to 64.0 ms on 4 of them: one bottleneck"),
        "{}",
        g.explanation
    );
    // Senders with no queue standing say so, and name BBR only for BBR.
    let g = only_group(&[uploading(4.6e6, 500), uploading(5.3e6, 400)]);
    assert!(
        g.explanation
            .contains("no queue standing on their senders: one bottleneck"),
        "{}",
        g.explanation
    );
    let bbr = |rate| F {
        cc: "bbr",
        ..uploading(rate, 500)
    };
    let g = only_group(&[bbr(4.6e6), bbr(5.3e6)]);
    assert!(
        g.explanation
            .contains("no queue standing on their senders (BBR paces to keep little)"),
        "{}",
        g.explanation
    );
}

#[test]
fn queues_that_differ_are_not_one_bottleneck() {
    // 31 ms against 64 ms: under half (group_queue_agreement).
    let g = only_group(&[uploading(4.6e6, 31_000), uploading(5.3e6, 64_000)]);
    assert_eq!((g.limit, g.rule), (Limit::Mixed, "different_queues"));
    // 33 ms against 64 ms: within it.
    let g = only_group(&[uploading(4.6e6, 33_000), uploading(5.3e6, 64_000)]);
    assert_eq!((g.limit, g.rule), (Limit::Shared, "one_bottleneck"));
    // Downloads' receiver RTTs do not compare: a reader that pauses
    // shrinks its estimate (12 ms beside 68 ms through one bottleneck).
    let g = only_group(&[at_bottleneck(9.8e6, 12_000), at_bottleneck(19.3e6, 68_000)]);
    assert_eq!((g.limit, g.rule), (Limit::Shared, "one_bottleneck"));
}
