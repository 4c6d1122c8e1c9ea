//! The VM's `/init` and how its serial output is read back.
//!
//! Init prints marker lines, `@@vm begin NAME` and `@@vm end NAME rc=N`,
//! around each step; between them a test binary prints libtest's own
//! `test result:` line. The host counts from these alone, so a VM that dies
//! half-way counts every step that did not end as failed.

use std::fmt::Write as _;

/// Marker prefix of every line init prints for the host.
pub const MARK: &str = "@@vm ";

/// The step that runs the observer binary itself; its warning lines are
/// what this kernel cannot provide.
pub const OBSERVER_STEP: &str = "observer-flows";

/// One step init runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Name in the markers and the report.
    pub name: String,
    /// The shell command.
    pub command: String,
    /// Seconds before init kills it.
    pub timeout_s: u64,
}

/// Quotes `s` for the busybox shell.
pub fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The `/init` script: mounts, modules, then each step between markers,
/// then power off (the kernel panics, and qemu exits, if init ever ends).
///
/// `/tmp` and `/run` stay on the initramfs's own root (already a writable
/// tmpfs): a mount there would hide the observer binary when the checkout
/// lives under `/tmp`, as a CI clone may.
pub fn init_script(modules: &[String], steps: &[Step]) -> String {
    let mut s = String::from(
        "#!/bin/busybox sh\n\
         /bin/busybox --install -s /bin\n\
         export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root RUST_LOG_STYLE=never\n\
         mount -t proc proc /proc\n\
         mount -t sysfs sysfs /sys\n\
         mount -t devtmpfs devtmpfs /dev 2>/dev/null\n\
         mkdir -p /root\n\
         ip link set lo up\n",
    );
    let _ = writeln!(s, "echo \"{MARK}kernel $(uname -r)\"");
    for m in modules {
        let q = sh_quote(m);
        let _ = writeln!(s, "insmod {q} || echo \"{MARK}note insmod {m} failed\"");
    }
    for step in steps {
        let _ = writeln!(s, "echo \"{MARK}begin {}\"", step.name);
        let _ = writeln!(
            s,
            "timeout {} sh -c {} 2>&1; echo \"{MARK}end {} rc=$?\"",
            step.timeout_s,
            sh_quote(&step.command),
            step.name
        );
    }
    let _ = writeln!(s, "echo \"{MARK}done\"");
    s.push_str("sync\npoweroff -f\n");
    s
}

/// What one VM run showed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// `uname -r` as the guest printed it.
    pub release: Option<String>,
    pub passed: u64,
    pub failed: u64,
    /// Steps that failed, with why.
    pub failures: Vec<String>,
    /// observer's warning lines (what this kernel cannot provide).
    pub degraded: Vec<String>,
    /// Other notes from the guest (`@@vm note ...`, netem figures).
    pub notes: Vec<String>,
    /// Whether init reached its end.
    pub finished: bool,
}

/// Counts in a libtest summary line
/// (`test result: ok. 7 passed; 0 failed; 0 ignored; ...`).
pub fn libtest_counts(line: &str) -> Option<(u64, u64)> {
    let rest = line.trim().strip_prefix("test result: ")?;
    let num = |key: &str| -> Option<u64> {
        rest.split(';')
            .find_map(|part| part.trim().strip_suffix(key).map(str::trim))
            .and_then(|n| n.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
    };
    Some((num("passed")?, num("failed")?))
}

/// Reads the serial transcript of a run of `steps`. A step counts its
/// libtest results; one without any counts 1 passed (exit 0) or 1 failed.
/// A step that fails without a failed test, or never ends, adds 1 failed.
pub fn parse(transcript: &str, steps: &[Step]) -> Outcome {
    let mut o = Outcome::default();
    let mut current: Option<(String, u64, u64, bool)> = None;
    let mut ended = Vec::new();
    for raw in transcript.lines() {
        let plain = strip_ansi(raw);
        let line = plain.trim_end_matches('\r');
        // Kernel messages or escape codes may precede a marker on its line.
        let Some(at) = line.find(MARK) else {
            if let Some((_, p, f, seen)) = current.as_mut()
                && let Some((tp, tf)) = libtest_counts(line)
            {
                *p += tp;
                *f += tf;
                *seen = true;
            }
            if current.as_ref().is_some_and(|c| c.0 == OBSERVER_STEP) && line.contains(" WARN ") {
                o.degraded.push(warn_text(line));
            }
            continue;
        };
        let m = &line[at + MARK.len()..];
        if let Some(r) = m.strip_prefix("kernel ") {
            o.release = Some(r.trim().to_string());
        } else if let Some(name) = m.strip_prefix("begin ") {
            current = Some((name.trim().to_string(), 0, 0, false));
        } else if let Some(rest) = m.strip_prefix("end ") {
            let (name, rc) = rest.rsplit_once(" rc=").unwrap_or((rest, "?"));
            let rc: i64 = rc.trim().parse().unwrap_or(-1);
            let (p, f, seen) = match current.take() {
                Some((n, p, f, seen)) if n == name.trim() => (p, f, seen),
                _ => (0, 0, false),
            };
            ended.push(name.trim().to_string());
            let (p, mut f) = if seen {
                (p, f)
            } else if rc == 0 {
                (1, 0)
            } else {
                (0, 1)
            };
            if rc != 0 {
                let why = if rc == 124 || rc == 143 {
                    "timed out".to_string()
                } else {
                    format!("exit status {rc}")
                };
                o.failures.push(format!("{}: {why}", name.trim()));
                if f == 0 {
                    f = 1;
                }
            }
            o.passed += p;
            o.failed += f;
        } else if m.trim() == "done" {
            o.finished = true;
        } else if let Some(n) = m.strip_prefix("note ") {
            o.notes.push(n.trim().to_string());
        }
    }
    for s in steps {
        if !ended.contains(&s.name) {
            o.failed += 1;
            o.failures.push(format!("{}: did not finish", s.name));
        }
    }
    o
}

/// `line` without terminal escape sequences (`ESC [ ... letter`).
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        if chars.next() == Some('[') {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        }
    }
    out
}

