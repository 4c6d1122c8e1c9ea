//! From a flow's network namespace inode to its `ip netns` name.
//!
//! `ip netns add NAME` bind-mounts the new namespace on `/run/netns/NAME`
//! (`/var/run/netns` on older iproute2 builds; the same directory where
//! `/var/run` links to `/run`), so `stat` of each entry gives the
//! namespace's inode, the number observer already has per flow
//! ([`crate::model::flow::Flow::netns`]). Reading the directories maps one
//! to the other. Namespaces come and go while observer runs, so a
//! namespace not known yet triggers a new read, at most one per poll
//! ([`NetnsNames::next_poll`]); one known to have no name is asked about
//! again only after [`RESCAN_EVERY`]. Most namespaces have no name (the
//! host's own, a container's): their flows have none.
//!
//! A namespace with several names (bind-mounted twice, or `ip netns
//! attach`ed under another) goes by the first in byte order. An entry
//! whose bind mount is gone (a leftover file) is a file of the directory's
//! own filesystem, whose inode names no namespace.

use std::{
    collections::{HashMap, HashSet},
    os::unix::fs::MetadataExt as _,
    path::PathBuf,
    sync::{Arc, OnceLock},
    time::{Duration, Instant},
};

/// Where `ip netns` keeps its names: iproute2's `NETNS_RUN_DIR`, in both
/// the spellings distributions build it with.
pub const NETNS_DIRS: [&str; 2] = ["/run/netns", "/var/run/netns"];

/// The least time before a namespace found without a name is looked up
/// again (a name given to a namespace that already had flows, as `ip netns
/// attach` does).
pub const RESCAN_EVERY: Duration = Duration::from_secs(5);

/// The inode of the host's own network namespace (init's,
/// `/proc/1/ns/net`), read once; None where it cannot be read.
pub fn host_netns() -> Option<u32> {
    static HOST: OnceLock<Option<u32>> = OnceLock::new();
    *HOST.get_or_init(|| {
        let meta = std::fs::metadata("/proc/1/ns/net").ok()?;
        u32::try_from(meta.ino()).ok()
    })
}

/// What to say of a filter's `netns = NAME` where no namespace is named
/// `name` now: `observer flows` prints it at start, `top` in its header.
pub fn no_namespace_named(name: &str) -> String {
    format!(
        "no network namespace is named {name:?} (ip netns list): the filter's \
         'netns = {name}' selects no flow until one is"
    )
}

/// Namespace inode to `ip netns` name, cached.
#[derive(Clone, Debug)]
pub struct NetnsNames {
    /// The directories read, in order.
    dirs: Vec<PathBuf>,
    /// The names of the last read.
    names: HashMap<u32, Arc<str>>,
    /// Inodes asked about and not named at the last read.
    unnamed: HashSet<u32>,
    /// When the directories were last read.
    last_read: Option<Instant>,
    /// Whether a read is allowed before the next [`NetnsNames::next_poll`].
    may_read: bool,
    /// Reads that changed the names.
    generation: u64,
}

impl Default for NetnsNames {
    fn default() -> Self {
        NetnsNames::in_dirs(NETNS_DIRS.iter().map(PathBuf::from).collect())
    }
}

impl NetnsNames {
    /// A resolver over `dirs` instead of [`NETNS_DIRS`] (a test's own).
    pub fn in_dirs(dirs: Vec<PathBuf>) -> NetnsNames {
        NetnsNames {
            dirs,
            names: HashMap::new(),
            unnamed: HashSet::new(),
            last_read: None,
            may_read: true,
            generation: 0,
        }
    }

    /// A new poll: the directories may be read once more.
    pub fn next_poll(&mut self) {
        self.may_read = true;
    }

    /// The name of namespace `inode`, reading the directories again when
    /// the inode is not known yet (or was unnamed [`RESCAN_EVERY`] ago) and
    /// they were not read since the last [`NetnsNames::next_poll`].
    pub fn name(&mut self, inode: u32) -> Option<Arc<str>> {
        if let Some(n) = self.names.get(&inode) {
            return Some(Arc::clone(n));
        }
        let fresh = self.last_read.is_some_and(|t| t.elapsed() < RESCAN_EVERY);
        if (self.unnamed.contains(&inode) && fresh) || !self.may_read {
            return None;
        }
        self.read();
        let found = self.names.get(&inode).cloned();
        if found.is_none() {
            self.unnamed.insert(inode);
        }
        found
    }

