//! Layout of the change journal ([`crate::MAP_JOURNAL`]): an array of u64
//! the programs and the agent share (mmapped by the agent), through which
//! a poll reads only the flows sampled since the last poll instead of the
//! whole flow map.
//!
//! - Slot [`EPOCH`]: the epoch, which only the agent writes, one more at
//!   each read. A program that samples a flow writes its cookie to the
//!   journal when the flow's [`crate::FlowSample::journal_epoch`] differs
//!   from the epoch, and stamps the flow with it: once per flow per poll.
//! - One block per possible CPU, at [`block`]: the CPU's head (entries
//!   written so far, the rest of its 64-byte line unused, so that CPUs do
//!   not share it), then [`SLOTS`] entries of two slots each, the cookie and
//!   its sequence number, entry `seq % SLOTS` holding the entry of
//!   sequence `seq`.
//!
//! A program writes the entry, then adds one to the head. Programs of one
//! CPU may nest (a softirq inside a process-context hook) and both write
//! the same entry; the head then passes an entry whose sequence number is
//! not its own, and the agent, which checks each, reads the whole map that
//! poll. So does it when a CPU wrote more than [`SLOTS`] entries since its
//! last read.

/// Entries per CPU (a power of two).
pub const SLOTS: u32 = 4096;

/// The slot of the epoch.
pub const EPOCH: u32 = 0;

/// Slots before the first CPU's block: the epoch and its line.
pub const HEADER: u32 = 8;

/// Slots of one CPU's block: its head's line, then the entries.
pub const BLOCK: u32 = 8 + 2 * SLOTS;

/// The slot of CPU `cpu`'s head; its entries follow [`HEADER`] slots on.
pub const fn block(cpu: u32) -> u32 {
    HEADER + cpu * BLOCK
}

/// The slot of the cookie of sequence `seq` in the block at `head` (the
/// next slot holds the sequence number).
pub const fn entry(head: u32, seq: u64) -> u32 {
    head + 8 + 2 * (seq as u32 & (SLOTS - 1))
}

/// max_entries of the journal for `cpus` possible CPUs.
pub const fn max_entries(cpus: u32) -> u32 {
    HEADER + cpus * BLOCK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_do_not_overlap_and_heads_sit_on_their_own_line() {
        assert!(SLOTS.is_power_of_two());
        assert_eq!(block(0), 8);
        assert_eq!(block(1), 8 + 8 + 8192);
        // The last entry of CPU 0 ends just before CPU 1's head.
        assert_eq!(entry(block(0), u64::from(SLOTS) - 1) + 2, block(1));
        // Sequence numbers wrap onto the same entries.
        assert_eq!(entry(block(1), 5), entry(block(1), 5 + u64::from(SLOTS)));
        // Heads are 64-byte aligned in the map's memory.
        assert_eq!(block(3) * 8 % 64, 0);
        assert_eq!(max_entries(2), block(2));
    }
}
