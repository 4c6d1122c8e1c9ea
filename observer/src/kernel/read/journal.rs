//! The agent's side of the change journal (layout and the programs' side in
//! `observer_common::journal`): each poll reads the cookies of the flows
//! sampled since the last one, so that it looks up those entries instead
//! of reading the whole flow map. Reading a flow-map entry costs about
//! 0.9 µs (the kernel copies it out bucket by bucket), so at 100k flows the
//! whole map is some 90 ms a poll, while a host's flows mostly sit idle.
//!
//! The journal is an array the kernel lets the agent map into its memory
//! (`BPF_F_MMAPABLE`, Linux 5.5): reading it is a few loads per CPU and one
//! per entry, no system call. Our own code over `libc::mmap`: aya maps
//! arrays by system call only.
//!
//! A read is [`JournalRead::Changed`] only when it is sure to hold every flow
//! sampled since the previous read: each CPU wrote fewer than
//! `journal::SLOTS` entries, each entry read carries its own sequence
//! number, and no CPU lapped the ring while it was read. Otherwise it says [`JournalRead::Whole`] and the poll reads the whole
//! map, as it would without a journal.

use std::os::fd::{AsFd as _, AsRawFd as _};
use std::sync::atomic::{Ordering, fence};

use aya::maps::{Array, IterableMap as _, MapData};
use observer_common::journal::{self, EPOCH, SLOTS};

/// `BPF_F_MMAPABLE` (include/uapi/linux/bpf.h).
const BPF_F_MMAPABLE: u32 = 1 << 10;

