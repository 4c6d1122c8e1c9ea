//! What a load of the kernel programs is asked for: [`ProbeConfig`], the
//! settings fixed at load time, and the [`Variant`]s of the programs a load
//! tries in turn.

use observer_common::{DEFAULT_MAX_FLOWS, DEFAULT_RINGBUF_BYTES};

/// Settings fixed at load time.
#[derive(Clone, Debug)]
pub struct ProbeConfig {
    /// Maximum flows tracked at once (LRU map entries).
    pub max_flows: u32,
    /// Ring-buffer size for closed-flow records (bytes, a power of two
    /// multiple of the page size).
    pub ringbuf_bytes: u32,
    /// Read socket fields with `bpf_probe_read_kernel` even where direct
    /// BTF-checked loads would verify (the fallback path, for tests).
    pub helper_reads: bool,
    /// The eBPF object to load: the agent's ([`crate::kernel::load::objects::OBJECT`])
    /// but in the benchmark ([`crate::kernel::load::objects::BENCH_OBJECT`]).
    pub object: crate::kernel::load::objects::Object,
    /// How much of the per-packet program runs
    /// (`observer_common::packet_stages`): `ALL` but in the benchmark's
    /// cost breakdown, where the flows' figures are then incomplete. Any
    /// other value needs the benchmark's `object`, whose per-packet
    /// program reads it from a global.
    pub packet_stages: u32,
    /// `--pin DIR`: pin the programs and maps there, or adopt the ones an
    /// earlier agent pinned ([`crate::kernel::load::pin`]).
    pub pin: Option<std::path::PathBuf>,
    /// Attach the poll-time read where the kernel allows it (`--poll-read
    /// auto` or `on`; `false` here by default, as the library's tests
    /// expect): its walk costs about 1-1.4 µs per socket per poll (see
    /// [`ProbeConfig::walk_budget`]); `false` loads the programs without
    /// it, as before it existed.
    pub poll_read: bool,
    /// The longest poll-time walk that keeps it running (`--poll-read
    /// auto`: 1% of the poll interval); a longer one pauses it
    /// ([`crate::kernel::read::budgeted_walk`]). `None`: walk at every poll.
    pub walk_budget: Option<std::time::Duration>,
    /// The pause threshold between arriving data segments (ns):
    /// `observer_common::rx_gap_ns(hz)` for the running kernel's HZ. The
    /// default suits HZ 250 and up.
    pub rx_gap_ns: u64,
}

impl Default for ProbeConfig {
    fn default() -> Self {
        ProbeConfig {
            max_flows: DEFAULT_MAX_FLOWS,
            ringbuf_bytes: DEFAULT_RINGBUF_BYTES,
            helper_reads: false,
            object: crate::kernel::load::objects::Object::default(),
            packet_stages: observer_common::packet_stages::ALL,
            rx_gap_ns: observer_common::RX_GAP_NS,
            pin: None,
            poll_read: false,
            walk_budget: None,
        }
    }
}

/// One way the programs can be loaded: with the poll-time read or not,
/// with direct socket reads or helper reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    /// The poll-time read ([`crate::kernel::read::poll_iter`]), which needs Linux 5.11
    /// (socket-local storage in tracing programs).
    pub poll: bool,
    /// Direct BTF-checked loads of socket fields, else
    /// `bpf_probe_read_kernel`; they need a verifier that checks loads
    /// against the kernel's BTF.
    pub direct: bool,
}

/// The variants a load tries, best first. Direct reads come before the
/// poll-time read: with helper reads the send-buffer clock and `notsent`
/// read 0.
pub const VARIANTS: [Variant; 4] = [
    Variant {
        poll: true,
        direct: true,
    },
    Variant {
        poll: false,
        direct: true,
    },
    Variant {
        poll: true,
        direct: false,
    },
    Variant {
        poll: false,
        direct: false,
    },
];
