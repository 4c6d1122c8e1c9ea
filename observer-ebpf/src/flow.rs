//! What the hooks do: sample a flow past the gate, carry a segment's
//! effect forward, attribute the flow to a process, and hand a close to
//! [`close`](crate::close) (entries themselves: [`entry`](crate::entry)).

use aya_ebpf::helpers::{
    bpf_get_current_cgroup_id, bpf_get_current_comm, bpf_get_current_pid_tgid, bpf_jiffies64,
};
use observer_common::{AF_INET, AF_INET6, Counter, FlowSample, chrono, packet_stages, tcp_state};

use crate::{
    arrivals,
    entry::{endpoints, entry},
    gate,
    maps::count,
    packet_slot, poll,
    read::{Sk, off},
    receive::Moved,
    refresh::{refresh, refresh_moved},
    segment::{BARE_MAX, Segment, TH_ACK, TH_FIN, TH_RST, TH_SYN, in_order},
    sock::{cc_name, key_of},
};

/// Per-packet hook: sample the flow (creating its entry if this is the first
/// packet observer sees of it, e.g. a flow older than the agent), then carry
/// forward the effect of the segment `skb` that is about to be processed.
/// Most segments of a busy flow are left to the sample gate ([`gate`]): one
/// that carries SYN, FIN or RST is always sampled, one that closes the
/// receive window unless this CPU's last sample of the flow left it closed
/// ([`packet_slot::left_closed`]); one that ends a burst (acknowledges
/// everything sent, with nothing left to send) only when the stored
/// sample runs a clock it stops
/// ([`poll::must_sample`]): the poll-time read makes the rest exact at the
/// next poll.
///
/// `stages` (`observer_common::packet_stages`) stops the program after a
/// stage, for the benchmark's cost breakdown: the agent passes the
/// constant `ALL`, and the checks compile away.
#[inline(always)]
pub fn on_packet(sk: *const u8, skb: *const u8, stages: u32) {
    count(Counter::ProbeHits);
    let Some(sk) = Sk::of(sk) else {
        return;
    };
    if stages == packet_stages::CAST {
        return;
    }
    let key = key_of(sk);
    let seg = Segment::of(sk, skb);
    if stages == packet_stages::COOKIE {
        return;
    }
    let slot = packet_slot::of(key);
    if stages == packet_stages::SLOT {
        return;
    }
    if let Some(slot) = slot.filter(|_| seg.len > BARE_MAX) {
        // SAFETY: this CPU's slot of the flow.
        unsafe { arrivals::note(slot, seg.len) };
    }
    if stages == packet_stages::ARRIVAL {
        return;
    }
    if let Some(slot) = slot.filter(|_| seg.flags & TH_ACK != 0 && sk.direct()) {
        // SAFETY: this CPU's slot of the flow.
        unsafe { packet_slot::note_rate(slot, sk) };
    }
    if stages == packet_stages::NOTES {
        return;
    }
    // A segment that closes the window passes unless this CPU's last full
    // sample of the flow already left it closed (its clock runs): a sender
    // held by the window sends into its last segments, closing it again
    // with each one (four loopback streams on two CPUs: 40% of segments
    // were sampled for it). Where another CPU's sample has since found the
    // window open, the clock starts at the flow's next sample instead (the
    // gate's next jiffy on this CPU, a segment on another, the poll).
    let flagged = seg.flags & (TH_SYN | TH_FIN | TH_RST) != 0;
    let closes = seg.closes_window(sk);
    // The first data segment after the reader caught up or reopened the
    // window (`packet_slot::reader_moved`) ends the reader's clocks. It
    // closes the window again and passes, or it notes the move in the
    // slot for the flow's next sample on this CPU (`note_moved`: with the
    // window cycling, a pass for each reopen doubled the samples), or
    // passes where one is noted already or reads go through the helper.
    let moved = seg.len > BARE_MAX
        && slot.is_some_and(|p| {
            // SAFETY: this CPU's slot of the flow.
            unsafe { packet_slot::reader_moved(p, sk) }
        });
    let mut settles = flagged
        || (closes
            && (moved
                || !slot.is_some_and(|p| {
                    // SAFETY: this CPU's slot of the flow.
                    unsafe { packet_slot::left_closed(p) }
                })));
    if moved && !settles {
        let noted = sk.direct()
            && slot.is_some_and(|p| {
                // SAFETY: this CPU's slot of the flow, its arrival noted.
                unsafe { packet_slot::note_moved(p, sk, seg.in_order(sk)) }
            });
        settles = !noted;
    }
    let ends_burst = !settles && seg.ends_burst(sk);
    // Without the poll-time read, as before it existed: a segment that
    // ends a burst passes without asking the gate (nor taking its slot).
    // With it, only where the sender then rests (nothing left unsent) and
    // the stored sample runs a clock that a segment stops (cwnd-limited,
    // send buffer full): unread data waits for a read. A bulk sender's
    // ACK of everything sent while more waits in its write queue stops
    // nothing: the queue refills the window at once, and the ACK that
    // ends its last burst passes. (Four loopback streams sampled 80-97%
    // of their senders' ACKs in two runs of three without this test.)
    let held = if poll::on() {
        !settles
            && gate::packet_held(slot)
            && !(ends_burst && seg.rests(sk) && poll::must_sample(sk, key, poll::SENDER_CLOCKS))
    } else {
        !settles && !ends_burst && gate::packet_held(slot)
    };
    if held {
        return;
    }
    if stages == packet_stages::GATE {
        return;
    }
    if let Some(s) = entry(sk, key, true) {
        if stages == packet_stages::LOOKUP {
            return;
        }
        // SAFETY: `s` points into the flow map's value for this socket.
        unsafe {
            let moved = slot.map_or(Moved::NONE, |p| packet_slot::take_moved(p));
            refresh_moved(s, sk, moved);
            if stages == packet_stages::REFRESH {
                return;
            }
            // Data waited unread when this segment arrived (before it).
            let lagging = (*s).unread != 0;
            carry_forward(s, sk, &seg);
            packet_slot::collect(s, sk);
            if let Some(slot) = slot {
                packet_slot::note_reader(slot, s, lagging);
            }
            poll::note_clocks(sk, key, s);
            if flagged || ends_burst {
                // The end of a burst (not a window closed or opened: the
                // receiving end's): a sender's congestion control name is
                // refreshed here (see `cc_name`).
                cc_name(s, sk);
            }
        }
    }
}

