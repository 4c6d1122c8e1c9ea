//! Waiting for another package manager: an install that finds apt's or
//! dpkg's lock held (unattended-upgrades, another shell's `apt-get`) waits
//! for it, saying who holds it, instead of failing with apt's "Could not
//! get lock".
//!
//! apt and dpkg lock with `fcntl` record locks, which `F_GETLK` reports
//! with the holder's pid without taking them.

use std::{fs::OpenOptions, os::fd::AsRawFd as _, path::Path, time::Duration};

/// The locks apt and dpkg take, the frontend's first.
const LOCKS: [&str; 4] = [
    "/var/lib/dpkg/lock-frontend",
    "/var/lib/dpkg/lock",
    "/var/lib/apt/lists/lock",
    "/var/cache/apt/archives/lock",
];

/// apt's own wait for its locks (seconds), for a lock taken between
/// [`wait_free`] and apt's start.
pub const TIMEOUT_OPTION: &str = "DPkg::Lock::Timeout=600";

/// How often a held lock is looked at again.
const POLL: Duration = Duration::from_secs(1);

/// Every how many polls the wait says it is still waiting.
const REMIND: u32 = 30;

/// The pid of the process holding a write lock on `path`, if one does
/// (None also when the file cannot be opened: nobody locks it then).
pub fn holder(path: &Path) -> Option<u32> {
    let file = OpenOptions::new().read(true).write(true).open(path).ok()?;
    // SAFETY: a zeroed flock is a valid value of the plain C struct.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: F_GETLK reads and writes `lock`, a valid flock, on an open fd.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETLK, &raw mut lock) };
    (rc == 0 && lock.l_type != libc::F_UNLCK as libc::c_short)
        .then(|| u32::try_from(lock.l_pid).unwrap_or(0))
}

/// The first of `locks` held, with its holder's pid.
fn held<'a>(locks: &[&'a str]) -> Option<(&'a str, u32)> {
    locks
        .iter()
        .find_map(|l| holder(Path::new(l)).map(|pid| (*l, pid)))
}

/// A process's name (`/proc/PID/comm`), or `?`.
fn comm(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map_or_else(|_| "?".to_string(), |c| c.trim().to_string())
}

/// Returns once none of apt's and dpkg's locks is held, saying while it
/// waits which process holds one (every [`REMIND`] s again); Ctrl-C ends
/// it.
pub fn wait_free() {
    let mut polls = 0u32;
    while let Some((lock, pid)) = held(&LOCKS) {
        if polls.is_multiple_of(REMIND) {
            eprintln!(
                "setup: waiting for {} (pid {pid}) to release {lock}: another package \
                 manager is at work; this goes on by itself when it is done",
                comm(pid)
            );
        }
        polls += 1;
        std::thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn a_lock_another_process_holds_is_seen_with_its_pid() {
        let dir = std::env::temp_dir().join(format!("xtask-apt-lock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("lock");
        std::fs::write(&path, b"").unwrap();
        assert_eq!(holder(&path), None);
        assert_eq!(holder(&dir.join("absent")), None);
        // Python's lockf is fcntl(F_SETLK), as dpkg locks.
        let Ok(mut child) = Command::new("python3")
            .args([
                "-c",
                "import fcntl,sys; f=open(sys.argv[1],'r+'); fcntl.lockf(f, fcntl.LOCK_EX); \
                 print('locked', flush=True); sys.stdin.read()",
            ])
            .arg(&path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
        else {
            eprintln!("no python3: skipped");
            return;
        };
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        assert_eq!(line.trim(), "locked");
        let p = path.to_string_lossy().into_owned();
        assert_eq!(holder(&path), Some(child.id()));
        assert_eq!(
            held(&["/nonexistent/lock", &p]),
            Some((p.as_str(), child.id()))
        );
        drop(child.stdin.take());
        child.wait().unwrap();
        assert_eq!(holder(&path), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
