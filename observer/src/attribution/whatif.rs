//! Window arithmetic for window verdicts: the window a target rate needs at
//! this RTT (the bandwidth-delay product), and what the current window allows
//! at other RTTs. A single flow can never exceed window / RTT.

use serde::Serialize;

use super::config::Config;
use crate::units;

/// RTTs (ms) at which the current window's ceiling is also given.
pub const OTHER_RTTS_MS: [u32; 4] = [10, 50, 100, 250];

/// The ceiling a window allows at one RTT.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CeilingAt {
    /// Round-trip time (ms).
    pub rtt_ms: u32,
    /// window / RTT (bits/s).
    pub ceiling_bps: f64,
}

/// What bounds the answer besides the window itself.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Bounds {
    /// The window-scale shift of the window asked about, agreed at the
    /// handshake (0 without window scaling): no window can exceed
    /// `65535 << shift` bytes (RFC 7323 section 2.2; `tcp_select_window()`,
    /// net/ipv4/tcp_output.c). None for windows the header does not carry
    /// (cwnd, the send buffer).
    pub shift: Option<u8>,
    /// Window scaling was not agreed at the handshake (`wscale_ok` unset;
    /// the shift is then 0): the fix for a window the header cannot
    /// carry is to enable it, not a larger buffer. False with scaling on,
    /// even at shift 0 (a small buffer at connect time).
    pub scaling_off: bool,
    /// Whose window the shift scales: true for this host's advertised
    /// window, false for the peer's.
    pub own: bool,
    /// The most the path has shown (bits/s): the rate within the flow's
    /// bursts at the receiving end; 0 when unknown.
    pub path_bps: f64,
    /// For the peer's window: how it was used and offered. None for other
    /// windows.
    pub peer: Option<PeerWindow>,
}

/// How the peer used and offered its window over the judged interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PeerWindow {
    /// The share of busy time the window was full (the kernel's
    /// rwnd-limited clock, 0 to 1).
    pub full_share: f64,
    /// The path's round trip without a queue (min_rtt, µs).
    pub min_rtt_us: u32,
    /// The window offered at the interval's end (snd_wnd, bytes).
    pub now_bytes: u64,
    /// The largest window the peer has offered over the connection
    /// (`tcp_sock.max_window`, bytes; 0 where unknown).
    pub max_bytes: u64,
}

/// Window arithmetic for one flow.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WhatIf {
    /// The binding window now (bytes): snd_wnd, rcv_wnd, cwnd x MSS or sk_sndbuf.
    pub window_bytes: u64,
    /// RTT the arithmetic uses (µs).
    pub rtt_us: u32,
    /// window / RTT (bits/s).
    pub ceiling_bps: f64,
    /// The rate asked about (bits/s): configured, or twice the current
    /// rate, capped by `path_bps` where that is known.
    pub target_bps: f64,
    /// target x RTT: the window the target needs (bytes).
    pub needed_bytes: f64,
    /// The most the path has shown (bits/s; 0 when unknown): the target
    /// never exceeds it.
    pub path_bps: f64,
    /// The largest window this connection can carry (bytes):
    /// `65535 << shift`; None where the header does not bound it.
    pub max_window_bytes: Option<u64>,
    /// The fix when the window alone cannot reach the target (the window
    /// scale) or is not the limit (the peer's reader), else None.
    pub other_fix: Option<String>,
    /// Whether a larger window would raise the rate: false when the path
    /// has shown no headroom, when the window there now already carries
    /// the target at this RTT, or when the peer's window binds only
    /// through its late ACKs or unread data (`other_fix` then names its
    /// reader).
    pub window_helps: bool,
    /// The current window's ceiling at other RTTs.
    pub at_other_rtts: Vec<CeilingAt>,
    /// The arithmetic in one line.
    pub summary: String,
}

/// Bits/s a window of `bytes` allows at `rtt_us`.
pub fn ceiling(bytes: f64, rtt_us: f64) -> f64 {
    if rtt_us <= 0.0 {
        0.0
    } else {
        bytes * 8e6 / rtt_us
    }
}

/// Bytes needed in flight for `bps` at `rtt_us` (the BDP).
pub fn bdp(bps: f64, rtt_us: f64) -> f64 {
    bps * rtt_us / 8e6
}