/// Why a journal cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// The map is not one the agent can map (a set pinned by an older
    /// build, or a kernel before 5.5).
    #[error("the journal map is not mmapable (flags {flags:#x}, {entries} entries)")]
    NotMappable {
        /// The map's flags.
        flags: u32,
        /// Its max_entries.
        entries: u32,
    },
    /// The map is smaller than the possible CPUs need.
    #[error("the journal map has {entries} entries, {cpus} CPUs need {need}")]
    TooSmall {
        /// Its max_entries.
        entries: u32,
        /// Possible CPUs.
        cpus: u32,
        /// Entries they need.
        need: u32,
    },
    /// The kernel's information about the map, or the mapping, failed.
    #[error("cannot map the journal: {0}")]
    Io(#[from] std::io::Error),
    /// aya could not describe the map.
    #[error("cannot describe the journal map: {0}")]
    Map(#[from] aya::maps::MapError),
}

/// What one read of the journal found.
#[derive(Debug, PartialEq, Eq)]
pub enum JournalRead {
    /// Every flow sampled since the previous read is among these cookies
    /// (in journal order; a flow may appear twice).
    Changed,
    /// The journal cannot say: the poll must read the whole map (the first
    /// read, a CPU that wrote more than the journal holds, or an entry
    /// overwritten by a program nested on its CPU).
    Whole,
}

/// The mapped journal.
pub struct Journal {
    /// Keeps the map (and so the mapping's object) alive; `None` over a
    /// test's memory.
    map: Option<Array<MapData, u64>>,
    base: *mut u64,
    len: usize,
    cpus: u32,
    /// Per CPU: the head at the previous read.
    last: Vec<u64>,
    /// Whether a read has set `last`.
    started: bool,
}

// SAFETY: the mapping is owned by this value and only read or written
// through `&mut self`; the kernel's side is concurrent by design (volatile
// accesses, sequence-checked).
unsafe impl Send for Journal {}

impl Journal {
    /// Maps the journal `map` for `cpus` possible CPUs.
    ///
    /// # Errors
    /// [`JournalError`]: the map cannot be mapped or is too small.
    pub fn new(map: Array<MapData, u64>, cpus: u32) -> Result<Journal, JournalError> {
        let info = map.map().info()?;
        let (flags, entries) = (info.map_flags(), info.max_entries());
        if flags & BPF_F_MMAPABLE == 0 {
            return Err(JournalError::NotMappable { flags, entries });
        }
        let need = journal::max_entries(cpus);
        if entries < need {
            return Err(JournalError::TooSmall {
                entries,
                cpus,
                need,
            });
        }
        let len = entries as usize * 8;
        let fd = map.map().fd().as_fd().as_raw_fd();
        // SAFETY: a shared mapping of an mmapable BPF array of `len`
        // bytes; the kernel rounds it to pages.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error().into());
        }
        Ok(Journal {
            map: Some(map),
            base: base.cast(),
            len,
            cpus,
            last: vec![0; cpus as usize],
            started: false,
        })
    }

    fn load(&self, slot: u32) -> u64 {
        debug_assert!((slot as usize) < self.len / 8);
        // SAFETY: `slot` is inside the mapping (the callers' indices are
        // below `journal::max_entries(self.cpus)`, checked at `new`).
        unsafe { std::ptr::read_volatile(self.base.add(slot as usize)) }
    }

    fn heads(&self) -> Vec<u64> {
        (0..self.cpus)
            .map(|c| self.load(journal::block(c)))
            .collect()
    }

    /// Reads the cookies written since the previous read into `out`
    /// (cleared first), and starts a new epoch. See [`JournalRead`].
    pub fn read(&mut self, out: &mut Vec<u64>) -> JournalRead {
        out.clear();
        // Heads, then the epoch: a program that finds a flow stamped with
        // the old epoch wrote its entry before these heads were read, and
        // its sample before the lookups that follow.
        let heads = self.heads();
        fence(Ordering::SeqCst);
        let epoch = self.load(EPOCH).wrapping_add(1);
        // SAFETY: slot EPOCH is inside the mapping; only the agent writes it.
        unsafe { std::ptr::write_volatile(self.base.add(EPOCH as usize), epoch) };
        fence(Ordering::SeqCst);
        let mut whole = !self.started;
        let froms = std::mem::replace(&mut self.last, heads);
        for (cpu, (&from, &head)) in froms.iter().zip(&self.last).enumerate() {
            if whole {
                break;
            }
            if head.wrapping_sub(from) > u64::from(SLOTS) {
                whole = true;
                break;
            }
            let block = journal::block(cpu as u32);
            for seq in from..head {
                let slot = journal::entry(block, seq);
                let (cookie, tag) = (self.load(slot), self.load(slot + 1));
                if tag != seq {
                    whole = true;
                    break;
                }
                out.push(cookie);
            }
        }
        // An entry read while its CPU overwrote it (a cookie of a later
        // lap beside its own sequence number): that CPU's head has reached
        // a lap past the first entry read.
        fence(Ordering::SeqCst);
        if !whole {
            let now = self.heads();
            whole = froms
                .iter()
                .zip(&now)
                .any(|(&from, &now)| now.wrapping_sub(from) >= u64::from(SLOTS));
        }
        self.started = true;
        if whole {
            out.clear();
            JournalRead::Whole
        } else {
            JournalRead::Changed
        }
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        if self.map.is_some() {
            // SAFETY: the mapping made in `new`, unmapped once.
            unsafe { libc::munmap(self.base.cast(), self.len) };
        }
    }
}

#[cfg(test)]
#[path = "journal_tests.rs"]
mod tests;

/// Past this share of the flow map's max_entries, the changes are left
/// to a whole read: a lookup is a system call, about twice a batched
/// entry's cost, so many changes cost more looked up one by one than the
/// whole map read at once (the map's size stands in for the count of live
/// entries, which the agent does not know exactly).
const LOOKUP_SHARE: usize = 8;

/// A poll's read of the flows sampled since the last one: the journal, its
/// cookies, and the kernel's count of parked closes at the last read.
pub struct Changes {
    journal: Option<Journal>,
    cookies: Vec<u64>,
    parked_seen: Option<u64>,
    /// The flow map's max_entries, once asked.
    capacity: Option<usize>,
}

