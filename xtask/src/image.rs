//! `cargo xtask image`: the container image of deploy/Containerfile, built
//! offline from a statically linked release binary.
//!
//! The binary links glibc statically (`-C target-feature=+crt-static`, for
//! the host's target triple given explicitly, so the flag reaches only
//! observer and not the build scripts or the eBPF build); the image is
//! `FROM scratch` with that one file, so building it pulls nothing.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::{Context as _, bail};

use crate::{setup, util};

/// The image's name; the tag is the workspace version.
pub const NAME: &str = "localhost/observer";

/// Builds the image and returns its reference,
/// `localhost/observer:VERSION-REVISION` (the commit, so that a rebuilt
/// image never hides behind a tag nodes already hold); it is also tagged
/// `localhost/observer:VERSION`. The OCI labels `version` and `revision`
/// say the same.
///
/// # Errors
/// A failed install, build, or a binary that is not static.
pub fn build() -> anyhow::Result<String> {
    setup::setup_build()?;
    setup::install_podman()?;
    let bin = static_binary()?;
    let context = util::target_dir().join("image");
    std::fs::create_dir_all(&context)
        .with_context(|| format!("cannot create {}", context.display()))?;
    std::fs::copy(&bin, context.join("observer"))
        .with_context(|| format!("cannot copy {} into {}", bin.display(), context.display()))?;
    let version = env!("CARGO_PKG_VERSION");
    let revision = revision()?;
    let reference = format!("{NAME}:{version}-{revision}");
    let containerfile = util::workspace_root().join("deploy/Containerfile");
    util::run(
        podman()?
            .args(["build", "--quiet", "--file"])
            .arg(&containerfile)
            .args(["--tag", &reference, "--tag", &format!("{NAME}:{version}")])
            .arg(format!(
                "--label=org.opencontainers.image.version={version}"
            ))
            .arg(format!(
                "--label=org.opencontainers.image.revision={revision}"
            ))
            .arg(&context),
    )?;
    Ok(reference)
}

/// `podman` with the one adjustment these machines need to start
/// containers at all: a containers.conf without default ulimits (root here
/// lacks CAP_SYS_RESOURCE, so podman's default RLIMIT_NOFILE fails). The
/// file is written under the target directory; it sets nothing else.
///
/// # Errors
/// The file cannot be written.
pub fn podman() -> anyhow::Result<Command> {
    let conf = util::target_dir().join("podman/containers.conf");
    if let Some(dir) = conf.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&conf, "[containers]\ndefault_ulimits = []\n")
        .with_context(|| format!("cannot write {}", conf.display()))?;
    let mut c = Command::new("podman");
    c.env("CONTAINERS_CONF", conf);
    Ok(c)
}

/// `cargo build --release` of observer for the host triple with glibc
/// linked in; checks that the result has no program interpreter.
fn static_binary() -> anyhow::Result<PathBuf> {
    let bin = static_release(&["observer"])?.join("observer");
    if has_interpreter(&bin)? {
        bail!(
            "{} is dynamically linked (it names an ELF interpreter); the image needs a static \
             binary",
            bin.display()
        );
    }
    Ok(bin)
}

/// `cargo build --release` of `packages` for the host's target triple,
/// given explicitly, with glibc linked in ([`util::StaticTarget`]);
/// returns the folder of the binaries, `target/<triple>/release`. The
/// image, the scenario and benchmark runners and the soak's test binary
/// all build this way, so `cargo xtask test` compiles the release
/// dependencies once for all of them.
///
/// # Errors
/// No host triple, or a failed build.
pub fn static_release(packages: &[&str]) -> anyhow::Result<PathBuf> {
    let target = util::StaticTarget::host()?;
    let mut c = Command::new("cargo");
    c.args(["build", "--release"]);
    for p in packages {
        c.args(["--package", p]);
    }
    util::run(target.apply(&mut c))?;
    Ok(target.release_dir())
}

/// The commit the work tree is at (12 hex digits), with `-dirty` when it
/// has uncommitted changes to tracked files.
fn revision() -> anyhow::Result<String> {
    let git = |args: &[&str]| -> anyhow::Result<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(util::workspace_root())
            .args(args)
            .output()
            .context("cannot run git")?;
        if !out.status.success() {
            bail!(
                "git {} failed: the image is tagged by commit",
                args.join(" ")
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let rev = git(&["rev-parse", "--short=12", "HEAD"])?;
    let dirty = !git(&["status", "--porcelain", "--untracked-files=no"])?.is_empty();
    Ok(if dirty { format!("{rev}-dirty") } else { rev })
}

/// Whether the ELF executable at `path` has a `PT_INTERP` program header
/// (a dynamically linked one does), read with the `object` crate.
fn has_interpreter(path: &Path) -> anyhow::Result<bool> {
    use object::read::elf::{ElfFile64, ProgramHeader as _};
    let data = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let elf = ElfFile64::<object::Endianness>::parse(&*data)
        .with_context(|| format!("{} is not a 64-bit ELF file", path.display()))?;
    let endian = elf.endian();
    Ok(elf
        .elf_program_headers()
        .iter()
        .any(|h| h.p_type(endian) == object::elf::PT_INTERP))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dynamic_executable_names_an_interpreter() {
        // Any program on the host: cargo's build of this test is dynamic.
        let me = std::env::current_exe().unwrap();
        assert!(has_interpreter(&me).unwrap());
        assert!(has_interpreter(Path::new("/nonexistent")).is_err());
    }
}
