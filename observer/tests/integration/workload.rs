//! Workload attribution as an operator sees it: two programs in cgroups
//! named as systemd and a Kubernetes node's containerd name them, each
//! with a connection; `flows --json` names each flow's unit, container and
//! pod, and `run --label-workload` counts them apart.

use std::{
    io::Read as _,
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::Duration,
};

use crate::support::{
    bpf::{attached_programs, observer_programs, wait_attached},
    http::{free_port, http_get, metric, wait_serving},
    netns_id,
    process::BIN,
    root_or_skip, serial,
};
use pathemu::{ChildGuard, Namespace};

const CONTAINER: &str = "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9";
const POD: &str = "7d2c9a0e-1b3f-4c5d-8e6f-9a0b1c2d3e4f";

/// A cgroup made for a test, removed on drop (after its processes exit).
struct Cgroup(PathBuf);

impl Cgroup {
    fn new(root: &Path, rel: &str) -> Cgroup {
        let p = root.join(rel.trim_start_matches('/'));
        std::fs::create_dir_all(&p).unwrap();
        Cgroup(p)
    }
}

impl Drop for Cgroup {
    fn drop(&mut self) {
        // Innermost first; a parent another test made stays if not empty.
        let mut p = self.0.as_path();
        while std::fs::remove_dir(p).is_ok() {
            match p.parent() {
                Some(up) if up.join("cgroup.procs").exists() => p = up,
                _ => break,
            }
        }
    }
}

/// The two workloads' cgroups, under this machine's cgroup2 hierarchy.
fn cgroups(tag: &str) -> Option<(String, Cgroup, Cgroup)> {
    // The clients are bash's /dev/tcp (the kernel matrix's VM has none).
    if !Path::new("/bin/bash").exists() {
        return None;
    }
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let root = observer::track::cgroups::cgroup2_mount(&mountinfo)?;
    let unit = format!("observer-test-{tag}-{}.service", std::process::id());
    let a = Cgroup::new(&root, &format!("/system.slice/{unit}"));
    let b = Cgroup::new(
        &root,
        &format!(
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{CONTAINER}.scope",
            POD.replace('-', "_")
        ),
    );
    Some((unit, a, b))
}

/// Runs, in namespace `ns` and cgroup `cg`, a shell that connects to
/// `port` on loopback, sends 100 kB and holds the connection `secs`.
fn client_in(ns: &Namespace, cg: &Cgroup, port: u16, secs: u32) -> ChildGuard {
    // Into the cgroup first: `ip netns exec` remounts /sys, cgroups and
    // all, in a mount namespace of its own; its children stay in the
    // cgroup.
    let connect = format!(
        "exec 3<>/dev/tcp/127.0.0.1/{port} && head -c 100000 /dev/zero >&3 && sleep {secs}"
    );
    let script = format!(
        "echo $$ > '{}/cgroup.procs' && exec ip netns exec '{}' bash -c '{connect}'",
        cg.0.display(),
        ns.name()
    );
    ChildGuard::spawn(
        Command::new("bash")
            .args(["-c", &script])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
    .unwrap()
}

/// A listener in `ns` that reads whatever its clients send.
fn sink_in(ns: &Namespace) -> u16 {
    let listener = ns
        .run(|| TcpListener::bind("127.0.0.1:0").unwrap())
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in listener.incoming() {
            let Ok(mut c) = c else { break };
            std::thread::spawn(move || {
                let mut sink = Vec::new();
                let _ = c.read_to_end(&mut sink);
            });
        }
    });
    port
}

#[test]
fn flows_name_each_flows_unit_container_and_pod() {
    if !root_or_skip("flows_name_each_flows_unit_container_and_pod") {
        return;
    }
    let _serial = serial();
    let Some((unit, a, b)) = cgroups("flows") else {
        eprintln!("skipped: no cgroup2 hierarchy mounted, or no bash");
        return;
    };
    let ns = Namespace::standalone().unwrap();
    let port = sink_in(&ns);
    let before = observer_programs();
    let attached = attached_programs();
    let observer = ChildGuard::spawn(
        Command::new(BIN)
            .args(["flows", "--json", "--duration", "4"])
            .args([
                "--filter",
                &format!("netns = {} and dport = :{port}", netns_id(&ns)),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .unwrap();
    wait_attached(&before, attached);
    let mut clients = [client_in(&ns, &a, port, 2), client_in(&ns, &b, port, 2)];
    let out = observer.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for c in &mut clients {
        assert!(
            c.child_mut().unwrap().wait().unwrap().success(),
            "{}",
            c.stderr_after_exit()
        );
    }
    let flows: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(flows.len(), 2, "{flows:?}");
    let by_unit = |u: &str| flows.iter().find(|f| f["unit"] == u);
    let service = by_unit(&unit).unwrap_or_else(|| panic!("no flow of {unit}: {flows:?}"));
    assert_eq!(service["cgroup"], format!("/system.slice/{unit}"));
    assert_eq!(service["container_id"], "");
    assert_eq!(service["pod_uid"], "");
    let pod = by_unit(&format!("cri-containerd-{CONTAINER}.scope"))
        .unwrap_or_else(|| panic!("no flow of the container: {flows:?}"));
    assert_eq!(pod["container_id"], CONTAINER);
    assert_eq!(pod["pod_uid"], POD);
    assert_eq!(pod["qos_class"], "burstable");
    assert!(
        pod["cgroup"]
            .as_str()
            .unwrap()
            .starts_with("/kubepods.slice/")
    );
}

#[test]
fn run_counts_flows_by_workload() {
    if !root_or_skip("run_counts_flows_by_workload") {
        return;
    }
    let _serial = serial();
    let Some((unit, a, b)) = cgroups("run") else {
        eprintln!("skipped: no cgroup2 hierarchy mounted, or no bash");
        return;
    };
    let ns = Namespace::standalone().unwrap();
    let port = sink_in(&ns);
    let listen = free_port();
    let mut agent = ChildGuard::spawn(
        Command::new(BIN)
            .args(["run", "--interval", "250ms", "--label-workload"])
            .args(["--listen", &format!("127.0.0.1:{listen}")])
            .args(["--filter", &format!("netns = {}", netns_id(&ns))])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
    .unwrap();
    wait_serving(listen, &mut agent, Duration::from_secs(20));
    let mut clients = [client_in(&ns, &a, port, 1), client_in(&ns, &b, port, 1)];
    for c in &mut clients {
        assert!(
            c.child_mut().unwrap().wait().unwrap().success(),
            "{}",
            c.stderr_after_exit()
        );
    }
    let want = [unit.clone(), format!("pod:{POD}")];
    let mut text = String::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        text = http_get(listen, "/metrics").unwrap_or_default();
        let closed = |w: &str| {
            text.lines()
                .filter(|l| {
                    l.starts_with("observer_flows_closed_total{")
                        && l.contains(&format!("workload=\"{w}\""))
                })
                .count()
        };
        if want.iter().all(|w| closed(w) > 0) {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    for w in &want {
        // The client end of each connection started in its workload.
        assert_eq!(
            metric(
                &text,
                &format!("observer_flows_started_total{{workload=\"{w}\"}}")
            ),
            Some(1.0),
            "{w}\n{text}"
        );
        assert!(
            text.lines()
                .any(|l| l.starts_with("observer_bytes_acked_total{")
                    && l.contains(&format!("workload=\"{w}\""))),
            "{w}\n{text}"
        );
    }
}
