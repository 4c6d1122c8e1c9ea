//! The steps of a load that do not need the loaded [`crate::kernel::probes::Probes`]:
//! the running kernel's BTF and offsets, the load-time settings as a pinned
//! set's identity, attaching one program to its tracepoint, and taking a map
//! out of the object.

use aya::{
    Ebpf,
    programs::{BtfTracePoint, ProgramError, tp_btf::BtfTracePointLinkId},
};

use crate::kernel::{
    load::btf,
    load::degraded::{Absence, Degraded},
    load::env::{self, VMLINUX_BTF},
    load::hooks::{self, IterHook},
    load::offsets,
    load::probe_config::{ProbeConfig, Variant},
    load::probe_error::ProbeError,
    read::poll_iter::PollIter,
};

/// aya's view of the program behind `fd` (found by its id among the
/// loaded programs: aya builds one only from a program it loaded, a pin or
/// the list).
pub(in crate::kernel) fn program_info_of(
    fd: std::os::fd::BorrowedFd<'_>,
) -> Result<aya::programs::ProgramInfo, String> {
    let id = crate::kernel::load::program_info::read(fd)
        .map_err(|e| e.to_string())?
        .id;
    aya::programs::loaded_programs()
        .filter_map(Result::ok)
        .find(|i| i.id() == id)
        .ok_or_else(|| format!("program {id} not listed"))
}

/// The running kernel's BTF: the offsets observer resolves with its own
/// reader, and aya's view to load the programs against.
pub(in crate::kernel) fn resolve() -> Result<(offsets::Resolved, aya::Btf), ProbeError> {
    let path = env::btf_path();
    let bad = |error: String| ProbeError::BadBtf {
        path: path.clone(),
        error,
    };
    let ours = match btf::Btf::from_file(&path) {
        Ok(b) => b,
        Err(e @ btf::BtfError::Io { .. }) => return Err(ProbeError::Btf(e)),
        Err(e) => return Err(bad(e.to_string())),
    };
    let resolved = offsets::resolve(&ours).map_err(ProbeError::Layout)?;
    let kernel_btf = if path == VMLINUX_BTF {
        aya::Btf::from_sys_fs()
    } else {
        aya::Btf::parse_file(&path, aya::Endianness::default())
    }
    .map_err(|e| bad(e.to_string()))?;
    Ok((resolved, kernel_btf))
}

/// What the programs are loaded with besides the object, as text: the
/// offsets, the load-time settings and whether the poll-time read is on
/// (part of a pinned set's name).
pub(in crate::kernel) fn settings(
    config: &ProbeConfig,
    offsets: &observer_common::Offsets,
    poll: bool,
) -> String {
    format!(
        "{offsets:?} max_flows={} ringbuf_bytes={} packet_stages={} rx_gap_ns={} poll_iter={poll}",
        config.max_flows, config.ringbuf_bytes, config.packet_stages, config.rx_gap_ns
    )
}

/// The poll-time read as attached: its iterator, which of [`hooks::POLL_ITERS`] it
/// is, and what it leaves out (a line for the degraded list).
pub struct PollAttached {
    /// The iterator.
    pub iter: PollIter,
    /// Which of the poll-time read's iterators it is.
    pub hook: &'static IterHook,
    /// What it leaves out: [`Degraded::PollOneNetns`] where it reaches
    /// only the agent's namespace.
    pub partial: Option<Degraded>,
}