/// State-change hook: ESTABLISHED creates the entry, CLOSE emits the final
/// record and removes it.
#[inline(always)]
pub fn on_state(sk: *const u8, old: u8, new: u8) {
    let Some(sk) = Sk::of(sk) else {
        return;
    };
    if new == tcp_state::SYN_SENT {
        // connect(): process context, so the owner is the caller.
        if let Some(s) = entry(sk, key_of(sk), true) {
            // SAFETY: as in on_packet.
            unsafe {
                set_owner(s);
                (*s).seen_from_start = 1;
            }
        }
    } else if new == tcp_state::ESTABLISHED {
        let key = key_of(sk);
        if let Some(s) = entry(sk, key, true) {
            // SAFETY: as in on_packet. The local port and address of a
            // connect()ing socket are only final now.
            unsafe {
                endpoints(s, sk);
                refresh(s, sk);
                (*s).seen_from_start = 1;
                // The tracepoint fires before the kernel stores the new
                // state, and the caller stamps the handshake's end right
                // after (tcp_finish_connect(), tcp_rcv_state_process() in
                // net/ipv4/tcp_input.c): carry both forward, or a flow that
                // never sends reads as syn-sent with no data ever sent.
                (*s).state = new;
                (*s).lsndtime = (*s).jiffies as u32;
                if old == tcp_state::SYN_SENT {
                    (*s).lrcvtime = (*s).jiffies as u32;
                }
                poll::note_clocks(sk, key, s);
            }
        }
    } else if new == tcp_state::CLOSE {
        crate::close::close(sk, old);
    } else if let Some(s) = entry(sk, key_of(sk), false) {
        // Any other change (FIN-WAIT-1, CLOSE-WAIT, ...): the state a
        // quiet flow shows until its next sample.
        // SAFETY: as in on_packet.
        unsafe {
            (*s).state = new;
            // FIN-WAIT-1 and LAST-ACK come only from close() or shutdown()
            // (`tcp_close_state()`, net/ipv4/tcp.c): process context, the
            // caller the socket's owner. An accepted flow that closes
            // before the owner walk reached it gets its owner here.
            if (new == tcp_state::FIN_WAIT1 || new == tcp_state::LAST_ACK) && (*s).pid == 0 {
                set_owner(s);
            }
        }
    }
}

