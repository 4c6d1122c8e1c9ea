//! The poll-time read: an `iter/bpf_sk_storage_map` program that user space
//! runs at the start of each poll, which re-samples every flow that did
//! anything since the last poll from its live `tcp_sock`.
//!
//! With it, a flow's figures are exact at every poll whatever the hooks
//! left to the sample gate, so the hooks need not sample a segment just
//! because it ends a burst, nor a read just because it drains the socket
//! (request/response traffic does both on every segment and every read).
//! They still sample those when the stored sample runs one of observer's
//! own clocks that the segment or read stops ([`stops_a_clock`]): those
//! clocks count time from sample to sample, so a stale "cwnd-limited" or
//! "unread data waiting" would go on counting until the poll.
//!
//! Every flow entry gets a mark in socket-local storage (`ACTIVE`,
//! net/core/bpf_sk_storage.c) when it is made. Each mark holds the flow's
//! activity as of the last walk (segments in, `snd_nxt`, `copied_seq`,
//! `write_seq`, retransmits, `rcv_wup`, state): a flow whose activity is unchanged is
//! left as it is, so an idle flow costs a few loads a poll and keeps its
//! "nothing moved" look to user space. The mark goes with the socket. Two
//! walks can visit the marks; user space attaches the first the kernel
//! allows and says which in `POLL_SCOPE`:
//! - `observer_poll`, the storage iterator (`bpf_sk_storage_map_seq_*`,
//!   the same file): every mark, in every network namespace;
//! - `observer_poll_tcp`, the TCP socket iterator (`bpf_iter_tcp_*`,
//!   net/ipv4/tcp_ipv4.c): every TCP socket of the namespace the agent
//!   runs in, marked or not. Flows of other namespaces keep the gate's old
//!   exceptions (every segment that ends a burst, every read that drains).
//!
//! Kernels before 5.11 refuse socket-local storage in tracing programs:
//! there user space loads the programs with `POLL_ITER` 0, the mark and the
//! relaxed gate are compiled out by the verifier, and the hooks sample as
//! before.

use aya_ebpf::{
    bindings::BPF_SK_STORAGE_GET_F_CREATE,
    btf_maps::SkStorage,
    helpers::generated::bpf_sk_storage_get,
    macros::{btf_map, map},
    maps::Array,
};
use observer_common::{FlowSample, poll_scope, tcp_state};

use crate::{
    maps::FLOWS,
    read::{Sk, load, off},
};

/// What a flow did, as of the last poll-time walk: the `tcp_sock` members
/// that move with every segment in or out, read, write or retransmission.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Activity {
    /// `segs_in` (segments).
    pub segs_in: u32,
    /// `snd_nxt` (sequence number).
    pub snd_nxt: u32,
    /// `copied_seq` (sequence number).
    pub copied_seq: u32,
    /// `write_seq` (sequence number).
    pub write_seq: u32,
    /// `total_retrans` (segments).
    pub total_retrans: u32,
    /// `rcv_wup` (sequence number): moves when this end sends an ACK
    /// (a delayed one, from a timer) and with it the window it offers.
    pub rcv_wup: u32,
    /// `sk_state`.
    pub state: u32,
}

/// One mark per tracked flow's socket.
#[btf_map]
pub static ACTIVE: SkStorage<Activity> = SkStorage::new();

/// Whether the poll-time read is on (1) or compiled out (0; kernels
/// without socket-local storage in tracing programs). Written by user
/// space before load.
#[unsafe(no_mangle)]
pub static POLL_ITER: u8 = 0;

/// Which flows a walk reaches (`observer_common::poll_scope`), written by
/// user space once a walk is attached: slot 0 the scope, slot 1 the
/// network namespace (inode number) of [`poll_scope::ONE_NETNS`].
#[map(name = "POLL_SCOPE")]
pub static POLL_SCOPE: Array<u64> = Array::with_max_entries(2, 0);

/// Whether the poll-time read is on: a load-time constant, so the verifier
/// drops the branch not taken (and with it the storage helper on kernels
/// that refuse it).
#[inline(always)]
pub fn on() -> bool {
    // SAFETY: reading a static (see `read::volatile`).
    unsafe { core::ptr::read_volatile(&raw const POLL_ITER) != 0 }
}

/// Gives the socket of a new flow entry its mark, zeroed, so the next walk
/// samples it.
#[inline(always)]
pub fn mark(sk: Sk) {
    if !on() {
        return;
    }
    // SAFETY: the map's address is what the helper takes; `sk.sock()` is
    // the BTF-typed socket pointer the hook was handed. A null return (no
    // memory, a socket being freed) leaves the flow to the hooks alone.
    unsafe {
        bpf_sk_storage_get(
            (&raw const ACTIVE).cast_mut().cast(),
            sk.sock() as *mut _,
            core::ptr::null_mut(),
            u64::from(BPF_SK_STORAGE_GET_F_CREATE),
        );
    }
}

/// Whether the stored sample `s` runs a clock that the segment or read
/// about to be held back by the gate may stop: cwnd-limited or send
/// buffer full (an ACK that ends a burst stops both), or unread data
/// waiting (a read that drains stops it, and the window-closed clock
/// with it). Always true with the poll-time read off.
///
/// # Safety
/// `s` must be valid for reads.
#[inline(always)]
pub unsafe fn stops_a_clock(s: *const FlowSample) -> bool {
    // SAFETY: caller guarantees `s`.
    !on() || unsafe { (*s).cwnd_limited != 0 || (*s).sndbuf_full != 0 || (*s).unread != 0 }
}