/// Loads and attaches the poll-time read ([`crate::kernel::read::poll_iter`]): the
/// iterator over the socket storage the hooks mark flows in, which reaches
/// every network namespace; where the kernel refuses it, the iterator over
/// the TCP sockets of the agent's own namespace (the first of
/// [`hooks::POLL_ITERS`] the kernel takes). Tells the programs which flows
/// it reaches (`POLL_SCOPE`, [`IterHook::reach`]).
///
/// # Errors
/// [`ProbeError::NoProgram`] or [`ProbeError::Map`] for a build without
/// them, [`ProbeError::Attach`] when the kernel refuses both programs
/// (before Linux 5.11, socket-local storage in tracing programs) and
/// [`ProbeError::PollIter`] when it refuses the link (no iterators, before
/// 5.9) or the scope cannot be written.
pub fn attach_poll(ebpf: &mut Ebpf, btf: &aya::Btf) -> Result<PollAttached, ProbeError> {
    use observer_common::poll_scope;
    // In the table's order; the first refusal says why a later one
    // reaches less.
    let mut refused: Vec<ProbeError> = Vec::new();
    for hook in hooks::POLL_ITERS {
        let netns = if hook.reach == poll_scope::ONE_NETNS {
            crate::kernel::read::poll_iter::own_netns().map_err(ProbeError::PollIter)?
        } else {
            0
        };
        let iter = match poll_iter(ebpf, btf, hook) {
            Ok(iter) => iter,
            Err(e) => {
                refused.push(e);
                continue;
            }
        };
        let name = observer_common::MAP_POLL_SCOPE;
        let map = ebpf.map_mut(name).ok_or_else(|| missing_map(name))?;
        let mut slots: aya::maps::Array<&mut aya::maps::MapData, u64> =
            aya::maps::Array::try_from(map).map_err(|error| ProbeError::Map { name, error })?;
        for (i, v) in [hook.reach, netns].into_iter().enumerate() {
            slots
                .set(i as u32, v, 0)
                .map_err(|error| ProbeError::Map { name, error })?;
        }
        let partial = refused
            .first()
            .filter(|_| hook.reach == poll_scope::ONE_NETNS)
            .map(|e| Degraded::PollOneNetns { refused: brief(e) });
        return Ok(PollAttached {
            iter,
            hook,
            partial,
        });
    }
    Err(refused
        .pop()
        .unwrap_or(ProbeError::NoProgram(hooks::POLL_STORAGE.program)))
}

/// Loads and attaches the owner walk ([`crate::kernel::read::owners`]).
///
/// # Errors
/// [`ProbeError::NoProgram`] for a build without it,
/// [`ProbeError::Attach`] when the kernel refuses the program (before
/// Linux 5.11, `bpf_sock_from_file`) and [`ProbeError::PollIter`] when it
/// refuses the link.
pub fn attach_owners(ebpf: &mut Ebpf, btf: &aya::Btf) -> Result<PollIter, ProbeError> {
    poll_iter(ebpf, btf, &hooks::OWNERS)
}

/// A load variant the kernel refused, and why.
pub(in crate::kernel) struct Refusal {
    /// The variant tried.
    pub variant: Variant,
    /// What the load or attach said.
    pub error: ProbeError,
}

/// The warning lines for the load variants the kernel refused (in the
/// order tried), once a variant with the poll-time read `poll` loaded: no
/// poll-time read where one was asked for and refused, and helper reads
/// where direct ones were refused.
pub(in crate::kernel) fn refusal_notes(refused: &[Refusal], poll: bool) -> Vec<Degraded> {
    let mut notes = Vec::new();
    if let Some(r) = refused.iter().find(|r| r.variant.poll).filter(|_| !poll) {
        notes.push(Degraded::NoPollRead {
            refused: brief(&r.error),
        });
    }
    if let Some(r) = refused
        .iter()
        .find(|r| r.variant.poll == poll && r.variant.direct)
    {
        notes.push(Degraded::HelperReads {
            refused: brief(&r.error),
        });
    }
    notes
}

/// `e` on one line: without the verifier's log, which aya's load errors
/// carry after the errno (a warning is one line).
pub fn brief(e: &ProbeError) -> String {
    let text = e.to_string();
    let cut = text
        .find(". Verifier output")
        .or_else(|| text.find('\n'))
        .unwrap_or(text.len());
    text[..cut].trim_end().to_string()
}

/// Loads the iterator program of `iter` and attaches it, with its map
/// ([`IterHook::map`]) where it walks one.
fn poll_iter(
    ebpf: &mut Ebpf,
    btf: &aya::Btf,
    iter: &'static IterHook,
) -> Result<PollIter, ProbeError> {
    use std::os::fd::AsFd as _;
    let (hook, prog) = (iter.name, iter.program);
    // Test-only: act as if the kernel refused it (see [`env`]).
    if env::hook_hidden(hook) {
        return Err(ProbeError::PollIter(std::io::Error::other(format!(
            "{hook} hidden by OBSERVER_MISSING_HOOK"
        ))));
    }
    let target = iter.target();
    let map_fd = if let Some(name) = iter.map {
        let map = ebpf.map(name).ok_or_else(|| missing_map(name))?;
        let aya::maps::Map::SkStorage(data) = map else {
            return Err(ProbeError::PollIter(std::io::Error::other(format!(
                "map {name} is not socket storage"
            ))));
        };
        Some(
            data.fd()
                .as_fd()
                .try_clone_to_owned()
                .map_err(ProbeError::PollIter)?,
        )
    } else {
        None
    };
    let p: &mut aya::programs::Iter = ebpf
        .program_mut(prog)
        .ok_or(ProbeError::NoProgram(prog))?
        .try_into()
        .map_err(|error| ProbeError::Attach { hook, error })?;
    p.load(target, btf)
        .map_err(|error| ProbeError::Attach { hook, error })?;
    let prog_fd = p.fd().map_err(|error| ProbeError::Attach { hook, error })?;
    PollIter::attach(
        prog_fd.as_fd(),
        map_fd.as_ref().map(std::os::fd::AsFd::as_fd),
    )
    .map_err(ProbeError::PollIter)
}