/// The message of an env_logger line
/// (`[2026-11-30T01:05:04Z WARN  observer::cmd::session] message`).
fn warn_text(line: &str) -> String {
    line.split_once("] ")
        .map_or(line, |(_, msg)| msg)
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps() -> Vec<Step> {
        ["observer-flows", "flows", "cli"]
            .iter()
            .map(|n| Step {
                name: n.to_string(),
                command: format!("/tests/{n}"),
                timeout_s: 60,
            })
            .collect()
    }

    #[test]
    fn init_runs_each_step_between_markers() {
        let s = init_script(&["/modules/veth.ko".into()], &steps());
        assert!(s.starts_with("#!/bin/busybox sh\n"));
        assert!(s.contains("insmod '/modules/veth.ko' ||"));
        assert!(s.contains(
            "echo \"@@vm begin flows\"\ntimeout 60 sh -c '/tests/flows' 2>&1; echo \"@@vm end flows rc=$?\"\n"
        ));
        assert!(s.ends_with("poweroff -f\n"));
        // Nothing is mounted over paths a checkout may live under.
        assert!(!s.contains(" /tmp") && !s.contains(" /run"), "{s}");
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
    }

    #[test]
    fn transcript_is_counted_per_step() {
        let t = "\x1b[2J@@vm kernel 6.1.0-57-cloud-amd64\r\n\
                 @@vm begin observer-flows\n\
                 \x1b[90m[\x1b[0m2026-11-30T01:05:04Z \x1b[33mWARN \x1b[0m observer::cmd::session\x1b[90m]\x1b[0m kernel has no tracepoint sock_send_length: x\n\
                 @@vm end observer-flows rc=0\n\
                 @@vm begin flows\n\
                 test a ... ok\n\
                 test result: FAILED. 4 passed; 3 failed; 0 ignored; 0 measured; 0 filtered out; finished in 26.71s\n\
                 @@vm end flows rc=101\n\
                 @@vm begin cli\n\
                 [   12.3] some kernel line\n";
        let o = parse(t, &steps());
        assert_eq!(o.release.as_deref(), Some("6.1.0-57-cloud-amd64"));
        // observer-flows: 1 passed; flows: 4 + 3; cli never ended: 1 failed.
        assert_eq!((o.passed, o.failed), (5, 4));
        assert_eq!(o.degraded, ["kernel has no tracepoint sock_send_length: x"]);
        assert!(o.failures.contains(&"flows: exit status 101".to_string()));
        assert!(o.failures.contains(&"cli: did not finish".to_string()));
        assert!(!o.finished);
    }

    #[test]
    fn crash_without_failed_test_and_timeouts_count() {
        let t = "@@vm begin flows\n\
                 test result: ok. 2 passed; 0 failed; 0 ignored\n\
                 @@vm end flows rc=139\n\
                 @@vm begin cli\n@@vm end cli rc=124\n\
                 @@vm begin observer-flows\n@@vm end observer-flows rc=0\n@@vm done\n";
        let o = parse(t, &steps());
        assert_eq!((o.passed, o.failed), (3, 2));
        assert!(o.failures.contains(&"cli: timed out".to_string()));
        assert!(o.finished);
        assert_eq!(
            libtest_counts("test result: ok. 23 passed; 0 failed; 0 ignored"),
            Some((23, 0))
        );
        assert_eq!(libtest_counts("running 4 tests"), None);
    }
}
