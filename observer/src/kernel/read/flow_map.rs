//! Batched reads of the kernel flow map (`BPF_MAP_LOOKUP_BATCH`, Linux
//! 5.6+): one `bpf(2)` call per few thousand flows instead of two per flow
//! (get-next-key then lookup), so a poll of 100k flows costs a few dozen
//! system calls. The buffers are kept between polls: nothing is allocated
//! per flow per poll.

use std::os::fd::RawFd;

use observer_common::FlowSample;

/// `BPF_MAP_LOOKUP_BATCH` from include/uapi/linux/bpf.h.
const BPF_MAP_LOOKUP_BATCH: libc::c_long = 24;

/// The `batch` member of `union bpf_attr`.
#[repr(C)]
#[derive(Default)]
struct BatchAttr {
    in_batch: u64,
    out_batch: u64,
    keys: u64,
    values: u64,
    count: u32,
    map_fd: u32,
    elem_flags: u64,
    flags: u64,
}

/// Reusable buffers for batched reads of one `u64 -> FlowSample` map.
pub struct BatchReader {
    keys: Vec<u64>,
    values: Vec<FlowSample>,
    /// Whether the kernel supports batched lookups on this map (cleared on
    /// the first EINVAL/ENOTSUPP, after which callers fall back).
    pub supported: bool,
}

/// Elements per call to start with; grows when a hash bucket holds more.
const CHUNK: usize = 4096;

impl Default for BatchReader {
    fn default() -> Self {
        BatchReader {
            keys: vec![0; CHUNK],
            values: vec![FlowSample::ZERO; CHUNK],
            supported: true,
        }
    }
}

impl BatchReader {
    /// Appends every value of the map behind `fd` to `out`.
    ///
    /// # Errors
    /// The OS error of a failed call; `EINVAL`/`EOPNOTSUPP` also clear
    /// [`BatchReader::supported`].
    pub fn read_all(&mut self, fd: RawFd, out: &mut Vec<FlowSample>) -> std::io::Result<()> {
        let mut token: u64 = 0;
        let mut first = true;
        loop {
            let mut next: u64 = 0;
            let mut attr = BatchAttr {
                in_batch: if first { 0 } else { (&raw const token) as u64 },
                out_batch: (&raw mut next) as u64,
                keys: self.keys.as_mut_ptr() as u64,
                values: self.values.as_mut_ptr() as u64,
                count: self.keys.len() as u32,
                map_fd: fd as u32,
                ..BatchAttr::default()
            };
            // SAFETY: `attr` points at buffers of `count` keys and values of
            // the map's key and value sizes, and at the batch tokens; the
            // kernel writes at most that much.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_bpf,
                    BPF_MAP_LOOKUP_BATCH,
                    &raw mut attr,
                    size_of::<BatchAttr>(),
                )
            };
            let err = (rc < 0).then(std::io::Error::last_os_error);
            let got = (attr.count as usize).min(self.values.len());
            match err.as_ref().and_then(std::io::Error::raw_os_error) {
                None => {}
                // The end: the last elements came with it.
                Some(libc::ENOENT) => {
                    out.extend_from_slice(&self.values[..got]);
                    return Ok(());
                }
                // A bucket holds more than fits: grow and retry it.
                Some(libc::ENOSPC) => {
                    let n = self.keys.len() * 2;
                    self.keys.resize(n, 0);
                    self.values.resize(n, FlowSample::ZERO);
                    continue;
                }
                Some(libc::EINVAL | libc::EOPNOTSUPP | 524) => {
                    self.supported = false;
                    return Err(err.unwrap_or_else(std::io::Error::last_os_error));
                }
                Some(_) => return Err(err.unwrap_or_else(std::io::Error::last_os_error)),
            }
            out.extend_from_slice(&self.values[..got]);
            token = next;
            first = false;
        }
    }
}
