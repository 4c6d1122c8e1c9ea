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
