//! The lint phase of `cargo xtask test`: formatting, no import cycles
//! between modules ([`cycles`]), clippy on the host crates, and clippy on
//! the eBPF crate for its own target.
//!
//! The eBPF crate (`observer-ebpf`) only builds for `bpfel-unknown-none`,
//! so the workspace clippy run leaves it out; it is linted the way aya's
//! own CI lints its BPF crates: `cargo clippy --target bpfel-unknown-none
//! -Z build-std=core` with `--cfg bpf_target_arch`, on the toolchain that
//! builds it (see [`setup::bpf_toolchain`]: nightly with rust-src, or
//! Debian's rustc-web with `RUSTC_BOOTSTRAP=1`, whose clippy `setup`
//! installs as `rust-web-clippy`).

use std::process::Command;

use anyhow::Context as _;

use crate::{cycles, setup, util};

/// `cargo fmt --check`, the import-cycle check, then clippy with `-D
/// warnings` on the host crates and on the eBPF crate.
///
/// # Errors
/// The first step that fails.
pub fn lint() -> anyhow::Result<()> {
    util::run(Command::new("cargo").args(["fmt", "--all", "--", "--check"]))
        .context("formatting differs: run `cargo fmt --all`")?;
    cycles::check(&util::workspace_root())?;
    util::run(Command::new("cargo").args([
        "clippy",
        "--workspace",
        "--exclude",
        "observer-ebpf",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    ebpf_clippy()
}

/// Clippy on `observer-ebpf` for `bpfel-unknown-none`, with the flags
/// aya-build gives its build (release, `--cfg bpf_target_arch`), in a
/// target directory of its own (another compiler than the host crates').
///
/// # Errors
/// No eBPF toolchain, or clippy found something.
pub fn ebpf_clippy() -> anyhow::Result<()> {
    let toolchain = setup::bpf_toolchain()
        .context("no toolchain can build the eBPF programs: run `cargo xtask setup`")?;
    let target_dir = util::target_dir().join("bpf-clippy");
    let mut c = Command::new("rustup");
    c.args(["run", &toolchain, "cargo", "clippy"])
        .args(["--package", "observer-ebpf", "--lib", "--bins", "--release"])
        .args(["--target", "bpfel-unknown-none", "-Z", "build-std=core"])
        .arg("--target-dir")
        .arg(&target_dir)
        .args(["--", "-D", "warnings"])
        .current_dir(util::workspace_root())
        .env(
            "CARGO_ENCODED_RUSTFLAGS",
            format!("--cfg=bpf_target_arch=\"{}\"", std::env::consts::ARCH),
        );
    // As aya-build does: the outer cargo's compiler settings are not the
    // eBPF toolchain's.
    for key in ["RUSTC", "RUSTC_WORKSPACE_WRAPPER", "RUSTC_WRAPPER"] {
        c.env_remove(key);
    }
    if toolchain != "nightly" {
        // Unlocks `-Z build-std` on a stable-channel compiler.
        c.env("RUSTC_BOOTSTRAP", "1");
    }
    util::run(&mut c).with_context(|| {
        format!(
            "clippy on the eBPF crate (toolchain {toolchain}; it needs that toolchain's clippy: \
             `cargo xtask setup` installs rust-web-clippy, or `rustup component add clippy \
             --toolchain nightly`)"
        )
    })
}
