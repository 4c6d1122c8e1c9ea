//! Named network namespaces (`ip netns`): creation, deletion, entering one
//! from a thread, finding the processes inside one, and sweeping away
//! namespaces left behind by processes that died.

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::ErrorKind;
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// Every namespace this crate creates is named `pe-<pid>-<n>-<a|b|s>`: the
/// two sides of path number `n`, or standalone namespace number `n`
/// ([`Namespace::standalone`]).
pub const NAME_PREFIX: &str = "pe-";

/// Where `ip netns` keeps its bind-mounted namespace files.
pub const NETNS_DIR: &str = "/run/netns";

/// Names of the namespaces this process currently owns. A name with this
/// process's pid that is not in here was left by an earlier process that had
/// the same pid, and is stale.
static LIVE: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

fn live() -> std::sync::MutexGuard<'static, BTreeSet<String>> {
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits (up to 2 s) until a UDP socket bound to `local` can be connected to
/// `peer`: the address is assigned and a route to `peer` exists. Must run on
/// a thread inside the namespace ([`Namespace::run`]). An IPv6 address gets
/// its routes from the kernel's addrconf work queue after `ip addr add`
/// returns (even with `nodad`), so a connect right after it can fail with
/// ENETUNREACH; this waits that out.
///
/// # Errors
/// The last bind or connect error once 2 s have passed.
pub fn wait_routable(local: IpAddr, peer: IpAddr) -> std::io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let attempt = UdpSocket::bind(SocketAddr::new(local, 0))
            .and_then(|s| s.connect(SocketAddr::new(peer, 9)));
        match attempt {
            Ok(()) => return Ok(()),
            Err(e) if Instant::now() >= deadline => return Err(e),
            Err(_) => thread::sleep(Duration::from_millis(2)),
        }
    }
}

/// Connects a TCP stream to `to`, trying again (up to 2 s) while the route
/// is missing (ENETUNREACH, EHOSTUNREACH). Must run on a thread inside the
/// namespace. [`wait_routable`] alone once let a TCP connect to a fresh
/// IPv6 loopback address fail with ENETUNREACH right after its UDP probe
/// had succeeded (a CI run, 2026-12-05): addrconf's work can still be
/// replacing the address's routes then. A connection refused or any other
/// error returns at once.
///
/// # Errors
/// The connect error: at once for any but the two above, else the last
/// one once 2 s have passed.
pub fn connect_routable(to: SocketAddr) -> std::io::Result<TcpStream> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        match TcpStream::connect(to) {
            Ok(s) => return Ok(s),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::NetworkUnreachable | ErrorKind::HostUnreachable
                ) && Instant::now() < deadline =>
            {
                thread::sleep(Duration::from_millis(2))
            }
            Err(e) => return Err(e),
        }
    }
}

