//! `--pin DIR`: the programs, their links and the maps the agent reads are
//! pinned in a BPF filesystem, so they outlive the agent. The programs go
//! on recording while no agent runs (closes the full ring cannot take are
//! parked in the flow map), and the next agent adopts them and reports
//! what they kept.
//!
//! A pinned set lives in `DIR/SET`, where `SET` names what the programs
//! were loaded from ([`set_name`]): the eBPF object, the kernel's member
//! offsets and the load-time settings. An agent that finds its own set
//! adopts it; one that finds another set (another build, other settings)
//! loads its own, attaches it, detaches the old one and reads what the old
//! maps still hold (`adopt::ReplacedSet`). `rm -r DIR` detaches everything for
//! good, once no agent holds the programs open. Only directories named as
//! sets are touched: other pins in `DIR` stay. A set is pinned under a
//! temporary name ([`PARTIAL_PREFIX`]) and renamed into place once whole,
//! so an agent killed while pinning leaves no set a later one would adopt;
//! the next agent removes such leftovers.
//!
//! bpffs holds only BPF objects and directories, so the set's identity is
//! its directory name, and two agents are kept from sharing one `DIR` by an
//! exclusive `flock(2)` on it.

use std::{
    fs::File,
    hash::{Hash as _, Hasher as _},
    os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd},
    path::{Path, PathBuf},
};

/// `BPF_FS_MAGIC` from include/uapi/linux/magic.h.
const BPF_FS_MAGIC: i64 = 0xcafe_4a11;
/// `BPF_OBJ_PIN` and `BPF_OBJ_GET` from include/uapi/linux/bpf.h.
const BPF_OBJ_PIN: libc::c_long = 6;
const BPF_OBJ_GET: libc::c_long = 7;

/// Names of the pinned objects in a set: maps by their own names, and
/// these prefixes before a program's name and a link's tracepoint.
pub const PROGRAM_PREFIX: &str = "prog_";
/// See [`PROGRAM_PREFIX`].
pub const LINK_PREFIX: &str = "link_";
/// The name of a set being pinned, before its own name (bpffs takes no
/// dot in a name: kernel/bpf/inode.c `bpf_lookup`).
pub const PARTIAL_PREFIX: &str = "partial-";

/// Whether `name` is a set's name ([`set_name`]): 16 hex digits, then
/// `-direct` or `-helper`.
pub fn is_set_name(name: &str) -> bool {
    let Some((hash, mode)) = name.split_at_checked(16) else {
        return false;
    };
    hash.bytes().all(|b| b.is_ascii_hexdigit()) && (mode == "-direct" || mode == "-helper")
}

/// Errors of `--pin`, each one line that says what to do.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    /// The directory is not on a BPF filesystem.
    #[error(
        "--pin {0}: not on a BPF filesystem; give a path under a bpffs mount (usually \
         /sys/fs/bpf, e.g. /sys/fs/bpf/observer), or mount one with `mount -t bpf bpf /sys/fs/bpf`"
    )]
    NotBpffs(PathBuf),
    /// Another agent holds the directory.
    #[error("--pin {0}: another observer is using this directory; give each agent its own")]
    Busy(PathBuf),
    /// A set in the directory was pinned with another flow layout, or
    /// with none ([`crate::kernel::load::layout`]): refused before anything
    /// is loaded.
    #[error(
        "--pin: the maps in {} were pinned by a build {}; this build reads flow layout \
         {ours}: restart the build that pinned them to read what they hold, or remove \
         them with `rm -r {}` (the flows they hold are lost), or start without --pin",
        set.display(),
        found.map_or_else(|| "from before pinned sets carried a flow layout".to_string(), |v| format!("with flow layout {v}")),
        set.display()
    )]
    Layout {
        /// The set's directory.
        set: PathBuf,
        /// The layout it was pinned with, if it carries one.
        found: Option<u32>,
        /// This build's.
        ours: u32,
    },
    /// A set's layout map is not one observer pinned: another type or
    /// size, not a BPF map, or a link to nothing
    /// ([`crate::kernel::load::layout`]).
    #[error(
        "--pin: {} is {what}, not the flow layout map observer pins (an array of one 4-byte \
         value), so the flows in {} cannot be read safely: remove them with `rm -r {}` (the \
         flows they hold are lost), or start without --pin",
        path.display(),
        set.display(),
        set.display()
    )]
    BadLayout {
        /// The layout map's path.
        path: PathBuf,
        /// The set's directory.
        set: PathBuf,
        /// What it is instead.
        what: String,
    },
    /// A filesystem or bpf(2) call failed.
    #[error("--pin {path}: {what}: {error}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The OS error.
        error: std::io::Error,
    },
}

