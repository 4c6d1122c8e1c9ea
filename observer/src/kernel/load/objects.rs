//! The compiled eBPF objects, built by `build.rs` with aya-build from
//! observer-ebpf: the agent's, and the benchmark's, which only the
//! benchmark refers to (so a binary that does not, such as `observer`,
//! does not carry it).

/// The agent's object (observer-ebpf src/main.rs): the programs of the
/// hook table ([`crate::kernel::load::hooks`]), the poll-time walks and the tick program.
pub static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/observer"));

/// The benchmark's object (observer-ebpf src/bin/bench): the agent's
/// programs with a per-packet program that stops after the stage the
/// `PACKET_STAGES` global names, an empty program on `tcp_probe` and the
/// candidate flow-state lookups.
pub static BENCH_OBJECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/observer-bench"));

/// Which object a load reads: [`OBJECT`] but in the benchmark.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Object(pub &'static [u8]);

impl Default for Object {
    fn default() -> Self {
        Object(OBJECT)
    }
}

impl std::fmt::Debug for Object {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let which = if std::ptr::eq(self.0, OBJECT) {
            "agent"
        } else {
            "other"
        };
        write!(f, "Object({which}, {} bytes)", self.0.len())
    }
}