/// The fix for a window that its scale keeps below `needed` bytes. Linux
/// picks its shift at the handshake from the largest buffer it may grow
/// to: `tcp_rmem`'s maximum, or SO_RCVBUF when the application set one,
/// which `net.core.rmem_max` caps (`tcp_select_initial_window()`,
/// net/ipv4/tcp_output.c).
fn scale_fix(shift: u8, own: bool, scaling_off: bool) -> String {
    match (scaling_off, own) {
        (true, _) => "window scaling is off on this connection: enable net.ipv4.tcp_window_scaling on both hosts (it is agreed at the handshake)".to_string(),
        (false, true) => format!(
            "this host's window scale {shift} is fixed at the handshake: raise net.ipv4.tcp_rmem's maximum (or SO_RCVBUF, which net.core.rmem_max caps) before connecting"
        ),
        (false, false) => format!(
            "the peer's window scale {shift} is fixed at its handshake: the peer must raise its receive buffer before connecting"
        ),
    }
}

/// For a window (or send buffer) of `bytes` that is full while the flow
/// moves `rate` (bits/s) and a queue stands: the ceiling it would allow at
/// the path's base RTT `base_rtt_us` (bits/s) when that is at least
/// `1 / cfg.queue_only` times the rate, else None. The window is then full
/// only through the queue: the flow fills its bottleneck and the excess of
/// the window waits there, so a larger one would add queue, not rate (a
/// 65,535 B window over a 10 Mbit/s, 20 ms path is 2.6 BDPs).
pub fn full_through_queue(bytes: f64, base_rtt_us: f64, rate: f64, cfg: &Config) -> Option<f64> {
    let at_base = ceiling(bytes, base_rtt_us);
    (rate < cfg.queue_only * at_base).then_some(at_base)
}

/// Whether a peer window whose time-weighted mean is `mean` and whose value
/// now is `now` (bytes) has shrunk under `fraction` of the largest the
/// peer has offered, `max` (`tcp_sock.max_window`; 0: unknown, never
/// shrunk): the peer's buffer holds data its application has not read. A
/// peer that reads everything offers its whole free buffer, and autotuning
/// only grows it (`tcp_rcv_space_adjust()`, net/ipv4/tcp_input.c), so a
/// window that grew within the interval ends at its largest and is not
/// shrunk.
pub fn shrunk_by_unread(mean: u64, now: u64, max: u64, fraction: f64) -> bool {
    let under = |w: u64| (w as f64) < fraction * max as f64;
    under(mean) && under(now)
}

/// Where the peer's window binds only because its application leaves data
/// unread, the fix in words, else None. Two shapes:
///
/// - The window offered, over the interval and at its end, is under
///   `cfg.unread_window` of the largest the peer has offered
///   ([`shrunk_by_unread`]).
/// - The window was seldom full (under `cfg.significant_share` of busy
///   time) and allows `rate` with room to spare at the path's round trip:
///   the ceiling was reached only through a round trip stretched by the
///   peer. A receiver whose application leaves data unread ACKs at once
///   only when its window's right edge advances (`__tcp_ack_snd_check()`,
///   net/ipv4/tcp_input.c); otherwise its ACKs wait for the delayed-ACK
///   timer or the next read, and srtt grows while the window stays open.
///
/// Either way a larger buffer would fill with unread data too.
fn unread_peer(window: u64, rtt: u32, rate: f64, bounds: Bounds, cfg: &Config) -> Option<String> {
    let peer = bounds.peer?;
    if shrunk_by_unread(window, peer.now_bytes, peer.max_bytes, cfg.unread_window) {
        return Some(format!(
            "the peer's reader, not its window's size: the peer offered {} on average ({} now), {} of the {} it has offered before: its buffer holds data its application has not read; a larger buffer would fill too",
            units::bytes(window as f64),
            units::bytes(peer.now_bytes as f64),
            units::share(window as f64 / peer.max_bytes as f64),
            units::bytes(peer.max_bytes as f64)
        ));
    }
    let base = peer.min_rtt_us;
    let at_base = ceiling(window as f64, f64::from(base));
    (base > 0 && rtt > base && peer.full_share < cfg.significant_share && rate < cfg.at_ceiling * at_base)
        .then(|| {
            format!(
                "the peer's reader, not its window's size: the window was full only {} of busy time and allows {} at the path's round trip (min_rtt {}), yet the peer's ACKs come late (srtt {}), as a receiver's do while its application leaves data unread; a larger buffer would fill too",
                units::share(peer.full_share),
                units::rate(at_base),
                units::time_us(f64::from(base)),
                units::time_us(f64::from(rtt))
            )
        })
}

