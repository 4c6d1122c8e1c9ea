//! A terminal for the tests of `observer top`: a detached tmux session.

use std::{
    process::Command,
    time::{Duration, Instant},
};

/// A detached tmux session, killed on drop (even when the test panics).
///
/// Each session has a server of its own (`tmux -L NAME`): on a shared
/// server, one test's last session ending stops the server while another
/// test's `new-session` is connecting to it ("server exited unexpectedly").
pub struct Tmux {
    name: String,
}

/// `tmux -L socket`: a command for the server of session `socket`.
fn tmux_on(socket: &str) -> Command {
    let mut c = Command::new("tmux");
    c.args(["-L", socket]);
    c
}

impl Tmux {
    pub fn start(tag: &str, width: u16, height: u16, command: &[&str]) -> Tmux {
        let name = format!("obs-top-{}-{tag}", std::process::id());
        let (w, h) = (width.to_string(), height.to_string());
        let mut args = vec!["new-session", "-d", "-s", &name, "-x", &w, "-y", &h];
        args.extend_from_slice(command);
        let ok = tmux_on(&name).args(&args).status().unwrap();
        assert!(ok.success(), "tmux new-session");
        Tmux { name }
    }

    pub fn tmux(&self, args: &[&str]) -> std::process::Output {
        tmux_on(&self.name).args(args).output().unwrap()
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
        // The server is this session's alone, so ending it ends the session.
        let _ = tmux_on(&self.name).args(["kill-server"]).output();
    }
}
