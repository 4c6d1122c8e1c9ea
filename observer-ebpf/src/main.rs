//! observer's kernel programs. Each hook is a thin entry point that calls
//! into [`flow`]; errors are counted in the per-CPU counter map, never
//! dropped silently.
//!
//! All hooks are BTF tracepoints (`tp_btf`): they hand over typed socket
//! pointers and need neither kprobes nor ftrace trampolines, which some
//! kernels and sandboxes forbid (fentry/fexit load with EPERM on this
//! project's CI machines).
//! - `tcp_probe`: the per-packet sample. It fires at the start of
//!   `tcp_rcv_established()` (net/ipv4/tcp_input.c), before the segment is
//!   processed; [`flow`] carries the segment's effect forward (bytes acked or
//!   received, the end of a busy period) so an idle flow does not lag one ACK.
//! - `inet_sock_set_state`: flow birth (SYN_SENT in `connect()`,
//!   ESTABLISHED) and death (CLOSE, with a final record through the ring
//!   buffer).
//! - `sock_send_length`, `sock_recv_length` (Linux 6.3+): run in the owning
//!   process's context after each send/receive call, so they attribute the
//!   flow to a pid, comm and cgroup, and refresh its figures.
//! - `tcp_rcv_space_adjust`: only where `sock_recv_length` is missing; it
//!   refreshes a flow's figures after reads (no owner: see [`flow::on_read`]).
//! - `iter/bpf_sk_storage_map` (`observer_poll`) or `iter/tcp`
//!   (`observer_poll_tcp`): not hooks but the poll-time read, which user
//!   space runs at each poll to re-sample the flows that moved since the
//!   last one ([`poll`]).
#![cfg_attr(target_arch = "bpf", no_std)]
#![cfg_attr(target_arch = "bpf", no_main)]
#![cfg_attr(target_arch = "bpf", feature(asm_experimental_arch))]

#[cfg(target_arch = "bpf")]
mod arrivals;
#[cfg(target_arch = "bpf")]
mod candidates;
#[cfg(target_arch = "bpf")]
mod close;
#[cfg(target_arch = "bpf")]
mod delivery;
#[cfg(target_arch = "bpf")]
mod entry;
#[cfg(target_arch = "bpf")]
mod flow;
#[cfg(target_arch = "bpf")]
mod gate;
#[cfg(target_arch = "bpf")]
mod journal;
#[cfg(target_arch = "bpf")]
mod maps;
#[cfg(target_arch = "bpf")]
mod poll;
#[cfg(target_arch = "bpf")]
mod read;
#[cfg(target_arch = "bpf")]
mod receive;
#[cfg(target_arch = "bpf")]
mod refresh;
#[cfg(target_arch = "bpf")]
mod sock;

#[cfg(target_arch = "bpf")]
mod programs {
    use aya_ebpf::{
        helpers::{bpf_jiffies64, bpf_ktime_get_ns},
        macros::{btf_tracepoint, raw_tracepoint},
        programs::{BtfTracePointContext, RawTracePointContext},
    };

    use crate::flow;

    /// `TP_PROTO(struct sock *sk, const struct sk_buff *skb)` (include/trace/events/tcp.h)
    #[btf_tracepoint(function = "tcp_probe")]
    pub fn observer_tcp_probe(ctx: BtfTracePointContext) -> i32 {
        let sk: *const u8 = ctx.arg(0);
        let skb: *const u8 = ctx.arg(1);
        flow::on_packet(sk, skb);
        0
    }

    /// `TP_PROTO(const struct sock *sk, const int oldstate, const int newstate)`
    /// (include/trace/events/sock.h)
    #[btf_tracepoint(function = "inet_sock_set_state")]
    pub fn observer_set_state(ctx: BtfTracePointContext) -> i32 {
        let sk: *const u8 = ctx.arg(0);
        let old: i32 = ctx.arg(1);
        let new: i32 = ctx.arg(2);
        flow::on_state(sk, old as u8, new as u8);
        0
    }

    /// `TP_PROTO(struct sock *sk, int ret, int flags)` (include/trace/events/sock.h)
    #[btf_tracepoint(function = "sock_send_length")]
    pub fn observer_send_length(ctx: BtfTracePointContext) -> i32 {
        let sk: *const u8 = ctx.arg(0);
        flow::on_owner(sk, false);
        0
    }

