//! The observer binary as a child process: its path, a guard that kills
//! it on drop, and its memory.

use std::process::{Child, Command, Output};

/// The observer binary cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_observer");

/// A child process killed on drop (a failing test leaves nothing running).
pub struct Kill(Option<Child>);

impl Kill {
    /// Spawns `cmd`.
    pub fn spawn(cmd: &mut Command) -> Kill {
        Kill(Some(cmd.spawn().unwrap()))
    }

    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.0.as_ref().map_or(0, Child::id)
    }

    /// Whether the child has not exited yet.
    pub fn running(&mut self) -> bool {
        self.0
            .as_mut()
            .is_some_and(|c| c.try_wait().unwrap().is_none())
    }

    /// What the child wrote to its piped stderr, once it has exited (empty
    /// if stderr was not piped).
    pub fn stderr_after_exit(&mut self) -> String {
        use std::io::Read as _;
        let mut text = String::new();
        if let Some(e) = self.0.as_mut().and_then(|c| c.stderr.as_mut()) {
            let _ = e.read_to_string(&mut text);
        }
        text
    }

    /// Sends `sig` (SIGSTOP, SIGCONT, ...) without waiting.
    pub fn signal(&self, sig: i32) {
        let pid = self.pid();
        // pid 0 would signal our own process group.
        assert_ne!(pid, 0, "no child to signal");
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(pid as i32, sig) };
    }

    /// Sends `sig` and waits for the exit.
    pub fn stop(self, sig: i32) -> Output {
        self.signal(sig);
        self.wait()
    }

    /// Waits for the exit; the output not yet read.
    pub fn wait(mut self) -> Output {
        self.0.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Kill {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// VmRSS of `pid` in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}
