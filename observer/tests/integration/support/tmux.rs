//! A terminal for the tests of `observer top`: a detached tmux session.

use std::{
    process::Command,
    time::{Duration, Instant},
};

/// A detached tmux session, killed on drop (even when the test panics).
pub struct Tmux {
    name: String,
}

impl Tmux {
    pub fn start(tag: &str, width: u16, height: u16, command: &[&str]) -> Tmux {
        let name = format!("obs-top-{}-{tag}", std::process::id());
        let (w, h) = (width.to_string(), height.to_string());
        let mut args = vec!["new-session", "-d", "-s", &name, "-x", &w, "-y", &h];
        args.extend_from_slice(command);
        let ok = Command::new("tmux").args(&args).status().unwrap();
        assert!(ok.success(), "tmux new-session");
        Tmux { name }
    }

    pub fn tmux(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux").args(args).output().unwrap()
    }

    /// The visible screen.
    pub fn screen(&self) -> String {
        let out = self.tmux(&["capture-pane", "-p", "-t", &self.name]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.name];
        args.extend_from_slice(keys);
        assert!(self.tmux(&args).status.success(), "send-keys {keys:?}");
    }

    /// A tmux format variable of the pane (`alternate_on`, ...).
    pub fn var(&self, name: &str) -> String {
        let fmt = format!("#{{{name}}}");
        let out = self.tmux(&["display-message", "-p", "-t", &self.name, &fmt]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    pub fn alive(&self) -> bool {
        self.tmux(&["has-session", "-t", &self.name])
            .status
            .success()
    }

    /// Waits until `pred` holds on the screen; returns the screen it held on.
    pub fn wait_for(&self, what: &str, timeout: Duration, pred: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + timeout;
        loop {
            let screen = self.screen();
            if pred(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < end,
                "timed out waiting for {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        // Usually gone already; output() keeps tmux's "no server" quiet.
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .output();
    }
}
