//! The benchmark's reference programs in its eBPF object (observer-ebpf
//! src/bin/bench): `bench_floor`, an empty program on the per-packet hook
//! (`tcp_probe`), and `bench_floor_read`, one on the per-read hook
//! (`sock_recv_length`). Attached next to the agent or alone, their run
//! time per hit is what any program on that hook costs on this machine
//! (the tracepoint's dispatch, and the run-time accounting of
//! `kernel.bpf_stats_enabled`): the floors under `observer_tcp_probe`'s
//! and `observer_recv_length`'s. The candidate lookups ([`CANDIDATES`])
//! are attached the same way.

use aya::{Ebpf, EbpfLoader};

use observer::kernel::{
    load::attach::attach_tp, load::objects::BENCH_OBJECT, load::probe_error::ProbeError,
};

/// The attached empty program; dropping it detaches and unloads it.
pub struct Floor {
    _ebpf: Ebpf,
}

/// Name of the empty program, as the kernel lists it.
pub const FLOOR_PROGRAM: &str = "bench_floor";

/// observer's per-segment program (on `tcp_probe`), by its full name.
pub const OBSERVER_PROBE: &str = "observer_tcp_probe";

/// The empty programs on each hook observer's hot path may take: program,
/// tracepoint, and observer's own program there. The kernel lists programs
/// by the first 15 characters of the name (`bench_floor`,
/// `bench_floor_rea`, `observer_recv_l`).
pub const FLOORS: &[(&str, &str, &str)] = &[
    ("bench_floor", "tcp_probe", OBSERVER_PROBE),
    (
        "bench_floor_read",
        "sock_recv_length",
        "observer_recv_length",
    ),
];

/// The first 15 characters of a program's name: what the kernel keeps.
pub fn kept(name: &str) -> String {
    name.chars().take(15).collect()
}

/// The entries of [`FLOORS`] whose hook observer ran a program on, by
/// `programs` (observer's programs' run time by kept name; a program that
/// ran 0 ns did not run). All of them where `programs` is empty: results
/// written before observer's programs were kept.
pub fn hooks_observer_ran(
    programs: &std::collections::BTreeMap<String, f64>,
) -> impl Iterator<Item = &'static (&'static str, &'static str, &'static str)> + '_ {
    FLOORS.iter().filter(move |(_, _, observer)| {
        programs.is_empty() || programs.get(&kept(observer)).is_some_and(|ns| *ns > 0.0)
    })
}

/// The candidate flow-state lookups (observer-ebpf's `candidates`), each a
/// program on `tcp_probe`: name, and what it does.
pub const CANDIDATES: &[(&str, &str)] = &[
    (
        "bench_lru_hash",
        "socket cookie + LRU hash lookup (the agent's way today)",
    ),
    (
        "bench_sk_store",
        "socket-local storage (`bpf_sk_storage_get`)",
    ),
];

impl Floor {
    /// Loads and attaches `bench_floor` to `tcp_probe`.
    ///
    /// # Errors
    /// No kernel BTF, or the load or attach failed.
    pub fn attach() -> Result<Floor, ProbeError> {
        Floor::attach_program(FLOOR_PROGRAM)
    }

    /// Loads the object and attaches only `program` (one of the
    /// benchmark's programs on `tcp_probe`).
    ///
    /// # Errors
    /// No kernel BTF, or the load or attach failed.
    pub fn attach_program(program: &'static str) -> Result<Floor, ProbeError> {
        Floor::attach_programs(&[(program, "tcp_probe")])
    }

    /// Loads the object and attaches each `(program, tracepoint)` of
    /// `programs` (e.g. [`FLOORS`]).
    ///
    /// # Errors
    /// No kernel BTF, or a load or attach failed.
    pub fn attach_programs(programs: &[(&'static str, &'static str)]) -> Result<Floor, ProbeError> {
        let btf = aya::Btf::from_sys_fs().map_err(|e| ProbeError::BadBtf {
            path: observer::kernel::load::env::VMLINUX_BTF.to_string(),
            error: e.to_string(),
        })?;
        let mut ebpf = EbpfLoader::new()
            .btf(Some(&btf))
            .load(BENCH_OBJECT)
            .map_err(ProbeError::Load)?;
        for (program, tp) in programs {
            attach_tp(&mut ebpf, program, tp, &btf)?;
        }
        Ok(Floor { _ebpf: ebpf })
    }
}
