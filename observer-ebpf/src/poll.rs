//! The poll-time read: an `iter/bpf_sk_storage_map` program that user space
//! runs at the start of each poll, which re-samples every flow that did
//! anything since the last poll from its live `tcp_sock`.
//!
//! With it, a flow's figures are exact at every poll whatever the hooks
//! left to the sample gate, so the hooks need not sample a segment just
//! because it ends a burst, nor a read just because it drains the socket
//! (request/response traffic does both on every segment and every read).
//! They still sample those when the stored sample runs one of observer's
//! own clocks that the segment or read stops ([`clocks_of`], kept in the
//! flow's mark and cached in [`CLOCKS`] so the hooks need no flow-map
//! lookup, and mostly no socket-storage lookup, to ask): those
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

/// A flow's mark: what it did as of the last poll-time walk, and what the
/// hooks need to know of its stored sample without looking it up in the
/// flow map.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Mark {
    /// What the flow did as of the last walk.
    pub activity: Activity,
    /// The flow's network namespace (inode number), set with the mark.
    pub netns: u32,
    /// Which of observer's own clocks the flow's stored sample runs
    /// ([`clocks_of`]), written at each full sample.
    pub clocks: u32,
}

/// What a flow did, as of the last poll-time walk: the `tcp_sock` members
/// that move with every segment in or out, read, write or retransmission.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq)]
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
pub static ACTIVE: SkStorage<Mark> = SkStorage::new();

/// Whether the poll-time read is on (1) or compiled out (0; kernels
/// without socket-local storage in tracing programs). Written by user
/// space before load.
#[unsafe(no_mangle)]
pub static POLL_ITER: u8 = 0;

/// Which flows a walk reaches (`observer_common::poll_scope`), written by
/// user space once a walk is attached: slot `SCOPE_REACH` the scope, slot
/// `SCOPE_NETNS` the network namespace (inode number) of
/// [`poll_scope::ONE_NETNS`] (`observer_common::MAP_POLL_SCOPE`).
#[map(name = "POLL_SCOPE")]
pub static POLL_SCOPE: Array<u64> = Array::with_max_entries(2, 0);

/// Slots of [`CLOCKS`] (a power of two). Memory: 4096 x 16 bytes = 64 KiB.
pub const CLOCK_SLOTS: u32 = 4096;

/// What the hooks ask of a flow's mark and its stored sample, cached where
/// a lookup costs no helper call: slot `cookie % CLOCK_SLOTS`, written
/// with the mark's clocks ([`set_clocks`]). A segment that ends a burst
/// and a read that drains ask it on request/response traffic at every
/// segment and every read, and a socket-storage lookup there cost about a
/// quarter of the read hook's time (docs/benchmarks.md, the peer table).
/// Two 64-bit words, each written whole, each carrying the low 32 bits of
/// the cookie: a reader on another CPU that finds both words its flow's
/// has the flow's (flows that share a slot differ there unless 2^32
/// sockets apart); one that does not asks the mark, as before.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ClockSlot {
    /// The cookie's low 32 bits, then the mark's network namespace
    /// (inode number; never 0 in a written slot).
    pub netns: u64,
    /// The cookie's low 32 bits, then the stored sample's owner (its tgid's
    /// low 24 bits, which hold every tgid under the default `pid_max`; 0:
    /// none yet), then its clocks ([`clocks_of`], 8 bits).
    pub state: u64,
}

const _: () = assert!(core::mem::size_of::<ClockSlot>() == 16);

#[map(name = "CLOCKS")]
static CLOCKS: Array<ClockSlot> = Array::with_max_entries(CLOCK_SLOTS, 0);

/// Low 24 bits of a tgid, as a [`ClockSlot`] keeps an owner.
const OWNER_BITS: u32 = 0xFF_FFFF;

