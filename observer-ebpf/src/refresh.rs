//! The full sample: a flow's changing figures copied from its socket, and
//! the clocks summed between samples (cwnd-limited, send buffer full,
//! app-limited, the receive side's integrals).

use aya_ebpf::helpers::{bpf_jiffies64, bpf_ktime_get_ns};
use observer_common::{FlowSample, tcp_state};

use crate::{
    read::{Sk, deref, off},
    receive,
};

/// The bit of `socket.flags` the kernel sets when a writer finds the send
/// buffer full and waits for space, cleared when space is made
/// (`SOCK_NOSPACE` in include/linux/net.h; `sk_stream_write_space()` in
/// net/core/stream.c). A constant of the kernel's ABI, not an offset.
const SOCK_NOSPACE: u32 = 2;

/// Copies the changing figures of `sk` into the flow-map entry `s`,
/// accounts cwnd-limited time since the previous sample, and notes the
/// flow in the change journal.
///
/// # Safety
/// `s` must point into the flow map.
#[inline(always)]
pub unsafe fn refresh(s: *mut FlowSample, sk: Sk) {
    // SAFETY: caller guarantees `s`.
    unsafe { refresh_moved(s, sk, receive::Moved::NONE) }
}

/// [`refresh`], with what the reader did since this CPU's last sample of
/// the flow (see [`receive::integrate_reader`]).
///
/// # Safety
/// `s` must point into the flow map.
#[inline(always)]
pub unsafe fn refresh_moved(s: *mut FlowSample, sk: Sk, moved: receive::Moved) {
    // SAFETY: caller guarantees `s`.
    unsafe {
        fill_moved(s, sk, moved);
        crate::journal::note(s);
    }
}

/// Copies the changing figures of `sk` into `s` (a flow-map entry or a
/// close record) and accounts cwnd-limited time since the previous sample.
///
/// # Safety
/// `s` must be valid for reads and writes.
#[inline(always)]
pub unsafe fn fill(s: *mut FlowSample, sk: Sk) {
    // SAFETY: caller guarantees `s`.
    unsafe { fill_moved(s, sk, receive::Moved::NONE) }
}

