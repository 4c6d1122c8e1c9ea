//! Loading the kernel programs, up to attached programs and open maps.
//! Imports from [`super::read`] (what an adopted set's maps are read
//! with), never from [`super::probes`].
//!
//! - [`preflight`]: can this host run observer at all (privilege, BTF,
//!   release); [`privilege`]: drop every capability once attached;
//! - [`btf`] and [`offsets`]: the kernel's type information, and the
//!   `tcp_sock` member offsets the programs are loaded with;
//! - [`objects`]: the compiled eBPF objects; [`hooks`]: the table of
//!   programs and the tracepoints they attach to, in attach order, with
//!   what each one's absence costs; [`degraded`]: what a load leaves out
//!   on this kernel, and how loudly it is said;
//! - [`attach`]: the steps of a load; [`probe_config`]: what it is asked
//!   for; [`probe_error`]: what can go wrong;
//! - [`pin`] and [`adopt`]: `--pin`, programs and maps that outlive the
//!   agent, adopted by the next one; [`layout`]: the flow layout a pinned
//!   set carries, checked before either; [`probe_set`]: what a load or an
//!   adoption is made of;
//! - [`tick`]: the kernel's HZ, measured with a test-run program;
//! - [`program_info`]: the programs' run statistics; [`links`]: which
//!   programs are still attached;
//! - `env`: the test-only environment overrides, all in one place.

pub mod adopt;
pub mod attach;
pub mod btf;
pub mod degraded;
pub mod env;
pub mod hooks;
pub mod layout;
pub mod links;
pub mod objects;
pub mod offsets;
pub mod pin;
pub mod preflight;
pub mod privilege;
pub mod probe_config;
pub mod probe_error;
pub mod probe_set;
pub mod program_info;
pub mod tick;