/// Records `clocks` of the stored sample `s` in the mark `m` of the flow
/// `key` and in its [`CLOCKS`] slot.
///
/// # Safety
/// `m` must be the flow's mark and `s` its stored sample.
#[inline(always)]
unsafe fn set_clocks(key: u64, m: *mut Mark, s: *const FlowSample) {
    // SAFETY: the caller's mark and sample.
    let (netns, owner, clocks) = unsafe {
        let clocks = clocks_of(s);
        (*m).clocks = clocks;
        ((*m).netns, (*s).pid & OWNER_BITS, clocks)
    };
    let tag = u64::from(key as u32) << 32;
    if let Some(c) = CLOCKS.get_ptr_mut(key as u32 & (CLOCK_SLOTS - 1)) {
        // SAFETY: a slot of an array map: two aligned u64.
        unsafe {
            core::ptr::write_volatile(&raw mut (*c).netns, tag | u64::from(netns));
            core::ptr::write_volatile(
                &raw mut (*c).state,
                tag | (u64::from(owner) << 8) | u64::from(clocks & 0xFF),
            );
        }
    }
}

/// What [`CLOCKS`] holds of the flow `key`: its namespace, owner (low 24
/// bits) and clocks; None where another flow holds the slot or none wrote
/// it.
#[inline(always)]
fn cached(key: u64) -> Option<(u32, u32, u32)> {
    let c = CLOCKS.get_ptr(key as u32 & (CLOCK_SLOTS - 1))?;
    // SAFETY: a slot of an array map: two aligned u64.
    let (netns, state) = unsafe {
        (
            core::ptr::read_volatile(&raw const (*c).netns),
            core::ptr::read_volatile(&raw const (*c).state),
        )
    };
    let tag = key as u32;
    ((netns >> 32) as u32 == tag && (state >> 32) as u32 == tag && netns as u32 != 0).then_some((
        netns as u32,
        (state >> 8) as u32 & OWNER_BITS,
        state as u32 & 0xFF,
    ))
}

/// Whether a walk reaches flows of the network namespace `netns` at the
/// next poll (`POLL_SCOPE`).
#[inline(always)]
fn reached(netns: u32) -> bool {
    let slot = |i| POLL_SCOPE.get(i).copied().unwrap_or(0);
    match slot(observer_common::SCOPE_REACH) {
        poll_scope::ALL => true,
        poll_scope::ONE_NETNS => u64::from(netns) == slot(observer_common::SCOPE_NETNS),
        _ => false,
    }
}

/// Whether a read by `tgid` that drained the flow `key` may go unsampled
/// without the gate: the walk reaches the flow, its stored sample runs no
/// clock, and `tgid` is its owner already (by [`CLOCKS`] alone; false
/// where the slot does not hold the flow). Request/response traffic
/// drains at every read.
#[inline(always)]
pub fn settled_read(key: u64, tgid: u32) -> bool {
    if !on() {
        return false;
    }
    cached(key).is_some_and(|(netns, owner, clocks)| {
        clocks == 0 && owner != 0 && owner == tgid & OWNER_BITS && reached(netns)
    })
}

/// Whether the poll-time read is on: a load-time constant, so the verifier
/// drops the branch not taken (and with it the storage helper on kernels
/// that refuse it).
#[inline(always)]
pub fn on() -> bool {
    // SAFETY: reading a static (see `read::volatile`).
    unsafe { core::ptr::read_volatile(&raw const POLL_ITER) != 0 }
}

/// The mark of `sk`, made (zeroed) when `create` and missing; null when
/// it has none (not a flow, no memory, a socket being freed).
#[inline(always)]
fn mark_of(sk: Sk, create: bool) -> *mut Mark {
    let flags = if create {
        u64::from(BPF_SK_STORAGE_GET_F_CREATE)
    } else {
        0
    };
    // SAFETY: the map's address is what the helper takes; `sk.sock()` is
    // the BTF-typed socket pointer the hook was handed.
    unsafe {
        bpf_sk_storage_get(
            (&raw const ACTIVE).cast_mut().cast(),
            sk.sock() as *mut _,
            core::ptr::null_mut(),
            flags,
        )
    }
    .cast::<Mark>()
}

