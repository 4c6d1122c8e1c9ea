//! The receiving end's figures of a sample, and the time integrals
//! behind every interval mean: split from [`crate::flow`], which takes the
//! samples.

use observer_common::{FlowSample, advertised_window};

use crate::read::{Sk, off};

/// Adds the interval of `dt_ns` since the previous sample to the
/// time integrals, charged to the figures of that sample.
///
/// # Safety
/// `s` must be valid for reads and writes.
#[inline(always)]
pub unsafe fn integrate(s: *mut FlowSample, dt_ns: u64) {
    let dt = dt_ns / 1000;
    // SAFETY: caller guarantees `s`.
    unsafe {
        let adv = advertised_window((*s).rcv_wnd, (*s).rcv_wscale);
        (*s).integral_us = (*s).integral_us.wrapping_add(dt);
        (*s).rcv_wnd_integral = (*s)
            .rcv_wnd_integral
            .wrapping_add(u64::from(adv).wrapping_mul(dt));
        (*s).unread_integral = (*s)
            .unread_integral
            .wrapping_add(u64::from((*s).unread).wrapping_mul(dt));
        if (*s).rcv_rtt_us != 0 {
            (*s).rcv_rtt_integral = (*s)
                .rcv_rtt_integral
                .wrapping_add(u64::from((*s).rcv_rtt_us).wrapping_mul(dt));
            (*s).rcv_rtt_integral_us = (*s).rcv_rtt_integral_us.wrapping_add(dt);
        }
        (*s).snd_wnd_integral = (*s)
            .snd_wnd_integral
            .wrapping_add(u64::from((*s).snd_wnd).wrapping_mul(dt));
        (*s).srtt_integral = (*s)
            .srtt_integral
            .wrapping_add(u64::from((*s).srtt_us).wrapping_mul(dt));
        (*s).cwnd_integral = (*s)
            .cwnd_integral
            .wrapping_add(u64::from((*s).snd_cwnd).wrapping_mul(dt));
        if closed(s) {
            (*s).rwnd_closed_ns += dt_ns;
        }
    }
}

/// Whether the sample `s` has the receive window closed by the reader:
/// no room for the sender ([`has_room`]) and unread data taking the rest
/// (a buffer that is simply small, read at once, is not).
///
/// # Safety
/// `s` must be valid for reads.
#[inline(always)]
pub unsafe fn closed(s: *const FlowSample) -> bool {
    // SAFETY: caller guarantees `s`.
    unsafe { (*s).rcv_mss != 0 && !has_room((*s).rcv_wnd_left, (*s).rcv_mss) && (*s).unread > 0 }
}

/// Whether `left` bytes of window hold two of the peer's segments of
/// `mss` bytes: less, and the sender must wait.
#[inline(always)]
pub fn has_room(left: u32, mss: u32) -> bool {
    left >= 2 * mss
}

/// Sequence-space bytes `from` up to `to`: 0 for a negative difference,
/// which is a race between two loads, not data.
#[inline(always)]
fn ahead(to: u32, from: u32) -> u32 {
    let d = to.wrapping_sub(from);
    if d < (1 << 30) { d } else { 0 }
}

/// The room left in the window this end last advertised, of `sk` at
/// `rcv_nxt` (`rcv_wup + rcv_wnd - rcv_nxt`, bytes; `rcv_wup` and
/// `rcv_wnd` move only when this end sends a window update).
#[inline(always)]
pub fn window_left(sk: Sk, rcv_nxt: u32) -> u32 {
    let edge = sk
        .get::<u32>(off!(rcv_wup))
        .wrapping_add(sk.get::<u32>(off!(rcv_wnd)));
    ahead(edge, rcv_nxt)
}

/// What the reader did since a flow's last full sample on one CPU, as
/// the first data segment after it found it (the reader caught up, or the
/// window it had closed is open again; [`crate::packet_slot::note_moved`]):
/// kept for the flow's next sample there instead of a full sample at that
/// segment. All zero: nothing kept.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Moved {
    /// When the reader moved: the socket's last event before the segment
    /// (`tcp_mstamp`, monotonic ns; see [`integrate_reader`]).
    pub at_ns: u64,
    /// When the segment arrived (monotonic ns).
    pub seg_ns: u64,
    /// Bytes unread from the reader's move until the segment
    /// (`rcv_nxt - copied_seq`).
    pub unread: u32,
    /// Room left in the window then (bytes; [`window_left`]).
    pub left: u32,
    /// In-order bytes the segment adds to both (payload, SYN and FIN).
    pub consumed: u32,
    /// Explicit padding.
    pub _pad: u32,
}

const _: () = assert!(core::mem::size_of::<Moved>() == 32);

impl Moved {
    /// Nothing kept.
    pub const NONE: Moved = Moved {
        at_ns: 0,
        seg_ns: 0,
        unread: 0,
        left: 0,
        consumed: 0,
        _pad: 0,
    };
}

/// The socket's last event (`tcp_mstamp`, µs, as monotonic ns): where a
/// reader's move is taken to be ([`integrate_reader`]).
#[inline(always)]
pub fn last_event_ns(sk: Sk) -> u64 {
    sk.get::<u64>(off!(tcp_mstamp)).wrapping_mul(1000)
}

/// Bytes received in order and not yet read at `rcv_nxt` (`rcv_nxt -
/// copied_seq`, as `tcp_inq()` counts them).
#[inline(always)]
pub fn unread(sk: Sk, rcv_nxt: u32) -> u32 {
    ahead(rcv_nxt, sk.get(off!(copied_seq)))
}