/// Destroy hook, a backstop for the CLOSE above: the kernel skips a
/// tracing program that would nest in itself on one CPU (counted as the
/// program's `recursion_misses`), e.g. `inet_sock_set_state` in softirq
/// while the same program runs for another socket in process context. A
/// flow whose CLOSE was skipped still has its entry when the socket is
/// freed: emit its record then. A flow closed normally has none left.
#[inline(always)]
pub fn on_destroy(sk: *const u8) {
    let Some(sk) = Sk::of(sk) else {
        return;
    };
    crate::close::close(sk, tcp_state::CLOSE);
}

/// `TCP_CA_Loss` of `enum tcp_ca_state` (include/net/inet_connection_sock.h):
/// the state a retransmission timeout puts the sender in
/// (`tcp_enter_loss()`, net/ipv4/tcp_input.c).
const TCP_CA_LOSS: u8 = 4;

/// The read gate's tag for the retransmission hook: no process has it
/// (a tgid is at most `PID_MAX_LIMIT`, 4,194,304).
const RETRANSMIT_TAG: u32 = u32::MAX;

/// Retransmission hook (`tcp_retransmit_skb`, net/ipv4/tcp_output.c): a
/// sender whose segments all vanish (an outage, a PMTU black hole) gets
/// no ACK, so no segment samples it, and where no walk reaches it (a flow
/// in another network namespace when only the TCP iterator runs) its
/// figures would stay at its last ACK for good. A retransmission timeout
/// (`tcp_retransmit_timer()`, net/ipv4/tcp_timer.c) enters `TCP_CA_Loss`
/// before it resends the head: that resend is sampled, at most once a
/// jiffy per CPU ([`gate::held`]), so each timeout shows as
/// `total_retrans` growing with nothing acked. Fast retransmits (in
/// Recovery) are left to the ACKs that trigger them, which the packet
/// hook samples; so are the resends a timeout's ACKs clock out in Loss,
/// which the gate holds within the ACK's jiffy. Only a flow observer
/// already tracks is sampled.
#[inline(always)]
pub fn on_retransmit(sk: *const u8) {
    let Some(sk) = Sk::of(sk) else {
        return;
    };
    let ca_state = sk.bits(off!(ca_state_bit), off!(ca_state_width)) as u8;
    if ca_state != TCP_CA_LOSS {
        return;
    }
    let key = key_of(sk);
    if gate::held(key, RETRANSMIT_TAG) {
        return;
    }
    if let Some(s) = entry(sk, key, false) {
        // SAFETY: `s` points into the flow map's value for this socket.
        unsafe {
            refresh(s, sk);
            poll::note_clocks(sk, key, s);
        }
    }
}