/// [`fill`], with `moved` as in [`refresh_moved`].
///
/// # Safety
/// `s` must be valid for reads and writes.
#[inline(always)]
unsafe fn fill_moved(s: *mut FlowSample, sk: Sk, moved: receive::Moved) {
    let now = unsafe { bpf_ktime_get_ns() };
    let cwnd: u32 = sk.get(off!(snd_cwnd));
    let packets_out: u32 = sk.get(off!(packets_out));
    let sacked: u32 = sk.get(off!(sacked_out));
    let lost: u32 = sk.get(off!(lost_out));
    let retrans: u32 = sk.get(off!(retrans_out));
    let left = packets_out.saturating_sub(sacked.saturating_add(lost));
    let inflight = left.saturating_add(retrans);
    // The unsent bytes and the writer's state, with direct reads only: with
    // helper reads (kernels that reject bpf_skc_to_tcp_sock, 5.8) these
    // reads push the program past the verifier's million instructions on
    // 6.1, so there cwnd-limited is in-flight >= cwnd alone and the
    // send-buffer clock stays 0 (docs/kernels.md). `direct` is a load-time
    // constant: the verifier drops the branch not taken.
    let (notsent, torn, state, socket_flags) = if sk.direct() {
        let notsent = sk
            .get::<u32>(off!(write_seq))
            .wrapping_sub(sk.get::<u32>(off!(snd_nxt)));
        let flags: u64 = deref(sk.raw(), off!(sk_socket), off!(socket_flags));
        (
            notsent,
            notsent >= (1 << 30),
            sk.get::<u8>(off!(state)),
            flags,
        )
    } else {
        (0, true, 0, 0)
    };
    // Above 1 GB is a torn read of the two sequence numbers, not data:
    // neither clock below may count on it.
    let notsent = if torn { 0 } else { notsent };
    let mss: u32 = sk.get(off!(mss_cache));
    // The window is full now, not "was full within the last round trip"
    // (the kernel's is_cwnd_limited): in-flight >= cwnd, or more than a
    // segment waits while less than a third of the window is open, which
    // TSO deferral will not send either (net/ipv4/tcp_output.c
    // tcp_tso_should_defer(), tcp_tso_win_divisor 3). tcp_write_xmit()
    // defers only a write queue head of more than one segment: a shorter
    // tail waits on Nagle or autocorking, not on the window. See
    // FlowSample::cwnd_limited_ns.
    let limited = cwnd > 0
        && (inflight >= cwnd || (notsent > mss && cwnd.saturating_sub(inflight) * 3 < cwnd));
    // As the kernel's own sndbuf-limited test (tcp_cwnd_validate()): only
    // while the connection carries the process's writes.
    let writing = state == tcp_state::ESTABLISHED || state == tcp_state::CLOSE_WAIT;
    let sndbuf_full = cwnd > 0
        && writing
        && !torn
        && !limited
        && notsent == 0
        && socket_flags & (1u64 << SOCK_NOSPACE) != 0;
    let srtt: u32 = sk.get(off!(srtt_us));
    // SAFETY: caller guarantees `s`.
    unsafe {
        let prev = (*s).last_seen_ns;
        if prev != 0 && now > prev {
            if (*s).cwnd_limited != 0 {
                (*s).cwnd_limited_ns += now - prev;
            }
            if (*s).sndbuf_full != 0 {
                (*s).sndbuf_full_ns += now - prev;
            }
            if (*s).rate_app_limited != 0 {
                (*s).app_limited_ns += now - prev;
            }
        }
        if prev != 0 && now > prev {
            receive::integrate_reader(s, sk, prev, now, moved);
        }
        receive::receiver(s, sk, now);
        (*s).cwnd_limited = limited as u8;
        (*s).sndbuf_full = sndbuf_full as u8;
        (*s).notsent = notsent;
        (*s).last_seen_ns = now;
        (*s).jiffies = bpf_jiffies64();
        (*s).samples += 1;
        (*s).state = sk.get(off!(state));
        (*s).snd_cwnd = cwnd;
        (*s).packets_out = packets_out;
        (*s).sacked_out = sacked;
        (*s).lost_out = lost;
        (*s).retrans_out = retrans;
        (*s).inflight = inflight;
        (*s).srtt_us = srtt >> 3;
        (*s).snd_wnd = sk.get(off!(snd_wnd));
        (*s).max_window = sk.get(off!(max_window));
        (*s).snd_ssthresh = sk.get(off!(snd_ssthresh));
        (*s).min_rtt_us = sk.get(off!(min_rtt));
        (*s).mss = mss;
        (*s).total_retrans = sk.get(off!(total_retrans));
        (*s).bytes_acked = sk.get(off!(bytes_acked));
        (*s).bytes_received = sk.get(off!(bytes_received));
        (*s).bytes_sent = sk.get(off!(bytes_sent));
        let delivered: u32 = sk.get(off!(delivered));
        // A delivery-rate sample is taken only on an ACK that delivers
        // data: unchanged `delivered` means the stored sample is an old one.
        let fresh = delivered != (*s).delivered;
        (*s).delivered = delivered;
        let rate_delivered: u32 = sk.get(off!(rate_delivered));
        let rate_interval_us: u32 = sk.get(off!(rate_interval_us));
        (*s).rate_delivered = rate_delivered;
        (*s).rate_interval_us = rate_interval_us;
        // Direct reads only, like the clocks above (the verifier's budget
        // on 6.1's helper reads).
        if sk.direct() {
            crate::delivery::delivery_max(s, now, fresh, rate_delivered, rate_interval_us);
        }
        (*s).rate_app_limited =
            sk.bits(off!(rate_app_limited_bit), off!(rate_app_limited_width)) as u8;
        (*s).chrono_start = sk.get(off!(chrono_start));
        let stat = off!(chrono_stat);
        if stat != observer_common::OFFSET_NONE {
            // Element by element: one load per array member.
            (*s).chrono_stat = [sk.get(stat), sk.get(stat + 4), sk.get(stat + 8)];
        }
        (*s).chrono_type = sk.bits(off!(chrono_type_bit), off!(chrono_type_width)) as u8;
        (*s).ca_state = sk.bits(off!(ca_state_bit), off!(ca_state_width)) as u8;
        let sndbuf: i32 = sk.get(off!(sk_sndbuf));
        let wmem: i32 = sk.get(off!(sk_wmem_queued));
        let rcvbuf: i32 = sk.get(off!(sk_rcvbuf));
        (*s).sk_sndbuf = sndbuf.max(0) as u32;
        (*s).sk_wmem_queued = wmem.max(0) as u32;
        (*s).sk_rcvbuf = rcvbuf.max(0) as u32;
        // What `ss -ti` prints beside the figures above (tcp_get_info() in
        // net/ipv4/tcp.c reads the same members).
        (*s).rto_jiffies = sk.get(off!(icsk_rto));
        (*s).pacing_rate = sk.get(off!(sk_pacing_rate));
        (*s).max_pacing_rate = sk.get(off!(sk_max_pacing_rate));
        (*s).lsndtime = sk.get(off!(lsndtime));
        (*s).lrcvtime = sk.get(off!(lrcvtime));
        (*s).rcv_tstamp = sk.get(off!(rcv_tstamp));
        (*s).reordering = sk.get(off!(reordering));
        (*s).delivered_ce = sk.get(off!(delivered_ce));
        (*s).dsack_dups = sk.get(off!(dsack_dups));
    }
}