    /// `TP_PROTO(struct sock *sk, int ret, int flags)` (include/trace/events/sock.h)
    #[btf_tracepoint(function = "sock_recv_length")]
    pub fn observer_recv_length(ctx: BtfTracePointContext) -> i32 {
        let sk: *const u8 = ctx.arg(0);
        flow::on_owner(sk, true);
        0
    }

    /// `TP_PROTO(struct sock *sk)` (include/trace/events/tcp.h): attached
    /// only where `sock_recv_length` is missing (see [`flow::on_read`]).
    #[btf_tracepoint(function = "tcp_rcv_space_adjust")]
    pub fn observer_rcv_space(ctx: BtfTracePointContext) -> i32 {
        let sk: *const u8 = ctx.arg(0);
        flow::on_read(sk);
        0
    }

    /// `iter/bpf_sk_storage_map` over `ACTIVE`: the poll-time read, run by
    /// user space at the start of each poll (see [`crate::poll`]).
    #[unsafe(no_mangle)]
    #[unsafe(link_section = "iter/bpf_sk_storage_map")]
    pub fn observer_poll(ctx: *mut core::ffi::c_void) -> i32 {
        // SAFETY: the iterator's context.
        unsafe { crate::poll::visit_storage(ctx.cast()) };
        0
    }

    /// `iter/tcp`: the poll-time read where the kernel refuses the storage
    /// iterator, over the TCP sockets of the agent's network namespace
    /// (see [`crate::poll`]).
    #[unsafe(no_mangle)]
    #[unsafe(link_section = "iter/tcp")]
    pub fn observer_poll_tcp(ctx: *mut core::ffi::c_void) -> i32 {
        // SAFETY: the iterator's context.
        unsafe { crate::poll::visit_tcp(ctx.cast()) };
        0
    }

    /// The same hook as `observer_tcp_probe`, doing nothing: the benchmark
    /// attaches it next to the agent to measure what any program on this
    /// hook costs on the machine (never attached by the agent).
    #[btf_tracepoint(function = "tcp_probe")]
    pub fn bench_floor(_ctx: BtfTracePointContext) -> i32 {
        0
    }

    /// A candidate flow-state lookup, the LRU hash by socket cookie, for
    /// the benchmark alone (see [`crate::candidates`]).
    #[btf_tracepoint(function = "tcp_probe")]
    pub fn bench_lru_hash(ctx: BtfTracePointContext) -> i32 {
        crate::candidates::lru_hash(ctx.arg(0));
        0
    }

    /// A candidate flow-state lookup, socket-local storage, for the
    /// benchmark alone (see [`crate::candidates`]).
    #[btf_tracepoint(function = "tcp_probe")]
    pub fn bench_sk_store(ctx: BtfTracePointContext) -> i32 {
        crate::candidates::sk_storage(ctx.arg(0));
        0
    }

    /// The kernel's tick counter and monotonic clock, read together into
    /// the `TICK` map: `bpf_jiffies64()` (kernel/time/jiffies.c
    /// `get_jiffies_64`) and `bpf_ktime_get_ns()`. Never attached: user
    /// space runs it with `BPF_PROG_TEST_RUN` at two tick edges to learn HZ,
    /// the rate the `tcp_sock.chrono_*` figures tick at, where no host file
    /// tells it (a pod).
    #[raw_tracepoint(tracepoint = "sys_enter")]
    pub fn observer_tick(_ctx: RawTracePointContext) -> i32 {
        // SAFETY: helper calls with no arguments.
        let (jiffies, ns) = unsafe { (bpf_jiffies64(), bpf_ktime_get_ns()) };
        for (slot, v) in [
            (observer_common::TICK_JIFFIES, jiffies),
            (observer_common::TICK_NS, ns),
        ] {
            if let Some(p) = crate::maps::TICK.get_ptr_mut(slot) {
                // SAFETY: an array slot the verifier has bounds-checked.
                unsafe { *p = v };
            }
        }
        0
    }

    /// `TP_PROTO(struct sock *sk)` (include/trace/events/tcp.h): a socket
    /// being freed (see [`flow::on_destroy`]).
    #[btf_tracepoint(function = "tcp_destroy_sock")]
    pub fn observer_destroy(ctx: BtfTracePointContext) -> i32 {
        let sk: *const u8 = ctx.arg(0);
        flow::on_destroy(sk);
        0
    }
}

#[cfg(target_arch = "bpf")]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

#[cfg(target_arch = "bpf")]
#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";

#[cfg(not(target_arch = "bpf"))]
fn main() {}
