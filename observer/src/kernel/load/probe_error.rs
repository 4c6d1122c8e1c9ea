//! What can go wrong loading, attaching or reading the kernel programs, as
//! one line each, with the hint an operator acts on.

use aya::programs::ProgramError;

use crate::kernel::load::{btf, pin};

/// Errors loading, attaching or reading the kernel programs.
///
/// Each message carries its cause in its own text (no `source()`), so the
/// binary's one-line error, which joins the source chain, says it once.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The kernel BTF file could not be read.
    #[error("{0}")]
    Btf(btf::BtfError),
    /// The kernel BTF is not BTF that observer (or aya) can parse.
    #[error(
        "{path} is not BTF observer can read ({error}): observer needs the running kernel's own \
         BTF (CONFIG_DEBUG_INFO_BTF=y); if the kernel is newer than this observer, upgrade observer"
    )]
    BadBtf {
        /// The file.
        path: String,
        /// What was wrong with it.
        error: String,
    },
    /// The kernel BTF lacks a struct or member the programs must read.
    #[error(
        "{0}: observer cannot follow TCP sockets on this kernel (it supports Linux 5.12 or later); \
         upgrade the kernel if it is older, else upgrade observer"
    )]
    Layout(btf::BtfError),
    /// The eBPF object did not load (verifier, map creation).
    #[error("loading the eBPF programs failed: {}{}", chain(.0), eperm_hint(&chain(.0)))]
    Load(aya::EbpfError),
    /// A program is missing from the object (a build problem).
    #[error("eBPF object has no program {0}")]
    NoProgram(&'static str),
    /// The kernel has no BTF tracepoint of that name.
    #[error(
        "this kernel has no BTF tracepoint {hook} (no btf_trace_{hook} in its BTF): observer needs \
         Linux 5.12 or later built with CONFIG_DEBUG_INFO_BTF=y; upgrade the kernel"
    )]
    MissingHook {
        /// The tracepoint.
        hook: &'static str,
    },
    /// A required hook could not be loaded or attached.
    #[error("cannot attach to {hook}: {error}")]
    Attach {
        /// The kernel function or tracepoint.
        hook: &'static str,
        /// What aya said.
        error: ProgramError,
    },
    /// The poll-time read's iterator could not be attached.
    #[error("cannot attach the poll-time read's iterator: {0}")]
    PollIter(std::io::Error),
    /// `--pin` could not be used.
    #[error("{0}")]
    Pin(pin::PinError),
    /// A map is missing or of the wrong type.
    #[error("eBPF map {name}: {error}")]
    Map {
        /// The map's name.
        name: &'static str,
        /// What aya said.
        error: aya::maps::MapError,
    },
}

/// `e` and its sources, joined with ": ": aya's map and program errors keep
/// the errno (what an operator acts on) in their source.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        next = s.source();
    }
    text
}

/// What to check when the kernel refused with EPERM: with CAP_BPF held
/// (preflight checked it), that is a seccomp profile or an LSM denying
/// bpf(2), most often a container runtime's default seccomp profile that
/// allows bpf(2) only with CAP_SYS_ADMIN.
pub fn eperm_hint(text: &str) -> &'static str {
    if text.contains("Operation not permitted") {
        " (EPERM although observer holds CAP_BPF: a seccomp profile or an LSM denies bpf(2); \
         in a container, use a seccomp profile that allows bpf(2) to CAP_BPF, as docs/deploy.md's \
         Kubernetes section shows)"
    } else {
        ""
    }
}
