use super::*;

/// A journal over `mem` (as the kernel would map it) for `cpus` CPUs.
fn over(mem: &mut [u64], cpus: u32) -> Journal {
    assert!(mem.len() >= journal::max_entries(cpus) as usize);
    Journal {
        map: None,
        base: mem.as_mut_ptr(),
        len: mem.len() * 8,
        cpus,
        last: vec![0; cpus as usize],
        started: false,
    }
}

/// What a program on `cpu` does to journal `cookie` (observer-ebpf
/// journal.rs `note`, past the epoch check).
fn write(mem: &mut [u64], cpu: u32, cookie: u64) {
    let head = journal::block(cpu) as usize;
    let seq = mem[head];
    let slot = journal::entry(head as u32, seq) as usize;
    mem[slot] = cookie;
    mem[slot + 1] = seq;
    mem[head] = seq + 1;
}

/// A journal over `mem` past its first read (always whole).
fn started(mem: &mut [u64], cpus: u32) -> (Journal, Vec<u64>) {
    let mut j = over(mem, cpus);
    let mut out = Vec::new();
    assert_eq!(j.read(&mut out), JournalRead::Whole);
    (j, out)
}

fn memory(cpus: u32) -> Vec<u64> {
    vec![0; journal::max_entries(cpus) as usize]
}

#[test]
fn reads_what_each_cpu_wrote_since_the_last_read_and_starts_an_epoch() {
    let mut mem = memory(2);
    // The journal reads the vector's buffer through a pointer, as it
    // reads the kernel's mapping, while the test writes it as the
    // programs would between two reads.
    let mut j = over(&mut mem, 2);
    // SAFETY (all below): the test writes the memory the journal reads,
    // never at once, as the kernel's programs would between two reads.
    let mut out = Vec::new();
    write(&mut mem, 0, 11);
    // The first read cannot know what came before the agent.
    assert_eq!(j.read(&mut out), JournalRead::Whole);
    assert!(out.is_empty());
    assert_eq!(mem[EPOCH as usize], 1);
    write(&mut mem, 0, 12);
    write(&mut mem, 1, 21);
    write(&mut mem, 0, 13);
    assert_eq!(j.read(&mut out), JournalRead::Changed);
    assert_eq!(out, [12, 13, 21]);
    assert_eq!(mem[EPOCH as usize], 2);
    assert_eq!(j.read(&mut out), JournalRead::Changed);
    assert!(out.is_empty());
}

#[test]
fn a_cpu_that_wrote_more_than_the_journal_holds_asks_for_the_whole_map() {
    let mut mem = memory(1);
    let (mut j, mut out) = started(&mut mem, 1);
    for c in 0..=u64::from(SLOTS) {
        write(&mut mem, 0, 100 + c);
    }
    assert_eq!(j.read(&mut out), JournalRead::Whole);
    assert!(out.is_empty());
    // And reads on from there.
    write(&mut mem, 0, 7);
    assert_eq!(j.read(&mut out), JournalRead::Changed);
    assert_eq!(out, [7]);
    // A journal one short of full is read; a full one is not, as a
    // program that found the head there may be writing over its first
    // entry while it is read.
    for c in 0..u64::from(SLOTS) - 1 {
        write(&mut mem, 0, c + 1);
    }
    assert_eq!(j.read(&mut out), JournalRead::Changed);
    assert_eq!(out.len(), SLOTS as usize - 1);
    assert_eq!(out[0], 1);
    for c in 0..u64::from(SLOTS) {
        write(&mut mem, 0, c + 1);
    }
    assert_eq!(j.read(&mut out), JournalRead::Whole);
}

#[test]
fn an_entry_two_nested_programs_both_wrote_asks_for_the_whole_map() {
    let mut mem = memory(1);
    let (mut j, mut out) = started(&mut mem, 1);
    write(&mut mem, 0, 5);
    // A process-context program reads head 1 and writes entry 1; a softirq
    // program nested in it does the same; both add one to the head.
    let head = journal::block(0) as usize;
    let slot = journal::entry(head as u32, 1) as usize;
    mem[slot] = 6;
    mem[slot + 1] = 1;
    mem[slot] = 7;
    mem[slot + 1] = 1;
    mem[head] += 2;
    // Entry 2 was never written: its sequence number is not 2.
    assert_eq!(j.read(&mut out), JournalRead::Whole);
    assert!(out.is_empty());
}

#[test]
fn the_journal_holds_a_block_up_to_the_highest_possible_cpu() {
    assert_eq!(cpu_ids_end("0-3,8-11\n"), Some(12));
    assert_eq!(cpu_ids_end("0\n"), Some(1));
    assert_eq!(cpu_ids_end("0-127"), Some(128));
    assert_eq!(cpu_ids_end(""), None);
    assert_eq!(cpu_ids_end("x-y"), None);
}
