//! Debian's cloud kernels: find the newest package of a series with
//! `apt-cache`, fetch it with `apt-get download`, unpack it with
//! `dpkg-deb -x`, and keep only what a test VM needs (the kernel image and a
//! few modules) in a cache outside the repository.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, bail};

use super::apt::{Apt, Archive};
use crate::util;

/// A kernel series the matrix boots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Series {
    /// What `--kernel` calls it.
    pub name: &'static str,
    /// Debian package names: `linux-image-<prefix><digits...><suffix>`.
    prefix: &'static str,
    /// Which apt lists know it.
    archive: Archive,
    /// Whether observer must refuse it (older than Linux 5.12): the VM
    /// then proves the refusal instead of running the tests
    /// ([`super::refusal`]).
    pub refused: bool,
}

/// Debian 11's 5.10 (bullseye's main suite, through a private apt list:
/// its security suite's newer builds do not download here), Debian 12's
/// 6.1 and the 6.12 LTS kernel (bookworm-backports / security).
pub const SERIES: &[Series] = &[
    Series {
        name: "5.10",
        prefix: "linux-image-5.10.0-",
        archive: Archive::Private { suite: "bullseye" },
        refused: true,
    },
    Series {
        name: "6.1",
        prefix: "linux-image-6.1.0-",
        archive: Archive::System,
        refused: false,
    },
    Series {
        name: "6.12",
        prefix: "linux-image-6.12.",
        archive: Archive::System,
        refused: false,
    },
];

/// Every package name ends so: the cloud flavour (small, virtio and BTF),
/// unsigned (the image is the same, without the signed-shim indirection).
const SUFFIX: &str = "-cloud-amd64-unsigned";

/// Modules the VM loads: the netem qdisc and the links of the two paths
/// the netem cross-check builds (veth for netem, TUN for pathemu).
const MODULES: &[&str] = &[
    "kernel/net/sched/sch_netem.ko",
    "kernel/drivers/net/veth.ko",
    "kernel/drivers/net/tun.ko",
];

impl Series {
    /// Whether `pkg` is a cloud image package of this series:
    /// `linux-image-6.1.0-57-cloud-amd64-unsigned`,
    /// `linux-image-6.12.117+deb12-cloud-amd64-unsigned`.
    pub fn matches(&self, pkg: &str) -> bool {
        let Some(mid) = pkg
            .strip_prefix(self.prefix)
            .and_then(|r| r.strip_suffix(SUFFIX))
        else {
            return false;
        };
        let (num, deb) = mid.split_once('+').unwrap_or((mid, ""));
        !num.is_empty()
            && num.bytes().all(|b| b.is_ascii_digit())
            && (deb.is_empty()
                || deb
                    .strip_prefix("deb")
                    .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())))
    }
}

/// Looks a series up by its `--kernel` name.
pub fn series(name: &str) -> Option<Series> {
    SERIES.iter().copied().find(|s| s.name == name)
}

/// The numbers in a package name, for ordering versions of one series.
fn version_key(pkg: &str) -> Vec<u64> {
    pkg.split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .filter_map(|s| s.parse().ok())
        .collect()
}

/// The newest package of `series` among `names`.
pub fn newest<'a>(series: &Series, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    names
        .filter(|n| series.matches(n))
        .max_by_key(|n| version_key(n))
}

/// A kernel unpacked into the cache.
#[derive(Debug, Clone)]
pub struct Kernel {
    /// The Debian package it came from.
    pub package: String,
    /// `uname -r` of the kernel.
    pub release: String,
    /// The bzImage.
    pub vmlinuz: PathBuf,
    /// Uncompressed modules to `insmod`, in load order.
    pub modules: Vec<PathBuf>,
}

/// Where kernels are cached: `$XDG_CACHE_HOME/observer-vm`, else
/// `~/.cache/observer-vm`, else `target/vm/cache`.
pub fn cache_dir() -> PathBuf {
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|x| !x.is_empty()) {
        return PathBuf::from(x).join("observer-vm");
    }
    if let Some(h) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(h).join(".cache").join("observer-vm");
    }
    util::target_dir().join("vm").join("cache")
}

/// Package names apt knows (from the local lists) that may belong to `series`.
fn apt_candidates(series: &Series, apt: &Apt) -> anyhow::Result<Vec<String>> {
    let pattern = format!("^{}", series.prefix.replace('.', "\\."));
    let out = apt
        .command("apt-cache")
        .args(["search", "--names-only", &pattern])
        .output()
        .context("cannot run apt-cache (observer's VM tests use Debian's kernel packages)")?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect())
}

