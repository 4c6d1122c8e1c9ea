//! Test-only environment overrides: they let the root tests exercise each
//! failure (no BTF, an old kernel, a missing hook) on a kernel that has
//! everything. Only builds with debug assertions (the test profile) read
//! them; a release build ignores them. See docs/security.md.
//!
//! | variable | effect |
//! | --- | --- |
//! | `OBSERVER_BTF_PATH=FILE` | read FILE instead of `/sys/kernel/btf/vmlinux` |
//! | `OBSERVER_FAKE_KERNEL=4.19` | take this as the running kernel's release |
//! | `OBSERVER_MISSING_HOOK=tcp_probe` | act as if this tracepoint (or `iter:bpf_sk_storage_map`, the poll-time read) were absent |
//! | `OBSERVER_UNLOAD_PROGRAM=observer_recv_length` | `observer run` unloads this program after its third poll |
//! | `OBSERVER_TEST_FLOW_LAYOUT=2` | pin with, and read only sets of, this flow layout (a build of another layout, for the upgrade tests; 0: pin none, as builds before layouts) |

/// Where the kernel publishes its BTF.
pub const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

/// The override `name`'s value when set and non-empty, in builds with
/// debug assertions only.
fn test_override(name: &str) -> Option<String> {
    if !cfg!(debug_assertions) {
        return None;
    }
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Where the kernel's BTF is read from: [`VMLINUX_BTF`], or the test
/// override `OBSERVER_BTF_PATH`.
pub fn btf_path() -> String {
    test_override("OBSERVER_BTF_PATH").unwrap_or_else(|| VMLINUX_BTF.to_string())
}

/// The running kernel's release (`uname -r`), or the test override
/// `OBSERVER_FAKE_KERNEL`; empty when `/proc` cannot be read.
pub fn kernel_release() -> String {
    test_override("OBSERVER_FAKE_KERNEL").unwrap_or_else(|| {
        std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_string()
    })
}

/// Whether the test override `OBSERVER_MISSING_HOOK` (a comma-separated
/// list) names tracepoint `tp`: the loader then acts as if the kernel
/// lacked it.
pub fn hook_hidden(tp: &str) -> bool {
    test_override("OBSERVER_MISSING_HOOK").is_some_and(|h| h.split(',').any(|h| h.trim() == tp))
}

/// The program `observer run` unloads after its third poll, from the test
/// override `OBSERVER_UNLOAD_PROGRAM`: a program gone while the agent
/// runs, which `/healthz` must report.
pub fn program_to_unload() -> Option<String> {
    test_override("OBSERVER_UNLOAD_PROGRAM")
}

/// The flow layout the test override `OBSERVER_TEST_FLOW_LAYOUT` names:
/// the agent pins with it and reads only sets of it, as a build of that
/// layout would ([`crate::kernel::load::layout`]).
pub fn flow_layout() -> Option<u32> {
    test_override("OBSERVER_TEST_FLOW_LAYOUT").and_then(|v| v.parse().ok())
}
