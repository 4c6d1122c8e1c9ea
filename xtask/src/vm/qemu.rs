//! The emulator the kernel matrix boots under: Debian's qemu-system-x86,
//! installed, or where installing it would make apt remove a package
//! (a newer qemu-utils from backports `Breaks` the older
//! qemu-system-common), unpacked into the VM cache beside the kernels and
//! run from there with its firmware folders named on the command line. Only
//! its shared libraries are installed then, which conflict with nothing;
//! the set-up still removes no package.

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::Context as _;

use super::{initramfs::find_program, kernel};
use crate::setup;

/// The package that holds `qemu-system-x86_64`.
const PACKAGE: &str = "qemu-system-x86";

/// What an unpacked emulator needs beyond shared libraries: the binary,
/// its keymaps and option ROMs, and the BIOS.
const UNPACKED: &[&str] = &[PACKAGE, "qemu-system-common", "qemu-system-data", "seabios"];

/// An emulator to boot the test kernels with.
#[derive(Debug)]
pub struct Qemu {
    /// `qemu-system-x86_64`.
    pub binary: PathBuf,
    /// Firmware folders to pass as `-L DIR` (empty for an installed one,
    /// which knows its own).
    pub firmware: Vec<PathBuf>,
}

impl Qemu {
    /// A command running the emulator, its firmware folders set.
    pub fn command(&self) -> Command {
        let mut c = Command::new(&self.binary);
        for dir in &self.firmware {
            c.arg("-L").arg(dir);
        }
        c
    }
}

/// The installed `qemu-system-x86_64`; else installs qemu-system-x86; else,
/// where that would remove a package, the unpacked copy (made once).
///
/// # Errors
/// Not root with qemu missing, apt cannot install it or its libraries, or
/// a download or unpack failed.
pub fn ensure() -> anyhow::Result<Qemu> {
    if let Some(binary) = find_program("qemu-system-x86_64") {
        return Ok(Qemu {
            binary,
            firmware: Vec::new(),
        });
    }
    let removed = setup::would_remove(&[PACKAGE])?;
    if removed.is_empty() {
        setup::install_packages(&[PACKAGE])?;
        let binary = find_program("qemu-system-x86_64")
            .with_context(|| format!("{PACKAGE} is installed but has no qemu-system-x86_64"))?;
        return Ok(Qemu {
            binary,
            firmware: Vec::new(),
        });
    }
    eprintln!(
        "vm-test: installing {PACKAGE} would remove {}; unpacking it into the VM cache instead",
        removed.join(" ")
    );
    unpacked()
}

/// The emulator unpacked into `cache_dir()/qemu-VERSION` (once), with its
/// shared libraries installed.
fn unpacked() -> anyhow::Result<Qemu> {
    let show = apt_show(PACKAGE)?;
    let version = field(&show, "Version")
        .with_context(|| format!("apt-cache show {PACKAGE} gives no Version"))?;
    let dir = kernel::cache_dir().join(format!("qemu-{}", version.replace([':', '~'], "_")));
    if !dir.join("complete").is_file() {
        unpack_into(&dir)?;
    } else {
        eprintln!(
            "vm-test: {PACKAGE} {version} (unpacked in {})",
            dir.display()
        );
    }
    let mut libraries = Vec::new();
    for pkg in [PACKAGE, "qemu-system-common"] {
        for lib in libraries_of(&apt_show(pkg)?) {
            if !libraries.contains(&lib) {
                libraries.push(lib);
            }
        }
    }
    let libraries: Vec<&str> = libraries.iter().map(String::as_str).collect();
    setup::install_packages(&libraries)?;
    let binary = dir.join("usr/bin/qemu-system-x86_64");
    anyhow::ensure!(binary.is_file(), "{} is missing", binary.display());
    Ok(Qemu {
        binary,
        firmware: vec![dir.join("usr/share/qemu"), dir.join("usr/share/seabios")],
    })
}

/// Downloads and unpacks [`UNPACKED`] into `dir`, through a temporary
/// folder renamed into place, so a half-made copy is never used.
fn unpack_into(dir: &Path) -> anyhow::Result<()> {
    let parent = dir.parent().unwrap_or(Path::new("."));
    let work = parent.join(format!(".qemu.{}.tmp", std::process::id()));
    let _ = fs::remove_dir_all(&work);
    let root = work.join("root");
    let result = (|| -> anyhow::Result<()> {
        fs::create_dir_all(&root).with_context(|| format!("creating {}", root.display()))?;
        let apt = super::apt::Archive::System.apt()?;
        for pkg in UNPACKED {
            kernel::download_unpack(pkg, &work, &root, &apt)?;
        }
        fs::write(root.join("complete"), "").context("marking the unpacked qemu complete")?;
        let _ = fs::remove_dir_all(dir);
        fs::rename(&root, dir).with_context(|| format!("moving qemu into {}", dir.display()))
    })();
    let _ = fs::remove_dir_all(&work);
    result
}

/// `apt-cache show --no-all-versions PKG`: the candidate's record.
fn apt_show(pkg: &str) -> anyhow::Result<String> {
    let out = Command::new("apt-cache")
        .args(["show", "--no-all-versions", pkg])
        .output()
        .context("cannot run apt-cache")?;
    anyhow::ensure!(
        out.status.success(),
        "apt-cache knows no package {pkg}: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The value of `name:` in a package record.
fn field<'a>(record: &'a str, name: &str) -> Option<&'a str> {
    record
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map(str::trim)
}

/// The packages a record `Depends` on, first alternative each, without
/// versions, leaving out what [`UNPACKED`] brings, other qemu packages
/// and the network boot ROMs (no emulated NIC boots from the network).
fn libraries_of(record: &str) -> Vec<String> {
    let Some(deps) = field(record, "Depends") else {
        return Vec::new();
    };
    deps.split(',')
        .filter_map(|d| d.split('|').next())
        .filter_map(|d| d.split_whitespace().next())
        .filter(|name| {
            !UNPACKED.contains(name) && !name.starts_with("qemu-") && *name != "ipxe-qemu"
        })
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libraries_leave_out_the_unpacked_packages_and_versions() {
        let record = "Package: qemu-system-x86\nVersion: 1:7.2+dfsg-7\n\
                      Depends: libaio1 (>= 0.3.93), libfdt1 (>= 1.6.1), libc6 (>= 2.34) | libc6.1, \
                      qemu-system-common (= 1:7.2+dfsg-7), qemu-system-data (>> 1:7.2+dfsg~), \
                      seabios, ipxe-qemu\nRecommends: qemu-utils\n";
        assert_eq!(libraries_of(record), ["libaio1", "libfdt1", "libc6"]);
        assert_eq!(field(record, "Version"), Some("1:7.2+dfsg-7"));
        assert_eq!(field(record, "Suggests"), None);
    }
}
