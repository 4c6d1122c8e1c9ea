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
    /// What the arithmetic answers, in a word: the `summary`'s case, for
    /// the ADVICE column (`super::group::advice`). Not in the JSON, whose
    /// `window_helps` and `other_fix` say it.
    #[serde(skip)]
    pub answer: Answer,
}

/// What the window arithmetic answers: which of [`WhatIf::summary`]'s
/// cases it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// A window of `needed_bytes` would carry `target_bps`.
    Window,
    /// It would, but this connection's window scale cannot carry that
    /// window: a buffer set before connecting (`other_fix`).
    Rescale,
    /// It would, but window scaling is off on this connection: enable it
    /// (`other_fix`).
    ScalingOff,
    /// The peer's reader binds, not its window's size (`other_fix`).
    PeerReader,
    /// The path has shown no headroom: no window answers.
    NoHeadroom,
    /// The window there now already carries the target at this RTT.
    Enough,
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
    let mut w = WhatIf {
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
        summary: String::new(),
        answer: Answer::Window,
    };
    let said = match late {
        Some(fix) => Said::Reader(fix),
        None if no_headroom => Said::NoHeadroom,
        None => Said::Window { capped, enough },
    };
    w.answer = match &said {
        Said::Reader(_) => Answer::PeerReader,
        Said::NoHeadroom => Answer::NoHeadroom,
        Said::Window { .. } if w.other_fix.is_some() && bounds.scaling_off => Answer::ScalingOff,
        Said::Window { .. } if w.other_fix.is_some() => Answer::Rescale,
        Said::Window { enough: true, .. } => Answer::Enough,
        Said::Window { .. } => Answer::Window,
    };
    w.summary = summary(&w, said, &allows);
    w
}

/// What the arithmetic answers, for its summary.
enum Said {
    /// The peer's reader binds, not its window's size: the fix in words.
    Reader(String),
    /// The path has shown no headroom: no window answers the question.
    NoHeadroom,
    /// The window a target needs; `capped`: the target is what the path
    /// has shown; `enough`: the window there now already carries it.
    Window { capped: bool, enough: bool },
}

/// The what-if in one line: its `answer`, then what the window `allows`
/// at other RTTs.
fn summary(w: &WhatIf, said: Said, allows: &str) -> String {
    match said {
        // No window answers these: what the window allows elsewhere would
        // only suggest one.
        Said::Reader(fix) => format!("a larger window would not help: {fix}"),
        Said::NoHeadroom => format!(
            "the path has shown no more than {} (the rate within bursts): a larger window would fill a queue, not raise the rate",
            units::rate(w.path_bps)
        ),
        Said::Window { capped, enough } => {
            let target_line = if capped {
                format!(
                    "{}, the most the path has shown (the rate within bursts),",
                    units::rate(w.target_bps)
                )
            } else {
                units::rate(w.target_bps)
            };
            let beyond = match (&w.other_fix, w.max_window_bytes) {
                (Some(fix), Some(max)) => format!(
                    ", more than the {} this connection's window can carry: {fix}",
                    units::bytes(max as f64)
                ),
                _ if enough => {
                    return format!(
                        "{target_line} would need {} at {}, no more than the {} there now: a larger window would not raise the rate",
                        units::bytes(w.needed_bytes),
                        units::time_us(f64::from(w.rtt_us)),
                        units::bytes(w.window_bytes as f64)
                    );
                }
                _ => String::new(),
            };
            format!(
                "{target_line} would need {} at {}{beyond}; {allows}",
                units::bytes(w.needed_bytes),
                units::time_us(f64::from(w.rtt_us))
            )
        }
    }
}
