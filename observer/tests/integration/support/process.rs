//! The observer binary as a child process: its path and its memory (the
//! guard that kills it on drop is [`pathemu::ChildGuard`]).

/// The observer binary cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_observer");

/// Runs `cmd` to its end and returns its standard output as text; fails
/// the test, with the command and its standard error, when it exits
/// non-zero.
pub fn stdout_of(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
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
