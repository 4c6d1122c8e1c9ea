//! Per-program statistics the kernel keeps for every BPF program
//! (`BPF_OBJ_GET_INFO_BY_FD`, kernel/bpf/syscall.c `bpf_prog_get_info_by_fd`).
//!
//! observer exports one of them: `recursion_misses`, the runs the kernel
//! skipped because the program would have nested in itself on one CPU
//! (kernel/trace/bpf_trace.c `__bpf_trace_run`, Linux 5.12+). aya 0.14's
//! `ProgramInfo` does not expose it, so the struct is read here; it is UAPI
//! (include/uapi/linux/bpf.h `struct bpf_prog_info`), stable across kernels.

use std::os::fd::{AsRawFd as _, BorrowedFd};

/// `BPF_OBJ_GET_INFO_BY_FD` from include/uapi/linux/bpf.h.
const BPF_OBJ_GET_INFO_BY_FD: libc::c_long = 15;

/// The head of `struct bpf_prog_info` up to `recursion_misses`. The kernel
/// fills only the `info_len` bytes it is given, and zero-fills members it
/// does not have (an older kernel leaves `recursion_misses` 0).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct ProgInfoHead {
    /// `enum bpf_prog_type`.
    pub prog_type: u32,
    /// Program id (as `bpftool prog` lists it).
    pub id: u32,
    tag: [u8; 8],
    jited_prog_len: u32,
    xlated_prog_len: u32,
    jited_prog_insns: u64,
    xlated_prog_insns: u64,
    load_time: u64,
    created_by_uid: u32,
    nr_map_ids: u32,
    map_ids: u64,
    /// Program name, NUL-padded (`BPF_OBJ_NAME_LEN` = 16 bytes).
    pub name: [u8; 16],
    ifindex: u32,
    gpl_compatible: u32,
    netns_dev: u64,
    netns_ino: u64,
    nr_jited_ksyms: u32,
    nr_jited_func_lens: u32,
    jited_ksyms: u64,
    jited_func_lens: u64,
    btf_id: u32,
    func_info_rec_size: u32,
    func_info: u64,
    nr_func_info: u32,
    nr_line_info: u32,
    line_info: u64,
    jited_line_info: u64,
    nr_jited_line_info: u32,
    line_info_rec_size: u32,
    jited_line_info_rec_size: u32,
    nr_prog_tags: u32,
    prog_tags: u64,
    /// Time spent in the program (ns), while `kernel.bpf_stats_enabled`.
    pub run_time_ns: u64,
    /// Runs counted while `kernel.bpf_stats_enabled`.
    pub run_cnt: u64,
    /// Runs skipped because the program was already running on that CPU.
    pub recursion_misses: u64,
}

const _: () = assert!(std::mem::offset_of!(ProgInfoHead, name) == 64);
const _: () = assert!(std::mem::offset_of!(ProgInfoHead, run_time_ns) == 192);
const _: () = assert!(std::mem::offset_of!(ProgInfoHead, recursion_misses) == 208);
const _: () = assert!(std::mem::size_of::<ProgInfoHead>() == 216);

/// The `info` member of `union bpf_attr`.
#[repr(C)]
struct InfoAttr {
    bpf_fd: u32,
    info_len: u32,
    info: u64,
}

/// Reads the head of `bpf_prog_info` for the program `fd`. Needs no
/// capability: the fd is the proof of access.
///
/// # Errors
/// The `bpf(2)` call failed (not a program fd, or no BPF syscall).
pub fn read(fd: BorrowedFd<'_>) -> std::io::Result<ProgInfoHead> {
    let mut info = ProgInfoHead::default();
    let attr = InfoAttr {
        bpf_fd: u32::try_from(fd.as_raw_fd()).map_err(|_| std::io::Error::other("negative fd"))?,
        info_len: std::mem::size_of::<ProgInfoHead>() as u32,
        info: (&raw mut info) as u64,
    };
    // SAFETY: `attr` is a valid `bpf_attr.info` for its size; the kernel
    // writes at most `info_len` bytes into `info`, which outlives the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_OBJ_GET_INFO_BY_FD,
            &raw const attr,
            std::mem::size_of::<InfoAttr>(),
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(info)
}

impl ProgInfoHead {
    /// The program name up to its first NUL.
    pub fn name(&self) -> &str {
        let end = self
            .name
            .iter()
            .position(|b| *b == 0)
            .unwrap_or(self.name.len());
        std::str::from_utf8(&self.name[..end]).unwrap_or("?")
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::{load::probe_config::ProbeConfig, probes::Probes};

    /// The struct layout read here agrees with aya's reading of the same
    /// programs (id, name, run count), so `recursion_misses` is read from
    /// the right place too.
    #[test]
    fn running_kernel_program_info_matches_aya() {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: loading programs needs root");
            return;
        }
        let probes = Probes::load(ProbeConfig::default()).unwrap();
        let ours = probes.program_stats();
        let aya = probes.program_info();
        assert!(ours.len() >= 4, "{ours:?}");
        assert_eq!(ours.len(), aya.len());
        for (name, info) in &ours {
            let (_, a) = aya.iter().find(|(n, _)| n == name).unwrap();
            assert_eq!(info.id, a.id(), "{name}");
            // The kernel keeps 15 characters of the name.
            assert!(name.starts_with(info.name()), "{name} vs {}", info.name());
            assert!(!info.name().is_empty());
            assert_eq!(info.prog_type, 26, "{name}: BPF_PROG_TYPE_TRACING");
            // Counts only grow, and only while bpf_stats is on.
            assert!(info.run_cnt <= a.run_count(), "{name}");
        }
    }
}
