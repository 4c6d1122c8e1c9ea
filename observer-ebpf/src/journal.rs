//! The change journal: each sampled flow's cookie, once per poll, so that
//! the agent reads the flows that changed instead of the whole flow map.
//! Layout and the agent's side in `observer_common::journal`.

use aya_ebpf::{helpers::bpf_get_smp_processor_id, macros::map, maps::Array};
use observer_common::{
    FlowSample,
    journal::{self, EPOCH},
};

/// `BPF_F_MMAPABLE` (include/uapi/linux/bpf.h): the agent maps the array
/// into its memory and reads it without a system call.
const BPF_F_MMAPABLE: u32 = 1 << 10;

/// The journal; max_entries is set at load time for the possible CPUs
/// (`journal::max_entries`). The default fits one CPU.
#[map(name = "JOURNAL")]
pub static JOURNAL: Array<u64> = Array::with_max_entries(journal::max_entries(1), BPF_F_MMAPABLE);

/// Writes the cookie of the flow-map entry `s` to this CPU's journal,
/// unless it is there already for the current epoch. Call after the
/// sample is written: the agent reads the entry after the journal.
///
/// # Safety
/// `s` must point into the flow map (not a ring-buffer record: its entry
/// is gone).
#[inline(always)]
pub unsafe fn note(s: *mut FlowSample) {
    let Some(e) = JOURNAL.get_ptr(EPOCH) else {
        return;
    };
    // SAFETY: map value pointers; the agent writes the epoch, so volatile.
    unsafe {
        let epoch = core::ptr::read_volatile(e) as u32;
        if (*s).journal_epoch == epoch {
            return;
        }
        // Every slot found before the flow is stamped: a CPU without a
        // block (the map sized for fewer) leaves it unstamped, and the
        // agent, finding no entry of that CPU, reads the whole map at its
        // periodic whole read.
        let head = journal::block(bpf_get_smp_processor_id());
        let Some(h) = JOURNAL.get_ptr_mut(head) else {
            return;
        };
        let seq = core::ptr::read_volatile(h);
        let slot = journal::entry(head, seq);
        let (Some(c), Some(q)) = (JOURNAL.get_ptr_mut(slot), JOURNAL.get_ptr_mut(slot + 1)) else {
            return;
        };
        (*s).journal_epoch = epoch;
        core::ptr::write_volatile(c, (*s).cookie);
        core::ptr::write_volatile(q, seq);
        // Atomic, though only this CPU writes it: a program nested on this
        // CPU (a softirq inside a process-context hook) may add its own
        // entry in between. Both then wrote entry `seq` and the head
        // passes one whose sequence number is not its own, which the agent
        // sees (and reads the whole map). An add without fetch: 5.8 has it.
        // On arm64 it orders nothing: the head may show before the entry,
        // which the agent takes for a nested write (a whole read).
        core::arch::asm!("lock *(u64 *)({p} + 0) += {d}", p = in(reg) h, d = in(reg) 1u64);
    }
}
