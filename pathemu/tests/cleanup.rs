//! Root tests: namespaces, processes and threads do not outlive a `Path`,
//! even after a panic; stale namespaces of dead processes are swept; the
//! namespace helpers put code where they say.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::MetadataExt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::root_or_skip;
use pathemu::{ChildGuard, Namespace, Path, PathConfig, Side};

/// The names `ip netns list` prints.
/// One test of this file at a time: every `Namespace` made sweeps the
/// namespaces of dead creators, so a test making one would remove the
/// stale namespace `stale_namespaces_of_dead_processes_are_swept` plants
/// before that test looks for it.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn netns_list() -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

fn names(path: &Path) -> [String; 2] {
    [
        path.netns_name(Side::A).to_owned(),
        path.netns_name(Side::B).to_owned(),
    ]
}

fn assert_gone(names: &[String]) {
    let list = netns_list();
    for n in names {
        assert!(!list.contains(n), "{n} still listed: {list:?}");
    }
}

fn wait_exit(child: &mut std::process::Child) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if child.try_wait().unwrap().is_some() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[test]
fn drop_deletes_namespaces_and_kills_processes() {
    if !root_or_skip("drop_deletes_namespaces_and_kills_processes") {
        return;
    }
    let _serial = serial();
    let path = Path::new(PathConfig::default()).unwrap();
    let names = names(&path);
    let list = netns_list();
    assert!(names.iter().all(|n| list.contains(n)), "{list:?}");
    let pid = std::process::id();
    assert!(names[0].starts_with(&format!("pe-{pid}-")), "{names:?}");
    // An unguarded process in B, and a guarded one in A.
    let mut loose = path
        .command(Side::B, "sleep")
        .arg("1000")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let guarded = ChildGuard::spawn(path.command(Side::A, "sleep").arg("1000")).unwrap();
    drop(path);
    assert_gone(&names);
    assert!(wait_exit(&mut loose), "process in B survived the Path");
    drop(guarded);
}

#[test]
fn panic_inside_closure_still_cleans_up() {
    if !root_or_skip("panic_inside_closure_still_cleans_up") {
        return;
    }
    let _serial = serial();
    let seen = Mutex::new(Vec::new());
    let result = catch_unwind(AssertUnwindSafe(|| {
        let path = Path::new(PathConfig::symmetric_delay(Duration::from_millis(5))).unwrap();
        seen.lock().unwrap().extend(names(&path));
        path.run_in(Side::A, || panic!("deliberate panic inside namespace A"))
            .unwrap();
    }));
    let err = result.expect_err("the panic must reach catch_unwind");
    let msg = err.downcast_ref::<&str>().copied().unwrap_or_default();
    assert!(msg.contains("deliberate"), "{msg}");
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 2);
    assert_gone(&seen);
}

#[test]
fn stale_namespaces_of_dead_processes_are_swept() {
    if !root_or_skip("stale_namespaces_of_dead_processes_are_swept") {
        return;
    }
    let _serial = serial();
    // A pid that has just exited (and is reaped) stands for a killed creator.
    let mut dead = Command::new("true").spawn().unwrap();
    let dead_pid = dead.id();
    dead.wait().unwrap();
    let stale = format!("pe-{dead_pid}-0-a");
    let out = Command::new("ip")
        .args(["netns", "add", &stale])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(netns_list().contains(&stale));
    // One with our own pid that we did not create: left by an earlier
    // process that had the same pid.
    let reused = format!("pe-{}-999999-b", std::process::id());
    let out = Command::new("ip")
        .args(["netns", "add", &reused])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let path = Path::new(PathConfig::default()).unwrap();
    assert_gone(&[stale, reused]);
    // Our own live namespaces are not swept by a second path.
    let second = Path::new(PathConfig::default()).unwrap();
    let list = netns_list();
    assert!(names(&path).iter().all(|n| list.contains(n)));
    drop(second);
}

#[test]
fn run_in_and_inode_agree() {
    if !root_or_skip("run_in_and_inode_agree") {
        return;
    }
    let _serial = serial();
    let path = Path::new(PathConfig::default()).unwrap();
    for side in [Side::A, Side::B] {
        let inode = path
            .run_in(side, || {
                std::fs::metadata("/proc/thread-self/ns/net").unwrap().ino()
            })
            .unwrap();
        assert_eq!(inode, path.netns_inode(side));
        let stat = std::fs::metadata(format!("/run/netns/{}", path.netns_name(side))).unwrap();
        assert_eq!(stat.ino(), inode);
        // The command helper runs inside the namespace too.
        let out = path
            .command(side, "ip")
            .args(["-4", "-o", "addr", "show", "dev", path.tun_name()])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains(&format!(
                "{} peer {}/32",
                path.addr(side),
                path.addr(side.peer())
            )),
            "{text}"
        );
    }
    assert_ne!(path.netns_inode(Side::A), path.netns_inode(Side::B));
    let mine = std::fs::metadata("/proc/self/ns/net").unwrap().ino();
    assert_ne!(mine, path.netns_inode(Side::A));
    // Addresses never leak into the creating namespace.
    let out = Command::new("ip").args(["-o", "addr"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains(&path.addr(Side::A).to_string()), "{text}");
}

#[test]
fn standalone_namespace_has_loopback_and_goes_on_drop() {
    if !root_or_skip("standalone_namespace_has_loopback_and_goes_on_drop") {
        return;
    }
    let _serial = serial();
    let ns = Namespace::standalone().unwrap();
    let name = ns.name().to_owned();
    let pid = std::process::id();
    assert!(name.starts_with(&format!("pe-{pid}-")), "{name}");
    assert!(name.ends_with("-s"), "{name}");
    assert!(netns_list().contains(&name));
    let (inode, connected) = ns
        .run(|| {
            let inode = std::fs::metadata("/proc/thread-self/ns/net").unwrap().ino();
            // Loopback is up: a connection to it goes through.
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let c = std::net::TcpStream::connect(l.local_addr().unwrap());
            (inode, c.is_ok())
        })
        .unwrap();
    assert_eq!(inode, ns.inode());
    assert!(connected, "loopback is down in {name}");
    let mine = std::fs::metadata("/proc/self/ns/net").unwrap().ino();
    assert_ne!(mine, ns.inode());
    drop(ns);
    assert_gone(&[name]);
}