/// Process-context hook after a receive call on any socket: attribute a
/// TCP flow to the calling process (the only way observer learns the
/// owner of a flow accepted by a listener; a connecting one has it from
/// `connect()`) and refresh its figures. A read by the flow's owner that
/// leaves nothing unread (`copied_seq == rcv_nxt`) while the stored
/// sample runs no clock and a walk reaches the flow does nothing, not even
/// ask the gate ([`poll::settled_read`]: request/response traffic, read
/// after read). Other calls by the same process on this CPU within one
/// jiffy are left to the sample gate ([`gate`]), except one that leaves
/// nothing unread while the stored sample still counts unread data or
/// runs another clock ([`poll::must_sample`]), so the clocks of a reader
/// that caught up stop there.
///
/// Sends have no hook: every send costs at least the empty-program floor,
/// and a sender's figures come from its ACKs ([`on_packet`], which also
/// keeps every delivery-rate sample) and the poll-time read. An accepted
/// flow that never reads shows no owner.
#[inline(always)]
pub fn on_recv(sk: *const u8) {
    let Some(sk) = Sk::of(sk) else {
        return;
    };
    let family: u16 = sk.get(off!(family));
    if family != AF_INET && family != AF_INET6 {
        return;
    }
    let key = key_of(sk);
    let tgid = (bpf_get_current_pid_tgid() >> 32) as u32;
    // A read that drains a settled flow its owner reads: nothing to do,
    // not even the gate (request/response traffic, read after read).
    if poll::settled_read(key, tgid) && drained(sk) {
        return;
    }
    let state: u8 = sk.get(off!(state));
    let held = if poll::on() {
        gate::held(key, tgid) && !(drained(sk) && poll::must_sample(sk, key, poll::ALL_CLOCKS))
    } else {
        !drained(sk) && gate::held(key, tgid)
    };
    if held {
        return;
    }
    let Some(s) = entry(sk, key, tcp_state::is_connected(state)) else {
        return;
    };
    // SAFETY: `s` points into the flow map's value for this socket.
    unsafe {
        set_owner(s);
        refresh(s, sk);
        cc_name(s, sk);
        poll::note_clocks(sk, key, s);
    }
}

/// Read hook where `sock_recv_length` is missing (before Linux 6.3):
/// `tcp_rcv_space_adjust` fires as `tcp_recvmsg()` copies data to the
/// reader, after the segments were processed, so an idle flow's figures
/// do not lag its last received segment. It also fires from
/// `tcp_read_sock()`, which stream parsers call in softirq, so the current
/// task is not taken as the owner here. Gated like [`on_recv`].
#[inline(always)]
pub fn on_read(sk: *const u8) {
    let Some(sk) = Sk::of(sk) else {
        return;
    };
    let key = key_of(sk);
    let held = if poll::on() {
        gate::held(key, 0) && !(drained(sk) && poll::must_sample(sk, key, poll::ALL_CLOCKS))
    } else {
        !drained(sk) && gate::held(key, 0)
    };
    if held {
        return;
    }
    if let Some(s) = entry(sk, key, false) {
        // SAFETY: `s` points into the flow map's value for this socket.
        unsafe {
            refresh(s, sk);
            poll::note_clocks(sk, key, s);
        }
    }
}

/// Whether the reader has everything received so far (`copied_seq ==
/// rcv_nxt`): after a read, the last read before the flow may go quiet.
#[inline(always)]
fn drained(sk: Sk) -> bool {
    sk.get::<u32>(off!(rcv_nxt)) == sk.get::<u32>(off!(copied_seq))
}

/// Records the current thread as the flow's owner, if it changed: its
/// process (tgid), its own name (`comm`, the thread's, as `connect()`
/// records it; the owner walk, which sees only processes, records the
/// process's) and cgroup.
///
/// # Safety
/// `s` must be valid for reads and writes.
#[inline(always)]
unsafe fn set_owner(s: *mut FlowSample) {
    let tgid = (bpf_get_current_pid_tgid() >> 32) as u32;
    let comm = bpf_get_current_comm().unwrap_or([0; 16]);
    // SAFETY: caller guarantees `s`.
    unsafe {
        if (*s).pid == tgid && same_name(&(*s).comm, &comm) {
            return;
        }
        (*s).pid = tgid;
        (*s).comm = comm;
        (*s).cgroup_id = bpf_get_current_cgroup_id();
    }
    count(Counter::OwnerUpdates);
}