/// The error for a map the object lacks (a build problem).
pub(in crate::kernel) fn missing_map(name: &'static str) -> ProbeError {
    ProbeError::Map {
        name,
        error: aya::maps::MapError::InvalidName {
            name: name.to_string(),
        },
    }
}

pub(in crate::kernel) fn take<T>(ebpf: &mut Ebpf, name: &'static str) -> Result<T, ProbeError>
where
    T: TryFrom<aya::maps::Map, Error = aya::maps::MapError>,
{
    let map = ebpf.take_map(name).ok_or_else(|| missing_map(name))?;
    T::try_from(map).map_err(|error| ProbeError::Map { name, error })
}

/// Loads program `prog` of `ebpf` against `btf` and attaches it to the
/// BTF tracepoint `tp` (a `btf_trace_<tp>` type must exist).
///
/// # Errors
/// [`ProbeError::NoProgram`] when the object lacks `prog`,
/// [`ProbeError::MissingHook`] when the kernel lacks `tp`, and
/// [`ProbeError::Attach`] for any other load or attach failure.
pub fn attach_tp(
    ebpf: &mut Ebpf,
    prog: &'static str,
    tp: &'static str,
    btf: &aya::Btf,
) -> Result<BtfTracePointLinkId, ProbeError> {
    let p: &mut BtfTracePoint = ebpf
        .program_mut(prog)
        .ok_or(ProbeError::NoProgram(prog))?
        .try_into()
        .map_err(|error| ProbeError::Attach { hook: tp, error })?;
    // Test-only: act as if the kernel lacked this tracepoint (see [`env`]).
    let absent = env::hook_hidden(tp);
    let name = if absent {
        format!("{tp}_absent_for_test")
    } else {
        tp.to_string()
    };
    match p.load(&name, btf) {
        Err(ProgramError::Btf(aya::BtfError::UnknownBtfTypeName { .. })) => {
            return Err(ProbeError::MissingHook { hook: tp });
        }
        Err(error) => return Err(ProbeError::Attach { hook: tp, error }),
        Ok(()) => {}
    }
    p.attach()
        .map_err(|error| ProbeError::Attach { hook: tp, error })
}

/// Attaches `hook` (a program of [`hooks::ATTACH_ORDER`]), or where it
/// cannot be, its fallback, adding the link to `links` and what is lost
/// to `degraded`.
///
/// # Errors
/// Why a [`hooks::Need::Required`] hook could not be attached.
pub(in crate::kernel) fn attach_hook(
    ebpf: &mut Ebpf,
    hook: &'static hooks::Hook,
    btf: &aya::Btf,
    links: &mut Vec<hooks::AttachedHook>,
    degraded: &mut Vec<Degraded>,
) -> Result<(), ProbeError> {
    let e = match attach_tp(ebpf, hook.program, hook.tracepoint, btf) {
        Ok(link) => {
            links.push(hooks::AttachedHook { hook, link });
            return Ok(());
        }
        Err(e) if hook.need == hooks::Need::Required => return Err(e),
        Err(e) => e,
    };
    let absence = match e {
        ProbeError::MissingHook { .. } => Absence::NoTracepoint,
        e => Absence::Refused(e.to_string()),
    };
    let covered = hook.fallback.and_then(|f| {
        attach_tp(ebpf, f.program, f.tracepoint, btf)
            .ok()
            .map(|link| links.push(hooks::AttachedHook { hook: f, link }))
    });
    degraded.extend(Degraded::hook_missing(hook, absence, covered.is_some()));
    Ok(())
}
