//! The benchmark's object (`cargo xtask bench`), never loaded by the
//! agent: the agent's programs ([`observer_ebpf::agent_programs!`]) with a
//! per-packet program that stops after the stage `PACKET_STAGES` names,
//! an empty program on each of the per-packet and per-read hooks (the
//! floor any program there pays) and candidate flow-state lookups ([`candidates`]).
#![cfg_attr(target_arch = "bpf", no_std)]
#![cfg_attr(target_arch = "bpf", no_main)]

#[cfg(target_arch = "bpf")]
mod candidates;

/// How much of the per-packet program runs
/// (`observer_common::packet_stages`), written by user space before load
/// (`observer_common::GLOBAL_PACKET_STAGES`).
#[cfg(target_arch = "bpf")]
#[unsafe(no_mangle)]
static PACKET_STAGES: u32 = observer_common::packet_stages::ALL;

#[cfg(target_arch = "bpf")]
mod programs {
    use aya_ebpf::{macros::btf_tracepoint, programs::BtfTracePointContext};

    // SAFETY: reading a static user space wrote before load; volatile so
    // the compiler does not fold the default.
    observer_ebpf::agent_programs!(unsafe {
        core::ptr::read_volatile(&raw const super::PACKET_STAGES)
    });

    /// The same hook as `observer_tcp_probe`, doing nothing: the benchmark
    /// attaches it next to the agent to measure what any program on this
    /// hook costs on the machine.
    #[btf_tracepoint(function = "tcp_probe")]
    pub fn bench_floor(_ctx: BtfTracePointContext) -> i32 {
        0
    }

    /// The same hook as `observer_recv_length` (every receive call on any
    /// socket), doing nothing: the floor under the per-read program.
    #[btf_tracepoint(function = "sock_recv_length")]
    pub fn bench_floor_read(_ctx: BtfTracePointContext) -> i32 {
        0
    }

    /// A candidate flow-state lookup, the LRU hash by socket cookie (see
    /// [`crate::candidates`]).
    #[btf_tracepoint(function = "tcp_probe")]
    pub fn bench_lru_hash(ctx: BtfTracePointContext) -> i32 {
        crate::candidates::lru_hash(ctx.arg(0));
        0
    }

    /// A candidate flow-state lookup, socket-local storage (see
    /// [`crate::candidates`]).
    #[btf_tracepoint(function = "tcp_probe")]
    pub fn bench_sk_store(ctx: BtfTracePointContext) -> i32 {
        crate::candidates::sk_storage(ctx.arg(0));
        0
    }
}

#[cfg(target_arch = "bpf")]
#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";

#[cfg(not(target_arch = "bpf"))]
fn main() {}
