//! `cargo xtask setup`: installs what building and testing observer needs,
//! idempotently, printing each step. On Debian/Ubuntu as root it installs
//! missing packages itself; elsewhere it stops with one message listing
//! what to install.

use std::{path::Path, process::Command};

use anyhow::{Context as _, bail};

use crate::{
    apt_lock,
    util::{is_root, run, which},
};

/// What a command needs installed. Each command installs only its own
/// groups: `run` and `build` the build chain, `test` everything its phases
/// drive; nothing a command does not use is installed, and apt is never
/// allowed to remove a package for it (see [`install_packages`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// The eBPF compiler set (see ../shared/docs/toolchain.md in the
    /// development docs): Debian's rustc-web with its sources and clippy
    /// (`cargo xtask lint` checks the eBPF crate for its own target with
    /// it), LLVM 22 for bpf-linker, and bpf-linker itself.
    Build,
    /// The tools the root tests and scenarios drive: iperf3, ip, promtool
    /// and a Prometheus server, tmux for the terminal view, and the HTTP
    /// servers and clients of the receiver-side scenarios, and what
    /// deploy/check.py needs (PyYAML, systemd-analyze).
    Tools,
    /// The kernel matrix (`vm-test`): the VM's userland (the emulator
    /// itself: `vm::qemu::ensure`).
    Vm,
    /// `cargo xtask fuzz`: g++ (libfuzzer-sys compiles libFuzzer) and
    /// cargo-fuzz.
    Fuzz,
    /// `cargo xtask image` and the image's root test: podman.
    Image,
    /// `cargo xtask bench` alone: bpftrace, the peer its programs are
    /// measured against (not part of [`ALL`]: no test runs it).
    Bench,
    /// `cargo xtask demo` alone: iperf3 for the transfers, iproute2 for
    /// the path's namespaces (`ip netns`) and `ss` (within [`Group::Tools`],
    /// so not part of [`ALL`]).
    Demo,
}

impl Group {
    /// The Debian packages of this group.
    fn packages(self) -> &'static [&'static str] {
        match self {
            Group::Build => &[
                "rustc-web",
                "cargo-web",
                "rust-web-src",
                "rust-web-clippy",
                "llvm-22-dev",
                "zlib1g-dev",
                "libzstd-dev",
            ],
            Group::Tools => &[
                "iperf3",
                "iproute2",
                "prometheus",
                "tmux",
                "curl",
                "wget",
                "nginx-light",
                "python3",
                // deploy/check.py: YAML, and the systemd unit's checks.
                "python3-yaml",
                "systemd",
                // The manual pages' test renders them.
                "man-db",
            ],
            // qemu-system-x86 comes through `vm::qemu::ensure`: installed,
            // or unpacked beside the kernels where installing it would
            // remove a newer qemu-utils.
            Group::Vm => &["busybox-static"],
            Group::Fuzz => &["g++"],
            Group::Image => &["podman"],
            Group::Bench => &["bpftrace"],
            Group::Demo => &["iperf3", "iproute2"],
        }
    }
}

/// Every group: what `cargo xtask test` (and `cargo xtask setup`) needs.
pub const ALL: &[Group] = &[
    Group::Build,
    Group::Tools,
    Group::Vm,
    Group::Fuzz,
    Group::Image,
];

/// The rustup toolchain name under which Debian's rustc-web is linked.
pub const LINKED_TOOLCHAIN: &str = "observer-bpf";
const BPF_LINKER_VERSION: &str = "0.13.0";
/// cargo-fuzz for `cargo xtask fuzz`; builds with stable Rust 1.95.
const CARGO_FUZZ_VERSION: &str = "0.13.2";

fn dpkg_installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
}

fn has_rust_src(toolchain: &str) -> bool {
    let Ok(out) = Command::new("rustup")
        .args(["run", toolchain, "rustc", "--print", "sysroot"])
        .output()
    else {
        return false;
    };
    out.status.success()
        && Path::new(String::from_utf8_lossy(&out.stdout).trim())
            .join("lib/rustlib/src/rust/library/core")
            .is_dir()
}

/// The rustup toolchain that builds the eBPF crate, chosen the way
/// observer/build.rs chooses it: `OBSERVER_BPF_TOOLCHAIN`, else `nightly`
/// with rust-src, else Debian's compiler linked as [`LINKED_TOOLCHAIN`];
/// `None` when there is none (run `setup`).
pub fn bpf_toolchain() -> Option<String> {
    match std::env::var("OBSERVER_BPF_TOOLCHAIN") {
        Ok(t) if !t.is_empty() => Some(t),
        _ if has_rust_src("nightly") => Some("nightly".to_string()),
        _ if has_rust_src(LINKED_TOOLCHAIN) => Some(LINKED_TOOLCHAIN.to_string()),
        _ => None,
    }
}