    /// The inode of the namespace named `name` now (reading the
    /// directories afresh), if any: for a word at start-up, not per flow.
    pub fn inode_of(&mut self, name: &str) -> Option<u32> {
        self.read();
        self.names
            .iter()
            .find_map(|(ino, n)| (&**n == name).then_some(*ino))
    }

    /// How many reads changed the names: a caller that gave flows their
    /// names walks them again when it moves.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Reads every directory: each entry's inode (through the bind mount)
    /// and name, the first name in byte order where an inode has several.
    fn read(&mut self) {
        self.may_read = false;
        self.last_read = Some(Instant::now());
        self.unnamed.clear();
        let mut entries: Vec<(String, u32)> = Vec::new();
        for dir in &self.dirs {
            let Ok(list) = std::fs::read_dir(dir) else {
                continue;
            };
            for e in list.flatten() {
                // `ip netns` names are text; another entry is no name of its.
                let Ok(name) = e.file_name().into_string() else {
                    continue;
                };
                let Ok(meta) = std::fs::metadata(e.path()) else {
                    continue;
                };
                // nsfs inodes are 32-bit (`proc_inum`), as the flow's.
                if let Ok(ino) = u32::try_from(meta.ino()) {
                    entries.push((name, ino));
                }
            }
        }
        entries.sort();
        let mut names: HashMap<u32, Arc<str>> = HashMap::new();
        for (name, ino) in entries {
            names.entry(ino).or_insert_with(|| Arc::from(name));
        }
        if names != self.names {
            self.generation += 1;
            self.names = names;
        }
    }
}

/// The name each flow's namespace had when the flow was first seen, by
/// cookie: for a caller that prints flows after they close (`observer
/// flows`). A closed flow's namespace may be gone and its inode given to
/// a namespace made since, so the name the inode has at print time may be
/// another namespace's; the name at first sight is the flow's own.
#[derive(Debug, Default)]
pub struct FirstNames(HashMap<u64, Option<Arc<str>>>);

impl FirstNames {
    /// Notes, for each flow `(cookie, inode)` not seen before, the name
    /// its namespace has now (`names` read at most once: a call is a
    /// poll's).
    pub fn note(&mut self, names: &mut NetnsNames, flows: impl IntoIterator<Item = (u64, u32)>) {
        names.next_poll();
        for (cookie, inode) in flows {
            self.0.entry(cookie).or_insert_with(|| names.name(inode));
        }
    }

    /// The name flow `cookie` (in namespace `inode`) was first seen with,
    /// noted now if it was not seen before.
    pub fn name(&mut self, names: &mut NetnsNames, cookie: u64, inode: u32) -> Option<Arc<str>> {
        self.0
            .entry(cookie)
            .or_insert_with(|| names.name(inode))
            .clone()
    }

