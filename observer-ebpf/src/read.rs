//! Reads of kernel memory at BTF-resolved offsets.
//!
//! Every offset comes from the read-only global `OFFSETS`; a member the
//! running kernel lacks is `OFFSET_NONE` and reads as zero.

use aya_ebpf::helpers::bpf_probe_read_kernel;
use observer_common::{Counter, OFFSET_NONE};

use crate::maps::count;

/// Reads the offset of member `$f` from the load-time global.
macro_rules! off {
    ($f:ident) => {
        crate::read::volatile(&raw const crate::maps::OFFSETS.$f)
    };
}
pub(crate) use off;

/// Reads a load-time global without letting the compiler fold the
/// placeholder value that user space overwrites before load.
#[inline(always)]
pub fn volatile(p: *const u32) -> u32 {
    // SAFETY: `p` points into a static that lives for the program's life.
    unsafe { core::ptr::read_volatile(p) }
}

/// Reads a `T` at `base + off`; zero (and a counted error) if the read fails,
/// zero without an error if the kernel lacks the member.
#[inline(always)]
pub fn at<T: Copy + Default>(base: *const u8, off: u32) -> T {
    if off == OFFSET_NONE {
        return T::default();
    }
    // SAFETY: bpf_probe_read_kernel checks the address; a bad one is an
    // error return, not a fault.
    match unsafe { bpf_probe_read_kernel(base.wrapping_add(off as usize).cast::<T>()) } {
        Ok(v) => v,
        Err(_) => {
            count(Counter::ReadErrors);
            T::default()
        }
    }
}

/// Reads a bitfield that starts `bit` bits after `base` and is `width` bits
/// wide (little-endian bit numbering, as on every BPF-capable LE arch).
#[inline(always)]
pub fn bits(base: *const u8, bit: u32, width: u32) -> u32 {
    if bit == OFFSET_NONE || width == 0 || width > 24 {
        return 0;
    }
    let word: u32 = at(base, bit / 8);
    (word >> (bit % 8)) & ((1u32 << width) - 1)
}

/// Reads a pointer member, then a `T` at `inner` bytes into what it points to.
#[inline(always)]
pub fn deref<T: Copy + Default>(base: *const u8, ptr_off: u32, inner: u32) -> T {
    let p: u64 = at(base, ptr_off);
    if p == 0 {
        return T::default();
    }
    at(p as *const u8, inner)
}

/// Whether `sk` is a TCP socket (`sk_protocol == IPPROTO_TCP`).
#[inline(always)]
pub fn is_tcp(sk: *const u8) -> bool {
    bits(sk, off!(protocol_bit), off!(protocol_width)) == 6
}
