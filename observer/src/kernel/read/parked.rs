//! Closes parked in the flow map. When the ring buffer is full (the agent
//! stopped or slow), the kernel programs leave a closing flow's final
//! record in its flow-map entry, marked closed (`closed_ns` set), instead of
//! dropping it (observer-ebpf `flow::park`). Each poll moves those entries
//! from the map's read to the closed records and deletes them from the map.
//!
//! Only the map's LRU can lose a parked record (when the map is full and a
//! new flow needs a slot). Nothing in the kernel can tell which entry the
//! LRU evicted, so the agent counts the loss from three figures: records
//! parked (kernel counter `ClosesParked`, read before the map walk), records
//! read (slot [`LIVE_AGENT_REMOVED`] of the `LIVE` map), and those parked
//! after the counter was read. See [`evicted_lower_bound`].

use aya::maps::{Array, HashMap, MapData};
use observer_common::{FlowSample, LIVE_AGENT_REMOVED};

/// The agent's side of parking: the `LIVE` map slot it writes, and the
/// parked records known lost.
pub struct Parked {
    /// The kernel's `LIVE` map (slot [`LIVE_AGENT_REMOVED`]: parked records
    /// the agent has read and removed, kept in the map so that it survives
    /// an agent restart with pinned maps).
    live: Array<MapData, u64>,
    /// Parked records read so far (the slot's value).
    read: u64,
    /// Parked records the LRU evicted before any poll read them (a lower
    /// bound that becomes exact once parking stops; never decreases).
    evicted: u64,
    /// Close records replaced pinned sets lost.
    replaced_lost: u64,
}

/// Parked records evicted before a poll read them, as far as one poll can
/// tell: `parked_before` records were parked when the poll began (the
/// kernel counter read before the map walk), `read_total` were read by this
/// poll and every earlier one, `read_late` of those by this poll were
/// parked after it began. Every record parked before the walk began is
/// either read by now (an entry present throughout a walk is always seen)
/// or evicted, so this is exactly the evictions among them: 0 when the
/// difference is negative (the counter's increment trails the record).
pub fn evicted_lower_bound(parked_before: u64, read_total: u64, read_late: u64) -> u64 {
    parked_before.saturating_sub(read_total.saturating_sub(read_late))
}

impl Parked {
    /// Wraps the `LIVE` map; the count of records read starts where the
    /// map's slot is (0 for maps this agent created).
    pub fn new(live: Array<MapData, u64>) -> Parked {
        let read = live.get(&LIVE_AGENT_REMOVED, 0).unwrap_or(0);
        Parked {
            live,
            read,
            evicted: 0,
            replaced_lost: 0,
        }
    }

    /// Moves each parked record of `active` (one poll's read of the flow
    /// map `flows`) to `closed`, deletes its entry, and counts it.
    /// `parked_before` is the kernel's count of parked records and
    /// `started_ns` the monotonic time, both read before the map walk.
    pub fn collect(
        &mut self,
        flows: &mut HashMap<MapData, u64, FlowSample>,
        active: &mut Vec<FlowSample>,
        closed: &mut Vec<FlowSample>,
        parked_before: Option<u64>,
        started_ns: u64,
    ) {
        let mut late = 0u64;
        let mut n = 0u64;
        active.retain(|s| {
            if s.closed_ns == 0 {
                return true;
            }
            // Gone already (the LRU took it after the walk) is fine: it
            // was read.
            let _ = flows.remove(&s.cookie);
            closed.push(*s);
            n += 1;
            late += u64::from(s.closed_ns > started_ns);
            false
        });
        if n > 0 {
            self.read += n;
            if let Err(e) = self.live.set(LIVE_AGENT_REMOVED, self.read, 0) {
                log::debug!("cannot count parked records read in the LIVE map: {e}");
            }
        }
        if let Some(before) = parked_before {
            self.evicted = self
                .evicted
                .max(evicted_lower_bound(before, self.read, late));
        }
    }

    /// Parked records read so far (by this agent and, with pinned maps,
    /// the ones before it).
    pub fn read(&self) -> u64 {
        self.read
    }

    /// Parked records the LRU evicted before a poll read them, and the
    /// close records replaced pinned sets lost.
    pub fn evicted(&self) -> u64 {
        self.evicted + self.replaced_lost
    }

    /// Counts `n` close records a replaced pinned set lost.
    pub fn add_evicted(&mut self, n: u64) {
        self.replaced_lost += n;
    }
}

#[cfg(test)]
mod tests {
    use super::evicted_lower_bound;

    #[test]
    fn evictions_count_only_records_parked_before_the_walk() {
        // 10 parked before the walk, all 10 read: none lost.
        assert_eq!(evicted_lower_bound(10, 10, 0), 0);
        // 10 parked before, 7 read then plus 3 parked during the walk and
        // read by it: 3 of the 10 were evicted.
        assert_eq!(evicted_lower_bound(10, 10, 3), 3);
        // 10 parked, 6 read over two polls, none late: 4 evicted.
        assert_eq!(evicted_lower_bound(10, 6, 0), 4);
        // The counter trails a record read in the same instant: not negative.
        assert_eq!(evicted_lower_bound(10, 11, 0), 0);
    }
}
