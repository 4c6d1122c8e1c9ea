//! Checks, before anything is loaded, that this host can run observer, so a
//! missing privilege or kernel feature is one clear line, not a verifier dump.
//! The test-only overrides each check reads live in [`crate::kernel::load::env`].

use std::path::Path;

use crate::kernel::load::{
    btf::Btf,
    env::{btf_path, kernel_release},
};

/// Capability numbers from include/uapi/linux/capability.h.
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// Oldest kernel observer runs on: 5.12, the first whose tracing
/// programs may call `bpf_get_socket_cookie` on a `struct sock`
/// ([`KEY_HELPER`]), which every hook keys its flow on. What else the
/// programs need is older: BTF tracepoints (5.5), ring buffers (5.8),
/// `bpf_skc_to_tcp_sock` (5.9), and for the optional iterators socket
/// storage in tracing programs and `bpf_sock_from_file` (5.11).
pub const MIN_KERNEL: (u32, u32) = (5, 12);

/// The helper that sets [`MIN_KERNEL`]: the kernel's implementation of
/// `bpf_get_socket_cookie` for tracing programs (Linux commit c5dbb89fc2ac,
/// "bpf: Expose bpf_get_socket_cookie to tracing programs", 5.12). Its
/// function is in the kernel's BTF from that release on (5.10's lists
/// only the socket-buffer and socket-address variants).
pub const KEY_HELPER: &str = "bpf_get_socket_ptr_cookie";

/// What stops observer from running here, with how to fix it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PreflightError {
    /// Not root and without CAP_BPF + CAP_PERFMON.
    #[error(
        "observer needs root, or the capabilities CAP_BPF and CAP_PERFMON, to load eBPF programs: \
         run it with sudo"
    )]
    Privilege,
    /// The kernel publishes no BTF (at this path).
    #[error(
        "{0} is missing: observer needs a kernel built with CONFIG_DEBUG_INFO_BTF=y \
         (most distributions since 2021); install such a kernel"
    )]
    NoBtf(String),
    /// A release older than [`MIN_KERNEL`] that publishes no BTF either.
    #[error(
        "kernel {0} is too old: observer needs Linux 5.12 or later built with \
         CONFIG_DEBUG_INFO_BTF=y; upgrade the kernel"
    )]
    OldKernel(String),
    /// A release older than [`MIN_KERNEL`] whose BTF lacks [`KEY_HELPER`].
    #[error(
        "kernel {0} is too old: it has no {KEY_HELPER} (a socket's cookie in tracing programs, \
         which observer keys every flow on; Linux 5.12); observer needs Linux 5.12 or later; \
         upgrade the kernel"
    )]
    NoHelper(String),
    /// A release that does not read as a version, whose BTF lacks
    /// [`KEY_HELPER`].
    #[error(
        "the kernel release '{0}' does not read as a version, and this kernel has no \
         {KEY_HELPER} (a socket's cookie in tracing programs, which observer keys every flow on; \
         Linux 5.12): observer needs Linux 5.12 or later; upgrade the kernel"
    )]
    UnreadableRelease(String),
}

/// Effective capability bits from `/proc/self/status` (`CapEff:` line).
pub fn effective_caps(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
}

/// Whether `caps` allow loading tracing programs.
pub fn caps_suffice(caps: u64) -> bool {
    let has = |c: u32| caps & (1u64 << c) != 0;
    has(CAP_SYS_ADMIN) || (has(CAP_BPF) && has(CAP_PERFMON))
}

/// Parses `major.minor` from a kernel release string (`6.18.44-fc`).
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// Runs every check; the first failure is returned.
///
/// # Errors
/// [`PreflightError`] saying what is missing and how to fix it.
pub fn check() -> Result<(), PreflightError> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if !effective_caps(&status).is_some_and(caps_suffice) {
        return Err(PreflightError::Privilege);
    }
    let release = kernel_release();
    let btf = btf_path();
    let exists = Path::new(&btf).exists();
    // Only a release older than the minimum pays for reading the BTF.
    let helper = || {
        exists
            .then(|| Btf::from_file(&btf).ok())
            .flatten()
            .map(|b| b.has_func(KEY_HELPER))
    };
    judge(&release, &btf, exists, helper)?;
    raise_memlock();
    Ok(())
}

/// The kernel checks, on what they read: `release`, whether its BTF (at
/// `btf`) exists, and `helper`, which reads that BTF and says whether it
/// lists [`KEY_HELPER`] (None where it cannot tell: unreadable or
/// malformed, which the load then reports).
///
/// A release from [`MIN_KERNEL`] on is taken at its word (a build whose BTF
/// leaves the helper's function out still has the helper; the verifier is
/// the last word). An older or unparsable one is refused only where its
/// BTF lacks the helper: a vendor kernel that backported it (as RHEL's
/// do) runs.
fn judge(
    release: &str,
    btf: &str,
    btf_exists: bool,
    helper: impl FnOnce() -> Option<bool>,
) -> Result<(), PreflightError> {
    let version = kernel_version(release);
    // `old` counts a release that cannot be read; `known_old` does not.
    let old = version.is_none_or(|v| v < MIN_KERNEL);
    let known_old = version.is_some_and(|v| v < MIN_KERNEL);
    if !btf_exists {
        return Err(if known_old {
            PreflightError::OldKernel(release.to_string())
        } else {
            PreflightError::NoBtf(btf.to_string())
        });
    }
    if old && helper() == Some(false) {
        return Err(if known_old {
            PreflightError::NoHelper(release.to_string())
        } else {
            PreflightError::UnreadableRelease(release.to_string())
        });
    }
    Ok(())
}