/// Whether two `comm`s are equal, compared as two u64 words (a `==` on
/// the arrays may become a `memcmp` call, which BPF has none of).
#[inline(always)]
fn same_name(a: &[u8; 16], b: &[u8; 16]) -> bool {
    let words = |c: &[u8; 16]| {
        let mut lo = [0u8; 8];
        let mut hi = [0u8; 8];
        lo.copy_from_slice(&c[..8]);
        hi.copy_from_slice(&c[8..]);
        (u64::from_ne_bytes(lo), u64::from_ne_bytes(hi))
    };
    words(a) == words(b)
}

/// Whether the window a sample found full is still full once the ACK
/// being processed frees `acked` bytes: `tcp_probe` fires before
/// `tcp_ack()`, so the sample shows the window as it was up to this ACK,
/// and the cwnd-limited clock would hold that state until the next sample
/// (a jiffy or more, often the next train of ACKs a round trip later: a
/// sender has no hook of its own). After the ACK,
/// `tcp_data_snd_check()` sends what waits unsent up to the window: the
/// window stays full only if that fills it, so a sender with little left
/// unsent (a send buffer that all went out) has room until its writer
/// refills it. In slow start (cwnd below ssthresh) the window grows by the
/// segments acked (`tcp_slow_start()`). Only clears the flag: growing it
/// would take a pacing or Nagle wait for a full window.
///
/// # Safety
/// `s` must be valid for reads and writes.
#[inline(always)]
unsafe fn window_after_ack(s: *mut FlowSample, acked: u32) {
    // SAFETY: caller guarantees `s`.
    unsafe {
        let mss = (*s).mss;
        if (*s).cwnd_limited == 0 || mss == 0 {
            return;
        }
        let freed = acked / mss;
        let cwnd = (*s).snd_cwnd;
        let cwnd = if cwnd < (*s).snd_ssthresh {
            cwnd.saturating_add(freed).min((*s).snd_ssthresh)
        } else {
            cwnd
        };
        let unsent = (*s).notsent / mss + u32::from(!(*s).notsent.is_multiple_of(mss));
        let after = (*s).inflight.saturating_sub(freed).saturating_add(unsent);
        if after < cwnd {
            (*s).cwnd_limited = 0;
        }
    }
}

