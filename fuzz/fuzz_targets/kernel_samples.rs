//! Records the kernel hands observer (flow-map samples and closed-flow
//! records, `FlowSample`, any bit pattern) through everything that reads
//! them: the live flows and their verdicts, the Prometheus catalogue, the
//! one-shot flow table with its JSON and table output, and the `top` view.
//! No record may panic (overflow, slicing, formatting), and the exported
//! counters never go backwards whatever the samples do, as long as the
//! byte and time counters are ones a kernel can reach (below 2^56: past
//! that, Prometheus' u64 counters may wrap).
//!
//! Input: polls, each a header byte (low 3 bits: records in this poll; next
//! 3 bits: how many of them are closed records; the byte also advances the
//! clock) followed by that many `FLOW_SAMPLE_SIZE`-byte records.
#![no_main]

use std::collections::HashMap;

use libfuzzer_sys::fuzz_target;
use observer::{
    attribution,
    model::clock::Clock,
    sink::metrics::{Catalogue, CatalogueConfig, encode, labels::Aggregation},
    sink::records,
    sink::tui::{
        draw::draw,
        state::{App, Options, Snapshot},
    },
    track::live::{LiveFlows, LiveConfig},
    track::poller::PollStats,
    track::snapshot::FlowTable,
};
use observer_common::{Counter, FlowSample, sample::FLOW_SAMPLE_SIZE};
use ratatui::{Terminal, backend::TestBackend};

fn record(bytes: &[u8]) -> FlowSample {
    let mut s = FlowSample::ZERO;
    // SAFETY: FlowSample is repr(C) plain data (aya::Pod): every bit pattern
    // is a value; `bytes` holds FLOW_SAMPLE_SIZE bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            (&mut s as *mut FlowSample).cast::<u8>(),
            FLOW_SAMPLE_SIZE,
        );
    }
    // A few flows, so samples update each other.
    s.cookie &= 7;
    s
}

fn counters_of(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (name, v) = l.rsplit_once(' ')?;
            let base = name.split('{').next()?;
            let counter = base.ends_with("_total")
                || base.ends_with("_count")
                || base.ends_with("_sum")
                || base.ends_with("_bucket");
            counter.then(|| Some((name.to_string(), v.parse::<f64>().ok()?)))?
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let clock = Clock::fixed(1_700_000_000_000_000_000, 250);
    let cfg = LiveConfig {
        history: 8,
        ..LiveConfig::default()
    };
    let start = 1u64 << 40;
    let mut live = LiveFlows::new(cfg, clock, start);
    let agg = Aggregation {
        comm: true,
        cgroup: true,
        local_port: true,
        remote_prefix: Some((24, 64)),
        workload: true,
    };
    let Ok(mut cat) = Catalogue::new(CatalogueConfig {
        aggregation: agg,
        max_label_sets: 16,
        top_flows: 4,
        top_peers: 4,
        attribution: observer::attribution::Config::default(),
        programs_attached: 4,
        filter: None,
        label_idle: std::time::Duration::ZERO,
    }) else {
        return;
    };
    let mut table = FlowTable::new();
    let mut counters = [0u64; Counter::COUNT as usize];
    let mut last: HashMap<String, f64> = HashMap::new();
    let mut now = start;
    let mut plausible = true;
    let mut rest = data;
    while let Some((&head, tail)) = rest.split_first() {
        rest = tail;
        now += u64::from(head) * 7_919_113;
        let n = usize::from(head & 7);
        let mut recs = Vec::with_capacity(n);
        while recs.len() < n && rest.len() >= FLOW_SAMPLE_SIZE {
            recs.push(record(&rest[..FLOW_SAMPLE_SIZE]));
            rest = &rest[FLOW_SAMPLE_SIZE..];
        }
        plausible &= recs.iter().all(|s| {
            [
                s.bytes_acked,
                s.bytes_received,
                s.bytes_sent,
                s.cwnd_limited_ns,
            ]
            .iter()
            .all(|v| *v < 1 << 56)
        });
        let n_closed = usize::from((head >> 3) & 7).min(recs.len());
        let (active, closed) = recs.split_at(recs.len() - n_closed);
        let events = live.ingest(active, closed, now);
        for s in active {
            table.update(*s, now);
        }
        for s in closed {
            table.close(*s, now);
        }
        for (i, c) in counters.iter_mut().enumerate() {
            *c += u64::from(head) * (i as u64 + 1);
        }
        cat.update(&events, &live, &counters, &PollStats::default(), 1024);
        let text = encode(&cat.registry).expect("the registry encodes");
        let now_counters = counters_of(&text);
        for (name, v) in &now_counters {
            assert!(!v.is_nan(), "{name} is NaN");
            if let Some(prev) = last.get(name)
                && plausible
            {
                assert!(v >= prev, "{name} went from {prev} to {v}");
            }
        }
        last = now_counters;
    }
    let reports = table.reports(&clock, now, start, &attribution::Config::default());
    let mut out = Vec::new();
    records::write_json(&mut out, &reports).expect("JSON to a Vec");
    records::write_table(&mut out, &reports).expect("table to a Vec");
    let mut app = App::new(Options::default());
    app.update(Snapshot::from_live(&live, &counters));
    {
        let Ok(mut t) = Terminal::new(TestBackend::new(120, 30));
        let _ = t.draw(|f| draw(f, &mut app));
        app.open_detail();
        let _ = t.draw(|f| draw(f, &mut app));
    }
});
