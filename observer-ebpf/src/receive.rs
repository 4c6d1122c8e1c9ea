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
        // Closed by the reader: little room left and unread data taking
        // the rest (a buffer that is simply small, read at once, is not).
        if (*s).rcv_mss != 0 && (*s).rcv_wnd_left < 2 * (*s).rcv_mss && (*s).unread > 0 {
            (*s).rwnd_closed_ns += dt_ns;
        }
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
    let copied: u32 = sk.get(off!(copied_seq));
    let wup: u32 = sk.get(off!(rcv_wup));
    let wnd: u32 = sk.get(off!(rcv_wnd));
    let unread = rcv_nxt.wrapping_sub(copied);
    let left = wup.wrapping_add(wnd).wrapping_sub(rcv_nxt);
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
        // Sequence arithmetic: a negative difference is a race, not data.
        let unread = if unread < (1 << 30) { unread } else { 0 };
        if unread == 0 && (*s).unread != 0 {
            (*s).reader_drains = (*s).reader_drains.wrapping_add(1);
        }
        (*s).unread = unread;
        (*s).rcv_wnd_left = if left < (1 << 30) { left } else { 0 };
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