fn io(path: &Path, what: &'static str) -> impl FnOnce(std::io::Error) -> PinError {
    let path = path.to_path_buf();
    move |error| PinError::Io { path, what, error }
}

/// The name of the set loaded from `object` with `settings` (the offsets
/// and load-time values, as bytes) and socket reads `direct` or not: a hash
/// of both, in hex, then `-direct` or `-helper`. A hash is enough: a
/// collision would need two builds that differ in their programs yet hash
/// alike, and the standard library's hasher, fixed for one binary, is what
/// one binary compares with itself (another binary that hashes otherwise
/// only replaces the set, which is safe).
pub fn set_name(object: &[u8], settings: &[u8], direct: bool) -> String {
    #[allow(
        deprecated,
        reason = "SipHasher with fixed keys: the same bytes give the same name in every run of one binary, which DefaultHasher does not promise"
    )]
    let mut h = std::hash::SipHasher::new();
    object.hash(&mut h);
    settings.hash(&mut h);
    format!(
        "{:016x}-{}",
        h.finish(),
        if direct { "direct" } else { "helper" }
    )
}

/// `DIR` locked for this agent, created if missing.
pub struct PinDir {
    path: PathBuf,
    /// Holds the `flock`; released when the agent exits, however it exits.
    _lock: File,
}

impl PinDir {
    /// Creates `path` if missing (its parent must be on bpffs), checks it
    /// is on bpffs and takes it for this agent.
    ///
    /// # Errors
    /// [`PinError::NotBpffs`], [`PinError::Busy`], or the failed call.
    pub fn open(path: &Path) -> Result<PinDir, PinError> {
        if !path.exists() {
            // A bare name's parent is the current directory.
            let parent = path.parent().map(|p| {
                if p.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    p
                }
            });
            if parent.is_some_and(|p| !p.exists()) {
                return Err(PinError::Io {
                    path: path.to_path_buf(),
                    what: "its parent directory does not exist (create it, on a bpffs mount)",
                    error: std::io::ErrorKind::NotFound.into(),
                });
            }
            if !parent.is_some_and(is_bpffs) {
                return Err(PinError::NotBpffs(path.to_path_buf()));
            }
            std::fs::create_dir(path).map_err(io(path, "cannot create the directory"))?;
        } else if !path.is_dir() {
            return Err(PinError::Io {
                path: path.to_path_buf(),
                what: "not a directory (give a directory of its own for observer's pins)",
                error: std::io::ErrorKind::AlreadyExists.into(),
            });
        }
        if !is_bpffs(path) {
            return Err(PinError::NotBpffs(path.to_path_buf()));
        }
        let lock = File::open(path).map_err(io(path, "cannot open the directory"))?;
        // SAFETY: flock on an fd this function owns.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
                PinError::Busy(path.to_path_buf())
            } else {
                PinError::Io {
                    path: path.to_path_buf(),
                    what: "cannot lock the directory",
                    error: e,
                }
            });
        }
        Ok(PinDir {
            path: path.to_path_buf(),
            _lock: lock,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directories in `DIR` whose names `keep` accepts, sorted.
    fn dirs(&self, keep: impl Fn(&str) -> bool) -> Result<Vec<String>, PinError> {
        let mut names: Vec<String> = std::fs::read_dir(&self.path)
            .map_err(io(&self.path, "cannot list the directory"))?
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| keep(n))
            .collect();
        names.sort();
        Ok(names)
    }

    /// The sets in the directory (named as [`set_name`] names them).
    ///
    /// # Errors
    /// The directory cannot be listed.
    pub fn sets(&self) -> Result<Vec<String>, PinError> {
        self.dirs(is_set_name)
    }

    /// Removes what an agent killed while pinning left: sets not yet
    /// renamed into place (their links detach as they go).
    ///
    /// # Errors
    /// A leftover that cannot be removed.
    pub fn remove_partial(&self) -> Result<(), PinError> {
        for name in self.dirs(|n| n.starts_with(PARTIAL_PREFIX))? {
            let p = self.path.join(&name);
            remove_set(&p)?;
            log::info!(
                "removed {}: a set an agent was killed while pinning",
                p.display()
            );
        }
        Ok(())
    }

    /// Creates the directory set `name` is pinned in, under its temporary
    /// name; [`PinDir::commit_set`] gives it its own.
    ///
    /// # Errors
    /// The directory cannot be created.
    pub fn create_set(&self, name: &str) -> Result<PathBuf, PinError> {
        let p = self.path.join(format!("{PARTIAL_PREFIX}{name}"));
        std::fs::create_dir(&p).map_err(io(&p, "cannot create the set's directory"))?;
        Ok(p)
    }

    /// Renames the whole set at `partial` (from [`PinDir::create_set`]) to
    /// `name`, where the next agent looks for it.
    ///
    /// # Errors
    /// The rename failed.
    pub fn commit_set(&self, partial: &Path, name: &str) -> Result<(), PinError> {
        std::fs::rename(partial, self.path.join(name))
            .map_err(io(partial, "cannot rename the set into place"))
    }
}

