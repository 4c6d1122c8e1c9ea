//! The segment `tcp_probe` sees, as the per-packet hook reads it: its
//! flags, acknowledgment number and length from `TCP_SKB_CB(skb)`, and
//! what it does to the flow (ends a burst, closes the window, adds bytes
//! in order).

use crate::read::{Sk, load, off, u32_in_bytes};

/// TCP header flag bits (RFC 9293), as `tcp_skb_cb.tcp_flags` holds them.
pub(crate) const TH_FIN: u8 = 0x01;
pub(crate) const TH_SYN: u8 = 0x02;
pub(crate) const TH_RST: u8 = 0x04;
pub(crate) const TH_ACK: u8 = 0x10;

/// What the sample gate needs of the segment `tcp_rcv_established()` is
/// about to process: its flags and acknowledgment number from
/// `TCP_SKB_CB(skb)` (`struct tcp_skb_cb` in `skb->cb`, filled by
/// `tcp_v4_fill_cb()`/`tcp_v6_fill_cb()` before this point; host order, no
/// packet data touched) and `skb->len`. All zero where the kernel's
/// `sk_buff` has no `cb` member observer can find.
pub(crate) struct Segment {
    /// `TCP_SKB_CB(skb)`; null where it cannot be found.
    pub(crate) cb: *const u8,
    pub(crate) direct: bool,
    pub(crate) ack: u32,
    pub(crate) flags: u8,
    /// TCP header plus payload (bytes).
    pub(crate) len: u32,
}

/// The longest TCP header (bytes): a segment no longer than this carries
/// no payload worth a sample of its own (at most 40 bytes with the
/// shortest header), so it counts as a bare ACK.
pub(crate) const BARE_MAX: u32 = 60;

impl Segment {
    #[inline(always)]
    pub(crate) fn of(sk: Sk, skb: *const u8) -> Segment {
        let cb_off = off!(skb_cb);
        let direct = sk.direct();
        if cb_off == observer_common::OFFSET_NONE {
            return Segment {
                cb: core::ptr::null(),
                direct,
                ack: 0,
                flags: 0,
                len: 0,
            };
        }
        let cb = skb.wrapping_add(cb_off as usize);
        Segment {
            cb,
            direct,
            ack: u32_in_bytes(cb, off!(tcb_ack_seq), direct),
            flags: load(cb, off!(tcb_flags), direct),
            len: load(skb, off!(skb_len), direct),
        }
    }

    /// Whether this segment leaves the flow's sending side at rest: an
    /// ACK of new data that leaves nothing outstanding (`snd_una < ack ==
    /// snd_nxt`: the end of a burst, also when the segment carries the
    /// peer's answer), or a bare ACK while nothing is outstanding (a window
    /// update at idle). A data segment acknowledging nothing new (the
    /// receiving end of a bulk flow) ends nothing. Sampled past the gate
    /// when the stored sample runs a clock this stops
    /// ([`poll::must_sample`]).
    #[inline(always)]
    pub(crate) fn ends_burst(&self, sk: Sk) -> bool {
        if self.flags & TH_ACK == 0 || self.ack != sk.get::<u32>(off!(snd_nxt)) {
            return false;
        }
        self.len <= BARE_MAX || self.ack != sk.get::<u32>(off!(snd_una))
    }

    /// Whether the sender has nothing left unsent (`write_seq ==
    /// snd_nxt`): after an ACK that ends a burst ([`Segment::ends_burst`])
    /// it then rests, as `tcp_chrono_stop()` in `tcp_clean_rtx_queue()`
    /// ends its busy time (net/ipv4/tcp_input.c).
    #[inline(always)]
    pub(crate) fn rests(&self, sk: Sk) -> bool {
        sk.get::<u32>(off!(write_seq)) == sk.get::<u32>(off!(snd_nxt))
    }

    /// Whether this data segment leaves less than two of the peer's
    /// segments of the advertised window (`rcv_wup + rcv_wnd - rcv_nxt`
    /// less its payload, the payload taken as `len` less a 20-byte
    /// header): the sender must now wait, for the reader or for the window
    /// to grow. Sampled, so the time the window stays closed is counted
    /// from here, not from a later sample after the reader reopened it.
    #[inline(always)]
    pub(crate) fn closes_window(&self, sk: Sk) -> bool {
        if self.len <= BARE_MAX {
            return false;
        }
        let edge = sk
            .get::<u32>(off!(rcv_wup))
            .wrapping_add(sk.get::<u32>(off!(rcv_wnd)));
        let left = edge
            .wrapping_sub(sk.get::<u32>(off!(rcv_nxt)))
            .wrapping_sub(self.len - 20) as i32;
        let mss = u32::from(sk.get::<u16>(off!(rcv_mss)));
        left < (2 * mss) as i32
    }

    /// The bytes this segment adds in order (payload, SYN and FIN: `end_seq
    /// - seq` where `seq` is `rcv_nxt`), as `rcv_nxt` will advance; 0 out
    /// of order or where `TCP_SKB_CB` cannot be found.
    #[inline(always)]
    pub(crate) fn in_order(&self, sk: Sk) -> u32 {
        if self.cb.is_null() {
            return 0;
        }
        let (seq, end_seq) = self.seq_range();
        in_order(seq, end_seq, sk.get(off!(rcv_nxt)))
    }

    /// `seq` and `end_seq`, read only for the segments the gate lets through
    /// or that note a reader's move.
    #[inline(always)]
    pub(crate) fn seq_range(&self) -> (u32, u32) {
        (
            u32_in_bytes(self.cb, off!(tcb_seq), self.direct),
            u32_in_bytes(self.cb, off!(tcb_end_seq), self.direct),
        )
    }
}

/// The bytes a segment from `seq` to `end_seq` adds in order at `rcv_nxt`
/// (payload plus SYN and FIN, as `rcv_nxt` will advance): 0 out of order,
/// or for a span over 1 GB (a torn read, not a segment).
#[inline(always)]
pub(crate) fn in_order(seq: u32, end_seq: u32, rcv_nxt: u32) -> u32 {
    let consumed = end_seq.wrapping_sub(seq);
    if seq == rcv_nxt && consumed < (1 << 30) {
        consumed
    } else {
        0
    }
}
