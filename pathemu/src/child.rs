//! A guard for a child process that kills it when dropped.

use std::io;
use std::process::{Child, Command, ExitStatus, Output};

use crate::error::{Error, Result};

/// Owns a running child process and SIGKILLs and reaps it on drop (also
/// while unwinding from a panic), so a test never leaves e.g. an `iperf3 -s`
/// behind. Dropping the [`crate::Path`] also kills every process still
/// inside its namespaces.
#[derive(Debug)]
pub struct ChildGuard {
    child: Option<Child>,
}

impl ChildGuard {
    /// Spawns `cmd` and guards the resulting process.
    pub fn spawn(cmd: &mut Command) -> Result<ChildGuard> {
        let child = cmd
            .spawn()
            .map_err(|e| Error::io(format!("spawn {:?}", cmd.get_program()), e))?;
        Ok(ChildGuard { child: Some(child) })
    }

    /// The child's process id.
    pub fn id(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// The guarded child, e.g. to take its `stdout` or call `try_wait`.
    pub fn child_mut(&mut self) -> Option<&mut Child> {
        self.child.as_mut()
    }

    /// Whether the child has not exited yet (false once reaped, or when its
    /// state cannot be read).
    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// What the child wrote to its piped stderr, once it has exited (empty
    /// if stderr was not piped or was taken).
    pub fn stderr_after_exit(&mut self) -> String {
        use std::io::Read as _;
        let mut text = String::new();
        if let Some(e) = self.child.as_mut().and_then(|c| c.stderr.as_mut()) {
            let _ = e.read_to_string(&mut text);
        }
        text
    }

    /// Sends signal `sig` (SIGSTOP, SIGCONT, SIGTERM, ...) without waiting.
    pub fn signal(&self, sig: i32) -> io::Result<()> {
        let pid = self.id();
        // pid 0 would signal our own process group.
        if pid == 0 {
            return Err(io::Error::other("child already reaped"));
        }
        let pid = i32::try_from(pid).map_err(io::Error::other)?;
        // SAFETY: kill(2) on our own child's pid, not yet reaped.
        if unsafe { libc::kill(pid, sig) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Sends signal `sig` and waits for the exit, collecting its piped output.
    pub fn stop(self, sig: i32) -> io::Result<Output> {
        self.signal(sig)?;
        self.wait_with_output()
    }

    /// Waits for the child to exit by itself, collecting its piped output.
    pub fn wait_with_output(mut self) -> io::Result<Output> {
        match self.child.take() {
            Some(child) => child.wait_with_output(),
            None => Err(io::Error::other("child already reaped")),
        }
    }

    /// Kills the child now (SIGKILL) and reaps it; returns its exit status.
    pub fn kill(mut self) -> io::Result<ExitStatus> {
        match self.child.take() {
            Some(mut child) => {
                // Fails only if it already exited, which wait() then reports.
                let _ = child.kill();
                child.wait()
            }
            None => Err(io::Error::other("child already reaped")),
        }
    }
}

impl From<Child> for ChildGuard {
    fn from(child: Child) -> Self {
        ChildGuard { child: Some(child) }
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_kills_child() {
        let guard = ChildGuard::spawn(Command::new("sleep").arg("30")).unwrap();
        let pid = guard.id();
        assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
        drop(guard);
        // Reaped, so the pid is gone (unless reused, which is vanishingly unlikely here).
        assert!(!std::path::Path::new(&format!("/proc/{pid}/ns")).exists());
    }

    #[test]
    fn stop_signals_and_reaps() {
        let mut guard = ChildGuard::spawn(
            Command::new("sleep")
                .arg("30")
                .stderr(std::process::Stdio::piped()),
        )
        .unwrap();
        assert!(guard.running());
        guard.signal(libc::SIGSTOP).unwrap();
        guard.signal(libc::SIGCONT).unwrap();
        let out = guard.stop(libc::SIGTERM).unwrap();
        use std::os::unix::process::ExitStatusExt as _;
        assert_eq!(out.status.signal(), Some(libc::SIGTERM));
        let mut done = ChildGuard::spawn(
            Command::new("sh")
                .args(["-c", "echo oops >&2"])
                .stderr(std::process::Stdio::piped()),
        )
        .unwrap();
        while done.running() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(done.stderr_after_exit(), "oops\n");
    }

    #[test]
    fn wait_with_output_collects() {
        let out = ChildGuard::spawn(
            Command::new("echo")
                .arg("hi")
                .stdout(std::process::Stdio::piped()),
        )
        .unwrap()
        .wait_with_output()
        .unwrap();
        assert_eq!(out.stdout, b"hi\n");
    }
}