/// [`integrate`] over the interval from `prev` to `now` (monotonic ns),
/// split where the reader caught up within it. The stored sample `s` may
/// count data waiting unread, or the window closed, that a read then
/// ended without a sample: where the poll-time read runs no program hooks
/// reads. When `sk` now shows the reader caught up with what the sample
/// counted (nothing unread) or the window open again, the read that did
/// it is taken to be the socket's last event, `tcp_mstamp` (µs; the
/// kernel stamps it when a read copies data, up to Linux 6.18, and when a
/// read sends a window update): the stored figures are charged up to
/// then, and nothing unread (a catch-up, `reader_drains`) or the open
/// window from then on. A read followed by a segment sent or processed
/// is stamped late, by at most that gap. Direct reads only (a load-time
/// constant: with helper reads the interval is charged whole).
///
/// `moved` (from the per-packet hook's slot; [`Moved::NONE`] elsewhere),
/// when it falls within the interval, gives the split as a full sample at
/// its segment would have: the stored figures up to the reader's move
/// (counting a catch-up there), the unread bytes and room the segment
/// found from then, and the segment's own bytes added from its arrival.
///
/// # Safety
/// `s` must be valid for reads and writes; `prev < now`.
#[inline(always)]
pub unsafe fn integrate_reader(s: *mut FlowSample, sk: Sk, prev: u64, now: u64, moved: Moved) {
    // SAFETY: caller guarantees `s`.
    unsafe {
        let m = moved;
        if m.at_ns > prev && m.at_ns <= m.seg_ns && m.seg_ns < now {
            integrate(s, m.at_ns - prev);
            if m.unread == 0 && (*s).unread != 0 {
                (*s).reader_drains = (*s).reader_drains.wrapping_add(1);
            }
            (*s).unread = m.unread;
            (*s).rcv_wnd_left = m.left;
            integrate(s, m.seg_ns - m.at_ns);
            (*s).unread = m.unread.saturating_add(m.consumed);
            (*s).rcv_wnd_left = m.left.saturating_sub(m.consumed);
            integrate(s, now - m.seg_ns);
            return;
        }
        if sk.direct() && ((*s).unread != 0 || closed(s)) {
            let rcv_nxt: u32 = sk.get(off!(rcv_nxt));
            let unread = unread(sk, rcv_nxt);
            let left = window_left(sk, rcv_nxt);
            let drained = unread == 0 && (*s).unread != 0;
            let reopened = closed(s) && has_room(left, (*s).rcv_mss);
            let at = last_event_ns(sk);
            if (drained || reopened) && at > prev && at < now {
                integrate(s, at - prev);
                if drained {
                    (*s).unread = 0;
                    (*s).reader_drains = (*s).reader_drains.wrapping_add(1);
                }
                if reopened {
                    (*s).rcv_wnd_left = left;
                }
                integrate(s, now - at);
                return;
            }
        }
        integrate(s, now - prev);
    }
}

/// Copies the receive side of `sk` into `s`: unread bytes (counting a
/// drain, `reader_drains`, when they fall to zero), the window and what
/// caps it, out-of-order arrivals (stamping `last_ooo_ns` when they grow),
/// the receiver RTT and its minimum.
///
/// # Safety
/// `s` must be valid for reads and writes.
#[inline(always)]
pub unsafe fn receiver(s: *mut FlowSample, sk: Sk, now: u64) {
    let rcv_nxt: u32 = sk.get(off!(rcv_nxt));
    let wup: u32 = sk.get(off!(rcv_wup));
    let wnd: u32 = sk.get(off!(rcv_wnd));
    let ooo: u32 = sk.get(off!(rcv_ooopack));
    let rcv_rtt: u32 = sk.get::<u32>(off!(rcv_rtt)) >> 3;
    let rcv_mss: u16 = sk.get(off!(rcv_mss));
    // SAFETY: caller guarantees `s`.
    unsafe {
        if (*s).samples != 0 && ooo != (*s).rcv_ooopack {
            (*s).last_ooo_ns = now;
        }
        (*s).rcv_ooopack = ooo;
        (*s).rcv_wnd = wnd;
        let unread = unread(sk, rcv_nxt);
        if unread == 0 && (*s).unread != 0 {
            (*s).reader_drains = (*s).reader_drains.wrapping_add(1);
        }
        (*s).unread = unread;
        (*s).rcv_wnd_left = ahead(wup.wrapping_add(wnd), rcv_nxt);
        (*s).rcv_rtt_us = rcv_rtt;
        if rcv_rtt != 0 && ((*s).rcv_rtt_min_us == 0 || rcv_rtt < (*s).rcv_rtt_min_us) {
            (*s).rcv_rtt_min_us = rcv_rtt;
        }
        (*s).rcv_mss = u32::from(rcv_mss);
        (*s).window_clamp = sk.get(off!(window_clamp));
        (*s).rcv_ssthresh = sk.get(off!(rcv_ssthresh));
        (*s).rcv_space = sk.get(off!(rcvq_space));
        (*s).segs_in = sk.get(off!(segs_in));
        (*s).data_segs_in = sk.get(off!(data_segs_in));
        (*s).userlocks = sk.bits(off!(userlocks_bit), off!(userlocks_width)) as u8;
        (*s).wscale_ok = sk.bits(off!(wscale_ok_bit), off!(wscale_ok_width)) as u8;
        (*s).rcv_wscale = sk.bits(off!(rcv_wscale_bit), off!(rcv_wscale_width)) as u8;
        (*s).snd_wscale = sk.bits(off!(snd_wscale_bit), off!(snd_wscale_width)) as u8;
        (*s).tstamp_ok = sk.bits(off!(tstamp_ok_bit), off!(tstamp_ok_width)) as u8;
        (*s).sack_ok = sk.bits(off!(sack_ok_bit), off!(sack_ok_width)) as u8;
    }
}
