//! Exported counters never go backwards: random polls of live flows and a
//! catalogue, with samples that shrink (an LRU-evicted entry re-created
//! from zero, a stale read) as well as grow, and flows that close; no
//! counter series may fall, turn non-finite or vanish once exported.

use std::collections::HashMap;

use observer::{
    model::clock::Clock,
    sink::metrics::{Catalogue, CatalogueConfig, encode, labels::Aggregation},
    testkit::sample::{SampleBuilder, v4},
    track::live::{LiveConfig, LiveFlows},
    track::poller::PollStats,
};
use observer_common::{Counter, FlowSample};

/// xorshift64*: a fixed-seed generator, so a failure replays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Every counter-like series (`_total`, histogram `_count` / `_sum` /
/// `_bucket`) in the exposition `text`.
fn counter_series(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (name, v) = l.rsplit_once(' ')?;
            let base = name.split('{').next()?;
            (base.ends_with("_total")
                || base.ends_with("_count")
                || base.ends_with("_sum")
                || base.ends_with("_bucket"))
            .then(|| Some((name.to_string(), v.parse().ok()?)))?
        })
        .collect()
}

#[test]
fn exported_counters_never_go_backwards_when_samples_do() {
    const SEC: u64 = 1_000_000_000;
    for seed in 1..=40u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let cfg = LiveConfig {
            history: 4,
            ..LiveConfig::default()
        };
        let mut live = LiveFlows::new(cfg, Clock::fixed(0, 250), 10 * SEC);
        let agg = Aggregation {
            comm: true,
            local_port: true,
            ..Aggregation::default()
        };
        let mut cat = Catalogue::new(CatalogueConfig {
            aggregation: agg,
            max_label_sets: 8,
            top_flows: 3,
            top_peers: 0,
            attribution: observer::attribution::Config::default(),
            programs_attached: 4,
            filter: None,
            label_idle: std::time::Duration::ZERO,
        })
        .unwrap();
        let mut flows: Vec<FlowSample> = Vec::new();
        let mut counters = [0u64; Counter::COUNT as usize];
        let mut last: HashMap<String, f64> = HashMap::new();
        let mut now = 20 * SEC;
        for poll in 0..60 {
            now += SEC / 2 + rng.below(SEC);
            // New flows, some born before the live.
            for _ in 0..rng.below(3) {
                // The random draws in this order: cookie, srtt, port, name, birth.
                let cookie = rng.next();
                let srtt_us = 1 + rng.below(200_000) as u32;
                let sport = rng.below(65536) as u16;
                let comm = char::from(b'a' + rng.below(20) as u8).to_string();
                let first_seen_ns = now - rng.below(30 * SEC).min(now);
                let mut s = SampleBuilder::new(cookie)
                    .ends(v4(10, 0, 0, 1), sport, v4(10, 0, 0, 2), 5201)
                    .comm(&comm)
                    .seen(first_seen_ns, now)
                    .build();
                s.srtt_us = srtt_us;
                s.min_rtt_us = srtt_us / 2;
                flows.push(s);
            }
            let mut active = Vec::new();
            let mut closed = Vec::new();
            for s in &mut flows {
                // Mostly growth; sometimes a drop (an LRU-evicted entry
                // re-created from zero, or a stale read), sometimes nothing.
                match rng.below(10) {
                    0 => {
                        s.cwnd_limited_ns = 0;
                        s.bytes_acked /= 1 + rng.below(4);
                        s.bytes_received /= 1 + rng.below(4);
                        s.chrono_stat = [0, 0, 0];
                        s.total_retrans = 0;
                        s.samples = 1;
                        s.first_seen_ns = now;
                    }
                    1 => {}
                    _ => {
                        s.bytes_acked += rng.below(10_000_000);
                        s.bytes_received += rng.below(100_000);
                        s.total_retrans += rng.below(5) as u32;
                        s.cwnd_limited_ns += rng.below(SEC);
                        for c in &mut s.chrono_stat {
                            *c = c.wrapping_add(rng.below(200) as u32);
                        }
                        s.chrono_type = rng.below(4) as u8;
                        s.chrono_start = rng.next() as u32;
                        s.jiffies = rng.below(1 << 40);
                        s.snd_cwnd = rng.below(1000) as u32;
                        s.snd_wnd = rng.below(1 << 24) as u32;
                        s.samples += 1 + rng.below(100);
                    }
                }
                s.last_seen_ns = now - rng.below(SEC / 2);
                if rng.below(15) == 0 {
                    let mut c = *s;
                    c.closed_ns = now;
                    c.state = 7;
                    closed.push(c);
                    s.cookie = 0;
                } else if rng.below(8) != 0 {
                    active.push(*s);
                }
            }
            flows.retain(|s| s.cookie != 0);
            for c in &mut counters {
                *c += rng.below(1000);
            }
            let events = live.ingest(&active, &closed, now);
            cat.update(&events, &live, &counters, &PollStats::default(), 1024);
            let text = encode(&cat.registry).unwrap();
            let series = counter_series(&text);
            for (name, v) in &series {
                assert!(v.is_finite(), "seed {seed} poll {poll}: {name} = {v}");
                if let Some(prev) = last.get(name) {
                    assert!(
                        v >= prev,
                        "seed {seed} poll {poll}: {name} went from {prev} to {v}"
                    );
                }
            }
            // A series, once exported, is not withdrawn.
            for name in last.keys() {
                assert!(
                    series.contains_key(name),
                    "seed {seed} poll {poll}: {name} vanished"
                );
            }
            last = series;
        }
    }
}
