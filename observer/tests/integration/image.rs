//! The container image (deploy/Containerfile) runs as the DaemonSet runs it:
//! podman with the DaemonSet's own security context (read from
//! deploy/daemonset.yaml by deploy/check.py: every capability dropped but
//! BPF and PERFMON, read-only root, no privilege escalation, host network),
//! the runtime's default seccomp profile, `/proc/timer_list` masked and no
//! `/proc/config.gz` (as on a Debian or Ubuntu node). A transfer crosses an
//! emulated path while a real Prometheus scrapes the container; when the
//! container stops, nothing of observer's is left in the kernel.
//!
//! `cargo xtask test` builds the image first (`cargo xtask image`) and
//! names it in `OBSERVER_IMAGE`; without it the test says so and passes.

use std::{
    path::{Path as FsPath, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use crate::support::{
    bpf::{attached_programs, leftover, observer_programs},
    http::{free_port, http_get},
    net::iperf,
    process::stdout_of,
    prom::Prometheus,
    root_or_skip, serial,
};
use pathemu::{ChildGuard, Path, PathConfig};

/// The DaemonSet's container security context as podman flags.
fn daemonset_flags() -> Vec<String> {
    serde_json::from_str(&check_py(&["--podman-args"])).unwrap()
}

/// deploy/check.py run with Debian's python3 (where apt's python3-yaml
/// goes), with `args`; its standard output.
fn check_py(args: &[&str]) -> String {
    let check = FsPath::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/check.py");
    let python = if FsPath::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    };
    stdout_of(Command::new(python).arg(&check).args(args))
}

/// The seccomp profile Kubernetes' `RuntimeDefault` gives on containerd,
/// made as docs/deploy.md tells CRI-O and podman users to make it: podman's
/// default profile, whose rules let only CAP_SYS_ADMIN call bpf(2), with
/// bpf(2) allowed to CAP_BPF (and perf_event_open(2) to CAP_PERFMON).
fn runtime_default_profile(dir: &FsPath) -> PathBuf {
    let profile = check_py(&["--seccomp-from", "/usr/share/containers/seccomp.json"]);
    let out = dir.join("seccomp.json");
    std::fs::write(&out, profile).unwrap();
    out
}

/// `podman ARGS` as these machines need it: without default ulimits (root
/// here lacks CAP_SYS_RESOURCE), and on a host whose cgroups are mounted in
/// hybrid mode (which crun refuses) from a private mount namespace with
/// cgroup2 mounted alone and `--cgroups disabled`
/// (../shared/docs/containers.md).
fn podman(dir: &FsPath, args: &[String]) -> Command {
    let conf = dir.join("containers.conf");
    std::fs::write(&conf, "[containers]\ndefault_ulimits = []\n").unwrap();
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    let hybrid = FsPath::new("/sys/fs/cgroup/unified").is_dir();
    let script = if hybrid {
        format!(
            "umount -R /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup && \
             exec podman {} --cgroups disabled {}",
            quoted[0],
            quoted[1..].join(" ")
        )
    } else {
        format!("exec podman {}", quoted.join(" "))
    };
    let mut c = Command::new("unshare");
    c.args(["-m", "sh", "-c", &script])
        .env("CONTAINERS_CONF", &conf);
    c
}

#[test]
fn the_image_runs_with_the_daemonsets_privileges() {
    if !root_or_skip("the_image_runs_with_the_daemonsets_privileges") {
        return;
    }
    let Some(image) = std::env::var("OBSERVER_IMAGE")
        .ok()
        .filter(|i| !i.is_empty())
    else {
        eprintln!(
            "the_image_runs_with_the_daemonsets_privileges: skipped, no OBSERVER_IMAGE \
             (cargo xtask test builds the image and sets it)"
        );
        return;
    };
    let _serial = serial();
    let dir = std::env::temp_dir().join(format!("observer-image-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let before = observer_programs();
    let port = free_port();
    let name = format!("observer-test-{}", std::process::id());
    let mut args: Vec<String> = vec!["run".into(), "--rm".into(), format!("--name={name}")];
    args.extend(daemonset_flags());
    args.push(format!(
        "--security-opt=seccomp={}",
        runtime_default_profile(&dir).display()
    ));
    // podman masks /proc/timer_list itself; a Debian or Ubuntu node's
    // kernel has no /proc/config.gz either.
    args.push("--security-opt=mask=/proc/config.gz".into());
    args.push(image);
    args.extend(
        [
            "run",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--interval",
            "500ms",
        ]
        .map(String::from),
    );
    let mut container = ChildGuard::spawn(
        podman(&dir, &args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
    .unwrap();
    // Attached, and serving a healthy /healthz.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let attached = observer_programs().difference(&before).count();
        let healthy = http_get(port, "/healthz").is_some_and(|t| t.starts_with("ok: "));
        if attached == attached_programs() && healthy {
            break;
        }
        if !container.running() {
            panic!("the container exited:\n{}", container.stderr_after_exit());
        }
        assert!(Instant::now() < deadline, "the container never served");
        std::thread::sleep(Duration::from_millis(200));
    }
    let prom = Prometheus::scraping(port);
    // A window-limited transfer: 64 KB on a 104 ms, 35 Mbit/s path.
    let path = Path::new(PathConfig::bottleneck(
        35_000_000,
        Duration::from_millis(52),
        460_000,
    ))
    .unwrap();
    let _iperf = iperf(&path, 10, &["-w", "64K"]);
    let q = "sum(observer_bytes_acked_total{verdict=\"receive_window\"})";
    let deadline = Instant::now() + Duration::from_secs(25);
    let mut moved = 0.0;
    while Instant::now() < deadline && moved < 1e6 {
        std::thread::sleep(Duration::from_secs(1));
        moved = prom.query(q).unwrap_or(0.0);
    }
    // Stopped as the kubelet stops it: SIGTERM (podman passes it on).
    let out = container.stop(libc::SIGTERM).unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        moved >= 1e6,
        "receive_window bytes in Prometheus: {moved}\n{err}"
    );
    assert!(
        out.status.success(),
        "the container exited with {}:\n{err}",
        out.status
    );
    assert!(
        err.contains("measured"),
        "HZ was not measured in the pod:\n{err}"
    );
    assert!(err.contains("stopping: detaching probes"), "{err}");
    assert_eq!(leftover(&before), Vec::<u32>::new());
}
