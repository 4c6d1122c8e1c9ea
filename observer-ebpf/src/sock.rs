//! A flow's socket: its key in the flow map and its congestion control
//! name, read the same way by every hook and by the poll-time walk (a leaf:
//! it imports only the reads).

use aya_ebpf::helpers::bpf_get_socket_cookie;
use observer_common::FlowSample;

use crate::read::{Sk, deref, off};

/// The socket cookie of `sk` (`bpf_get_socket_cookie`).
#[inline(always)]
fn cookie(sk: *const u8) -> u64 {
    // SAFETY: `sk` is the BTF-typed socket pointer the hook was handed.
    unsafe { bpf_get_socket_cookie(sk as *mut _) }
}

/// The socket cookie of `sk`: one load of `skc_cookie` once it is set
/// (the flow's entry was made with it), the helper before that.
#[inline(always)]
pub(crate) fn key_of(sk: Sk) -> u64 {
    match sk.get::<u64>(off!(sk_cookie)) {
        0 => cookie(sk.sock()),
        k => k,
    }
}

/// Re-reads the congestion control name: a process may switch it with
/// `setsockopt(TCP_CONGESTION)` after connect. Read from the read hook
/// (process context, behind the gate), at the end of each burst and by
/// the poll-time read, not on every sampled segment: two pointer-chasing
/// reads.
///
/// # Safety
/// `s` must be valid for writes.
#[inline(always)]
pub(crate) unsafe fn cc_name(s: *mut FlowSample, sk: Sk) {
    // SAFETY: caller guarantees `s`.
    unsafe { (*s).cc = deref(sk.raw(), off!(ca_ops), off!(ca_name)) };
}
