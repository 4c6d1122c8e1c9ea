//! The end of a flow: its final record to the ring buffer, or parked in
//! its flow-map entry while the ring is full, and the entry removed.

use observer_common::{Counter, FlowSample, tcp_state};

use crate::{
    entry::{entry, identify},
    maps::{CLOSED, FLOWS, count, live_add},
    read::Sk,
    refresh::fill,
    sock::key_of,
};

/// Emits the final record of a closing flow and removes its entry. Flows
/// observer never saw established (a listener, a failed connect) are skipped.
/// When the ring buffer is full the record is parked instead ([`park`]); a
/// flow already parked is left as it is (the destroy hook's second call).
#[inline(always)]
pub fn close(sk: Sk, old: u8) {
    let key = key_of(sk);
    let existing = FLOWS.get_ptr_mut(key);
    if let Some(p) = existing {
        // SAFETY: `p` points into the flow map.
        if unsafe { (*p).closed_ns } != 0 {
            return;
        }
    } else if !tcp_state::is_connected(old) {
        return;
    }
    let Some(mut rec) = CLOSED.reserve::<FlowSample>(0) else {
        park(sk, key, existing);
        return;
    };
    let r = rec.as_mut_ptr();
    // SAFETY: `r` is a reserved ring-buffer slot of FlowSample size;
    // `existing` points into the flow map.
    unsafe {
        match existing {
            Some(p) => core::ptr::copy_nonoverlapping(p, r, 1),
            None => {
                *r = FlowSample::ZERO;
                identify(r, sk, key);
                (*r).born_at_close = 1;
            }
        }
        finish(r, sk);
    }
    rec.submit(0);
    count(Counter::FlowsClosed);
    remove(key, existing.is_some());
}

/// The ring buffer is full (the agent is stopped or slow): the final record
/// stays in the flow map, marked closed (`closed_ns` set), until the agent
/// reads it there and deletes the entry. Only the LRU may evict it before
/// then, which the agent counts (parked minus read minus still parked). A
/// record neither the ring nor the map can take is a drop.
#[inline(always)]
fn park(sk: Sk, key: u64, existing: Option<*mut FlowSample>) {
    let p = match existing {
        Some(p) => p,
        None => match entry(sk, key, true) {
            Some(p) => {
                // SAFETY: `p` points into the flow map.
                unsafe { (*p).born_at_close = 1 };
                p
            }
            None => {
                count(Counter::RingbufDrops);
                return;
            }
        },
    };
    // SAFETY: `p` points into the flow map. Journaled before it is
    // counted: an agent that counted it finds it in the journal.
    unsafe {
        finish(p, sk);
        crate::journal::note(p);
    }
    count(Counter::ClosesParked);
}

/// The final figures of a closing flow.
///
/// # Safety
/// `r` must be valid for reads and writes.
#[inline(always)]
unsafe fn finish(r: *mut FlowSample, sk: Sk) {
    // SAFETY: caller guarantees `r`.
    unsafe {
        fill(r, sk);
        (*r).state = tcp_state::CLOSE;
        (*r).closed_ns = (*r).last_seen_ns;
    }
}

#[inline(always)]
fn remove(key: u64, existed: bool) {
    if existed && FLOWS.remove(key).is_ok() {
        live_add(u64::MAX);
    }
}