/// Finds, downloads and unpacks (once) the newest kernel of `series`.
///
/// # Errors
/// No such package in apt's lists (after one `apt-get update` when root),
/// or a failed download or unpack.
pub fn fetch(series: &Series) -> anyhow::Result<Kernel> {
    let cache = cache_dir();
    fs::create_dir_all(&cache).with_context(|| format!("creating {}", cache.display()))?;
    let apt = series.archive.apt()?;
    let mut names = apt_candidates(series, &apt).unwrap_or_default();
    if newest(series, names.iter().map(String::as_str)).is_none() && apt.may_update() {
        eprintln!(
            "vm-test: no {} cloud kernel in {}; updating them",
            series.name,
            apt.describe()
        );
        apt.update()?;
        names = apt_candidates(series, &apt)?;
    }
    // The newest cached one still serves when apt knows none (offline, or a
    // release whose lists lack the series).
    let cached: Vec<String> = fs::read_dir(&cache)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter(|e| e.path().join("complete").is_file())
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    let Some(pkg) = newest(series, names.iter().map(String::as_str))
        .or_else(|| newest(series, cached.iter().map(String::as_str)))
        .map(str::to_string)
    else {
        if series.archive != Archive::System {
            bail!(
                "no Debian package {}*{SUFFIX} in {} after updating it: check that this host \
                 reaches deb.debian.org",
                series.prefix,
                apt.describe()
            );
        }
        bail!(
            "no Debian package {}*{SUFFIX} is known to apt: the VM tests boot Debian's cloud \
             kernels; on Debian 12 they are in the main and security archives (run `apt-get \
             update`); elsewhere add a bookworm source for them",
            series.prefix
        );
    };
    let dir = cache.join(&pkg);
    if !dir.join("complete").is_file() {
        download(&pkg, &dir, &apt)?;
    } else {
        eprintln!("vm-test: kernel {pkg} (cached in {})", dir.display());
    }
    load(&pkg, &dir)
}

/// Reads a cache entry.
fn load(pkg: &str, dir: &Path) -> anyhow::Result<Kernel> {
    let release = fs::read_to_string(dir.join("release"))
        .with_context(|| format!("reading {}/release", dir.display()))?
        .trim()
        .to_string();
    let modules = MODULES
        .iter()
        .filter_map(|m| Path::new(m).file_name())
        .map(|f| dir.join("modules").join(f))
        .filter(|p| p.is_file())
        .collect();
    Ok(Kernel {
        package: pkg.to_string(),
        release,
        vmlinuz: dir.join("vmlinuz"),
        modules,
    })
}

/// Downloads the candidate `.deb` of `pkg` into `work` (which holds no
/// other `.deb`) with `apt-get download` and unpacks it into `into`
/// (`dpkg-deb -x`); nothing is installed.
///
/// # Errors
/// A failed download or unpack.
pub(super) fn download_unpack(
    pkg: &str,
    work: &Path,
    into: &Path,
    apt: &Apt,
) -> anyhow::Result<()> {
    eprintln!("vm-test: downloading {pkg}");
    let mut get = apt.command("apt-get");
    get.args(["download", "-q"]);
    // Progress goes to stderr: stdout carries only the results.
    util::run(get.arg(pkg).current_dir(work).stdout(std::io::stderr()))?;
    let deb = fs::read_dir(work)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "deb"))
        .with_context(|| format!("apt-get download left no .deb for {pkg}"))?;
    util::run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(into))?;
    fs::remove_file(&deb).with_context(|| format!("removing {}", deb.display()))
}

/// Downloads `pkg` and unpacks the kernel and [`MODULES`] into `dir`.
fn download(pkg: &str, dir: &Path, apt: &Apt) -> anyhow::Result<()> {
    let parent = dir.parent().unwrap_or(Path::new("."));
    let work = parent.join(format!(".{pkg}.{}.tmp", std::process::id()));
    let _ = fs::remove_dir_all(&work);
    let result = download_into(pkg, &work, apt).and_then(|()| {
        let _ = fs::remove_dir_all(dir);
        fs::rename(work.join("keep"), dir)
            .with_context(|| format!("moving the kernel into {}", dir.display()))
    });
    let _ = fs::remove_dir_all(&work);
    result
}