/// Removes set directory `set`: links first (each detaches its program as
/// its pin goes, unless an fd still holds it), then programs and maps.
///
/// # Errors
/// A pin that cannot be removed.
pub fn remove_set(set: &Path) -> Result<(), PinError> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(set)
        .map_err(io(set, "cannot list the set"))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    // Links first.
    entries.sort_by_key(|p| {
        !p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(LINK_PREFIX))
    });
    for p in entries {
        std::fs::remove_file(&p).map_err(io(&p, "cannot remove the pin"))?;
    }
    std::fs::remove_dir(set).map_err(io(set, "cannot remove the set's directory"))
}

/// Whether `path` is on a BPF filesystem.
pub fn is_bpffs(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt as _;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statfs fills the zeroed struct; `c` is a valid C string.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        libc::statfs(c.as_ptr(), &raw mut st) == 0 && st.f_type as i64 == BPF_FS_MAGIC
    }
}

/// An fd of the BPF object pinned at `path` (`BPF_OBJ_GET`).
///
/// # Errors
/// The OS error: no such pin, or not permitted.
pub fn obj_get(path: &Path) -> std::io::Result<OwnedFd> {
    let fd = obj(BPF_OBJ_GET, path, 0)?;
    // SAFETY: the kernel returned a new fd that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Pins the BPF object `fd` (a link aya did not make) at `path`
/// (`BPF_OBJ_PIN`).
///
/// # Errors
/// The OS error: the path exists, is not on bpffs, or not permitted.
pub fn obj_pin(fd: std::os::fd::BorrowedFd<'_>, path: &Path) -> std::io::Result<()> {
    obj(BPF_OBJ_PIN, path, fd.as_raw_fd() as u32).map(|_| ())
}

/// `bpf(cmd)` with the `BPF_OBJ_*` member of `union bpf_attr`: `path`
/// and, to pin, the object's fd. Returns what the call returned.
fn obj(cmd: libc::c_long, path: &Path, bpf_fd: u32) -> std::io::Result<i32> {
    use std::os::unix::ffi::OsStrExt as _;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    /// The `BPF_OBJ_*` member of `union bpf_attr`.
    #[repr(C)]
    struct ObjAttr {
        pathname: u64,
        bpf_fd: u32,
        file_flags: u32,
        path_fd: i32,
        _pad: u32,
    }
    let mut attr = ObjAttr {
        pathname: c.as_ptr() as u64,
        bpf_fd,
        file_flags: 0,
        path_fd: 0,
        _pad: 0,
    };
    // SAFETY: `attr` is a valid bpf_attr prefix pointing at a C string that
    // outlives the call.
    let ret = unsafe { libc::syscall(libc::SYS_bpf, cmd, &raw mut attr, size_of::<ObjAttr>()) };
    if ret < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(ret as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_is_named_by_what_it_was_loaded_from() {
        let a = set_name(b"object", b"settings", true);
        assert_eq!(a, set_name(b"object", b"settings", true));
        assert!(a.ends_with("-direct") && a.len() == 16 + 7, "{a}");
        assert_ne!(a, set_name(b"object2", b"settings", true));
        assert_ne!(a, set_name(b"object", b"settings2", true));
        assert!(set_name(b"object", b"settings", false).ends_with("-helper"));
    }

    #[test]
    fn only_set_names_are_sets() {
        assert!(is_set_name(&set_name(b"o", b"s", true)));
        assert!(is_set_name(&set_name(b"o", b"s", false)));
        for other in [
            "cilium",
            "tc",
            "0123456789abcdef",
            "0123456789abcdef-other",
            "0123456789abcdeg-direct",
            "partial-0123456789abcdef-direct",
            "",
        ] {
            assert!(!is_set_name(other), "{other}");
        }
    }

    #[test]
    fn only_bpffs_is_bpffs() {
        assert!(!is_bpffs(Path::new("/")));
        assert!(!is_bpffs(Path::new("/nonexistent/x")));
        assert!(matches!(
            PinDir::open(Path::new("/tmp/observer-not-bpffs")),
            Err(PinError::NotBpffs(_))
        ));
    }
}
