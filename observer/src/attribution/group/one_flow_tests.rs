//! One judged flow: its own verdict answers the group question, hedged
//! where the limit sits in an end host.

use super::{fixtures::*, judge::Limit};
use crate::attribution::{Side, Verdict};

/// A 52 MB `apt-get download` from this machine's package mirror, as
/// observer read it on 2026-12-05: one connection at 3.50 Gbit/s, its
/// receiving end `sender`.
fn mirror_download(verdict: Verdict, rule: &'static str) -> F {
    F {
        side: Side::Receiver,
        verdict,
        rule,
        rate_bps: 3.5e9,
        secs: 0.12,
        min_rtt_us: 150,
        srtt_us: 200,
        comm: "http",
        ..F::default()
    }
}

#[test]
fn one_flow_held_in_an_end_host_does_not_promise_more_streams() {
    for (verdict, rule, words) in [
        (
            Verdict::Sender,
            "sender_held",
            "the sending host (sender, 3.50 Gbit/s)",
        ),
        (
            Verdict::ReceiverApplication,
            "reader",
            "this host's reader (receiver_application, 3.50 Gbit/s)",
        ),
    ] {
        let g = only_group(&[mirror_download(verdict, rule)]);
        assert_eq!((g.limit, g.rule), (Limit::PerFlow, "one_flow"));
        assert_eq!(
            g.explanation,
            format!(
                "per-flow limit: one flow, held by {words}: a limit in an end host; parallel streams would add rate only where that host has room for them (one process's CPU or pacing, not the whole host's), which one flow cannot show"
            )
        );
    }
    // Just outside: the sender's congestion window is the flow's alone.
    let g = only_group(&[mirror_download(Verdict::CongestionWindow, "loss_held")]);
    assert_eq!((g.limit, g.rule), (Limit::PerFlow, "one_flow"));
    assert!(
        g.explanation
            .ends_with("a limit of its own; parallel streams would each bring their own"),
        "{}",
        g.explanation
    );
}
