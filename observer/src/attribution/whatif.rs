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

/// Window arithmetic for one flow.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WhatIf {
    /// The binding window now (bytes): snd_wnd, rcv_wnd, cwnd x MSS or sk_sndbuf.
    pub window_bytes: u64,
    /// RTT the arithmetic uses (µs).
    pub rtt_us: u32,
    /// window / RTT (bits/s).
    pub ceiling_bps: f64,
    /// The rate asked about (bits/s): configured, or twice the current rate.
    pub target_bps: f64,
    /// target x RTT: the window the target needs (bytes).
    pub needed_bytes: f64,
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

/// The window arithmetic for a binding `window` (bytes) at `rtt` (µs) and
/// the measured `rate` (bits/s); the target is `cfg.target_bps`, or twice
/// the rate.
pub fn what_if(window: u64, rtt: u32, rate: f64, cfg: &Config) -> WhatIf {
    let rtt_f = f64::from(rtt);
    let target = if cfg.target_bps > 0 {
        cfg.target_bps as f64
    } else {
        2.0 * rate
    };
    let needed = bdp(target, rtt_f);
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
    let summary = format!(
        "{} would need {} at {}; {} allows {}",
        units::rate(target),
        units::bytes(needed),
        units::time_us(rtt_f),
        units::bytes(window as f64),
        others.join(", ")
    );
    WhatIf {
        window_bytes: window,
        rtt_us: rtt,
        ceiling_bps: ceiling(window as f64, rtt_f),
        target_bps: target,
        needed_bytes: needed,
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
}