fn download_into(pkg: &str, work: &Path, apt: &Apt) -> anyhow::Result<()> {
    let keep = work.join("keep");
    let unpacked = work.join("x");
    fs::create_dir_all(keep.join("modules"))?;
    fs::create_dir_all(&unpacked)?;
    download_unpack(pkg, work, &unpacked, apt)?;
    let boot = unpacked.join("boot");
    let vmlinuz = fs::read_dir(&boot)
        .with_context(|| format!("{pkg} has no /boot"))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .is_some_and(|f| f.to_string_lossy().starts_with("vmlinuz-"))
        })
        .with_context(|| format!("{pkg} has no /boot/vmlinuz-*"))?;
    let release = vmlinuz
        .file_name()
        .map(|f| {
            f.to_string_lossy()
                .trim_start_matches("vmlinuz-")
                .to_string()
        })
        .unwrap_or_default();
    fs::copy(&vmlinuz, keep.join("vmlinuz"))?;
    // Bookworm packages put modules in /lib, newer ones in /usr/lib.
    let moddir = ["lib/modules", "usr/lib/modules"]
        .iter()
        .map(|d| unpacked.join(d).join(&release))
        .find(|d| d.is_dir())
        .with_context(|| format!("{pkg} has no modules for {release}"))?;
    for m in MODULES {
        let plain = moddir.join(m);
        let name = Path::new(m).file_name().unwrap_or_default();
        let dst = keep.join("modules").join(name);
        if plain.is_file() {
            fs::copy(&plain, &dst)?;
            continue;
        }
        let xz = plain.with_extension("ko.xz");
        if xz.is_file() {
            let out = Command::new("busybox")
                .args(["xz", "-dc"])
                .arg(&xz)
                .output()
                .context("cannot run busybox xz to unpack a module")?;
            if !out.status.success() {
                bail!("busybox xz -dc {} failed", xz.display());
            }
            fs::write(&dst, out.stdout)?;
            continue;
        }
        eprintln!("vm-test: {pkg} has no {m}; the VM goes without it");
    }
    fs::write(keep.join("release"), format!("{release}\n"))?;
    fs::write(keep.join("package"), format!("{pkg}\n"))?;
    fs::write(keep.join("complete"), "")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_match_debian_names() {
        let s61 = series("6.1").unwrap();
        let s612 = series("6.12").unwrap();
        assert!(s61.matches("linux-image-6.1.0-57-cloud-amd64-unsigned"));
        assert!(!s61.matches("linux-image-6.1.0-57-cloud-amd64"));
        assert!(!s61.matches("linux-image-6.1.0-57-cloud-amd64-dbg"));
        assert!(!s61.matches("linux-image-6.12.117+deb12-cloud-amd64-unsigned"));
        assert!(s612.matches("linux-image-6.12.117+deb12-cloud-amd64-unsigned"));
        assert!(s612.matches("linux-image-6.12.48+deb13-cloud-amd64-unsigned"));
        assert!(!s612.matches("linux-image-6.12-cloud-amd64-dbg"));
        assert!(!s612.matches("linux-image-6.12.1+debx-cloud-amd64-unsigned"));
        assert!(!s612.matches("linux-image-6.1.0-57-cloud-amd64-unsigned"));
        let s510 = series("5.10").unwrap();
        assert!(s510.matches("linux-image-5.10.0-32-cloud-amd64-unsigned"));
        assert!(!s510.matches("linux-image-5.10.0-32-amd64-unsigned"));
        assert!(s510.refused && !s61.refused && !s612.refused);
        assert!(series("5.4").is_none());
    }

    #[test]
    fn newest_orders_by_number_not_text() {
        let names = [
            "linux-image-6.12.99+deb12-cloud-amd64-unsigned",
            "linux-image-6.12.117+deb12-cloud-amd64-unsigned",
            "linux-image-6.12.111+deb12-cloud-amd64-unsigned",
            "linux-image-6.12-cloud-amd64",
        ];
        assert_eq!(
            newest(&series("6.12").unwrap(), names.into_iter()),
            Some("linux-image-6.12.117+deb12-cloud-amd64-unsigned")
        );
        let names = [
            "linux-image-6.1.0-9-cloud-amd64-unsigned",
            "linux-image-6.1.0-57-cloud-amd64-unsigned",
        ];
        assert_eq!(
            newest(&series("6.1").unwrap(), names.into_iter()),
            Some("linux-image-6.1.0-57-cloud-amd64-unsigned")
        );
        assert_eq!(newest(&series("6.1").unwrap(), [].into_iter()), None);
    }
}
