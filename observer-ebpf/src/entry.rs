//! Flow entries: find a socket's entry in the flow map, or make it (with
//! the fields that do not change over the flow's life, and the socket's
//! mark for the poll-time walk).

use aya_ebpf::{bindings::BPF_NOEXIST, helpers::bpf_ktime_get_ns};
use observer_common::{AF_INET, AF_INET6, Counter, FlowSample, OFFSET_NONE};

use crate::{
    maps::{FLOWS, SCRATCH, count, live, live_add, max_flows},
    poll,
    read::{Sk, at, deref, off},
};

/// Looks up the entry of `sk` (socket cookie `key`); creates it when
/// missing and `create`.
#[allow(
    clippy::needless_borrows_for_generic_args,
    reason = "`&*s` hands the map the per-CPU scratch slot; `*s` would copy the sample onto the 512-byte BPF stack"
)]
#[inline(always)]
pub(crate) fn entry(sk: Sk, key: u64, create: bool) -> Option<*mut FlowSample> {
    if let Some(p) = FLOWS.get_ptr_mut(key) {
        return Some(p);
    }
    if !create {
        return None;
    }
    let s = SCRATCH.get_ptr_mut(0)?;
    // SAFETY: `s` is this CPU's scratch slot; nothing else uses it while
    // this program runs.
    unsafe {
        *s = FlowSample::ZERO;
        identify(s, sk, key);
        let full = live() >= max_flows();
        let created = match FLOWS.insert(key, &*s, u64::from(BPF_NOEXIST)) {
            Ok(()) => {
                poll::mark(sk, (*s).netns);
                count(Counter::FlowsCreated);
                if full {
                    count(Counter::LruEvictions);
                } else {
                    live_add(1);
                }
                true
            }
            // Another CPU created it first (-EEXIST): use theirs.
            Err(-17) => false,
            Err(_) => {
                count(Counter::MapErrors);
                false
            }
        };
        let p = FLOWS.get_ptr_mut(key);
        if created && let Some(p) = p {
            // A new flow is news to the agent even before its first sample.
            crate::journal::note(p);
        }
        p
    }
}

/// Fills the fields that do not change over a flow's life.
///
/// # Safety
/// `s` must be valid for writes.
#[inline(always)]
pub(crate) unsafe fn identify(s: *mut FlowSample, sk: Sk, key: u64) {
    // SAFETY: caller guarantees `s`.
    unsafe {
        (*s).cookie = key;
        (*s).first_seen_ns = bpf_ktime_get_ns();
        endpoints(s, sk);
    }
}

/// Fills addresses, ports, namespace and congestion control.
///
/// # Safety
/// `s` must be valid for writes.
#[inline(always)]
pub(crate) unsafe fn endpoints(s: *mut FlowSample, sk: Sk) {
    let family: u16 = sk.get(off!(family));
    let raw = sk.raw();
    // SAFETY: caller guarantees `s`.
    unsafe {
        (*s).family = family;
        if family == AF_INET {
            let src: [u8; 4] = at(raw, off!(saddr4));
            let dst: [u8; 4] = at(raw, off!(daddr4));
            (*s).saddr = mapped(src);
            (*s).daddr = mapped(dst);
        } else if family == AF_INET6 {
            (*s).saddr = at(raw, off!(saddr6));
            (*s).daddr = at(raw, off!(daddr6));
        }
        let sport: u16 = at(raw, off!(sport));
        (*s).sport = u16::from_be(sport);
        let dport: u16 = at(raw, off!(dport));
        (*s).dport = u16::from_be(dport);
        (*s).netns = deref(raw, off!(net), off!(net_inum));
        let rmem = off!(tcp_rmem);
        if rmem != OFFSET_NONE {
            let max: i32 = deref(raw, off!(net), rmem + 8);
            (*s).tcp_rmem_max = max.max(0) as u32;
        }
        (*s).cc = deref(raw, off!(ca_ops), off!(ca_name));
    }
}

/// `a.b.c.d` as `::ffff:a.b.c.d`.
#[inline(always)]
fn mapped(v4: [u8; 4]) -> [u8; 16] {
    [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, v4[0], v4[1], v4[2], v4[3],
    ]
}
