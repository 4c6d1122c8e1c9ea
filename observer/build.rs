//! Builds the kernel programs (`observer-ebpf`) for `bpfel-unknown-none` with
//! aya-build and leaves the object in `OUT_DIR` for `include_bytes_aligned!`.
//!
//! Toolchain choice, first match wins:
//! 1. `OBSERVER_BPF_TOOLCHAIN` (a rustup toolchain name);
//! 2. `nightly`, when it has the `rust-src` component (aya's usual set-up);
//! 3. `observer-bpf`: Debian's rustc-web linked into rustup by
//!    `cargo xtask setup`, used with `RUSTC_BOOTSTRAP=1` for `-Z build-std`.
use std::{path::Path, process::Command};

use anyhow::{Context as _, bail};

const LINKED: &str = "observer-bpf";

fn sysroot(toolchain: &str) -> Option<String> {
    let out = Command::new("rustup")
        .args(["run", toolchain, "rustc", "--print", "sysroot"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn has_rust_src(toolchain: &str) -> bool {
    sysroot(toolchain).is_some_and(|s| {
        Path::new(&s)
            .join("lib/rustlib/src/rust/library/core")
            .is_dir()
    })
}

/// The build's identity for `observer_build_info`: the commit
/// (`git rev-parse`, "unknown" outside a git checkout) and the compiler
/// (`rustc --version` of the compiler cargo uses).
fn identity() {
    let out = |cmd: &mut Command| {
        cmd.output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let manifest = env!("CARGO_MANIFEST_DIR");
    let revision =
        out(Command::new("git").args(["-C", manifest, "rev-parse", "--short=12", "HEAD"]))
            .unwrap_or_else(|| "unknown".to_string());
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let version =
        out(Command::new(rustc).arg("--version")).unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=OBSERVER_REVISION={revision}");
    println!("cargo:rustc-env=OBSERVER_RUSTC={version}");
    // A new commit changes HEAD or the branch it names.
    if let Some(git) =
        out(Command::new("git").args(["-C", manifest, "rev-parse", "--absolute-git-dir"]))
    {
        println!("cargo:rerun-if-changed={git}/HEAD");
        println!("cargo:rerun-if-changed={git}/refs/heads");
    }
}

fn main() -> anyhow::Result<()> {
    identity();
    println!("cargo:rerun-if-env-changed=OBSERVER_BPF_TOOLCHAIN");
    let chosen = match std::env::var("OBSERVER_BPF_TOOLCHAIN") {
        Ok(t) if !t.is_empty() => t,
        _ if has_rust_src("nightly") => "nightly".to_string(),
        _ if has_rust_src(LINKED) => LINKED.to_string(),
        _ => bail!(
            "no toolchain can build the eBPF programs: run `cargo xtask setup` \
             (installs Debian's rustc-web, rust-web-src, llvm-22-dev and bpf-linker), \
             or install rustup nightly with rust-src and `cargo install bpf-linker`"
        ),
    };
    // SAFETY: build scripts are single-threaded at this point.
    unsafe {
        if chosen != "nightly" {
            std::env::set_var("RUSTC_BOOTSTRAP", "1");
        }
        // aya-build relays every line the inner cargo prints as a
        // `cargo:warning`; keep it to real diagnostics.
        std::env::set_var("CARGO_TERM_QUIET", "true");
    }
    let ebpf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("observer has no parent directory")?
        .join("observer-ebpf");
    let root = ebpf.to_str().context("non-UTF-8 path to observer-ebpf")?;
    aya_build::build_ebpf(
        [aya_build::Package {
            name: "observer-ebpf",
            root_dir: root,
            ..Default::default()
        }],
        aya_build::Toolchain::Custom(&chosen),
    )
}
