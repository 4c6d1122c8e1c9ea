//! Sender-side test flows: a sending flow's cumulative figures at a time
//! ([`P`], built as `P::at(1.0).acked(5_000_000).busy_ms(1000)`), the
//! point observer would read for it, and the verdict over an interval
//! between two of them (shared by the sender's tests, the interval tests
//! and the group's).

use crate::attribution::*;
use crate::testkit::sample::SampleBuilder;

const SEC: u64 = 1_000_000_000;

/// Declares [`P`], its defaults and a setter per field from one list, so
/// that a test names only the figures its case is about.
macro_rules! sender_figures {
    ($($(#[doc = $doc:literal])* $field:ident: $ty:ty = $default:expr,)*) => {
        /// A sender flow at time `t` seconds with the given cumulative
        /// figures; any other figure is its default.
        #[derive(Clone, Copy)]
        pub(in crate::attribution) struct P {
            $($(#[doc = $doc])* $field: $ty,)*
        }

        impl Default for P {
            fn default() -> Self {
                P { $($field: $default,)* }
            }
        }

        #[allow(dead_code, reason = "a setter per figure, whether a test sets it yet or not")]
        impl P {
            $(
                $(#[doc = $doc])*
                pub(in crate::attribution) fn $field(self, $field: $ty) -> P {
                    P { $field, ..self }
                }
            )*
        }
    };
}

sender_figures! {
    /// Seconds since the flow was first seen.
    t: f64 = 0.0,
    /// Bytes the peer acknowledged.
    acked: u64 = 0,
    /// Bytes received.
    received: u64 = 0,
    /// Busy time (ms).
    busy_ms: u64 = 0,
    /// Receive-window-limited time (ms).
    rwnd_ms: u64 = 0,
    /// The kernel's send-buffer-limited time (ms).
    sndbuf_ms: u64 = 0,
    /// Observer's own send-buffer clock (`Flow::sndbuf_full_us`, ms).
    sndbuf_full_ms: u64 = 0,
    /// Congestion-window-limited time (ms).
    cwnd_ms: u64 = 0,
    /// Smoothed RTT (µs).
    srtt_us: u32 = 50_000,
    /// Minimum RTT (µs).
    min_rtt_us: u32 = 50_000,
    /// The peer's window (bytes).
    snd_wnd: u32 = 4_000_000,
    /// The largest window the peer has offered (bytes; 0: unknown).
    snd_wnd_max: u32 = 0,
    /// Congestion window (segments).
    cwnd: u32 = 1000,
    /// Time whose latest delivery-rate sample was app-limited (ms).
    app_limited_ms: u64 = 0,
    /// The window this end advertises (bytes).
    rcv_wnd: u32 = 65_535,
    /// Receiver RTT (µs; 0: none measured).
    rcv_rtt_us: u32 = 0,
    /// The recent best delivery-rate sample (bits/s; 0: none kept).
    delivery_max_bps: u64 = 0,
    /// Segments retransmitted so far.
    retransmits: u32 = 0,
}

impl P {
    /// The default flow at `t` seconds.
    pub(in crate::attribution) fn at(t: f64) -> P {
        P::default().t(t)
    }
}

/// The point observer reads for `p`: first seen 10 s into the clock,
/// `t` seconds before this reading, with a 16 KB send buffer.
pub(in crate::attribution) fn point(p: P) -> Point {
    let mut f = SampleBuilder::new(1).flow();
    f.bytes_acked = p.acked;
    f.bytes_received = p.received;
    f.busy_us = p.busy_ms * 1000;
    f.rwnd_limited_us = p.rwnd_ms * 1000;
    f.sndbuf_limited_us = p.sndbuf_ms * 1000;
    f.sndbuf_full_us = p.sndbuf_full_ms * 1000;
    f.cwnd_limited_us = p.cwnd_ms * 1000;
    f.srtt_us = p.srtt_us;
    f.min_rtt_us = p.min_rtt_us;
    f.snd_wnd = p.snd_wnd;
    f.snd_wnd_max = p.snd_wnd_max;
    f.snd_cwnd = p.cwnd;
    f.app_limited = p.app_limited_ms > 0;
    f.app_limited_us = p.app_limited_ms * 1000;
    f.rcv_wnd = p.rcv_wnd;
    f.rcv_rtt_us = p.rcv_rtt_us;
    f.delivery_rate_max_bps = p.delivery_max_bps;
    f.retransmits = p.retransmits;
    f.sndbuf = 16_384;
    Point {
        at_ns: (p.t * SEC as f64) as u64 + 10 * SEC,
        first_seen_ns: 10 * SEC,
        born_at_close: false,
        flow: f,
    }
}

/// The verdict between two points; every case also keeps the property that
/// no verdict rests on a ceiling the rate outran.
pub(in crate::attribution) fn verdict_between(a: P, b: P) -> Attribution {
    checked(attribute(Some(&point(a)), &point(b), &Config::default()))
}

/// `a` (of either side), after asserting [`Attribution::check_ceilings`]
/// and [`Attribution::check_binds`].
pub(in crate::attribution) fn checked(a: Attribution) -> Attribution {
    let cfg = Config::default();
    if let Err(e) = a.check_ceilings(&cfg).and(a.check_binds(&cfg)) {
        panic!("{e}; explanation: {}", a.explanation);
    }
    a
}

/// Reference A's `-w 64K` sender over 2 s in which the peer acked
/// `acked` bytes: snd_wnd 80,480 B, srtt 105 ms (104 ms min), busy all
/// the time and rwnd-limited 56% of it.
pub(in crate::attribution) fn window_bound_pair(acked: u64) -> (P, P) {
    let a = P::at(1.0)
        .acked(1_000_000)
        .busy_ms(1000)
        .rwnd_ms(560)
        .srtt_us(105_000)
        .min_rtt_us(104_000)
        .snd_wnd(80_480);
    let b = a
        .t(3.0)
        .acked(1_000_000 + acked)
        .busy_ms(3000)
        .rwnd_ms(1680);
    (a, b)
}
