//! From a flow's cgroup id to its workload: cgroup v2 ids are the inode
//! numbers of the cgroup directories (kernel/cgroup/cgroup.c
//! `cgroup_id()`, kernfs inode numbers), so walking the hierarchy maps one
//! to the other; the path then names the unit, container and pod
//! ([`Workload::from_path`]).
//!
//! The hierarchy is found in `/proc/self/mountinfo` (type `cgroup2`:
//! `/sys/fs/cgroup` on most hosts, `/sys/fs/cgroup/unified` in hybrid
//! mode), or given (`--cgroup-root`: a pod sees only its own cgroup
//! namespace unless the host's hierarchy is mounted in). An id not found
//! triggers a new walk, at most one every [`RESCAN_EVERY`]; ids still not
//! found stay unresolved (empty) until a later walk finds them.
//!
//! Walking rather than `open_by_handle_at(2)` (which takes a cgroup id as a
//! file handle): that needs `CAP_DAC_READ_SEARCH`, and the agent drops
//! every capability once attached.

use std::{
    collections::{HashMap, HashSet},
    os::unix::fs::MetadataExt as _,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};

use crate::model::workload::Workload;

/// The least time between two walks of the hierarchy.
pub const RESCAN_EVERY: Duration = Duration::from_secs(2);

/// Deepest directory a walk descends to (systemd and Kubernetes nest 5-7).
const MAX_DEPTH: usize = 32;

/// The cgroup2 mount point in a `/proc/self/mountinfo` text.
pub fn cgroup2_mount(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|l| {
        // Fields: id parent major:minor root mountpoint options ... - fstype source super.
        let (left, right) = l.split_once(" - ")?;
        (right.split_whitespace().next()? == "cgroup2")
            .then(|| left.split_whitespace().nth(4).map(PathBuf::from))?
    })
}

/// Cgroup id to workload, cached.
#[derive(Debug)]
pub struct Cgroups {
    root: Option<PathBuf>,
    known: HashMap<u64, Arc<Workload>>,
    /// Ids the last walk did not find.
    missing: HashSet<u64>,
    last_walk: Option<Instant>,
}

impl Cgroups {
    /// A resolver over the hierarchy at `root`, or, when `None`, the
    /// cgroup2 mount of this process's mount namespace (none found:
    /// nothing resolves).
    pub fn new(root: Option<PathBuf>) -> Cgroups {
        let root = root.or_else(|| {
            std::fs::read_to_string("/proc/self/mountinfo")
                .ok()
                .and_then(|m| cgroup2_mount(&m))
        });
        Cgroups {
            root,
            known: HashMap::new(),
            missing: HashSet::new(),
            last_walk: None,
        }
    }

    /// The hierarchy walked, if any.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// The workload of cgroup `id`, walking the hierarchy again when the
    /// id is new and the last walk is older than [`RESCAN_EVERY`].
    pub fn resolve(&mut self, id: u64) -> Option<Arc<Workload>> {
        if let Some(w) = self.known.get(&id) {
            return Some(w.clone());
        }
        let stale = self.last_walk.is_none_or(|t| t.elapsed() >= RESCAN_EVERY);
        if self.missing.contains(&id) && !stale {
            return None;
        }
        if stale {
            self.walk();
        }
        let w = self.known.get(&id).cloned();
        if w.is_none() {
            self.missing.insert(id);
        }
        w
    }

    /// Maps every directory's inode to its workload (and forgets the
    /// cgroups removed since the last walk).
    fn walk(&mut self) {
        self.last_walk = Some(Instant::now());
        self.missing.clear();
        let Some(root) = self.root.clone() else {
            return;
        };
        // Only the cgroups that exist now are kept: a host that creates
        // and removes containers all day does not grow this map.
        let mut old = std::mem::take(&mut self.known);
        let mut stack = vec![(root.clone(), 0usize)];
        while let Some((dir, depth)) = stack.pop() {
            let Ok(meta) = std::fs::metadata(&dir) else {
                continue;
            };
            let ino = meta.ino();
            // The last walk's entry when there is one: cgroup ids are not
            // reused, so an id names one path for good.
            let w = old.remove(&ino).unwrap_or_else(|| {
                let rel = dir.strip_prefix(&root).unwrap_or(&dir);
                Arc::new(Workload::from_path(&format!("/{}", rel.display())))
            });
            self.known.insert(ino, w);
            if depth >= MAX_DEPTH {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push((e.path(), depth + 1));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_cgroup2_mount() {
        let hybrid = "25 20 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n\
                      26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw\n\
                      27 25 0:24 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n";
        assert_eq!(
            cgroup2_mount(hybrid),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        let unified = "30 1 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw\n";
        assert_eq!(
            cgroup2_mount(unified),
            Some(PathBuf::from("/sys/fs/cgroup"))
        );
        assert_eq!(cgroup2_mount("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"), None);
    }

    #[test]
    fn resolves_directory_inodes_to_their_paths() {
        // Any directory tree walks the same way as a cgroup hierarchy.
        let root = std::env::temp_dir().join(format!("observer-cgroups-{}", std::process::id()));
        let unit = root.join("system.slice").join("nginx.service");
        std::fs::create_dir_all(&unit).unwrap();
        let ino = std::fs::metadata(&unit).unwrap().ino();
        let mut c = Cgroups::new(Some(root.clone()));
        let w = c.resolve(ino).unwrap();
        assert_eq!(w.cgroup, "/system.slice/nginx.service");
        assert_eq!(w.unit, "nginx.service");
        // A new one before the rescan interval has passed is not found yet.
        let late = root.join("system.slice").join("late.service");
        std::fs::create_dir_all(&late).unwrap();
        let late_ino = std::fs::metadata(&late).unwrap().ino();
        assert!(c.resolve(late_ino).is_none());
        c.last_walk = Some(Instant::now() - RESCAN_EVERY);
        assert_eq!(c.resolve(late_ino).unwrap().unit, "late.service");
        std::fs::remove_dir_all(&root).unwrap();
    }
}
