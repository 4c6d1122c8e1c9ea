//! observer's kernel code, shared by its two eBPF binaries: `observer`
//! (src/main.rs), the object the agent ships and loads, and
//! `observer-bench` (src/bin/bench), the benchmark's object, which adds its
//! reference and candidate programs and a per-packet program that can stop
//! after any stage. Both define the agent's programs with
//! [`agent_programs!`], so the two objects run the same code.
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
//! - `sock_recv_length` (Linux 6.3+), attached only where the poll-time
//!   read and the owner walk do not both run: runs in the owning process's
//!   context after each receive call, so it attributes an accepted flow to
//!   a pid, comm and cgroup (a connecting one has them from `connect()`),
//!   and refreshes its figures when a read drains the socket. Without it,
//!   the per-packet program and the walk see what the reader did from the
//!   socket (`packet_slot::reader_moved`, `receive::integrate_reader`).
//!   Sends have no hook: a sender is sampled as its ACKs arrive.
//! - `tcp_rcv_space_adjust`: only where `sock_recv_length` is missing; it
//!   refreshes a flow's figures after reads (no owner: see [`flow::on_read`]).
//! - `iter/task_file` (`observer_owners`): not a hook but the owner
//!   walk, which user space runs at a poll when flows without an owner
//!   appeared ([`owner`]).
//! - `iter/bpf_sk_storage_map` (`observer_poll`) or `iter/tcp`
//!   (`observer_poll_tcp`): not hooks but the poll-time read, which user
//!   space runs at each poll to re-sample the flows that moved since the
//!   last one ([`poll`]).
#![cfg_attr(target_arch = "bpf", no_std)]
#![cfg_attr(target_arch = "bpf", feature(asm_experimental_arch))]

#[cfg(target_arch = "bpf")]
mod arrivals;
#[cfg(target_arch = "bpf")]
mod close;
#[cfg(target_arch = "bpf")]
mod delivery;
#[cfg(target_arch = "bpf")]
mod entry;
#[cfg(target_arch = "bpf")]
pub mod flow;
#[cfg(target_arch = "bpf")]
mod gate;
#[cfg(target_arch = "bpf")]
mod journal;
#[cfg(target_arch = "bpf")]
pub mod maps;
#[cfg(target_arch = "bpf")]
pub mod owner;
#[cfg(target_arch = "bpf")]
mod packet_slot;
#[cfg(target_arch = "bpf")]
pub mod poll;
#[cfg(target_arch = "bpf")]
mod read;
#[cfg(target_arch = "bpf")]
mod receive;
#[cfg(target_arch = "bpf")]
mod refresh;
#[cfg(target_arch = "bpf")]
mod segment;
#[cfg(target_arch = "bpf")]
mod sock;

/// Both objects' panic handler: a program cannot unwind, and the verifier
/// rejects one that could reach this loop.
#[cfg(target_arch = "bpf")]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo) -> ! {
    loop {}
}