/// Applies the segment `seg`, which `tcp_rcv_established()` is
/// about to process, to the sample just taken: bytes newly acknowledged (as
/// `tcp_snd_una_update()` will count them), bytes newly received in order
/// (as `tcp_rcv_nxt_update()` will), and, when the ACK covers everything
/// sent with nothing left to send, the end of the busy period
/// (`tcp_chrono_stop()` in `tcp_clean_rtx_queue()`). The next sample
/// replaces all of these with the kernel's own values.
///
/// # Safety
/// `s` must be valid for reads and writes.
#[inline(always)]
unsafe fn carry_forward(s: *mut FlowSample, sk: Sk, seg: &Segment) {
    if seg.cb.is_null() {
        return;
    }
    let (seq, end_seq) = seg.seq_range();
    let (ack, flags) = (seg.ack, seg.flags);
    // SAFETY: caller guarantees `s`.
    unsafe {
        if flags & TH_ACK != 0 {
            let una: u32 = sk.get(off!(snd_una));
            let nxt: u32 = sk.get(off!(snd_nxt));
            let acked = ack.wrapping_sub(una);
            // In the receive window (tcp_sequence(): an out-of-window
            // segment such as a zero-window probe is dropped before
            // tcp_ack()), neither old nor ahead of snd_nxt: tcp_ack()
            // stamps it (refresh just read the jiffies).
            let wup: u32 = sk.get(off!(rcv_wup));
            if acked <= nxt.wrapping_sub(una) && end_seq.wrapping_sub(wup) as i32 >= 0 {
                (*s).rcv_tstamp = (*s).jiffies as u32;
            }
            if acked != 0 && acked <= nxt.wrapping_sub(una) {
                (*s).bytes_acked += u64::from(acked);
                window_after_ack(s, acked);
                let write_seq: u32 = sk.get(off!(write_seq));
                if ack == nxt && write_seq == nxt {
                    let now = bpf_jiffies64() as u32;
                    let ran = now.wrapping_sub((*s).chrono_start);
                    // Constant indices: the verifier cannot bound a computed one.
                    match (*s).chrono_type {
                        chrono::BUSY => (*s).chrono_stat[0] = (*s).chrono_stat[0].wrapping_add(ran),
                        chrono::RWND_LIMITED => {
                            (*s).chrono_stat[1] = (*s).chrono_stat[1].wrapping_add(ran)
                        }
                        chrono::SNDBUF_LIMITED => {
                            (*s).chrono_stat[2] = (*s).chrono_stat[2].wrapping_add(ran)
                        }
                        _ => {}
                    }
                    (*s).chrono_type = chrono::UNSPEC;
                    (*s).chrono_start = now;
                    (*s).packets_out = 0;
                    (*s).inflight = 0;
                    (*s).retrans_out = 0;
                    (*s).sacked_out = 0;
                    (*s).lost_out = 0;
                    (*s).cwnd_limited = 0;
                    (*s).sndbuf_full = 0;
                    (*s).notsent = 0;
                }
            }
        }
        // end_seq - seq: payload plus SYN and FIN, as rcv_nxt will advance.
        let consumed = end_seq.wrapping_sub(seq);
        if consumed > 1 && consumed < (1 << 30) {
            // A data segment arrives now (refresh just stamped the time).
            let now = (*s).last_seen_ns;
            let last = (*s).last_rx_ns;
            // SAFETY: reading a static (see `read::volatile`).
            let threshold = core::ptr::read_volatile(&raw const crate::maps::RX_GAP);
            // The window's closed time is summed up to now (refresh), so
            // what it gained since the last arrival is the gap's shut part.
            let closed = (*s).rwnd_closed_ns;
            if last != 0 && now > last && now - last > threshold {
                let gap = now - last;
                (*s).rx_gap_ns += gap;
                (*s).rx_gaps = (*s).rx_gaps.wrapping_add(1);
                // A mark above the sum (two CPUs' samples racing) is no
                // closed time.
                let shut = closed.saturating_sub((*s).rx_shut_mark_ns);
                (*s).rx_gap_shut_ns += if shut < gap { shut } else { gap };
                // This host sent data (a request) after the data before the
                // gap arrived: the sender may have waited for it. Exactly
                // where this end began sending from nothing in flight (its
                // first_tx_mstamp, µs, later than that arrival: a request
                // sent within the same jiffy counts); else a jiffy or more
                // later by lsndtime against lrcvtime (refresh just read
                // both stamps; the probe runs before tcp_event_data_recv()
                // stamps this segment). Only a gap's end reads it.
                let began = sk.get::<u64>(off!(first_tx_mstamp)).wrapping_mul(1000);
                let sent = (*s).lsndtime;
                let later = sent != 0 && sent.wrapping_sub((*s).lrcvtime) as i32 > 0;
                if began > last || later {
                    (*s).rx_gap_asked_ns += gap;
                }
            }
            (*s).last_rx_ns = now;
            (*s).rx_shut_mark_ns = closed;
        }
        let added = in_order(seq, end_seq, sk.get(off!(rcv_nxt)));
        if added != 0 {
            if added > u32::from(flags & TH_FIN != 0) {
                // In-order payload: tcp_event_data_recv() stamps lrcvtime.
                (*s).lrcvtime = (*s).jiffies as u32;
            }
            (*s).bytes_received += u64::from(added);
            // In order, it waits for the reader too (FIN included, as in
            // rcv_nxt - copied_seq), and takes its room in the window.
            (*s).unread = (*s).unread.saturating_add(added);
            (*s).rcv_wnd_left = (*s).rcv_wnd_left.saturating_sub(added);
        }
    }
}