/// The window arithmetic for a binding `window` (bytes) at `rtt` (µs) and
/// the measured `rate` (bits/s); the target is `cfg.target_bps`, or twice
/// the rate, capped by what the path has shown (`bounds.path_bps`). Where
/// the target needs more than the window scale lets the header carry, the
/// summary names that fix instead of a bigger buffer.
pub fn what_if(window: u64, rtt: u32, rate: f64, bounds: Bounds, cfg: &Config) -> WhatIf {
    let rtt_f = f64::from(rtt);
    let asked = if cfg.target_bps > 0 {
        cfg.target_bps as f64
    } else {
        2.0 * rate
    };
    let path = bounds.path_bps;
    let capped = path > 0.0 && path < asked;
    let target = if capped { path } else { asked };
    let needed = bdp(target, rtt_f);
    // A window already above the cap says the scale was misread (or the
    // flow's options are unknown): no cap then.
    let max_window = bounds
        .shift
        .map(|s| 65_535u64 << s.min(14))
        .filter(|max| window <= *max);
    let at_other_rtts: Vec<CeilingAt> = OTHER_RTTS_MS
        .iter()
        .map(|ms| CeilingAt {
            rtt_ms: *ms,
            ceiling_bps: ceiling(window as f64, f64::from(*ms) * 1000.0),
        })
        .collect();
    let others: Vec<String> = at_other_rtts
        .iter()
        .filter(|c| c.rtt_ms == 50 || c.rtt_ms == 250)
        .map(|c| format!("{} at {} ms", units::rate(c.ceiling_bps), c.rtt_ms))
        .collect();
    let allows = format!(
        "{} allows {}",
        units::bytes(window as f64),
        others.join(", ")
    );
    let late = unread_peer(window, rtt, rate, bounds, cfg);
    let no_headroom = capped && path <= rate * 1.05;
    // The window there now already carries the target at this RTT: the
    // rate is held by something else, and no window answers.
    let enough = needed <= window as f64;
    let window_helps = late.is_none() && !no_headroom && !enough;
    let other_fix = late.clone().or_else(|| match (bounds.shift, max_window) {
        (Some(shift), Some(max)) if needed > max as f64 => {
            Some(scale_fix(shift, bounds.own, bounds.scaling_off))
        }
        _ => None,
    });
    let summary = if let Some(fix) = late {
        format!("a larger window would not help: {fix}; {allows}")
    } else if no_headroom {
        // The path has shown no headroom: no window answers the question.
        format!(
            "the path has shown no more than {} (the rate within bursts): a larger window would fill a queue, not raise the rate; {allows}",
            units::rate(path)
        )
    } else {
        let target_line = if capped {
            format!(
                "{}, the most the path has shown (the rate within bursts),",
                units::rate(target)
            )
        } else {
            units::rate(target)
        };
        let beyond = match (&other_fix, max_window) {
            (Some(fix), Some(max)) => format!(
                ", more than the {} this connection's window can carry: {fix}",
                units::bytes(max as f64)
            ),
            _ if enough => format!(
                ", no more than the {} there now: a larger window would not raise the rate",
                units::bytes(window as f64)
            ),
            _ => String::new(),
        };
        format!(
            "{target_line} would need {} at {}{beyond}; {allows}",
            units::bytes(needed),
            units::time_us(rtt_f)
        )
    };
    WhatIf {
        window_bytes: window,
        rtt_us: rtt,
        ceiling_bps: ceiling(window as f64, rtt_f),
        target_bps: target,
        needed_bytes: needed,
        path_bps: path,
        max_window_bytes: max_window,
        other_fix,
        window_helps,
        at_other_rtts,
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            far.other_fix.as_deref().is_some_and(
                |f| f.starts_with("this host's window scale 7 is fixed at the handshake")
            ),
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
                "4.0 Mbit/s would need 40.0 KB at 80.0 ms, no more than the 395.0 KB there now: a larger window would not raise the rate;"
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
}
