//! `observer top`'s filter text and keys, and the view drawn at any
//! terminal size: the filter is free text (every word must occur in the
//! row), so no text is an error, and no text, key sequence or size may
//! panic the view.
//!
//! Input: width, height, filter text up to a 0xff byte, then one key per
//! byte.
#![no_main]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use libfuzzer_sys::fuzz_target;
use observer::{
    model::clock::Clock,
    sink::tui::{
        draw::draw,
        keys::handle,
        sort::SortKey,
        state::{App, Options, Snapshot},
    },
    track::live::{LiveFlows, LiveConfig},
};
use observer_common::{Counter, FlowSample};
use ratatui::{Terminal, backend::TestBackend};

const SEC: u64 = 1_000_000_000;

fn flow(cookie: u64, comm: &str, t: u64) -> FlowSample {
    let mut s = FlowSample::ZERO;
    s.cookie = cookie;
    s.state = 1;
    s.mss = 1448;
    s.comm[..comm.len()].copy_from_slice(comm.as_bytes());
    s.pid = 4000 + cookie as u32;
    s.first_seen_ns = 100 * SEC;
    s.last_seen_ns = (100 + t) * SEC;
    s.jiffies = 1_000_000;
    s.saddr[10..16].copy_from_slice(&[0xff, 0xff, 10, 0, 0, cookie as u8]);
    s.daddr[10..16].copy_from_slice(&[0xff, 0xff, 10, 0, 1, 2]);
    s.sport = 40_000 + cookie as u16;
    s.dport = 5201;
    s.bytes_acked = t * 766_476 * cookie;
    s.srtt_us = 105_000;
    s.min_rtt_us = 104_000;
    s.snd_wnd = 80_480;
    s.snd_cwnd = 500;
    s.chrono_stat = [(t * 110) as u32, (t * 140) as u32, 0];
    s
}

fn live_flows() -> LiveFlows {
    let cfg = LiveConfig {
        history: 60,
        ..LiveConfig::default()
    };
    let mut b = LiveFlows::new(cfg, Clock::fixed(0, 250), 50 * SEC);
    for t in 1..=3 {
        let active: Vec<FlowSample> = [(1, "iperf3"), (2, "curl"), (3, "sshd"), (4, "")]
            .into_iter()
            .map(|(c, comm)| flow(c, comm, t))
            .collect();
        let closed = if t == 3 {
            let mut c = flow(5, "wget", t);
            c.closed_ns = c.last_seen_ns;
            vec![c]
        } else {
            Vec::new()
        };
        b.ingest(&active, &closed, (100 + t) * SEC);
    }
    b
}

fn key(b: u8) -> KeyEvent {
    let code = match b {
        0 => KeyCode::Enter,
        1 => KeyCode::Esc,
        2 => KeyCode::Backspace,
        3 => KeyCode::Up,
        4 => KeyCode::Down,
        5 => KeyCode::PageUp,
        6 => KeyCode::PageDown,
        7 => KeyCode::Home,
        8 => KeyCode::End,
        9 => KeyCode::Tab,
        b if b >= 0x80 => KeyCode::Char(char::from_u32(0x3000 + u32::from(b)).unwrap_or('x')),
        b => KeyCode::Char(char::from(b)),
    };
    let mods = if b == 0x15 {
        KeyModifiers::CONTROL
    } else {
        KeyModifiers::NONE
    };
    let code = if b == 0x15 { KeyCode::Char('u') } else { code };
    KeyEvent::new(code, mods)
}

fuzz_target!(|data: &[u8]| {
    let [w, h, rest @ ..] = data else {
        return;
    };
    let (filter, keys) = match rest.iter().position(|b| *b == 0xff) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let filter = String::from_utf8_lossy(filter).trim().to_string();
    let sort = SortKey::ALL[usize::from(*w) % SortKey::ALL.len()];
    let mut app = App::new(Options {
        filter,
        sort,
        ..Options::default()
    });
    let b = live_flows();
    let mut counters = [0u64; Counter::COUNT as usize];
    counters[Counter::RingbufDrops as usize] = u64::from(*h);
    app.update(Snapshot::from_live(&b, &counters));
    let Ok(mut t) = Terminal::new(TestBackend::new(u16::from(*w), u16::from(*h)));
    let _ = t.draw(|f| draw(f, &mut app));
    for k in keys.iter().take(64) {
        handle(&mut app, key(*k));
        if app.should_quit() {
            break;
        }
        let _ = t.draw(|f| draw(f, &mut app));
    }
});
