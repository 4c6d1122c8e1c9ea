//! `cargo xtask setup`: installs what building and testing observer needs,
//! idempotently, printing each step. On Debian/Ubuntu as root it installs
//! missing packages itself; elsewhere it stops with one message listing
//! what to install.

use std::{path::Path, process::Command};

use anyhow::{Context as _, bail};

use crate::util::{is_root, run, which};

/// Debian packages: the eBPF compiler set (see ../shared/docs/toolchain.md in
/// the development docs), and the tools the tests drive (iperf3, ip, promtool
/// and a Prometheus server, tmux for the terminal view, and the HTTP servers
/// and clients of the receiver-side scenarios: nginx-light, python3, curl,
/// wget).
const PACKAGES: &[&str] = &[
    "rustc-web",
    "cargo-web",
    "rust-web-src",
    // clippy for that compiler: `cargo xtask test` lints the eBPF crate
    // for its own target with it.
    "rust-web-clippy",
    "llvm-22-dev",
    "zlib1g-dev",
    "libzstd-dev",
    // libfuzzer-sys compiles libFuzzer with it (`cargo xtask fuzz`).
    "g++",
    "iperf3",
    "iproute2",
    "prometheus",
    "tmux",
    "curl",
    "wget",
    "nginx-light",
    "python3",
    // The kernel matrix (`vm-test`): an emulator and the VM's userland.
    "qemu-system-x86",
    "busybox-static",
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

/// Makes sure every build and test dependency is present.
///
/// # Errors
/// A failed install step, or a machine where observer cannot install
/// things itself (then the message lists what to install).
pub fn setup() -> anyhow::Result<()> {
    // Looked at before the packages go in: nightly's rust-src is the
    // user's own set-up, which Debian's compiler does not replace.
    let use_nightly = has_rust_src("nightly");
    install_packages()?;
    if use_nightly {
        eprintln!("setup: rustup nightly with rust-src present; using it for the eBPF build");
    } else {
        link_toolchain()?;
    }
    install_bpf_linker()?;
    install_cargo_fuzz()
}

/// The Debian packages of [`PACKAGES`] that are missing, through apt-get
/// where this is root on Debian/Ubuntu.
fn install_packages() -> anyhow::Result<()> {
    let missing: Vec<&str> = PACKAGES
        .iter()
        .copied()
        .filter(|p| !dpkg_installed(p))
        .collect();
    if missing.is_empty() {
        eprintln!("setup: system packages present");
        return Ok(());
    }
    if !(which("apt-get") && is_root()) {
        bail!(
            "missing system packages: {}. On Debian/Ubuntu run `cargo xtask setup` as root; \
             elsewhere install iperf3 and iproute2, plus either rustup nightly with the \
             rust-src and clippy components, or Debian's rustc-web, cargo-web, rust-web-src, \
             rust-web-clippy and llvm-22-dev",
            missing.join(" ")
        );
    }
    eprintln!("setup: installing {}", missing.join(" "));
    run(Command::new("apt-get").args(["update", "-q"]))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "-q", "--no-install-recommends"])
        .args(&missing)
        .env("DEBIAN_FRONTEND", "noninteractive"))
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
