//! The flow filter language (`observer::filter`, `--filter` of `flows`,
//! `top` and `run`): any text parses or gives a one-line error whose
//! column lies within the text; what parses judges a few flows, judged and
//! not, without panicking, `not (X)` selects exactly what `X` does not,
//! `observer run` refuses exactly the filters with a `rate` term,
//! and neither nesting nor wildcards can exhaust the stack or the time.
#![no_main]

use libfuzzer_sys::fuzz_target;
use observer::{
    attribution::{Attribution, Evidence, Side, Verdict},
    filter::Filter,
    model::{clock::Clock, flow::Flow},
};
use observer_common::FlowSample;

/// An IPv4 flow (10.0.0.1:40000 to 192.0.2.7:443, iperf3, established)
/// and an IPv6 one (2001:db8::1:5201 from 2001:db8:1::9:50000, closed).
fn flows() -> [Flow; 2] {
    let mut s = FlowSample::ZERO;
    s.cookie = 1;
    s.state = 1;
    s.mss = 1448;
    s.pid = 1234;
    s.cgroup_id = 5555;
    s.netns = 4_026_531_840;
    s.comm[..6].copy_from_slice(b"iperf3");
    s.saddr[10..16].copy_from_slice(&[0xff, 0xff, 10, 0, 0, 1]);
    s.daddr[10..16].copy_from_slice(&[0xff, 0xff, 192, 0, 2, 7]);
    s.sport = 40000;
    s.dport = 443;
    let mut t = s;
    t.saddr = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    t.daddr = [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9];
    t.sport = 5201;
    t.dport = 50000;
    t.state = 7;
    t.closed_ns = 1;
    let clock = Clock::fixed(0, 250);
    [
        Flow::from_sample(&s, &clock, 0),
        Flow::from_sample(&t, &clock, 0),
    ]
}

/// Judged `verdict` from `side`, moving `bps` (bits/s) each way as the
/// `rate` term reads it.
fn judged(verdict: Verdict, side: Side, bps: (f64, f64)) -> Attribution {
    let mut evidence = Evidence::default();
    (evidence.rate_bps, evidence.recv_rate_bps) = bps;
    Attribution {
        verdict,
        rule: "fuzz",
        confidence: 0.9,
        side,
        explanation: String::new(),
        evidence,
        what_if: None,
        also: None,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let filter = match Filter::parse(text) {
        Ok(f) => f,
        Err(e) => {
            let chars = text.chars().count();
            assert!((1..=chars + 1).contains(&e.column), "{text:?}: {e}");
            assert!(!e.to_string().contains('\n'), "{text:?}: {e}");
            assert_eq!(e.caret(text).lines().count(), 2, "{text:?}");
            return;
        }
    };
    assert_eq!(filter.text(), text);
    // What `run` refuses is exactly what reads a rate.
    assert_eq!(
        Filter::parse_for_counters(text).is_err(),
        filter.reads_rate()
    );
    // One level deeper may pass the nesting bound; only then it errs.
    let negated = Filter::parse(&format!("not ({text})")).ok();
    let attributions = [
        None,
        Some(judged(Verdict::ReceiveWindow, Side::Receiver, (0.0, 80e6))),
        Some(judged(Verdict::Path, Side::Sender, (12e6, 3e5))),
        Some(judged(Verdict::Application, Side::Sender, (0.0, 0.0))),
    ];
    for flow in &flows() {
        for a in &attributions {
            let selected = filter.matches(flow, a.as_ref());
            if let Some(n) = &negated {
                assert_eq!(n.matches(flow, a.as_ref()), !selected, "{text:?}");
            }
        }
    }
});
