//! What is loaded in the kernel: observer's programs (to wait for an
//! attach and to check that nothing stays loaded after an exit) and its
//! flow map.

use std::{
    collections::BTreeSet,
    process::Command,
    time::{Duration, Instant},
};

use observer_common::FlowSample;

/// Programs the `observer` binary attaches on this kernel by default: the
/// 2 required ones, tcp_destroy_sock, tcp_retransmit_skb, the poll-time
/// read's iterator
/// (`--poll-read auto`; Linux 5.11+, where tracing programs may use
/// socket-local storage) and the owner walk; and, only where those two
/// walks do not both run, sock_recv_length (Linux 6.3+) or in its place
/// tcp_rcv_space_adjust. Read once: tests poll it.
pub fn attached_programs() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| {
        let poll = poll_walk();
        2 + usize::from(has_tracepoint("tcp_destroy_sock"))
            + usize::from(has_tracepoint("tcp_retransmit_skb"))
            + usize::from(poll)
            + usize::from(owner_walk())
            + usize::from(read_hook_attached())
    })
}

/// Whether the `observer` binary attaches a read hook by default here:
/// the kernel has one, and the poll-time read and the owner walk do not
/// both run (with both, reads have no program).
pub fn read_hook_attached() -> bool {
    read_hook() && !(poll_walk() && owner_walk())
}

/// [`attached_programs`] for an agent run with `--pin`: the owner walk
/// is an unpinned agent's alone, so the read hook is attached.
pub fn attached_programs_pinned() -> usize {
    2 + usize::from(has_tracepoint("tcp_destroy_sock"))
        + usize::from(has_tracepoint("tcp_retransmit_skb"))
        + usize::from(poll_walk())
        + usize::from(read_hook())
}

/// Whether the kernel has a read hook: `sock_recv_length` or
/// `tcp_rcv_space_adjust`.
fn read_hook() -> bool {
    has_tracepoint("sock_recv_length") || has_tracepoint("tcp_rcv_space_adjust")
}

/// Whether the kernel runs the poll-time read (`iter/tcp`, Linux 5.11).
fn poll_walk() -> bool {
    btf_has("bpf_iter__tcp") && release_at_least(5, 11)
}

/// Whether the kernel's BTF names the tracepoint `tp`.
fn has_tracepoint(tp: &str) -> bool {
    btf_has(&format!("btf_trace_{tp}"))
}

/// Whether the kernel's BTF has a type called `name` (its strings, read
/// once: tests ask often).
fn btf_has(name: &str) -> bool {
    static BTF: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BTF.get_or_init(|| std::fs::read("/sys/kernel/btf/vmlinux").unwrap_or_default())
        .split(|&b| b == 0)
        .any(|n| n == name.as_bytes())
}

/// Whether this kernel runs the owner walk (`iter/task_file` with
/// `bpf_sock_from_file`, Linux 5.11).
pub fn owner_walk() -> bool {
    btf_has("bpf_iter__task_file") && release_at_least(5, 11)
}

/// Whether the running kernel's release is at least `major.minor`.
fn release_at_least(major: u32, minor: u32) -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0)) >= (major, minor)
}

/// Whether this kernel has the owner hook, `sock_recv_length` (Linux
/// 6.3+), by its BTF tracepoint type.
pub fn owner_hook() -> bool {
    has_tracepoint("sock_recv_length")
}

/// The kernel links (`anon_inode:bpf_link`) among process `pid`'s open
/// files: one per program it attached.
pub fn bpf_links(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|t| t.to_string_lossy() == "anon_inode:bpf_link")
        .count()
}

/// Ids of loaded BPF programs that belong to an observer.
pub fn observer_programs() -> BTreeSet<u32> {
    aya::programs::loaded_programs()
        .filter_map(Result::ok)
        .filter(|p| p.name_as_str().is_some_and(|n| n.starts_with("observer_")))
        .map(|p| p.id())
        .collect()
}

/// Waits until `n` more observer programs than `before` are loaded.
pub fn wait_attached(before: &BTreeSet<u32>, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while observer_programs().difference(before).count() < n {
        assert!(Instant::now() < deadline, "observer never attached");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (the kernel frees programs after an RCU grace period) until no
/// observer program loaded since `before` is left; returns those left.
pub fn leftover(before: &BTreeSet<u32>) -> Vec<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<u32> = observer_programs().difference(before).copied().collect();
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Ids of loaded maps named FLOWS (observer's flow map).
pub fn flow_maps() -> BTreeSet<u32> {
    aya::maps::loaded_maps()
        .filter_map(Result::ok)
        .filter(|m| m.name_as_str() == Some("FLOWS"))
        .map(|m| m.id())
        .collect()
}

/// Entries in the flow map `id`, and its max_entries.
pub fn map_fill(id: u32) -> (usize, u32) {
    let data = aya::maps::MapData::from_id(id).unwrap();
    let max = data.info().unwrap().max_entries();
    let map: aya::maps::HashMap<_, u64, [u8; observer_common::sample::FLOW_SAMPLE_SIZE]> =
        aya::maps::HashMap::try_from(aya::maps::Map::LruHashMap(data)).unwrap();
    (map.keys().filter(Result::is_ok).count(), max)
}

/// Every sample in the flow map `id`.
pub fn map_samples(id: u32) -> Vec<FlowSample> {
    let data = aya::maps::MapData::from_id(id).unwrap();
    let map: aya::maps::HashMap<_, u64, FlowSample> =
        aya::maps::HashMap::try_from(aya::maps::Map::LruHashMap(data)).unwrap();
    map.iter().filter_map(Result::ok).map(|(_, s)| s).collect()
}

/// Runs the kernel skipped because they would have nested in themselves
/// (`recursion_misses`, from `bpftool`), per program using map `map_id`.
pub fn recursion_misses(map_id: u32) -> Vec<(String, u64)> {
    let Ok(out) = Command::new("bpftool")
        .args(["-j", "prog", "show"])
        .output()
    else {
        return Vec::new();
    };
    let progs: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap_or_default();
    progs
        .iter()
        .filter(|p| {
            p["map_ids"]
                .as_array()
                .is_some_and(|m| m.iter().any(|id| id.as_u64() == Some(u64::from(map_id))))
        })
        .map(|p| {
            (
                p["name"].as_str().unwrap_or("?").to_string(),
                p["recursion_misses"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}