    /// Forgets flow `cookie` (printed closed: it will not be asked about again).
    pub fn forget(&mut self, cookie: u64) {
        self.0.remove(&cookie);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory of its own under the temporary one, removed on drop.
    struct Dir(PathBuf);

    impl Dir {
        fn new(tag: &str) -> Dir {
            let d =
                std::env::temp_dir().join(format!("observer-netns-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            Dir(d)
        }

        /// Creates entry `name` and returns its inode (as a namespace's
        /// would be through its bind mount).
        fn add(&self, name: &str) -> u32 {
            let p = self.0.join(name);
            std::fs::write(&p, b"").unwrap();
            u32::try_from(std::fs::metadata(&p).unwrap().ino()).unwrap()
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn names_each_entry_by_its_inode() {
        let d = Dir::new("names");
        let blue = d.add("blue");
        let red = d.add("red");
        let mut n = NetnsNames::in_dirs(vec![d.0.clone()]);
        assert_eq!(n.name(blue).as_deref(), Some("blue"));
        assert_eq!(n.name(red).as_deref(), Some("red"));
        assert_eq!(n.inode_of("red"), Some(red));
        assert_eq!(n.inode_of("green"), None);
        // A second directory (`/var/run/netns` beside `/run/netns`) adds its names.
        let e = Dir::new("names-more");
        let green = e.add("green");
        let mut both = NetnsNames::in_dirs(vec![
            d.0.clone(),
            PathBuf::from("/nonexistent"),
            e.0.clone(),
        ]);
        assert_eq!(both.name(green).as_deref(), Some("green"));
        assert_eq!(both.name(blue).as_deref(), Some("blue"));
    }

    #[test]
    fn an_inode_with_several_names_goes_by_the_first() {
        let d = Dir::new("aliases");
        let ino = d.add("zeta");
        std::fs::hard_link(d.0.join("zeta"), d.0.join("alpha")).unwrap();
        let mut n = NetnsNames::in_dirs(vec![d.0.clone()]);
        assert_eq!(n.name(ino).as_deref(), Some("alpha"));
    }

    #[test]
    fn a_new_namespace_is_read_at_most_once_a_poll() {
        let d = Dir::new("polls");
        let mut n = NetnsNames::in_dirs(vec![d.0.clone()]);
        // Nothing named yet: the first ask reads, and finds nothing.
        assert_eq!(n.name(1), None);
        let gen0 = n.generation();
        let late = d.add("late");
        // Not again within the poll.
        assert_eq!(n.name(late), None);
        n.next_poll();
        assert_eq!(n.name(late).as_deref(), Some("late"));
        assert!(n.generation() > gen0);
        // Known names need no read: the entry may go, the name stays until
        // a read finds it gone.
        std::fs::remove_file(d.0.join("late")).unwrap();
        n.next_poll();
        assert_eq!(n.name(late).as_deref(), Some("late"));
        // An unknown namespace reads again, and forgets the removed name.
        let gen1 = n.generation();
        assert_eq!(n.name(2), None);
        assert!(n.generation() > gen1);
        n.next_poll();
        assert_eq!(n.name(late), None);
    }

    #[test]
    fn an_unnamed_namespace_is_asked_about_again_only_after_the_rescan_time() {
        let d = Dir::new("unnamed");
        let elsewhere = Dir::new("unnamed-elsewhere");
        let ino = elsewhere.add("ns");
        let mut n = NetnsNames::in_dirs(vec![d.0.clone()]);
        assert_eq!(n.name(ino), None);
        // Named later, as `ip netns attach` names a namespace that had
        // flows already: the same inode under a new entry.
        std::fs::hard_link(elsewhere.0.join("ns"), d.0.join("attached")).unwrap();
        n.next_poll();
        assert_eq!(n.name(ino), None, "within the rescan time");
        n.last_read = Some(Instant::now() - RESCAN_EVERY);
        assert_eq!(n.name(ino).as_deref(), Some("attached"));
    }

    #[test]
    fn two_flows_of_one_inode_keep_the_names_they_were_first_seen_with() {
        // Flow 1 is seen in `tmpx`; `tmpx` goes and the kernel gives its
        // inode to `tmpy`, where flow 2 is seen. Flow 1 keeps `tmpx`.
        let d = Dir::new("reused");
        let ino = d.add("tmpx");
        let mut names = NetnsNames::in_dirs(vec![d.0.clone()]);
        let mut first = FirstNames::default();
        first.note(&mut names, [(1, ino)]);
        std::fs::rename(d.0.join("tmpx"), d.0.join("tmpy")).unwrap();
        names.next_poll();
        // An unknown namespace makes the next poll read the names again.
        assert_eq!(names.name(ino + 1), None);
        first.note(&mut names, [(1, ino), (2, ino)]);
        assert_eq!(first.name(&mut names, 1, ino).as_deref(), Some("tmpx"));
        assert_eq!(first.name(&mut names, 2, ino).as_deref(), Some("tmpy"));
        // A flow forgotten and asked about again takes the name of now.
        first.forget(1);
        assert_eq!(first.name(&mut names, 1, ino).as_deref(), Some("tmpy"));
    }
}
