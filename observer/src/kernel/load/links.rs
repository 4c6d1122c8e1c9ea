//! Which of observer's programs are still attached: the BPF links this
//! process holds, read from `/proc/self/fdinfo` (a link's file shows
//! `link_type:` and the `prog_id:` it attaches, kernel/bpf/syscall.c
//! `bpf_link_show_fdinfo()`). `/healthz` compares the count with the one
//! at start, so a program that is gone (unloaded, its link closed) makes
//! the agent unhealthy instead of silently blind.

use std::collections::HashSet;

/// The program id a link's fdinfo names (`prog_id:\tN`), when `text` is a
/// link's fdinfo (it has `link_type:`); `None` for any other file.
pub fn linked_program(text: &str) -> Option<u32> {
    let mut is_link = false;
    let mut prog = None;
    for line in text.lines() {
        let mut kv = line.splitn(2, ':');
        match (kv.next().map(str::trim), kv.next().map(str::trim)) {
            (Some("link_type"), _) => is_link = true,
            (Some("prog_id"), Some(v)) => prog = v.parse().ok(),
            _ => {}
        }
    }
    prog.filter(|_| is_link)
}

/// How many of the programs `ids` (ids as [`crate::kernel::probes::Probes::program_stats`]
/// gives them) have a link open in this process. Called every poll: only
/// the fds that are BPF links (`anon_inode:bpf_link`, or `anon_inode:bpf-link`
/// for a link opened from a bpffs pin, kernel/bpf/inode.c) have their fdinfo
/// read, not the metrics endpoint's hundreds of sockets.
///
/// # Errors
/// `/proc/self/fd` cannot be listed.
pub fn attached(ids: &HashSet<u32>) -> std::io::Result<usize> {
    let mut linked = HashSet::new();
    for entry in std::fs::read_dir("/proc/self/fd")? {
        // An fd closed since the listing is simply not counted.
        let Ok(entry) = entry else { continue };
        let is_link = std::fs::read_link(entry.path()).is_ok_and(|t| {
            t.as_os_str() == "anon_inode:bpf_link" || t.as_os_str() == "anon_inode:bpf-link"
        });
        if !is_link {
            continue;
        }
        let info = format!("/proc/self/fdinfo/{}", entry.file_name().to_string_lossy());
        let Ok(text) = std::fs::read_to_string(info) else {
            continue;
        };
        if let Some(p) = linked_program(&text).filter(|p| ids.contains(p)) {
            linked.insert(p);
        }
    }
    Ok(linked.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_links_program_and_ignores_other_files() {
        let link = "pos:\t0\nflags:\t02000000\nmnt_id:\t15\nino:\t1057\n\
                    link_type:\ttracing\nlink_id:\t12\nprog_tag:\t4f1c0a6f5e2d7a1b\n\
                    prog_id:\t88\nattach_type:\t26\n";
        assert_eq!(linked_program(link), Some(88));
        // A program's own fd names its id too, but is no link.
        let prog = "pos:\t0\nflags:\t02000002\nprog_type:\t26\nprog_jited:\t1\n\
                    prog_tag:\t4f1c0a6f5e2d7a1b\nmemlock:\t4096\nprog_id:\t88\n";
        assert_eq!(linked_program(prog), None);
        assert_eq!(linked_program("pos:\t0\nflags:\t0100000\n"), None);
    }

    #[test]
    fn this_process_holds_no_link_of_a_program_it_never_loaded() {
        assert_eq!(attached(&HashSet::from([u32::MAX])).unwrap(), 0);
    }
}
