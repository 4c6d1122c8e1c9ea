//! Where apt finds a kernel package: the system's own lists (Debian 12's
//! 6.1 and 6.12), or a private list of another Debian release (bullseye,
//! for 5.10) with its own state and cache under `target/vm/apt/<suite>/`.
//! The private list is read with `-o Dir::...` options on every apt call,
//! so the system's sources, lists and cache stay untouched, and no root
//! is needed to update it.

use std::{fs, path::PathBuf, process::Command};

use anyhow::{Context as _, bail};

use crate::util;

/// The keyring Debian's archive is signed with (package
/// `debian-archive-keyring`, which holds the bullseye keys too).
const KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";

/// The mirror a private list reads.
const MIRROR: &str = "http://deb.debian.org/debian";

/// Which lists apt reads for a kernel series.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Archive {
    /// The system's own sources.
    System,
    /// `deb MIRROR SUITE main`, in a private list under `target/`.
    Private {
        /// The Debian suite (`bullseye`).
        suite: &'static str,
    },
}

/// apt with the options that point it at one [`Archive`].
pub struct Apt {
    archive: Archive,
    options: Vec<String>,
}

impl Archive {
    /// apt for this archive; for a private one, makes its folders and
    /// writes its sources list (once).
    ///
    /// # Errors
    /// The keyring is missing, or a folder cannot be made.
    pub fn apt(self) -> anyhow::Result<Apt> {
        let mut options = Vec::new();
        if let Archive::Private { suite } = self {
            if !std::path::Path::new(KEYRING).is_file() {
                bail!(
                    "{KEYRING} is missing: the VM tests fetch Debian {suite}'s kernel with \
                     apt, which checks it against Debian's keys; install debian-archive-keyring"
                );
            }
            let dir = private_dir(suite);
            for d in [
                "sources.list.d",
                "state/lists/partial",
                "cache/archives/partial",
            ] {
                fs::create_dir_all(dir.join(d))
                    .with_context(|| format!("creating {}", dir.join(d).display()))?;
            }
            let list = dir.join("sources.list");
            fs::write(
                &list,
                format!("deb [signed-by={KEYRING}] {MIRROR} {suite} main\n"),
            )?;
            let status = dir.join("state/status");
            if !status.is_file() {
                fs::write(&status, "")?;
            }
            let path = |p: &str| dir.join(p).to_string_lossy().into_owned();
            for (key, value) in [
                ("Dir::Etc::SourceList", list.to_string_lossy().into_owned()),
                ("Dir::Etc::SourceParts", path("sources.list.d")),
                ("Dir::State", path("state")),
                ("Dir::State::status", status.to_string_lossy().into_owned()),
                ("Dir::Cache", path("cache")),
                // Package lists only: no AppStream metadata.
                (
                    "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled",
                    "false".into(),
                ),
            ] {
                options.push("-o".into());
                options.push(format!("{key}={value}"));
            }
        }
        if util::is_root() {
            // apt's download user cannot write into a root-owned folder.
            options.extend(["-o".into(), "APT::Sandbox::User=root".into()]);
        }
        Ok(Apt {
            archive: self,
            options,
        })
    }
}

/// `target/vm/apt/<suite>`.
fn private_dir(suite: &str) -> PathBuf {
    util::target_dir().join("vm").join("apt").join(suite)
}

impl Apt {
    /// `tool` (`apt-get`, `apt-cache`) with this archive's options.
    pub fn command(&self, tool: &str) -> Command {
        let mut c = Command::new(tool);
        c.args(&self.options);
        c
    }

    /// Whether its lists may be updated here: a private list always, the
    /// system's only as root.
    pub fn may_update(&self) -> bool {
        matches!(self.archive, Archive::Private { .. }) || util::is_root()
    }

    /// `apt-get update` of these lists (progress on stderr).
    ///
    /// # Errors
    /// apt failed.
    pub fn update(&self) -> anyhow::Result<()> {
        util::run(
            self.command("apt-get")
                .args(["update", "-q"])
                .stdout(std::io::stderr()),
        )
    }

    /// Where the lists come from, for a message.
    pub fn describe(&self) -> String {
        match self.archive {
            Archive::System => "the system's apt lists".into(),
            Archive::Private { suite } => format!(
                "a private apt list of Debian {suite} ({})",
                private_dir(suite).display()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_list_points_every_directory_away_from_the_system() {
        if !std::path::Path::new(KEYRING).is_file() {
            eprintln!("skipped: no {KEYRING}");
            return;
        }
        let apt = Archive::Private { suite: "bullseye" }.apt().unwrap();
        let dir = private_dir("bullseye");
        let list = fs::read_to_string(dir.join("sources.list")).unwrap();
        assert_eq!(
            list,
            "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] \
             http://deb.debian.org/debian bullseye main\n"
        );
        for key in [
            "Dir::Etc::SourceList=",
            "Dir::Etc::SourceParts=",
            "Dir::State=",
            "Dir::State::status=",
            "Dir::Cache=",
        ] {
            let value = apt
                .options
                .iter()
                .find_map(|o| o.strip_prefix(key))
                .unwrap_or_else(|| panic!("no {key}"));
            assert!(value.starts_with(&*dir.to_string_lossy()), "{key}{value}");
        }
        assert!(apt.may_update());
        assert!(Archive::System.apt().unwrap().options.len() <= 2);
    }
}
