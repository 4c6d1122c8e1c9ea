//! Reads of kernel memory at BTF-resolved offsets.
//!
//! Every offset comes from the read-only global `OFFSETS`; a member the
//! running kernel lacks is `OFFSET_NONE` and reads as zero.

use aya_ebpf::helpers::{bpf_probe_read_kernel, generated::bpf_skc_to_tcp_sock};
use observer_common::{Counter, OFFSET_NONE};

use crate::maps::{DIRECT, count};

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

/// A TCP socket as the hooks read it.
///
/// With the load-time switch `DIRECT` set, fields are read with plain loads
/// from the BTF-typed `struct tcp_sock *` that `bpf_skc_to_tcp_sock()`
/// returns: the verifier checks each offset against the kernel's own BTF
/// (the offsets are constants from the frozen read-only globals), and a load
/// costs about a nanosecond instead of a helper call. Without it (a kernel
/// whose verifier rejects that), every field goes through
/// `bpf_probe_read_kernel`.
#[derive(Clone, Copy)]
pub struct Sk {
    p: *const u8,
    orig: *const u8,
    direct: bool,
}

impl Sk {
    /// The socket `sk` (a `struct sock *` handed to a tracepoint), or None
    /// when it is not a full TCP socket.
    #[inline(always)]
    pub fn of(sk: *const u8) -> Option<Sk> {
        // SAFETY: reading a static (see `volatile`).
        let direct = unsafe { core::ptr::read_volatile(&raw const DIRECT) } != 0;
        if !direct {
            return is_tcp(sk).then_some(Sk {
                p: sk,
                orig: sk,
                direct: false,
            });
        }
        // SAFETY: `sk` is the BTF-typed socket pointer the hook was handed.
        let tp = unsafe { bpf_skc_to_tcp_sock(sk as *mut _) } as *const u8;
        if tp.is_null() {
            return None;
        }
        Some(Sk {
            p: tp,
            orig: sk,
            direct: true,
        })
    }

    /// The `struct sock *` the hook was handed (for helpers that want it).
    #[inline(always)]
    pub fn sock(&self) -> *const u8 {
        self.orig
    }

    /// Whether fields are read with direct loads.
    #[inline(always)]
    pub fn direct(&self) -> bool {
        self.direct
    }

    /// The socket's address, for `bpf_probe_read_kernel` reads of rarely
    /// read fields (addresses, names) and for the cookie helper.
    #[inline(always)]
    pub fn raw(&self) -> *const u8 {
        self.p
    }

    /// A scalar field (u8/u16/u32/u64/i32) at byte `off`; 0 when absent.
    #[inline(always)]
    pub fn get<T: Copy + Default>(&self, off: u32) -> T {
        load(self.p, off, self.direct)
    }

    /// A bitfield (or small whole member) `width` bits wide at bit `bit`,
    /// read with the narrowest load that covers it.
    #[inline(always)]
    pub fn bits(&self, bit: u32, width: u32) -> u32 {
        if !self.direct {
            return bits(self.p, bit, width);
        }
        if bit == OFFSET_NONE || width == 0 || width > 24 {
            return 0;
        }
        let byte = bit / 8;
        let span = bit % 8 + width;
        let word: u32 = if span <= 8 {
            u32::from(self.get::<u8>(byte))
        } else if span <= 16 {
            u32::from(self.get::<u16>(byte))
        } else {
            self.get::<u32>(byte)
        };
        (word >> (bit % 8)) & ((1u32 << width) - 1)
    }
}

/// Reads a scalar at `base + off`: a direct load from a BTF-typed pointer
/// (checked by the verifier) when `direct`, else `bpf_probe_read_kernel`.
#[inline(always)]
pub fn load<T: Copy + Default>(base: *const u8, off: u32, direct: bool) -> T {
    if off == OFFSET_NONE {
        return T::default();
    }
    if direct {
        // SAFETY: a BTF-typed pointer and an offset the verifier checks
        // against the kernel's struct layout at load time.
        unsafe { core::ptr::read_volatile(base.wrapping_add(off as usize).cast::<T>()) }
    } else {
        at(base, off)
    }
}

/// A u32 stored in host order in a `char[]` member (the skb control block):
/// four byte loads, because the verifier checks a direct load against one
/// array element.
#[inline(always)]
pub fn u32_in_bytes(base: *const u8, off: u32, direct: bool) -> u32 {
    if off == OFFSET_NONE {
        return 0;
    }
    if !direct {
        return u32::from_ne_bytes(at::<[u8; 4]>(base, off));
    }
    let b = |i: u32| -> u8 { load(base, off + i, true) };
    u32::from_ne_bytes([b(0), b(1), b(2), b(3)])
}
