//! The object the agent ships and loads: the agent's programs
//! ([`observer_ebpf::agent_programs!`], with every stage of the per-packet
//! program) and the tick program. Errors are counted in the per-CPU
//! counter map, never dropped silently.
#![cfg_attr(target_arch = "bpf", no_std)]
#![cfg_attr(target_arch = "bpf", no_main)]

#[cfg(target_arch = "bpf")]
mod programs {
    use aya_ebpf::{
        helpers::{bpf_jiffies64, bpf_ktime_get_ns},
        macros::raw_tracepoint,
        programs::RawTracePointContext,
    };

    observer_ebpf::agent_programs!(observer_common::packet_stages::ALL);

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
            if let Some(p) = observer_ebpf::maps::TICK.get_ptr_mut(slot) {
                // SAFETY: an array slot the verifier has bounds-checked.
                unsafe { *p = v };
            }
        }
        0
    }
}

#[cfg(target_arch = "bpf")]
#[unsafe(link_section = "license")]
#[unsafe(no_mangle)]
static LICENSE: [u8; 4] = *b"GPL\0";

#[cfg(not(target_arch = "bpf"))]
fn main() {}