/// Runs `ip` with `args`; returns its standard output, or an error with its standard error.
pub(crate) fn ip(args: &[&str]) -> Result<String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| Error::io(format!("run ip {}", args.join(" ")), e))?;
    if !out.status.success() {
        return Err(Error::Command {
            command: format!("ip {}", args.join(" ")),
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The file `ip netns` mounts for namespace `name`.
pub fn netns_path(name: &str) -> PathBuf {
    PathBuf::from(NETNS_DIR).join(name)
}

/// The inode and device of a namespace file (what identifies the namespace).
fn ns_id(path: &std::path::Path) -> Result<(u64, u64)> {
    let meta = fs::metadata(path).map_err(|e| Error::io(format!("stat {}", path.display()), e))?;
    Ok((meta.ino(), meta.dev()))
}

/// Numbers of standalone namespaces ([`Namespace::standalone`]).
static NEXT_STANDALONE: AtomicU32 = AtomicU32::new(0);

/// A named network namespace that is deleted (after killing every process
/// still inside it) when this value is dropped, even while unwinding from a
/// panic.
#[derive(Debug)]
pub struct Namespace {
    name: String,
    inode: u64,
    dev: u64,
}

impl Namespace {
    /// A namespace of its own, `pe-<pid>-<n>-s`, with only its loopback,
    /// which is up: for a test that needs no path, only traffic that no
    /// other test sees. Sweeps away stale namespaces first, as
    /// [`crate::Path::new`] does. Needs root.
    pub fn standalone() -> Result<Self> {
        sweep_stale();
        let n = NEXT_STANDALONE.fetch_add(1, Ordering::Relaxed);
        let ns = Namespace::create(&make_name(std::process::id(), n, "s"))?;
        ip(&["-n", ns.name(), "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// Creates namespace `name` with `ip netns add`.
    pub(crate) fn create(name: &str) -> Result<Self> {
        // Registered before it exists, so that a concurrent sweep in this
        // process never takes it for a leftover.
        live().insert(name.to_owned());
        if let Err(e) = ip(&["netns", "add", name]) {
            live().remove(name);
            return Err(e);
        }
        // From here on the guard owns it, so a failing stat still deletes it.
        let mut ns = Namespace {
            name: name.to_owned(),
            inode: 0,
            dev: 0,
        };
        (ns.inode, ns.dev) = ns_id(&netns_path(name))?;
        Ok(ns)
    }

    /// The namespace's name as `ip netns list` shows it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The namespace's inode number (nsfs), as `stat /run/netns/NAME` reports.
    pub fn inode(&self) -> u64 {
        self.inode
    }

    /// Runs `f` on a new thread that has joined this namespace; see [`run_in_netns`].
    pub fn run<F, R>(&self, f: F) -> Result<R>
    where
        F: FnOnce() -> R + Send,
        R: Send,
    {
        run_in_netns(&self.name, f)
    }

    /// SIGKILLs every process (other than this one) whose network namespace is this one.
    pub(crate) fn kill_processes(&self) {
        kill_processes_in(self.inode, self.dev);
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        self.kill_processes();
        // Errors cannot be reported from drop; a leftover is swept by the next creator.
        let _ = ip(&["netns", "delete", &self.name]);
        live().remove(&self.name);
    }
}

/// Runs `f` on a new thread that has first entered network namespace `name`
/// (`setns(CLONE_NEWNET)` on `/run/netns/NAME`) and returns its result.
/// Sockets created by `f` stay in that namespace wherever they are used later.
/// A panic in `f` is resumed on the calling thread.
pub fn run_in_netns<F, R>(name: &str, f: F) -> Result<R>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    let path = netns_path(name);
    let file = File::open(&path).map_err(|e| Error::io(format!("open {}", path.display()), e))?;
    thread::scope(|scope| {
        let handle = thread::Builder::new()
            .name(format!("netns-{name}"))
            .spawn_scoped(scope, move || {
                // SAFETY: `file` is an open nsfs file; setns only changes this thread's namespace.
                let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                if rc != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                drop(file);
                Ok(f())
            })
            .map_err(|e| Error::io("spawn a thread", e))?;
        match handle.join() {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => Err(Error::io(format!("setns into {name}"), e)),
            Err(payload) => std::panic::resume_unwind(payload),
        }
    })
}

/// Whether process `pid` exists and has not exited. A zombie (exited but not
/// yet reaped, e.g. a killed process whose new parent reaps slowly) counts as dead.
fn pid_alive(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the first field after the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| !matches!(state, 'Z' | 'X' | 'x')),
        Err(_) => {
            // No /proc entry visible: fall back to asking the kernel.
            // SAFETY: kill with signal 0 only checks for existence and permission.
            let rc = unsafe { libc::kill(pid, 0) };
            rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
        }
    }
}

/// SIGKILLs every process other than this one whose network namespace has
/// inode `inode` on device `dev`.
fn kill_processes_in(inode: u64, dev: u64) {
    let me = std::process::id();
    let Ok(dir) = fs::read_dir("/proc") else {
        return;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(meta) = fs::metadata(format!("/proc/{pid}/ns/net")) else {
            continue;
        };
        if meta.ino() == inode
            && meta.dev() == dev
            && let Ok(pid) = i32::try_from(pid)
        {
            // SAFETY: plain kill(2) of a pid we just found in that namespace.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// Parses `pe-<pid>-<n>-<side>` into `(pid, n)`; `None` for other names.
pub(crate) fn parse_name(name: &str) -> Option<(i32, u32)> {
    let rest = name.strip_prefix(NAME_PREFIX)?;
    let mut parts = rest.split('-');
    let pid = parts.next()?.parse().ok()?;
    let n = parts.next()?.parse().ok()?;
    let side = parts.next()?;
    if !matches!(side, "a" | "b" | "s") || parts.next().is_some() {
        return None;
    }
    Some((pid, n))
}

/// The name of side `side` ("a" or "b") of path number `n` of process
/// `pid`, or ("s") of its standalone namespace number `n`.
pub(crate) fn make_name(pid: u32, n: u32, side: &str) -> String {
    format!("{NAME_PREFIX}{pid}-{n}-{side}")
}

/// Deletes namespaces named `pe-<pid>-<n>-<a|b|s>` whose creating process `pid`
/// no longer exists (left behind by a killed process), or whose pid is this
/// process's but which this process did not create (an earlier process with
/// the same pid), after killing any processes still inside them. Returns the names deleted. Errors on single
/// namespaces are ignored (another process may be sweeping at the same time).
pub fn sweep_stale() -> Vec<String> {
    let Ok(dir) = fs::read_dir(NETNS_DIR) else {
        return Vec::new();
    };
    let me = std::process::id();
    let mut deleted = Vec::new();
    for entry in dir.flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let Some((pid, _)) = parse_name(&name) else {
            continue;
        };
        let stale = if u32::try_from(pid).ok() == Some(me) {
            !live().contains(&name)
        } else {
            !pid_alive(pid)
        };
        if !stale {
            continue;
        }
        if let Ok((inode, dev)) = ns_id(&entry.path()) {
            kill_processes_in(inode, dev);
        }
        if ip(&["netns", "delete", &name]).is_ok() {
            deleted.push(name);
        }
    }
    deleted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let n = make_name(4242, 7, "a");
        assert_eq!(n, "pe-4242-7-a");
        assert_eq!(parse_name(&n), Some((4242, 7)));
        assert_eq!(parse_name("pe-4242-7-b"), Some((4242, 7)));
        assert_eq!(parse_name(&make_name(4242, 7, "s")), Some((4242, 7)));
        assert_eq!(parse_name("pe-4242-7-c"), None);
        assert_eq!(parse_name("pe-x-7-a"), None);
        assert_eq!(parse_name("pe-1-2-a-b"), None);
        assert_eq!(parse_name("other"), None);
    }

    #[test]
    fn own_pid_is_alive() {
        assert!(pid_alive(i32::try_from(std::process::id()).unwrap()));
    }

    #[test]
    fn zombies_and_reaped_children_are_dead() {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = i32::try_from(child.id()).unwrap();
        // Exited but not reaped: a zombie.
        let start = std::time::Instant::now();
        while pid_alive(pid) && start.elapsed() < std::time::Duration::from_secs(5) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!pid_alive(pid));
        child.wait().unwrap();
        assert!(!pid_alive(pid));
    }
}
