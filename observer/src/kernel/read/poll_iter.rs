//! The poll-time read: the kernel program `observer_poll`, an
//! `iter/bpf_sk_storage_map` iterator over the `ACTIVE` socket-storage map
//! (or `observer_poll_tcp`, an `iter/tcp` one over the agent's network
//! namespace), which re-samples every flow that moved since the last poll
//! from its live `tcp_sock` (observer-ebpf/src/poll.rs). [`PollIter::run`]
//! walks it once.
//!
//! Own code, not aya's, for two system calls: aya 0.14's `Iter::attach`
//! makes the iterator's link without the map a storage iterator must be
//! given (`union bpf_iter_link_info`'s `map.map_fd`, include/uapi/linux/bpf.h),
//! and its iterator-file constructor is private.

use std::{
    io::Read as _,
    os::fd::{AsFd, AsRawFd as _, BorrowedFd, FromRawFd as _, OwnedFd},
};

/// `BPF_LINK_CREATE` and `BPF_ITER_CREATE` (`enum bpf_cmd`).
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_ITER_CREATE: libc::c_long = 33;
/// `BPF_TRACE_ITER` (`enum bpf_attach_type`).
const BPF_TRACE_ITER: u32 = 28;

/// The `link_create` member of `union bpf_attr` as far as an iterator uses
/// it: the program, no target, the attach type and the iterator's
/// parameters (`iter_info`, `iter_info_len`).
#[repr(C)]
struct LinkCreate {
    prog_fd: u32,
    target_fd: u32,
    attach_type: u32,
    flags: u32,
    iter_info: u64,
    iter_info_len: u32,
    _pad: u32,
}

/// `union bpf_iter_link_info` for a map iterator: the map's fd, the rest of
/// the union zero.
#[repr(C)]
struct IterInfo {
    map_fd: u32,
    _rest: [u32; 3],
}

/// The `iter_create` member of `union bpf_attr`.
#[repr(C)]
struct IterCreate {
    link_fd: u32,
    flags: u32,
}

/// `bpf(cmd, attr)`: a new fd, or the OS error.
fn bpf<T>(cmd: libc::c_long, attr: &mut T) -> std::io::Result<OwnedFd> {
    // SAFETY: `attr` is a valid prefix of `union bpf_attr` for `cmd`, and
    // any pointer in it outlives the call.
    let fd = unsafe { libc::syscall(libc::SYS_bpf, cmd, std::ptr::from_mut(attr), size_of::<T>()) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// The inode of the network namespace this thread runs in: the one
/// `iter/tcp` walks (`bpf_iter_init_seq_net()` takes the caller's).
///
/// # Errors
/// The OS error of reading `/proc/thread-self/ns/net`.
pub fn own_netns() -> std::io::Result<u64> {
    use std::os::unix::fs::MetadataExt as _;
    Ok(std::fs::metadata("/proc/thread-self/ns/net")?.ino())
}

/// The poll-time read's iterator link (held by this agent, or opened from a
/// pin).
pub struct PollIter {
    link: OwnedFd,
    /// When a failed walk was last said.
    warned: Option<std::time::Instant>,
}

impl PollIter {
    /// Attaches the loaded iterator program `prog` (`BPF_LINK_CREATE`),
    /// to the map `map` for a map iterator.
    ///
    /// # Errors
    /// The OS error: a kernel without iterators (before 5.9), or a program
    /// or map of the wrong type.
    pub fn attach(prog: BorrowedFd<'_>, map: Option<BorrowedFd<'_>>) -> std::io::Result<PollIter> {
        let info = IterInfo {
            map_fd: map.map_or(0, |m| m.as_raw_fd() as u32),
            _rest: [0; 3],
        };
        let mut attr = LinkCreate {
            prog_fd: prog.as_raw_fd() as u32,
            target_fd: 0,
            attach_type: BPF_TRACE_ITER,
            flags: 0,
            iter_info: if map.is_some() {
                std::ptr::from_ref(&info) as u64
            } else {
                0
            },
            iter_info_len: if map.is_some() {
                size_of::<IterInfo>() as u32
            } else {
                0
            },
            _pad: 0,
        };
        Ok(PollIter {
            link: bpf(BPF_LINK_CREATE, &mut attr)?,
            warned: None,
        })
    }

    /// The iterator of a link an earlier agent pinned.
    pub fn from_link(link: OwnedFd) -> PollIter {
        PollIter { link, warned: None }
    }

    /// [`PollIter::run`], once a poll; whether it walked. A walk that fails
    /// is said at most once a minute, as "the `what` failed (error):
    /// `lost`" (what its failure leaves undone).
    pub fn walk(&mut self, what: &str, lost: &str) -> bool {
        let Err(e) = self.run() else {
            return true;
        };
        let now = std::time::Instant::now();
        if self
            .warned
            .is_none_or(|t| now.duration_since(t) >= std::time::Duration::from_secs(60))
        {
            self.warned = Some(now);
            log::warn!("the {what} failed ({e}): {lost}");
        }
        false
    }

    /// Walks the map once: the program runs for every marked socket. Reads
    /// the iterator file to its end (the program writes nothing, so one
    /// read normally does it).
    ///
    /// # Errors
    /// The OS error of making or reading the iterator file.
    pub fn run(&self) -> std::io::Result<()> {
        let mut attr = IterCreate {
            link_fd: self.link.as_raw_fd() as u32,
            flags: 0,
        };
        let mut file = std::fs::File::from(bpf(BPF_ITER_CREATE, &mut attr)?);
        let mut buf = [0u8; 256];
        loop {
            match file.read(&mut buf) {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                // A read that visited a million objects and wrote nothing
                // (kernel/bpf/bpf_iter.c, MAX_ITER_OBJECTS): the next one
                // goes on from there.
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl AsFd for PollIter {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.link.as_fd()
    }
}