/// Gives the socket of a new flow entry (in network namespace `netns`)
/// its mark, its activity zeroed so the next walk samples it. Without
/// one (null: no memory, a socket being freed) the flow is left to the
/// hooks alone ([`must_sample`]).
#[inline(always)]
pub fn mark(sk: Sk, netns: u32) {
    if !on() {
        return;
    }
    let m = mark_of(sk, true);
    if !m.is_null() {
        // SAFETY: this socket's mark, `Mark`-sized.
        unsafe { (*m).netns = netns };
    }
}

/// The clocks of the stored sample `s` that a segment or read held back by
/// the gate may stop, as bits: cwnd-limited (1) or send buffer full (2),
/// which an ACK that ends a burst stops, and unread data waiting (4),
/// which a read that drains stops (and the window-closed clock with it).
///
/// # Safety
/// `s` must be valid for reads.
#[inline(always)]
pub unsafe fn clocks_of(s: *const FlowSample) -> u32 {
    // SAFETY: caller guarantees `s`.
    unsafe {
        u32::from((*s).cwnd_limited != 0)
            | (u32::from((*s).sndbuf_full != 0) << 1)
            | (u32::from((*s).unread != 0) << 2)
    }
}

/// Copies the clocks the stored sample `s` of `sk` runs into its mark,
/// after a full sample, so [`must_sample`] reads them there.
///
/// # Safety
/// `s` must be valid for reads.
#[inline(always)]
pub unsafe fn note_clocks(sk: Sk, key: u64, s: *const FlowSample) {
    if !on() {
        return;
    }
    let m = mark_of(sk, false);
    if !m.is_null() {
        // SAFETY: this socket's mark, and the caller's `s`.
        unsafe { set_clocks(key, m, s) };
    }
}

/// [`clocks_of`]'s clocks that a segment stops: cwnd-limited and send
/// buffer full (an ACK that ends a burst).
pub const SENDER_CLOCKS: u32 = 1 | 2;
/// Every clock of [`clocks_of`]: a read that drains also stops unread
/// data waiting.
pub const ALL_CLOCKS: u32 = 1 | 2 | 4;

/// Whether the flow of `sk` (cookie `key`) must be sampled although the
/// gate holds it back: it has no mark, no walk reaches it at the next
/// poll, or its stored sample runs a clock among `clocks` (bits of
/// [`clocks_of`]) that the segment or read may stop. Read from the flow's
/// [`CLOCKS`] slot, or where another flow holds it, from the socket's
/// mark (one socket-storage lookup); never the flow map's hash. Always
/// true with the poll-time read off.
#[inline(always)]
pub fn must_sample(sk: Sk, key: u64, clocks: u32) -> bool {
    if !on() {
        return true;
    }
    let (netns, running) = match cached(key) {
        Some((netns, _, running)) => (netns, running),
        None => {
            let m = mark_of(sk, false);
            if m.is_null() {
                return true;
            }
            // SAFETY: this socket's mark.
            unsafe { ((*m).netns, (*m).clocks) }
        }
    };
    !reached(netns) || running & clocks != 0
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
    .cast::<Mark>();
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
    /// This socket's storage value, a [`Mark`].
    pub value: *mut Mark,
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
unsafe fn visit(sk: Sk, value: *mut Mark) {
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
    // SAFETY: the storage value of this socket, `Mark`-sized.
    unsafe {
        if (*value).activity == now {
            return;
        }
        (*value).activity = now;
    }
    let key = crate::sock::key_of(sk);
    if let Some(s) = FLOWS.get_ptr_mut(key) {
        // SAFETY: a value of the flow map, for this socket. A closed entry
        // parked in the map (its socket still alive in CLOSE) is final:
        // left as it is.
        unsafe {
            if (*s).closed_ns == 0 {
                crate::refresh::refresh(s, sk);
                set_clocks(key, value, s);
                // `setsockopt(TCP_CONGESTION)` between held samples.
                crate::sock::cc_name(s, sk);
            }
        }
    }
}
