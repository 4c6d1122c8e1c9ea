//! Stage 1 of the pipeline: the kernel side, seen from user space.
//!
//! In: the running kernel (its BTF, its tracepoints, `/proc`). Out: raw
//! [`observer_common::FlowSample`] records (open flows from the flow map,
//! closed ones from the ring buffer), the kernel self-counters and the
//! programs' run statistics. Nothing here interprets a sample; that is
//! [`crate::model`]'s job.
//!
//! Two layers, each importing only from the one below it, and
//! [`probes`] above both:
//!
//! - [`read`]: the maps the programs keep, read each poll: the flow map,
//!   the closed-flow ring, the change journal, the closes parked in the
//!   flow map, and the poll-time walk with its budget;
//! - [`load`]: everything up to attached programs: preflight, BTF and
//!   offsets, the hook table, the steps of a load, `--pin` and adoption,
//!   what a load is asked for and what can go wrong, the kernel's HZ,
//!   the programs' statistics and links, dropping privilege;
//! - [`probes`]: the loaded (or adopted) programs and the one read order
//!   ([`probes::Probes::read`]) every view polls with.

pub mod load;
pub mod probes;
pub mod read;
