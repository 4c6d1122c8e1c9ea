//! Self-counters of the kernel programs: one `BPF_MAP_TYPE_PERCPU_ARRAY`
//! slot per [`Counter`], summed over CPUs in user space.

/// Index of each self-counter in the per-CPU counter map.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Counter {
    /// Per-packet samples taken (`tcp_rcv_established` exits or `tcp_probe` hits).
    ProbeHits = 0,
    /// Flow entries created in the flow map.
    FlowsCreated = 1,
    /// Closed-flow records written to the ring buffer.
    FlowsClosed = 2,
    /// Closed-flow records lost: the ring buffer was full and the flow map
    /// could not keep the record either (see `ClosesParked`).
    RingbufDrops = 3,
    /// Flow entries inserted while the map was at max_entries, i.e. an
    /// older entry was evicted by the LRU (approximate: the kernel's LRU may
    /// also evict slightly before the map is full).
    LruEvictions = 4,
    /// `bpf_probe_read_kernel` failures.
    ReadErrors = 5,
    /// Flow map insert failures other than eviction.
    MapErrors = 6,
    /// Owner (pid/comm/cgroup) updates from process context.
    OwnerUpdates = 7,
    /// Closed-flow records the full ring buffer could not take, kept in the
    /// flow map (marked closed) until the agent reads them there.
    ClosesParked = 8,
}

impl Counter {
    /// Number of counters (size of the counter map).
    pub const COUNT: u32 = 9;

    /// Every counter, in index order.
    pub const ALL: [Counter; Counter::COUNT as usize] = [
        Counter::ProbeHits,
        Counter::FlowsCreated,
        Counter::FlowsClosed,
        Counter::RingbufDrops,
        Counter::LruEvictions,
        Counter::ReadErrors,
        Counter::MapErrors,
        Counter::OwnerUpdates,
        Counter::ClosesParked,
    ];

    /// A stable snake_case name, used in logs and metric labels.
    pub const fn name(self) -> &'static str {
        match self {
            Counter::ProbeHits => "probe_hits",
            Counter::FlowsCreated => "flows_created",
            Counter::FlowsClosed => "flows_closed",
            Counter::RingbufDrops => "ringbuf_drops",
            Counter::LruEvictions => "lru_evictions",
            Counter::ReadErrors => "read_errors",
            Counter::MapErrors => "map_errors",
            Counter::OwnerUpdates => "owner_updates",
            Counter::ClosesParked => "closes_parked",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_are_dense() {
        for (i, c) in Counter::ALL.iter().enumerate() {
            assert_eq!(*c as u32, i as u32);
        }
    }
}
