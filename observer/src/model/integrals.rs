//! The kernel's time integrals of a flow's figures, and its closed-window
//! clock carried up to the poll.
//!
//! A sample's figures hold until the next sample, and the poll-time read
//! leaves a flow that did nothing as it was, so a window the reader left
//! shut stops counting at the last sample until something happens: a
//! throttled download whose data comes seconds apart read 0% closed in
//! the polls between its arrivals and 100% in the one after. The closed
//! time since the last sample is charged here, as the kernel charges it
//! at the next sample (`integrate()`, observer-ebpf/src/receive.rs). The
//! means (window, RTT, cwnd) are not carried: they are means over the
//! time the kernel sampled, and an idle sender's last srtt or cwnd is not
//! what held it while it sent nothing.

use observer_common::FlowSample;

/// The kernel's time integrals of a flow's figures (see
/// [`FlowSample::integral_us`]): the difference of two readings divided
/// by the difference of `us` is the time-weighted mean over that
/// interval. All wrap; take differences with `wrapping_sub`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Integrals {
    /// Time covered (µs).
    pub us: u64,
    /// Advertised receive window (byte·µs).
    pub rcv_wnd: u64,
    /// Unread bytes (byte·µs).
    pub unread: u64,
    /// Receiver RTT (µs·µs), over `rcv_rtt_us` of time.
    pub rcv_rtt: u64,
    /// Time with a receiver RTT estimate (µs).
    pub rcv_rtt_us: u64,
    /// Peer's window, snd_wnd (byte·µs).
    pub snd_wnd: u64,
    /// Smoothed RTT (µs·µs).
    pub srtt: u64,
    /// Congestion window (segment·µs).
    pub cwnd: u64,
    /// Bytes that arrived in bursts (see [`FlowSample::burst_bytes`]).
    pub burst_bytes: u64,
    /// Their spacing, summed (ns).
    pub burst_ns: u64,
}

impl Integrals {
    /// The integrals of `s` as the kernel left them at its last sample.
    pub fn of(s: &FlowSample) -> Integrals {
        Integrals {
            us: s.integral_us,
            rcv_wnd: s.rcv_wnd_integral,
            unread: s.unread_integral,
            rcv_rtt: s.rcv_rtt_integral,
            rcv_rtt_us: s.rcv_rtt_integral_us,
            snd_wnd: s.snd_wnd_integral,
            srtt: s.srtt_integral,
            cwnd: s.cwnd_integral,
            burst_bytes: s.burst_bytes,
            burst_ns: s.burst_ns,
        }
    }
}

/// The time (µs) from `s`'s last sample to `now_ns` (monotonic ns) that
/// its integrals do not yet cover: 0 for a flow closed (its record ends
/// its integrals) or sampled at or after `now_ns`.
pub fn stale_us(s: &FlowSample, now_ns: u64) -> u64 {
    if s.closed_ns != 0 {
        0
    } else {
        now_ns.saturating_sub(s.last_seen_ns) / 1000
    }
}

/// Whether `s` holds the receive window closed by the reader: less room
/// left than two of the peer's segments, with unread data taking the rest
/// (the kernel's `closed()`, observer-ebpf/src/receive.rs, which runs the
/// flow's closed-window clock).
pub fn window_closed(s: &FlowSample) -> bool {
    s.rcv_mss != 0 && s.rcv_wnd_left < 2 * s.rcv_mss && s.unread > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_left_shut_is_charged_up_to_the_reading() {
        // A download whose reader left 64 KB unread and the window shut,
        // sampled 1.5 s before the poll.
        let mut s = FlowSample::ZERO;
        s.last_seen_ns = 10_000_000_000;
        s.unread = 65_536;
        s.rcv_wnd_left = 100;
        s.rcv_mss = 1448;
        let now = 11_500_000_000;
        assert_eq!(stale_us(&s, now), 1_500_000);
        assert!(window_closed(&s));
        // Room for two segments, or nothing unread: open.
        let mut open = s;
        open.rcv_wnd_left = 2896;
        assert!(!window_closed(&open));
        open = s;
        open.unread = 0;
        assert!(!window_closed(&open));
        // No segment size known yet: not judged closed.
        open = s;
        open.rcv_mss = 0;
        assert!(!window_closed(&open));
        // Sampled after the reading, or closed: nothing to charge.
        assert_eq!(stale_us(&s, 9_000_000_000), 0);
        let mut gone = s;
        gone.closed_ns = 10_500_000_000;
        assert_eq!(stale_us(&gone, now), 0);
    }
}
