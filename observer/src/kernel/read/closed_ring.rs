//! Drains the closed-flow ring buffer on its own thread, so that a slow
//! poll (a large flow map, a busy host) does not let the ring fill and the
//! kernel drop close records. Records wait in a queue until the next poll
//! takes them.
//!
//! The queue is bounded ([`MAX_PENDING`]): past it the thread stops
//! draining, the ring fills, and the kernel parks each record it cannot
//! store in the flow map (see [`crate::kernel::read::parked`]).

use std::{
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicBool, Ordering},
    },
    thread::JoinHandle,
    time::Duration,
};

use aya::maps::{MapData, RingBuf};
use observer_common::{FlowSample, sample::FLOW_SAMPLE_SIZE};

/// How often the thread empties the ring. A 4 MiB ring holds ~7,400
/// records (560 bytes and an 8-byte header each): 0.75 s of closes at
/// 10,000 a second, 15 times this period.
pub const DRAIN_PERIOD: Duration = Duration::from_millis(50);

/// Most records queued between two polls (560 bytes each: 17 MiB). Past
/// it the ring fills and the kernel parks closes in the flow map, which
/// costs the agent no memory until a poll reads them.
pub const MAX_PENDING: usize = 1 << 15;

struct Shared {
    /// The ring; held while records move from it to `pending`, so they
    /// keep the order the kernel wrote them in.
    ring: Mutex<RingBuf<MapData>>,
    pending: Mutex<Vec<FlowSample>>,
    stop: AtomicBool,
}

/// The ring buffer of closed-flow records and the thread draining it.
/// Dropping it stops and joins the thread, then closes the map.
pub struct ClosedDrain {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    started: bool,
}

/// A poisoned lock only means another thread panicked while holding it;
/// the data (plain records) is still whole.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Shared {
    /// Moves what the ring holds into the queue, up to [`MAX_PENDING`].
    fn drain(&self) {
        let mut ring = lock(&self.ring);
        let mut pending = lock(&self.pending);
        while pending.len() < MAX_PENDING {
            let Some(item) = ring.next() else { break };
            if let Some(s) = decode(&item) {
                pending.push(s);
            }
        }
    }
}

/// One ring record as a [`FlowSample`]; `None` for a short record.
pub(in crate::kernel) fn decode(item: &[u8]) -> Option<FlowSample> {
    if item.len() < FLOW_SAMPLE_SIZE {
        return None;
    }
    // SAFETY: the record holds at least FLOW_SAMPLE_SIZE bytes, and
    // FlowSample is plain data, valid for any bit pattern.
    Some(unsafe { std::ptr::read_unaligned(item.as_ptr().cast::<FlowSample>()) })
}

impl ClosedDrain {
    /// Wraps `ring`. The thread starts at the first [`ClosedDrain::take`]:
    /// capabilities are per thread, and by then the process has dropped
    /// them (see `privilege`), so the thread starts with none.
    pub fn new(ring: RingBuf<MapData>) -> ClosedDrain {
        ClosedDrain {
            shared: Arc::new(Shared {
                ring: Mutex::new(ring),
                pending: Mutex::new(Vec::new()),
                stop: AtomicBool::new(false),
            }),
            thread: None,
            started: false,
        }
    }

    /// Wraps `ring` with no thread: records stay in the kernel until a
    /// poll takes them (pinned programs, which outlive the agent: a record
    /// the agent has taken but not yet reported would die with it).
    pub fn at_polls(ring: RingBuf<MapData>) -> ClosedDrain {
        let mut d = ClosedDrain::new(ring);
        d.started = true;
        d
    }

    /// Starts draining every [`DRAIN_PERIOD`]; if the thread cannot be
    /// spawned, says so once and leaves draining to the polls.
    fn start(&mut self) {
        self.started = true;
        let s = Arc::clone(&self.shared);
        let spawned = std::thread::Builder::new()
            .name("observer-drain".into())
            .spawn(move || {
                while !s.stop.load(Ordering::Relaxed) {
                    s.drain();
                    std::thread::park_timeout(DRAIN_PERIOD);
                }
            });
        match spawned {
            Ok(t) => self.thread = Some(t),
            Err(e) => log::warn!(
                "cannot start the ring-buffer drain thread ({e}): closed-flow records are read \
                 at each poll only, and a slow poll may let the ring fill"
            ),
        }
    }

    /// Appends every record written so far, in the kernel's order, to `out`.
    pub fn take(&mut self, out: &mut Vec<FlowSample>) {
        if !self.started {
            self.start();
        }
        self.shared.drain();
        out.append(&mut lock(&self.shared.pending));
    }
}

impl Drop for ClosedDrain {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_records_are_skipped_and_whole_ones_decoded() {
        assert!(decode(&[0u8; FLOW_SAMPLE_SIZE - 1]).is_none());
        let mut s = FlowSample::ZERO;
        s.cookie = 0x1234_5678;
        s.sport = 443;
        // SAFETY: FlowSample is plain data of FLOW_SAMPLE_SIZE bytes.
        let bytes: [u8; FLOW_SAMPLE_SIZE] = unsafe { std::mem::transmute(s) };
        // Ring records are padded to 8 bytes: a longer one decodes too.
        let mut longer = bytes.to_vec();
        longer.extend_from_slice(&[0xff; 8]);
        let d = decode(&longer).unwrap();
        assert_eq!((d.cookie, d.sport), (0x1234_5678, 443));
    }
}