fn toolchain_linked() -> bool {
    Command::new("rustup")
        .args(["run", LINKED_TOOLCHAIN, "rustc", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn cargo_fuzz_ok() -> bool {
    Command::new("cargo")
        .args(["fuzz", "--version"])
        .output()
        .is_ok_and(|o| {
            o.status.success() && String::from_utf8_lossy(&o.stdout).contains(CARGO_FUZZ_VERSION)
        })
}

fn bpf_linker_ok() -> bool {
    Command::new("bpf-linker")
        .arg("--version")
        .output()
        .is_ok_and(|o| {
            o.status.success() && String::from_utf8_lossy(&o.stdout).contains(BPF_LINKER_VERSION)
        })
}

/// Makes sure every build and test dependency is present (`cargo xtask
/// setup`, and what `cargo xtask test` runs first).
///
/// # Errors
/// A failed install step, or a machine where observer cannot install
/// things itself (then the message lists what to install).
pub fn setup() -> anyhow::Result<()> {
    setup_for(ALL)
}

/// Only the build chain: what `run`, `build` and `lint` need.
///
/// # Errors
/// As [`setup`].
pub fn setup_build() -> anyhow::Result<()> {
    setup_for(&[Group::Build])
}

/// Makes sure what `groups` need is present; the build chain always.
///
/// # Errors
/// As [`setup`].
pub fn setup_for(groups: &[Group]) -> anyhow::Result<()> {
    // Looked at before the packages go in: nightly's rust-src is the
    // user's own set-up, which Debian's compiler does not replace.
    let use_nightly = has_rust_src("nightly");
    // With nightly and rust-src, Debian's compiler set is not needed.
    let mut packages: Vec<&str> = if use_nightly {
        Vec::new()
    } else {
        Group::Build.packages().to_vec()
    };
    for p in groups
        .iter()
        .filter(|g| !(use_nightly && **g == Group::Build))
        .flat_map(|g| g.packages())
    {
        if !packages.contains(p) {
            packages.push(p);
        }
    }
    install_packages(&packages)?;
    if use_nightly {
        eprintln!("setup: rustup nightly with rust-src present; using it for the eBPF build");
    } else {
        link_toolchain()?;
    }
    install_bpf_linker()?;
    if groups.contains(&Group::Fuzz) {
        install_cargo_fuzz()?;
    }
    Ok(())
}

/// The packages of `wanted` that are not installed.
fn missing(wanted: &[&str]) -> Vec<String> {
    wanted
        .iter()
        .filter(|p| !dpkg_installed(p))
        .map(|p| (*p).to_string())
        .collect()
}

/// `apt-get install` of `pkgs` (no recommends), simulated or for real; a
/// real run may remove nothing, whatever the simulation missed.
fn apt_install(pkgs: &[String], simulate: bool) -> Command {
    let mut c = Command::new("apt-get");
    c.args(["install", "-y", "-q", "--no-install-recommends"]);
    // A lock taken between the wait above and this run: apt waits too
    // (apt 1.9.11 and later), saying so, rather than failing.
    c.args(["-o", apt_lock::TIMEOUT_OPTION]);
    c.arg(if simulate {
        "--simulate"
    } else {
        "--no-remove"
    });
    c.args(pkgs).env("DEBIAN_FRONTEND", "noninteractive");
    c
}

/// What apt would remove to install the missing ones of `wanted` (empty
/// when nothing is missing or nothing would go). Updates apt's lists first
/// when something is missing.
///
/// # Errors
/// Not root on a system with apt-get, or apt cannot install them at all
/// (its `E:` lines).
pub fn would_remove(wanted: &[&str]) -> anyhow::Result<Vec<String>> {
    let missing = missing(wanted);
    if missing.is_empty() {
        return Ok(Vec::new());
    }
    if !(which("apt-get") && is_root()) {
        bail!(
            "missing system packages: {}; run this as root on Debian/Ubuntu",
            missing.join(" ")
        );
    }
    apt_lock::wait_free();
    run(Command::new("apt-get").args(["update", "-q"]))?;
    simulate(&missing)
}

/// Simulates installing `missing`: what apt would remove.
fn simulate(missing: &[String]) -> anyhow::Result<Vec<String>> {
    let sim = apt_install(missing, true)
        .output()
        .context("cannot run apt-get")?;
    if !sim.status.success() {
        let err = String::from_utf8_lossy(&sim.stderr);
        bail!(
            "apt-get cannot install {}: {}",
            missing.join(" "),
            err.lines()
                .filter(|l| l.starts_with("E:"))
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    Ok(removals(&String::from_utf8_lossy(&sim.stdout)))
}

/// The packages of `wanted` that are missing, through apt-get where this
/// is root on Debian/Ubuntu. apt may not remove anything for them: the
/// install is simulated first, and a conflict stops with one line naming
/// what would go and the command that would resolve it by hand.
///
/// # Errors
/// Not root with apt-get (the message lists what to install), apt cannot
/// install them, or it would remove a package.
pub fn install_packages(wanted: &[&str]) -> anyhow::Result<()> {
    let missing = missing(wanted);
    if missing.is_empty() || wanted.is_empty() {
        eprintln!("setup: system packages present");
        return Ok(());
    }
    if !(which("apt-get") && is_root()) {
        bail!(
            "missing system packages: {}. On Debian/Ubuntu run this as root; elsewhere \
             install their equivalents (for building, rustup nightly with the rust-src and \
             clippy components and `cargo install bpf-linker` stand in for Debian's compiler \
             set)",
            missing.join(" ")
        );
    }
    eprintln!("setup: installing {}", missing.join(" "));
    apt_lock::wait_free();
    run(Command::new("apt-get").args(["update", "-q"]))?;
    let removed = simulate(&missing)?;
    if !removed.is_empty() {
        bail!(
            "installing {} would make apt remove {}; observer's set-up removes nothing: if that \
             may go, run `apt-get install {}` yourself, then run this again",
            missing.join(" "),
            removed.join(" "),
            missing.join(" ")
        );
    }
    run(&mut apt_install(&missing, false))
}

/// The packages an `apt-get --simulate` run says it would remove (its
/// `Remv NAME ...` lines).
fn removals(simulated: &str) -> Vec<String> {
    simulated
        .lines()
        .filter_map(|l| l.strip_prefix("Remv "))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// podman, for `cargo xtask image`.
///
/// # Errors
/// As [`setup`].
pub fn install_podman() -> anyhow::Result<()> {
    install_packages(Group::Image.packages())
}

/// Debian's rustc-web as the rustup toolchain [`LINKED_TOOLCHAIN`].
fn link_toolchain() -> anyhow::Result<()> {
    if toolchain_linked() {
        eprintln!("setup: rustup toolchain {LINKED_TOOLCHAIN} present (Debian rustc-web)");
        return Ok(());
    }
    eprintln!("setup: linking Debian's rustc-web as rustup toolchain {LINKED_TOOLCHAIN}");
    run(Command::new("rustup").args(["toolchain", "link", LINKED_TOOLCHAIN, "/usr"]))
}

/// bpf-linker [`BPF_LINKER_VERSION`], built against Debian's LLVM 22.
fn install_bpf_linker() -> anyhow::Result<()> {
    if bpf_linker_ok() {
        eprintln!("setup: bpf-linker {BPF_LINKER_VERSION} present");
        return Ok(());
    }
    eprintln!("setup: building bpf-linker {BPF_LINKER_VERSION} against LLVM 22 (about 2 minutes)");
    let llvm = "/usr/lib/llvm-22";
    if !Path::new(llvm).is_dir() {
        bail!("bpf-linker needs LLVM 22 at {llvm}: install llvm-22-dev");
    }
    run(Command::new("cargo")
        .args([
            "install",
            "bpf-linker",
            "--locked",
            "--version",
            BPF_LINKER_VERSION,
        ])
        .args(["--no-default-features", "--features", "llvm-22"])
        .env("LLVM_PREFIX", llvm))
    .context("building bpf-linker")
}

/// cargo-fuzz [`CARGO_FUZZ_VERSION`] for `cargo xtask fuzz`.
fn install_cargo_fuzz() -> anyhow::Result<()> {
    if cargo_fuzz_ok() {
        eprintln!("setup: cargo-fuzz {CARGO_FUZZ_VERSION} present");
        return Ok(());
    }
    eprintln!("setup: building cargo-fuzz {CARGO_FUZZ_VERSION} (about a minute)");
    run(Command::new("cargo").args([
        "install",
        "cargo-fuzz",
        "--locked",
        "--version",
        CARGO_FUZZ_VERSION,
    ]))
    .context("building cargo-fuzz")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulated_removals_are_named() {
        let out = "Reading package lists...\nRemv qemu-utils [1:7.2+dfsg-7]\n\
                   Inst qemu-system-x86 (1:7.2+dfsg-7 Debian:12)\nRemv libfoo1 [1.0]\n";
        assert_eq!(removals(out), ["qemu-utils", "libfoo1"]);
        assert!(removals("Inst iperf3 (3.12-1)\nConf iperf3\n").is_empty());
    }
}
