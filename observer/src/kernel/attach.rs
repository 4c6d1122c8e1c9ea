//! The steps of a load that do not need the loaded [`super::probes::Probes`]:
//! the running kernel's BTF and offsets, the load-time settings as a pinned
//! set's identity, attaching one program to its tracepoint, and taking a map
//! out of the object.

use aya::{
    Ebpf,
    programs::{BtfTracePoint, ProgramError, tp_btf::BtfTracePointLinkId},
};

use super::{
    btf,
    env::{self, VMLINUX_BTF},
    offsets,
    probe_error::ProbeError,
    probes::ProbeConfig,
};

/// aya's view of the program behind `fd` (found by its id among the
/// loaded programs: aya builds one only from a program it loaded, a pin or
/// the list).
pub(super) fn program_info_of(
    fd: std::os::fd::BorrowedFd<'_>,
) -> Result<aya::programs::ProgramInfo, String> {
    let id = crate::kernel::program_info::read(fd)
        .map_err(|e| e.to_string())?
        .id;
    aya::programs::loaded_programs()
        .filter_map(Result::ok)
        .find(|i| i.id() == id)
        .ok_or_else(|| format!("program {id} not listed"))
}

/// The running kernel's BTF: the offsets observer resolves with its own
/// reader, and aya's view to load the programs against.
pub(super) fn resolve() -> Result<(offsets::Resolved, aya::Btf), ProbeError> {
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
/// offsets and the load-time settings (part of a pinned set's name).
pub(super) fn settings(config: &ProbeConfig, offsets: &observer_common::Offsets) -> String {
    format!(
        "{offsets:?} max_flows={} ringbuf_bytes={} packet_stages={} rx_gap_ns={}",
        config.max_flows, config.ringbuf_bytes, config.packet_stages, config.rx_gap_ns
    )
}

/// The warning for an owner hook (`tp`) that could not be attached (`why`);
/// `lag` when no read hook refreshes figures either.
pub(super) fn missing_hook_note(why: &str, tp: &str, lag: bool) -> String {
    format!(
        "{why}: flows accepted by a listener show no pid or comm{} \
         (tracepoint {tp} arrived in Linux 6.3)",
        if lag {
            ", and idle flows' figures lag their last received segment"
        } else {
            ""
        }
    )
}

pub(super) fn take<T>(ebpf: &mut Ebpf, name: &'static str) -> Result<T, ProbeError>
where
    T: TryFrom<aya::maps::Map, Error = aya::maps::MapError>,
{
    let map = ebpf.take_map(name).ok_or(ProbeError::Map {
        name,
        error: aya::maps::MapError::InvalidName {
            name: name.to_string(),
        },
    })?;
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
