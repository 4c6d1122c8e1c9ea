//! Candidate ways to reach a flow's state from the per-packet hook, as
//! programs the benchmark attaches alone next to `bench_floor` (never the
//! agent): each finds (or makes) one socket's 8-byte counter and adds one.
//! Their cost per hit, less the floor's, is what the lookup alone costs,
//! which chooses how the flow state is kept (issue "Per-packet cost near
//! the floor"):
//! - `bench_lru_hash`: the agent's way today, the socket cookie
//!   (`bpf_get_socket_cookie`) as the key of an LRU hash map;
//! - `bench_sk_store`: socket-local storage (`bpf_sk_storage_get`,
//!   net/core/bpf_sk_storage.c), a pointer kept on the socket itself (no
//!   hashing), which an `iter/bpf_sk_storage_map` program can also walk in
//!   every network namespace at poll time.

use aya_ebpf::{
    bindings::{BPF_NOEXIST, BPF_SK_STORAGE_GET_F_CREATE},
    btf_maps::SkStorage,
    helpers::{bpf_get_socket_cookie, generated::bpf_sk_storage_get},
    macros::{btf_map, map},
    maps::LruHashMap,
};

/// `bench_lru_hash`'s counters by socket cookie (small: only the
/// benchmark's own sockets).
#[map(name = "BENCH_LRU")]
static BENCH_LRU: LruHashMap<u64, u64> = LruHashMap::with_max_entries(1024, 0);

/// `bench_sk_store`'s counters, one per socket.
#[btf_map]
static BENCH_SK: SkStorage<u64> = SkStorage::new();

/// The LRU-hash candidate for socket `sk`.
#[inline(always)]
pub fn lru_hash(sk: *const u8) {
    // SAFETY: `sk` is the BTF-typed socket pointer the hook was handed.
    let key = unsafe { bpf_get_socket_cookie(sk as *mut _) };
    if let Some(p) = BENCH_LRU.get_ptr_mut(key) {
        // SAFETY: a value of the map, for this socket.
        unsafe { *p += 1 };
        return;
    }
    let _ = BENCH_LRU.insert(key, 1, u64::from(BPF_NOEXIST));
}

/// The socket-local-storage candidate for socket `sk`.
#[inline(always)]
pub fn sk_storage(sk: *const u8) {
    // SAFETY: the map's address is what the helper takes; `sk` is the
    // BTF-typed socket pointer the hook was handed (a tracing program's
    // `bpf_sk_storage_get` takes any sock_common pointer).
    let p = unsafe {
        bpf_sk_storage_get(
            (&raw const BENCH_SK).cast_mut().cast(),
            sk as *mut _,
            core::ptr::null_mut(),
            u64::from(BPF_SK_STORAGE_GET_F_CREATE),
        )
    }
    .cast::<u64>();
    if !p.is_null() {
        // SAFETY: non-null: this socket's storage, 8 bytes.
        unsafe { *p += 1 };
    }
}