impl Changes {
    /// Over `journal` (`None`: every read is whole).
    pub fn new(journal: Option<Journal>) -> Changes {
        Changes {
            journal,
            cookies: Vec::new(),
            parked_seen: None,
            capacity: None,
        }
    }

    /// Reads the journal (at every poll, so that the next read starts
    /// here) and, unless the caller reads the `whole` map anyway, appends
    /// the entries of `flows` it names to `out`, a cookie whose entry is
    /// gone (closed, evicted) skipped. Returns false, having appended
    /// nothing, where the poll must read the whole map: `whole`, no
    /// journal, a [`JournalRead::Whole`], more changes than `LOOKUP_SHARE`
    /// allows, a failed lookup, or a close parked since the last read
    /// (`parked_before`, the kernel's count now): a park on a flow whose
    /// journal entry another program on its CPU is still writing shows in
    /// the count before the journal, and would be taken for evicted
    /// ([`crate::kernel::read::parked`]). Parks are rare: the ring was full.
    pub fn read(
        &mut self,
        flows: &aya::maps::HashMap<MapData, u64, observer_common::FlowSample>,
        parked_before: Option<u64>,
        whole: bool,
        out: &mut Vec<observer_common::FlowSample>,
    ) -> bool {
        let read = self.journal.as_mut().map(|j| j.read(&mut self.cookies));
        let parked = std::mem::replace(&mut self.parked_seen, parked_before) != parked_before;
        if whole || parked || read != Some(JournalRead::Changed) {
            return false;
        }
        self.cookies.sort_unstable();
        self.cookies.dedup();
        let capacity = *self
            .capacity
            .get_or_insert_with(|| flows.map().info().map_or(0, |i| i.max_entries()) as usize);
        if self.cookies.len() > capacity / LOOKUP_SHARE {
            return false;
        }
        let start = out.len();
        for c in &self.cookies {
            match flows.get(c, 0) {
                Ok(s) => out.push(s),
                Err(aya::maps::MapError::KeyNotFound) => {}
                Err(e) => {
                    log::debug!("flow-map lookup failed ({e}); reading the whole map");
                    out.truncate(start);
                    return false;
                }
            }
        }
        true
    }
}

/// The CPU ids the journal must hold a block for: the highest possible
/// CPU's id plus one (`/sys/devices/system/cpu/possible`, which may list
/// ranges with gaps, as `0-3,8-11`); `None` where that cannot be read (the
/// agent then goes without the journal).
pub fn possible_cpus() -> Option<u32> {
    std::fs::read_to_string("/sys/devices/system/cpu/possible")
        .ok()
        .and_then(|s| cpu_ids_end(&s))
}

/// The highest id plus one in a kernel CPU list (`0-3,8-11`, `0`).
fn cpu_ids_end(list: &str) -> Option<u32> {
    list.trim()
        .split(',')
        .map(|r| {
            r.rsplit('-')
                .next()
                .and_then(|n| n.trim().parse::<u32>().ok())
        })
        .try_fold(0u32, |end, last| Some(end.max(last?.checked_add(1)?)))
        .filter(|&n| n > 0)
}

/// The journal of `map` (the loaded or pinned `JOURNAL` map), or `None`,
/// said once, where it cannot be had: every poll then reads the whole map.
pub fn open<E: std::fmt::Display>(map: Result<Array<MapData, u64>, E>) -> Option<Journal> {
    let journal = match (map, possible_cpus()) {
        (Ok(m), Some(cpus)) => Journal::new(m, cpus).map_err(|e| e.to_string()),
        (Err(e), _) => Err(e.to_string()),
        (_, None) => Err("the possible CPUs are unknown".into()),
    };
    match journal {
        Ok(j) => Some(j),
        Err(e) => {
            log::info!("no change journal ({e}): each poll reads the whole flow map");
            None
        }
    }
}