/// Whether the flow `key` must be sampled although the gate holds it back:
/// no walk reaches it at the next poll, or its entry runs a clock (see
/// [`stops_a_clock`]).
#[inline(always)]
pub fn must_sample(key: u64) -> bool {
    if !on() {
        return true;
    }
    let Some(s) = FLOWS.get_ptr(key) else {
        return true;
    };
    let slot = |i| POLL_SCOPE.get(i).copied().unwrap_or(0);
    // SAFETY: a value of the flow map.
    unsafe {
        let reached = match slot(0) {
            poll_scope::ALL => true,
            poll_scope::ONE_NETNS => u64::from((*s).netns) == slot(1),
            _ => false,
        };
        !reached || stops_a_clock(s)
    }
}

/// The context of an `iter/tcp` program, `struct bpf_iter__tcp`
/// (net/ipv4/tcp_ipv4.c): the socket is null on the last call of a walk.
#[repr(C)]
pub struct TcpIterContext {
    /// `struct bpf_iter_meta *`.
    pub meta: *const u8,
    /// `struct sock_common *`: any TCP socket of the namespace, listening,
    /// connected, time-wait or a request.
    pub sk_common: *const u8,
}

/// One socket of the TCP walk: re-samples its flow if it is one (it has a
/// mark) and did anything since the last walk.
///
/// # Safety
/// `ctx` must be the iterator's context.
#[inline(always)]
pub unsafe fn visit_tcp(ctx: *const TcpIterContext) {
    if !on() {
        return;
    }
    // SAFETY: the verifier checks this context load by offset.
    let sk = unsafe { (*ctx).sk_common };
    if sk.is_null() {
        return;
    }
    // `skc_state` is in `sock_common`, which every TCP socket starts with:
    // time-wait and request sockets are no flows (and are smaller than a
    // `tcp_sock`), listeners neither.
    let state: u8 = load(sk, off!(state), false);
    if state == tcp_state::TIME_WAIT
        || state == tcp_state::LISTEN
        || state == tcp_state::NEW_SYN_RECV
    {
        return;
    }
    let Some(sk) = Sk::of(sk) else {
        return;
    };
    // SAFETY: the map's address is what the helper takes; `sk.sock()` is
    // the BTF-typed socket the iterator handed over. No mark (not a flow)
    // is a null return.
    let value = unsafe {
        bpf_sk_storage_get(
            (&raw const ACTIVE).cast_mut().cast(),
            sk.sock() as *mut _,
            core::ptr::null_mut(),
            0,
        )
    }
    .cast::<Activity>();
    // SAFETY: null or this socket's mark.
    unsafe { visit(sk, value) };
}

/// The context of an `iter/bpf_sk_storage_map` program,
/// `struct bpf_iter__bpf_sk_storage_map` (net/core/bpf_sk_storage.c): four
/// pointer-sized members the verifier checks by offset (the iterator's ABI,
/// as a tracepoint's arguments are). `sk` and `value` are null on the last
/// call of a walk.
#[repr(C)]
pub struct IterContext {
    /// `struct bpf_iter_meta *`.
    pub meta: *const u8,
    /// `struct bpf_map *`.
    pub map: *const u8,
    /// `struct sock *`.
    pub sk: *const u8,
    /// This socket's storage value, an [`Activity`].
    pub value: *mut Activity,
}

/// One element of the storage walk: see [`visit`].
///
/// # Safety
/// `ctx` must be the iterator's context.
#[inline(always)]
pub unsafe fn visit_storage(ctx: *const IterContext) {
    if !on() {
        return;
    }
    // SAFETY: the verifier checks these context loads by offset.
    let (sk, value) = unsafe { ((*ctx).sk, (*ctx).value) };
    if sk.is_null() {
        return;
    }
    let Some(sk) = Sk::of(sk) else {
        return;
    };
    // SAFETY: null or this socket's mark.
    unsafe { visit(sk, value) };
}

/// Re-samples the flow of `sk` if it did anything since the last walk
/// (its mark `value` differs from what the socket shows now), and records
/// what it did in the mark.
///
/// # Safety
/// `value` must be null or the socket's mark.
#[inline(always)]
unsafe fn visit(sk: Sk, value: *mut Activity) {
    if value.is_null() {
        return;
    }
    let now = Activity {
        segs_in: sk.get(off!(segs_in)),
        snd_nxt: sk.get(off!(snd_nxt)),
        copied_seq: sk.get(off!(copied_seq)),
        write_seq: sk.get(off!(write_seq)),
        total_retrans: sk.get(off!(total_retrans)),
        rcv_wup: sk.get(off!(rcv_wup)),
        state: u32::from(sk.get::<u8>(off!(state))),
    };
    // SAFETY: the storage value of this socket, `Activity`-sized.
    unsafe {
        let was = *value;
        if was.segs_in == now.segs_in
            && was.snd_nxt == now.snd_nxt
            && was.copied_seq == now.copied_seq
            && was.write_seq == now.write_seq
            && was.total_retrans == now.total_retrans
            && was.rcv_wup == now.rcv_wup
            && was.state == now.state
        {
            return;
        }
        *value = now;
    }
    let key = crate::flow::key_of(sk);
    if let Some(s) = FLOWS.get_ptr_mut(key) {
        // SAFETY: a value of the flow map, for this socket. A closed entry
        // parked in the map (its socket still alive in CLOSE) is final:
        // left as it is.
        unsafe {
            if (*s).closed_ns == 0 {
                crate::refresh::refresh(s, sk);
                // `setsockopt(TCP_CONGESTION)` between held samples.
                crate::flow::cc_name(s, sk);
            }
        }
    }
}
