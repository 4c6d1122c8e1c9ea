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
    /// Whose window the shift scales: true for this host's advertised
    /// window, false for the peer's.
    pub own: bool,
    /// The most the path has shown (bits/s): the rate within the flow's
    /// bursts at the receiving end; 0 when unknown.
    pub path_bps: f64,
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
    /// scale), else None.
    pub other_fix: Option<String>,
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

/// The fix for a window that its scale keeps below `needed` bytes.
fn scale_fix(shift: u8, own: bool) -> String {
    match (shift, own) {
        (0, _) => "window scaling is off on this connection: enable net.ipv4.tcp_window_scaling on both hosts (it is agreed at the handshake)".to_string(),
        (s, true) => format!(
            "this host's window scale {s} is fixed at the handshake: raise net.ipv4.tcp_rmem's maximum (or SO_RCVBUF) before connecting"
        ),
        (s, false) => format!(
            "the peer's window scale {s} is fixed at its handshake: the peer must raise its receive buffer before connecting"
        ),
    }
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
    let other_fix = match (bounds.shift, max_window) {
        (Some(shift), Some(max)) if needed > max as f64 => Some(scale_fix(shift, bounds.own)),
        _ => None,
    };
    let summary = if capped && path <= rate * 1.05 {
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
                own: true,
                path_bps: 0.0,
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
                own: true,
                path_bps: 0.0,
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
                own: true,
                path_bps: 0.0,
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
    fn the_target_never_exceeds_what_the_path_has_shown() {
        // 46.5 Mbit/s through a 50 Mbit/s link: not "93 Mbit/s would need".
        let w = ask(
            290_000,
            50_000,
            46.5e6,
            Bounds {
                shift: Some(7),
                own: true,
                path_bps: 60e6,
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
}
