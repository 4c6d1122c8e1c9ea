//! The what-if arithmetic on the seed experiments' numbers and issue 14's
//! shapes.

use super::{config::Config, whatif::*};

/// The arithmetic of ../shared/docs/seed-experiments.md.
#[test]
fn reference_arithmetic() {
    // 35 Mbit/s x 104 ms = about 455 KB.
    assert!((bdp(35e6, 104_000.0) - 455_000.0).abs() < 1_000.0);
    // 64 KB / 104 ms = about 5 Mbit/s.
    assert!((ceiling(65_536.0, 104_000.0) - 5.04e6).abs() < 0.01e6);
    // 4 MB at 110 ms supports about 305 Mbit/s.
    assert!((ceiling(4_194_240.0, 110_000.0) - 305e6).abs() < 1e6);
    // 187 Mbit/s at 250 ms needs 5.84 MB.
    assert!((bdp(187e6, 250_000.0) - 5.84e6).abs() < 0.01e6);
    // 4 MB at 250 ms caps a flow at about 134 Mbit/s.
    assert!((ceiling(4_194_240.0, 250_000.0) - 134e6).abs() < 1e6);
    // Window-scale shift 8: 65535 << 8 = 16,776,960 B, about 537 Mbit/s at 250 ms.
    assert!((ceiling(16_776_960.0, 250_000.0) - 537e6).abs() < 1e6);
    // CUBIC's 920 x 1,228 B at 114 ms: about 79 Mbit/s.
    assert!((ceiling(920.0 * 1228.0, 114_000.0) - 79.3e6).abs() < 0.5e6);
}

fn ask(window: u64, rtt_us: u32, rate: f64, bounds: Bounds) -> WhatIf {
    what_if(window, rtt_us, rate, bounds, &Config::default())
}

#[test]
fn without_window_scaling_the_fix_is_the_scale_not_the_buffer() {
    // rx-no-wscale: 65,535 B at 60.1 ms carries 8.7 Mbit/s; twice that
    // needs 130 KB, which no unscaled header can advertise.
    let w = ask(
        65_535,
        60_100,
        8.6e6,
        Bounds {
            shift: Some(0),
            scaling_off: true,
            own: true,
            path_bps: 0.0,
            peer: None,
        },
    );
    assert_eq!(w.max_window_bytes, Some(65_535));
    assert!(
        (w.needed_bytes - 129_215.0).abs() < 1.0,
        "{}",
        w.needed_bytes
    );
    assert!(
        w.summary.contains(
            "would need 129.2 KB at 60.1 ms, more than the 65.5 KB this connection's window can carry: window scaling is off on this connection"
        ),
        "{}",
        w.summary
    );
    // The same question within what a shift of 7 carries (8.4 MB): no
    // other fix.
    let scaled = ask(
        65_535,
        60_100,
        8.6e6,
        Bounds {
            shift: Some(7),
            scaling_off: false,
            own: true,
            path_bps: 0.0,
            peer: None,
        },
    );
    assert_eq!(scaled.max_window_bytes, Some(8_388_480));
    assert_eq!(scaled.other_fix, None);
    // 1 Gbit/s at 100 ms needs 12.5 MB: beyond a shift of 7.
    let far = ask(
        4_000_000,
        100_000,
        500e6,
        Bounds {
            shift: Some(7),
            scaling_off: false,
            own: true,
            path_bps: 0.0,
            peer: None,
        },
    );
    assert!(
        far.other_fix
            .as_deref()
            .is_some_and(|f| f.starts_with("this host's window scale 7 is fixed at the handshake")),
        "{:?}",
        far.other_fix
    );
}

#[test]
fn scaling_on_at_shift_0_asks_for_a_buffer_before_connecting() {
    // SO_RCVBUF 32K set before connect at 100 ms: scaling agreed, shift
    // 0 (ss: wscale:0,0), so 65,535 B is the most; twice 2.6 Mbit/s
    // needs 65.5 KB... and 10 Mbit/s needs 125 KB, which only a buffer
    // set before connecting (a larger shift) can carry.
    let w = what_if(
        32_768,
        100_000,
        2.6e6,
        Bounds {
            shift: Some(0),
            scaling_off: false,
            own: true,
            path_bps: 0.0,
            peer: None,
        },
        &Config {
            target_bps: 10_000_000,
            ..Config::default()
        },
    );
    assert_eq!(w.max_window_bytes, Some(65_535));
    assert_eq!(
        w.other_fix.as_deref(),
        Some(
            "this host's window scale 0 is fixed at the handshake: raise net.ipv4.tcp_rmem's maximum (or SO_RCVBUF, which net.core.rmem_max caps) before connecting"
        )
    );
}

#[test]
fn a_window_that_already_carries_the_target_does_not_help() {
    // curl --limit-rate 2M behind a 395 KB window at 80 ms: twice the
    // rate needs 40 KB, which the window already carries.
    let w = ask(395_000, 80_000, 2.0e6, Bounds::default());
    assert!(!w.window_helps);
    assert!(
        w.summary.starts_with(
            "4.0 Mbit/s would need 40.0 KB at 80.0 ms, no more than the 395.0 KB there now: a larger window would not raise the rate"
        ),
        "{}",
        w.summary
    );
    // One byte short of the need: it helps.
    let short = ask(39_999, 80_000, 2.0e6, Bounds::default());
    assert!(short.window_helps, "{}", short.summary);
}

