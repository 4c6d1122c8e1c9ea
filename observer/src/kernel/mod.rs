//! Stage 1 of the pipeline: the kernel side, seen from user space.
//!
//! In: the running kernel (its BTF, its tracepoints, `/proc`). Out: raw
//! [`observer_common::FlowSample`] records (open flows from the flow map,
//! closed ones from the ring buffer), the kernel self-counters and the
//! programs' run statistics. Nothing here interprets a sample; that is
//! [`crate::model`]'s job.
//!
//! - [`preflight`]: can this host run observer at all (privilege, BTF, release);
//! - [`btf`] and [`offsets`]: the kernel's type information, and the
//!   `tcp_sock` member offsets the programs are loaded with;
//! - [`probes`]: load, attach and detach the programs; the one read order
//!   ([`probes::Probes::read`]) every view polls with; [`attach`] the steps
//!   of a load, [`probe_config`] what it is asked for, [`probe_error`] what
//!   can go wrong;
//! - [`flow_map`], [`closed_ring`], [`program_info`]: reading the maps and
//!   the programs' statistics; [`links`]: which programs are still attached;
//! - [`hooks`]: the table of programs and the tracepoints they attach
//!   to, in attach order, with what each one's absence costs;
//! - [`degraded`]: what a load leaves out on this kernel, and how loudly
//!   it is said;
//! - [`pin`] and [`adopt`]: `--pin`, programs and maps that outlive the
//!   agent, adopted by the next one; [`parts`] what a load or an adoption
//!   makes [`probes::Probes`] of;
//! - [`poll_iter`]: the poll-time read, which re-samples the flows that
//!   moved since the last poll; [`walk`] its budget, which pauses it where
//!   it costs more than 1% of the interval;
//! - [`parked`]: closes the kernel kept in the flow map while the ring was
//!   full, and those the LRU took before a poll read them;
//! - [`tick`]: the kernel's HZ, measured with a test-run program;
//! - [`privilege`]: drop every capability once attached;
//! - `env`: the test-only environment overrides, all in one place.

pub mod adopt;
pub mod attach;
pub mod btf;
pub mod closed_ring;
pub mod degraded;
pub mod env;
pub mod flow_map;
pub mod hooks;
pub mod journal;
pub mod links;
pub mod objects;
pub mod offsets;
pub mod parked;
pub mod parts;
pub mod pin;
pub mod poll_iter;
pub mod preflight;
pub mod privilege;
pub mod probe_config;
pub mod probe_error;
pub mod probes;
pub mod program_info;
pub mod tick;
pub mod walk;
