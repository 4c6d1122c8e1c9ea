//! Receiver-side test flows: a receiving flow's figures at a time, held
//! constant since 0, and the verdict over an interval of them (shared by
//! the receiver test files).

use crate::attribution::{sender::fixtures::checked, *};
use crate::testkit::sample::SampleBuilder;

pub(super) const SEC: u64 = 1_000_000_000;

/// A receiving flow at `t` seconds whose figures held constant since 0.
#[derive(Clone, Copy)]
pub(super) struct R {
    pub(super) t: f64,
    pub(super) received: u64,
    /// This host's own data the peer acknowledged (requests; counted
    /// from 1 at 0).
    pub(super) acked: u64,
    pub(super) rcv_wnd: u32,
    pub(super) rtt_us: u32,
    pub(super) min_rtt_us: u32,
    pub(super) unread: u32,
    /// Times the reader caught up with waiting data (counted from 0).
    pub(super) drains: u32,
    pub(super) closed_ms: u64,
    pub(super) gap_ms: u64,
    /// How many gaps make up `gap_ms`.
    pub(super) gaps: u32,
    /// Of `gap_ms`, the time the reader kept the window shut.
    pub(super) gap_shut_ms: u64,
    /// Of `gap_ms`, the gaps in which this host sent data.
    pub(super) gap_asked_ms: u64,
    pub(super) ooo: u32,
    /// Out-of-order arrivals last grew this long before `t` (s).
    pub(super) ooo_age_s: Option<f64>,
    pub(super) burst_bytes: u64,
    pub(super) burst_ns: u64,
    pub(super) data_segs: u32,
    pub(super) wscale_ok: bool,
    /// The shift this host applies to the window it advertises.
    pub(super) rcv_wscale: u8,
    pub(super) rcvbuf_locked: bool,
    pub(super) rcvbuf: u32,
    pub(super) tcp_rmem_max: u32,
}

impl Default for R {
    fn default() -> Self {
        R {
            t: 0.0,
            received: 0,
            acked: 1,
            rcv_wnd: 4_000_000,
            rtt_us: 50_000,
            min_rtt_us: 50_000,
            unread: 0,
            // A reader that keeps up: it catches up many times a second.
            drains: 1_000,
            closed_ms: 0,
            gap_ms: 0,
            gaps: 0,
            gap_shut_ms: 0,
            gap_asked_ms: 0,
            ooo: 0,
            ooo_age_s: None,
            burst_bytes: 0,
            burst_ns: 0,
            data_segs: 0,
            wscale_ok: true,
            rcv_wscale: 7,
            rcvbuf_locked: false,
            rcvbuf: 6_291_456,
            tcp_rmem_max: 6_291_456,
        }
    }
}

pub(super) fn point(r: R) -> Point {
    let mut f = SampleBuilder::new(1).flow();
    let us = (r.t * 1e6) as u64;
    let at_ns = (r.t * SEC as f64) as u64 + 100 * SEC;
    f.bytes_received = r.received;
    f.bytes_acked = r.acked;
    f.rcv_wnd = r.rcv_wnd;
    f.rcv_rtt_us = r.rtt_us;
    f.rcv_rtt_min_us = r.rtt_us;
    f.min_rtt_us = r.min_rtt_us;
    f.srtt_us = r.min_rtt_us;
    f.unread_bytes = r.unread;
    f.rwnd_closed_us = r.closed_ms * 1000;
    f.rx_gap_us = r.gap_ms * 1000;
    f.rx_gaps = r.gaps;
    f.rx_gap_shut_us = r.gap_shut_ms * 1000;
    f.rx_gap_asked_us = r.gap_asked_ms * 1000;
    f.reader_drains = r.drains;
    f.rcv_ooopack = r.ooo;
    f.data_segs_in = r.data_segs;
    f.last_ooo_ns = r.ooo_age_s.map_or(0, |a| at_ns - (a * SEC as f64) as u64);
    f.wscale_ok = r.wscale_ok;
    f.rcv_wscale = r.rcv_wscale;
    f.rcvbuf_locked = r.rcvbuf_locked;
    f.rcvbuf = r.rcvbuf;
    f.tcp_rmem_max = r.tcp_rmem_max;
    f.integrals = crate::model::integrals::Integrals {
        us,
        rcv_wnd: u64::from(r.rcv_wnd) * us,
        unread: u64::from(r.unread) * us,
        rcv_rtt: u64::from(r.rtt_us) * us,
        rcv_rtt_us: us,
        burst_bytes: r.burst_bytes,
        burst_ns: r.burst_ns,
        ..Default::default()
    };
    Point {
        at_ns,
        first_seen_ns: 100 * SEC,
        born_at_close: false,
        flow: f,
    }
}

/// The points at 0 and 2 s of a flow that received `rate_bps` throughout
/// and reads `end` at 2 s (the start is `end` with every counter at zero).
pub(super) fn interval(rate_bps: f64, end: R) -> (Point, Point) {
    let from = R {
        t: 0.0,
        received: 0,
        acked: 1,
        drains: 0,
        closed_ms: 0,
        gap_ms: 0,
        gaps: 0,
        gap_shut_ms: 0,
        gap_asked_ms: 0,
        ooo: 0,
        burst_bytes: 0,
        burst_ns: 0,
        data_segs: 0,
        ..end
    };
    let to = R {
        t: 2.0,
        received: (rate_bps * 2.0 / 8.0) as u64,
        ..end
    };
    (point(from), point(to))
}

/// The verdict over 0..2 s of [`interval`]`(rate_bps, end)`, at the
/// confidence its rule computes ([`Config::rules_own`]).
pub(super) fn judge(rate_bps: f64, end: R) -> Attribution {
    let (from, to) = interval(rate_bps, end);
    checked(attribute(Some(&from), &to, &Config::default().rules_own()))
}