#[test]
fn the_target_never_exceeds_what_the_path_has_shown() {
    // 46.5 Mbit/s through a 50 Mbit/s link: not "93 Mbit/s would need".
    let w = ask(
        290_000,
        50_000,
        46.5e6,
        Bounds {
            shift: Some(7),
            scaling_off: false,
            own: true,
            path_bps: 60e6,
            peer: None,
        },
    );
    assert_eq!(w.target_bps, 60e6);
    assert!((w.needed_bytes - 375_000.0).abs() < 1.0);
    assert!(
        w.summary.starts_with(
            "60.0 Mbit/s, the most the path has shown (the rate within bursts), would need 375.0 KB at 50.0 ms"
        ),
        "{}",
        w.summary
    );
    // Bursts no faster than the flow: no window answers it.
    let full = ask(
        290_000,
        50_000,
        46.5e6,
        Bounds {
            path_bps: 48e6,
            ..Bounds::default()
        },
    );
    assert!(
        full.summary
            .starts_with("the path has shown no more than 48.0 Mbit/s"),
        "{}",
        full.summary
    );
    // Unknown path, uncapped: twice the rate.
    let free = ask(290_000, 50_000, 46.5e6, Bounds::default());
    assert_eq!(free.target_bps, 93e6);
    assert_eq!(free.max_window_bytes, None);
}

#[test]
fn a_peer_window_reached_only_through_late_acks_names_the_reader() {
    // Issue 14's slow reader (64 KB every 20 ms, 25 ms each way), from
    // the sender: the peer's 232.4 KB window was full 8% of busy time,
    // srtt 71.2 ms against min_rtt 50.3 ms, delivering 25.5 Mbit/s.
    let peer = |full: f64| Bounds {
        shift: Some(7),
        scaling_off: false,
        own: false,
        path_bps: 0.0,
        peer: Some(PeerWindow {
            full_share: full,
            min_rtt_us: 50_300,
            now_bytes: 232_400,
            max_bytes: 262_144,
        }),
    };
    let w = ask(232_400, 71_200, 25.5e6, peer(0.08));
    let fix = w.other_fix.as_deref().unwrap_or_default();
    assert!(
        fix.starts_with("the peer's reader, not its window's size: the window was full only 8% of busy time and allows 37.0 Mbit/s at the path's round trip (min_rtt 50.3 ms), yet the peer's ACKs come late (srtt 71.2 ms)"),
        "{fix}"
    );
    assert!(!w.window_helps);
    assert!(
        w.summary
            .starts_with("a larger window would not help: the peer's reader")
            && !w.summary.contains("would need"),
        "{}",
        w.summary
    );
    // A window full most of the busy time is the limit: the arithmetic.
    let full = ask(232_400, 71_200, 25.5e6, peer(0.6));
    assert_eq!(full.other_fix, None);
    assert!(full.window_helps);
    assert!(
        full.summary
            .starts_with("51.0 Mbit/s would need 453.9 KB at 71.2 ms"),
        "{}",
        full.summary
    );
    // Seldom full, but at min_rtt the window allows no more than
    // 0.8 of the rate's worth of room (37.0 x 0.8 = 29.6 Mbit/s):
    // the round trip is not what stretched the ceiling.
    let tight = ask(232_400, 71_200, 30e6, peer(0.08));
    assert_eq!(tight.other_fix, None);
    // No queue or late ACK: srtt at min_rtt.
    let prompt = ask(232_400, 50_300, 25.5e6, peer(0.08));
    assert_eq!(prompt.other_fix, None);
}

#[test]
fn a_peer_window_shrunk_by_unread_data_names_the_reader() {
    // A reader slower still: the window is full all the busy time, but
    // the peer offers a fraction of what it offered before.
    let peer = |now: u64, max: u64| Bounds {
        shift: Some(7),
        scaling_off: false,
        own: false,
        path_bps: 0.0,
        peer: Some(PeerWindow {
            full_share: 1.0,
            min_rtt_us: 50_300,
            now_bytes: now,
            max_bytes: max,
        }),
    };
    let w = ask(180_000, 60_000, 24e6, peer(120_000, 1_500_000));
    assert_eq!(
        w.other_fix.as_deref(),
        Some(
            "the peer's reader, not its window's size: the peer offered 180.0 KB on average (120.0 KB now), 12% of the 1.50 MB it has offered before: its buffer holds data its application has not read; a larger buffer would fill too"
        )
    );
    assert!(!w.window_helps);
    assert!(w.summary.starts_with("a larger window would not help"));
    // A window that grew within the interval ends at its largest: the
    // arithmetic, not the reader.
    let growing = ask(180_000, 60_000, 24e6, peer(400_000, 400_000));
    assert_eq!(growing.other_fix, None);
    assert!(
        growing
            .summary
            .starts_with("48.0 Mbit/s would need 360.0 KB"),
        "{}",
        growing.summary
    );
    // 60% of the largest or more, over the interval or now: no reader.
    let half = ask(180_000, 60_000, 24e6, peer(120_000, 300_000));
    assert_eq!(half.other_fix, None);
    let now_half = ask(120_000, 60_000, 24e6, peer(180_000, 300_000));
    assert_eq!(now_half.other_fix, None);
    // Unknown largest window (0): no reader.
    let unknown = ask(180_000, 60_000, 24e6, peer(120_000, 0));
    assert_eq!(unknown.other_fix, None);
}