/// Kernels before 5.11 charge BPF maps to RLIMIT_MEMLOCK; lift it. Later
/// kernels ignore it, so a failure here is not fatal.
fn raise_memlock() {
    let lim = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: setrlimit reads the struct we own.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &lim) };
    if rc != 0 {
        log::debug!(
            "could not raise RLIMIT_MEMLOCK: {}",
            std::io::Error::last_os_error()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::load::env::VMLINUX_BTF;

    #[test]
    fn capabilities() {
        assert_eq!(
            effective_caps("Name:\tx\nCapEff:\t000001ffffffffff\n"),
            Some(0x1ff_ffff_ffff)
        );
        assert!(caps_suffice(0x1ff_ffff_ffff));
        assert!(caps_suffice(1 << CAP_SYS_ADMIN));
        assert!(caps_suffice((1 << CAP_BPF) | (1 << CAP_PERFMON)));
        assert!(!caps_suffice(1 << CAP_BPF));
        assert!(!caps_suffice(0));
        assert_eq!(effective_caps("CapEff:\tzz\n"), None);
    }

    #[test]
    fn versions() {
        assert_eq!(kernel_version("6.18.44-fc-v857"), Some((6, 18)));
        assert_eq!(kernel_version("5.4.0"), Some((5, 4)));
        assert!(kernel_version("5.11.22").is_some_and(|v| v < MIN_KERNEL));
        assert!(kernel_version("5.12.0").is_some_and(|v| v >= MIN_KERNEL));
        assert!(kernel_version("6.1.0-50-cloud-amd64").is_some_and(|v| v >= MIN_KERNEL));
        assert_eq!(kernel_version("garbage"), None);
    }

    /// `judge` with the BTF at [`VMLINUX_BTF`], said to exist or not and to
    /// list the helper or not (None: unreadable); panics if a release from
    /// the minimum on had its BTF read.
    fn judged(release: &str, exists: bool, helper: Option<bool>) -> Result<(), PreflightError> {
        let new = kernel_version(release).is_some_and(|v| v >= MIN_KERNEL);
        judge(release, VMLINUX_BTF, exists, || {
            assert!(!new, "{release}: the BTF was read");
            helper
        })
    }

    #[test]
    fn an_older_kernel_without_the_helper_is_refused_by_name() {
        let r = "5.10.0-32-cloud-amd64";
        assert_eq!(
            judged(r, true, Some(false)),
            Err(PreflightError::NoHelper(r.into()))
        );
        // A release that does not read as a version is not called old.
        for r in ["garbage", "99999999999.1"] {
            assert_eq!(
                judged(r, true, Some(false)),
                Err(PreflightError::UnreadableRelease(r.into()))
            );
        }
        // Backported (a vendor kernel), or BTF the load will report on.
        assert_eq!(judged("5.10.0", true, Some(true)), Ok(()));
        assert_eq!(judged("5.11.22", true, None), Ok(()));
        // From the minimum on, the BTF is not read at all.
        for r in ["5.12.0", "5.15.0-91-generic", "6.1.0-57-cloud-amd64"] {
            assert_eq!(judged(r, true, Some(false)), Ok(()));
        }
        // No BTF: an old release says so, a new one names the file.
        assert_eq!(
            judged("4.19.0", false, None),
            Err(PreflightError::OldKernel("4.19.0".into()))
        );
        assert_eq!(
            judged("6.18.0", false, None),
            Err(PreflightError::NoBtf(VMLINUX_BTF.into()))
        );
    }

    #[test]
    fn messages_name_the_fix() {
        assert!(PreflightError::Privilege.to_string().contains("sudo"));
        assert!(
            PreflightError::NoBtf(VMLINUX_BTF.into())
                .to_string()
                .contains("CONFIG_DEBUG_INFO_BTF")
        );
        assert_eq!(
            PreflightError::OldKernel("4.19.0".into()).to_string(),
            "kernel 4.19.0 is too old: observer needs Linux 5.12 or later built with \
             CONFIG_DEBUG_INFO_BTF=y; upgrade the kernel"
        );
        assert_eq!(
            PreflightError::NoHelper("5.10.0-32-cloud-amd64".into()).to_string(),
            "kernel 5.10.0-32-cloud-amd64 is too old: it has no bpf_get_socket_ptr_cookie (a \
             socket's cookie in tracing programs, which observer keys every flow on; Linux \
             5.12); observer needs Linux 5.12 or later; upgrade the kernel"
        );
        assert_eq!(
            PreflightError::UnreadableRelease("99999999999.1".into()).to_string(),
            "the kernel release '99999999999.1' does not read as a version, and this kernel has \
             no bpf_get_socket_ptr_cookie (a socket's cookie in tracing programs, which observer \
             keys every flow on; Linux 5.12): observer needs Linux 5.12 or later; upgrade the \
             kernel"
        );
    }

    /// The running kernel, if at least [`MIN_KERNEL`], lists [`KEY_HELPER`]
    /// in its BTF (checked in each VM of the matrix): the function the
    /// refusal looks for is the one new kernels have.
    #[test]
    fn running_kernel_lists_the_key_helper_from_the_minimum_on() {
        let release = kernel_release();
        if kernel_version(&release).is_none_or(|v| v < MIN_KERNEL) {
            eprintln!("skipped: kernel {release} is older than 5.12");
            return;
        }
        let Ok(btf) = Btf::from_file(VMLINUX_BTF) else {
            eprintln!("skipped: no readable {VMLINUX_BTF}");
            return;
        };
        assert!(btf.has_func(KEY_HELPER), "kernel {release}");
    }
}
