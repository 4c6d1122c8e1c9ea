//! Checks, before anything is loaded, that this host can run observer, so a
//! missing privilege or kernel feature is one clear line, not a verifier dump.
//! The test-only overrides each check reads live in [`crate::kernel::load::env`].

use std::path::Path;

use crate::kernel::load::env::{btf_path, kernel_release};

/// Capability numbers from include/uapi/linux/capability.h.
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// Oldest kernel observer supports: BPF ring buffers arrived in 5.8.
pub const MIN_KERNEL: (u32, u32) = (5, 8);

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
    /// The kernel is older than [`MIN_KERNEL`].
    #[error("kernel {0} is too old: observer needs Linux 5.8 or later; upgrade the kernel")]
    OldKernel(String),
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
    if kernel_version(&release).is_some_and(|v| v < MIN_KERNEL) {
        return Err(PreflightError::OldKernel(release));
    }
    let btf = btf_path();
    if !Path::new(&btf).exists() {
        return Err(PreflightError::NoBtf(btf));
    }
    raise_memlock();
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
        assert!(kernel_version("5.4.0").is_some_and(|v| v < MIN_KERNEL));
        assert!(kernel_version("6.1.0-50-cloud-amd64").is_some_and(|v| v >= MIN_KERNEL));
        assert_eq!(kernel_version("garbage"), None);
    }

    #[test]
    fn messages_name_the_fix() {
        assert!(PreflightError::Privilege.to_string().contains("sudo"));
        assert!(
            PreflightError::NoBtf(VMLINUX_BTF.into())
                .to_string()
                .contains("CONFIG_DEBUG_INFO_BTF")
        );
        assert!(
            PreflightError::OldKernel("4.19.0".into())
                .to_string()
                .contains("upgrade the kernel")
        );
    }
}
