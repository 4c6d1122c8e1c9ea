//! Tests of `observer top`: live flows fed synthetic samples, its state driven
//! by keys ([`state`]) and rendered into ratatui's `TestBackend` ([`draw`]).
#![allow(clippy::unwrap_used, reason = "tests: a failure should panic")]

mod caption;
mod closed;
mod draw;
mod help;
mod peers;
mod rate;
mod sections;
mod state;
mod summary;

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use observer_common::FlowSample;
use ratatui::{Terminal, backend::TestBackend, buffer::Buffer, style::Modifier};

use super::{
    draw::draw,
    keys::handle,
    sort::SortKey,
    state::{App, Mode, Options, Snapshot},
    theme::verdict_color,
};
use crate::{
    attribution::Verdict,
    model::clock::Clock,
    testkit::sample::{SampleBuilder, v4},
    track::{
        event::Event,
        live::{LiveConfig, LiveFlows},
    },
};

const SEC: u64 = 1_000_000_000;

/// A sender at second `t` of its life (born at 100 s, 250 Hz jiffies).
fn base(cookie: u64, comm: &str, pid: u32, t: u64) -> FlowSample {
    SampleBuilder::new(cookie)
        .comm(comm)
        .pid(pid)
        .seen(100 * SEC, (100 + t) * SEC)
        .jiffies(1_000_000)
        .build()
}

/// iperf3 bound by an 80,480 B window at 105 ms: receive_window.
fn window_bound(cookie: u64, t: u64) -> FlowSample {
    let mut s = SampleBuilder::window_bound(cookie, t)
        .comm("iperf3")
        .pid(4242)
        .jiffies(1_000_000)
        .ends(
            v4(10, 0, 0, 1),
            40000 + cookie as u16,
            v4(10, 0, 0, 2),
            5201,
        )
        .build();
    s.inflight = 55;
    // What `ss -ti` would add: RTO 308 ms (77 jiffies), pacing at twice
    // the window's rate, the default reordering, data last sent 40 ms
    // (10 jiffies) before the sample.
    s.rto_jiffies = 77;
    s.pacing_rate = 1_533_000;
    s.reordering = 3;
    s.packets_out = 55;
    s.lsndtime = 1_000_000 - 10;
    s.lrcvtime = 1_000_000 - 250 * 90;
    s.rcv_tstamp = 1_000_000;
    s
}

/// curl over IPv6, cwnd-limited with a 40 ms standing queue: path.
fn cwnd_bound(t: u64) -> FlowSample {
    let mut s = base(2, "curl", 777, t);
    s.saddr = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    s.daddr = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    s.family = observer_common::AF_INET6;
    s.sport = 51000;
    s.dport = 443;
    s.bytes_acked = t * 1_250_000;
    s.srtt_us = 60_000;
    s.min_rtt_us = 20_000;
    s.snd_wnd = 3_000_000;
    // Growing by 10 a second: 50 at 5 s.
    s.snd_cwnd = (10 * t) as u32;
    s.inflight = 50;
    s.total_retrans = (t * 2) as u32;
    s.chrono_stat = [(t * 250) as u32, 0, 0];
    s.cwnd_limited_ns = t * 800_000_000;
    s
}

/// An idle ssh session: application.
fn idle(t: u64) -> FlowSample {
    let mut s = base(3, "sshd", 99, t);
    s.saddr = v4(192, 168, 1, 10);
    s.daddr = v4(192, 168, 1, 20);
    s.sport = 22;
    s.dport = 60000;
    s.bytes_acked = 5000;
    s.srtt_us = 30_000;
    s.min_rtt_us = 29_000;
    s.snd_wnd = 64_000;
    s.snd_cwnd = 10;
    s.chrono_stat = [10, 0, 0];
    s
}

/// Live flows after five one-second polls: flows 1 to 3 open, flow 4 (another
/// window-bound iperf3) closed at 103 s and lingering.
fn live_flows() -> LiveFlows {
    live_and_events().0
}

/// [`live_flows`], and the events of its polls (flow 4's close among
/// them).
fn live_and_events() -> (LiveFlows, Vec<Event>) {
    let cfg = LiveConfig {
        history: 60,
        ..LiveConfig::default()
    };
    let mut b = LiveFlows::new(cfg, Clock::fixed(0, 250), 50 * SEC);
    let mut events = Vec::new();
    for t in 1..=5 {
        let mut active = vec![window_bound(1, t), cwnd_bound(t), idle(t)];
        let mut closed = vec![];
        if t < 3 {
            active.push(window_bound(4, t));
        } else if t == 3 {
            let mut c = window_bound(4, t);
            c.closed_ns = c.last_seen_ns;
            c.state = 7;
            closed.push(c);
        }
        events.extend(b.ingest(&active, &closed, (100 + t) * SEC));
    }
    (b, events)
}

/// Counters with 2 ring-buffer drops and 1 LRU eviction.
const COUNTERS: [u64; 8] = [100, 4, 1, 2, 1, 0, 0, 4];

fn snapshot() -> Snapshot {
    Snapshot::from_live(&live_flows(), &COUNTERS)
}

fn app() -> App {
    let mut a = App::new(Options::default());
    a.update(snapshot());
    a
}

fn cookies(a: &App) -> Vec<u64> {
    a.rows().map(|r| r.cookie()).collect()
}

fn key(a: &mut App, code: KeyCode) {
    handle(a, KeyEvent::new(code, KeyModifiers::NONE));
}

fn typed(a: &mut App, text: &str) {
    for c in text.chars() {
        key(a, KeyCode::Char(c));
    }
}

fn render(a: &mut App, w: u16, h: u16) -> Buffer {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| draw(f, a)).unwrap();
    t.backend().buffer().clone()
}

fn lines(b: &Buffer) -> Vec<String> {
    let area = b.area;
    (0..area.height)
        .map(|y| {
            let l: String = (0..area.width).map(|x| b[(x, y)].symbol()).collect();
            l.trim_end().to_string()
        })
        .collect()
}

fn assert_lines(b: &Buffer, expected: &[&str]) {
    let got = lines(b);
    assert_eq!(got.len(), expected.len(), "{got:#?}");
    for (i, (g, e)) in got.iter().zip(expected).enumerate() {
        assert_eq!(g, e, "line {i}:\n{}", got.join("\n"));
    }
}
