//! Upgrades over pinned maps of another flow layout
//! (observer/src/kernel/load/layout.rs). A build of the previous layout
//! (this build with `OBSERVER_TEST_FLOW_LAYOUT`) pins its set during
//! connection churn and is killed; this build, started over it, refuses
//! with one line before loading anything, and the set goes on recording
//! untouched, so the build that pinned it, started again as the line
//! says, reports every flow of the gap: made = reported + counted lost,
//! exactly. A set with no layout (pinned before sets carried one) is
//! refused the same way, and so is a downgrade. Each test mounts a bpffs
//! instance of its own, removed at the end (which detaches what is pinned).

use std::{
    collections::BTreeSet,
    fs::File,
    path::{Path, PathBuf},
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

use crate::{
    restart::{Bpffs, Churn, RATE, between_polls, open_sockets, printed},
    support::{
        bpf::{attached_programs_pinned, leftover, observer_programs, wait_attached},
        netns_id,
        process::BIN,
        root_or_skip, serial,
    },
};
use observer_common::FLOW_LAYOUT;
use pathemu::{ChildGuard, Namespace};

const LAYOUT_ENV: &str = "OBSERVER_TEST_FLOW_LAYOUT";

/// `observer flows --follow --json --pin dir`, its records to `out`, as a
/// build of flow layout `layout` (this build's if `None`).
fn follow(out: &Path, dir: &Path, layout: Option<u32>) -> ChildGuard {
    let mut cmd = Command::new(BIN);
    cmd.args([
        "flows",
        "--follow",
        "--json",
        "--interval",
        "200ms",
        "--pin",
    ])
    .arg(dir)
    .env_remove(LAYOUT_ENV)
    .stdout(File::create(out).unwrap())
    .stderr(Stdio::piped());
    if let Some(l) = layout {
        cmd.env(LAYOUT_ENV, l.to_string());
    }
    ChildGuard::spawn(&mut cmd).unwrap()
}

/// This build started over `dir`, for at most 5 seconds.
fn start_current(dir: &Path) -> Output {
    Command::new(BIN)
        .args(["flows", "--json", "--duration", "5s", "--pin"])
        .arg(dir)
        .env_remove(LAYOUT_ENV)
        .output()
        .unwrap()
}

/// The one set in `dir`, once it is renamed into place (whole), waiting
/// up to 20 seconds for it.
fn the_set(dir: &Path) -> PathBuf {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let sets: Vec<PathBuf> = std::fs::read_dir(dir)
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default();
        let whole = sets.iter().all(|s| {
            !s.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("partial-"))
        });
        if (sets.len() == 1 && whole) || Instant::now() > deadline {
            assert_eq!(sets.len(), 1, "{sets:?}");
            return sets[0].clone();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The pins in `set`.
fn pins(set: &Path) -> BTreeSet<String> {
    std::fs::read_dir(set)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect()
}

/// The observer programs loaded once those loaded or unloaded for a
/// moment (the tick a start measures HZ with) have settled to `expect`,
/// or after 10 seconds.
fn settled(expect: &BTreeSet<u32>) -> BTreeSet<u32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let now = observer_programs();
        if &now == expect || Instant::now() > deadline {
            return now;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The line a refusal prints, for `set` pinned with layout `found` (or
/// none) and a build of layout `ours`.
fn refusal(set: &Path, found: Option<u32>, ours: u32) -> String {
    let by = found.map_or_else(
        || "from before pinned sets carried a flow layout".to_string(),
        |v| format!("with flow layout {v}"),
    );
    format!(
        "observer: error: cannot start the kernel probes: --pin: the maps in {set} were \
         pinned by a build {by}; this build reads flow layout {ours}: restart the build \
         that pinned them to read what they hold, or remove them with `rm -r {set}` (the \
         flows they hold are lost), or start without --pin",
        set = set.display()
    )
}

/// Checks that `out` is `expected`'s refusal, exit status 1, and that it
/// left the programs and `set`'s pins as they were.
fn assert_refused(out: &Output, expected: &str, set: &Path, loaded: &BTreeSet<u32>) {
    let pinned = pins(set);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end(), expected);
    assert_eq!(&settled(loaded), loaded, "programs loaded or unloaded");
    assert_eq!(pins(set), pinned, "the set's pins changed");
}

/// Closed-flow records `flows` said it lost (its warning), 0 if none.
fn counted_lost(stderr: &str) -> u64 {
    stderr
        .lines()
        .find_map(|l| {
            let before = l.split_once(" closed-flow records were lost")?.0;
            before.rsplit(' ').next()?.parse().ok()
        })
        .unwrap_or(0)
}

#[test]
fn an_upgrade_over_another_flow_layout_is_refused_and_loses_no_flow() {
    if !root_or_skip("an_upgrade_over_another_flow_layout_is_refused_and_loses_no_flow") {
        return;
    }
    let _serial = serial();
    let before = observer_programs();
    let fs = Bpffs::mount("layout");
    let dir = fs.pin_dir();
    let ns = Namespace::standalone().unwrap();
    let netns = netns_id(&ns);
    let tmp = std::env::temp_dir();
    let (out_a, out_b) = (
        tmp.join(format!("observer-upgrade-a-{}", std::process::id())),
        tmp.join(format!("observer-upgrade-b-{}", std::process::id())),
    );
    let old = FLOW_LAYOUT - 1;
    // The previous build pins its set and reports during churn, then dies.
    let a = follow(&out_a, &dir, Some(old));
    wait_attached(&before, attached_programs_pinned());
    std::thread::sleep(Duration::from_millis(300));
    let churn = Churn::start(&ns, RATE);
    between_polls(&out_a, 0);
    std::thread::sleep(Duration::from_millis(1000));
    let len = std::fs::metadata(&out_a).map_or(0, |m| m.len());
    between_polls(&out_a, len);
    let set = the_set(&dir);
    let _ = a.stop(libc::SIGKILL).unwrap();
    // This build, while flows open and close and no agent runs: refused.
    let loaded = observer_programs();
    let refused = start_current(&dir);
    assert_refused(
        &refused,
        &refusal(&set, Some(old), FLOW_LAYOUT),
        &set,
        &loaded,
    );
    // What the line says: the build that pinned the set reads what it
    // kept while no agent ran.
    let mut b = follow(&out_b, &dir, Some(old));
    between_polls(&out_b, 0);
    std::thread::sleep(Duration::from_millis(1500));
    let made = churn.stop();
    let deadline = Instant::now() + Duration::from_secs(30);
    while open_sockets(&ns) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_millis(1000));
    assert!(b.running(), "the previous build, started again, died");
    let out = b.stop(libc::SIGTERM).unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    let lost = counted_lost(&err);
    let (pa, pb) = (printed(&out_a, netns), printed(&out_b, netns));
    let _ = (std::fs::remove_file(&out_a), std::fs::remove_file(&out_b));
    let twice = pa
        .iter()
        .filter(|(c, n)| **n > 1 || pb.contains_key(c))
        .count()
        + pb.values().filter(|n| **n > 1).count();
    drop(fs);
    assert_eq!(leftover(&before), Vec::<u32>::new(), "programs left loaded");
    eprintln!(
        "upgrade over flow layout {old}: {made} flows made, {} reported before the kill, {} \
         after the refusal, {lost} counted lost, {twice} more than once",
        pa.len(),
        pb.len()
    );
    assert!(!pa.is_empty() && !pb.is_empty(), "{pa:?} {pb:?}");
    assert_eq!(twice, 0, "flows reported more than once");
    assert_eq!(
        made,
        (pa.len() + pb.len()) as u64 + lost,
        "made = reported + lost"
    );
}

#[test]
fn a_set_without_a_layout_is_refused_and_so_is_a_downgrade() {
    if !root_or_skip("a_set_without_a_layout_is_refused_and_so_is_a_downgrade") {
        return;
    }
    let _serial = serial();
    let before = observer_programs();
    let fs = Bpffs::mount("nolayout");
    let dir = fs.pin_dir();
    let out = std::env::temp_dir().join(format!("observer-nolayout-out-{}", std::process::id()));
    // Layout 0: a set pinned by a build from before sets carried one.
    let a = follow(&out, &dir, Some(0));
    wait_attached(&before, attached_programs_pinned());
    let set = the_set(&dir);
    let _ = a.stop(libc::SIGKILL).unwrap();
    let loaded = observer_programs();
    assert_refused(
        &start_current(&dir),
        &refusal(&set, None, FLOW_LAYOUT),
        &set,
        &loaded,
    );
    // Removed as the line says, this build pins its own; the previous one
    // is then refused the same way.
    std::fs::remove_dir_all(&set).unwrap();
    let ours = start_current(&dir);
    assert!(
        ours.status.success(),
        "{}",
        String::from_utf8_lossy(&ours.stderr)
    );
    let set = the_set(&dir);
    let loaded = observer_programs();
    let old = FLOW_LAYOUT - 1;
    let mut cmd = Command::new(BIN);
    cmd.args(["flows", "--json", "--duration", "5s", "--pin"])
        .arg(&dir)
        .env(LAYOUT_ENV, old.to_string());
    assert_refused(
        &cmd.output().unwrap(),
        &refusal(&set, Some(FLOW_LAYOUT), old),
        &set,
        &loaded,
    );
    let _ = std::fs::remove_file(&out);
    drop(fs);
    assert_eq!(leftover(&before), Vec::<u32>::new(), "programs left loaded");
}