/// Defines the agent's programs (every hook of user space's hook table,
/// observer/src/kernel/load/hooks.rs, and the two poll-time walks) in the
/// binary that invokes it. `$stages` is how much of the per-packet program
/// runs ([`flow::on_packet`]): `observer_common::packet_stages::ALL` in
/// the shipped object, where the checks compile away; a load-time global
/// in the benchmark's.
#[macro_export]
macro_rules! agent_programs {
    ($stages:expr) => {
        /// `TP_PROTO(struct sock *sk, const struct sk_buff *skb)`
        /// (include/trace/events/tcp.h)
        #[::aya_ebpf::macros::btf_tracepoint(function = "tcp_probe")]
        pub fn observer_tcp_probe(ctx: ::aya_ebpf::programs::BtfTracePointContext) -> i32 {
            let sk: *const u8 = ctx.arg(0);
            let skb: *const u8 = ctx.arg(1);
            $crate::flow::on_packet(sk, skb, $stages);
            0
        }

        /// `TP_PROTO(const struct sock *sk, const int oldstate, const int
        /// newstate)` (include/trace/events/sock.h)
        #[::aya_ebpf::macros::btf_tracepoint(function = "inet_sock_set_state")]
        pub fn observer_set_state(ctx: ::aya_ebpf::programs::BtfTracePointContext) -> i32 {
            let sk: *const u8 = ctx.arg(0);
            let old: i32 = ctx.arg(1);
            let new: i32 = ctx.arg(2);
            $crate::flow::on_state(sk, old as u8, new as u8);
            0
        }

        /// `TP_PROTO(struct sock *sk, int ret, int flags)`
        /// (include/trace/events/sock.h)
        #[::aya_ebpf::macros::btf_tracepoint(function = "sock_recv_length")]
        pub fn observer_recv_length(ctx: ::aya_ebpf::programs::BtfTracePointContext) -> i32 {
            let sk: *const u8 = ctx.arg(0);
            $crate::flow::on_recv(sk);
            0
        }

        /// `TP_PROTO(struct sock *sk)` (include/trace/events/tcp.h):
        /// attached only where `sock_recv_length` is missing (see
        /// `flow::on_read`).
        #[::aya_ebpf::macros::btf_tracepoint(function = "tcp_rcv_space_adjust")]
        pub fn observer_rcv_space(ctx: ::aya_ebpf::programs::BtfTracePointContext) -> i32 {
            let sk: *const u8 = ctx.arg(0);
            $crate::flow::on_read(sk);
            0
        }

        /// `TP_PROTO(const struct sock *sk, const struct sk_buff *skb)`
        /// (include/trace/events/tcp.h; later kernels add arguments after
        /// these): a segment sent again (see `flow::on_retransmit`).
        #[::aya_ebpf::macros::btf_tracepoint(function = "tcp_retransmit_skb")]
        pub fn observer_retransmit(ctx: ::aya_ebpf::programs::BtfTracePointContext) -> i32 {
            let sk: *const u8 = ctx.arg(0);
            $crate::flow::on_retransmit(sk);
            0
        }

        /// `TP_PROTO(struct sock *sk)` (include/trace/events/tcp.h): a
        /// socket being freed (see `flow::on_destroy`).
        #[::aya_ebpf::macros::btf_tracepoint(function = "tcp_destroy_sock")]
        pub fn observer_destroy(ctx: ::aya_ebpf::programs::BtfTracePointContext) -> i32 {
            let sk: *const u8 = ctx.arg(0);
            $crate::flow::on_destroy(sk);
            0
        }

        /// `iter/bpf_sk_storage_map` over `ACTIVE`: the poll-time read,
        /// run by user space at the start of each poll (see `poll`).
        #[unsafe(no_mangle)]
        #[unsafe(link_section = "iter/bpf_sk_storage_map")]
        pub fn observer_poll(ctx: *mut core::ffi::c_void) -> i32 {
            // SAFETY: the iterator's context.
            unsafe { $crate::poll::visit_storage(ctx.cast()) };
            0
        }

        /// `iter/task_file`: the owner walk, run by user space at a poll
        /// when flows without an owner appeared (see `owner`).
        #[unsafe(no_mangle)]
        #[unsafe(link_section = "iter/task_file")]
        pub fn observer_owners(ctx: *mut core::ffi::c_void) -> i32 {
            // SAFETY: the iterator's context.
            unsafe { $crate::owner::visit(ctx.cast()) };
            0
        }

        /// `iter/tcp`: the poll-time read where the kernel refuses the
        /// storage iterator, over the TCP sockets of the agent's network
        /// namespace (see `poll`).
        #[unsafe(no_mangle)]
        #[unsafe(link_section = "iter/tcp")]
        pub fn observer_poll_tcp(ctx: *mut core::ffi::c_void) -> i32 {
            // SAFETY: the iterator's context.
            unsafe { $crate::poll::visit_tcp(ctx.cast()) };
            0
        }
    };
}
