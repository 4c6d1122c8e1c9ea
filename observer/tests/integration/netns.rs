//! Namespaces by their `ip netns` names: a flow in a named namespace
//! carries the name in `observer flows --json`, and `--filter 'netns =
//! NAME'` selects it by that name.

use std::{
    collections::BTreeSet,
    io::{Read as _, Write as _},
    net::{TcpListener, TcpStream},
    process::{Command, Output},
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use crate::support::{netns_id, process::BIN, root_or_skip, serial};
use pathemu::Namespace;

/// A connection over the namespace's loopback: its two ends, as
/// `local remote`, client first.
fn connect(ns: &Namespace) -> (TcpStream, TcpStream) {
    ns.run(|| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        (c, s)
    })
    .unwrap()
}

fn ends(s: &TcpStream) -> String {
    format!("{} {}", s.local_addr().unwrap(), s.peer_addr().unwrap())
}

/// `observer flows --json` for 1.5 s with `filter`.
fn flows(filter: &str) -> Output {
    let out = Command::new(BIN)
        .args(["flows", "--duration", "1.5", "--json", "--filter", filter])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{filter}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The records of `out`, parsed.
fn records(out: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_named_namespace_is_shown_and_selected_by_its_name() {
    if !root_or_skip("a_named_namespace_is_shown_and_selected_by_its_name") {
        return;
    }
    let _serial = serial();
    // `ip netns add`; the guard deletes it on drop, a failed test too.
    let ns = Namespace::standalone().unwrap();
    let name = ns.name().to_string();
    let (mut c, mut s) = connect(&ns);
    let want: BTreeSet<String> = [ends(&c), ends(&s)].into();
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        // A byte each way every 50 ms: samples while observer runs.
        scope.spawn(|| {
            let mut b = [0u8; 1];
            while !stop.load(Ordering::Relaxed) {
                c.write_all(b"?").unwrap();
                s.read_exact(&mut b).unwrap();
                s.write_all(b"!").unwrap();
                c.read_exact(&mut b).unwrap();
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let check = || {
            // By the inode: the JSON carries the name beside it.
            let by_inode = records(&flows(&format!("netns = {}", netns_id(&ns))));
            let got: BTreeSet<String> = by_inode
                .iter()
                .map(|v| format!("{} {}", v["local"], v["remote"]).replace('"', ""))
                .collect();
            assert_eq!(got, want, "{by_inode:?}");
            for v in &by_inode {
                assert_eq!(v["netns_name"], name.as_str(), "{v}");
            }
            // By the name, as typed and quoted: the same flows.
            for filter in [format!("netns = {name}"), format!("netns \"{name}\"")] {
                let by_name = records(&flows(&filter));
                let got: BTreeSet<String> = by_name
                    .iter()
                    .map(|v| format!("{} {}", v["local"], v["remote"]).replace('"', ""))
                    .collect();
                assert_eq!(got, want, "{filter}");
            }
            // A name no namespace has: nothing, and one line that says so.
            let none = format!("netns = {name}-none");
            let out = flows(&none);
            assert!(records(&out).is_empty(), "{none}");
            let err = String::from_utf8_lossy(&out.stderr);
            let said: Vec<&str> = err
                .lines()
                .filter(|l| l.contains("no network namespace is named"))
                .collect();
            assert_eq!(said.len(), 1, "{err}");
            assert!(said[0].contains(&format!("{name}-none")), "{err}");
        };
        // Stop the pinger whatever the outcome, then report it.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(check));
        stop.store(true, Ordering::Relaxed);
        if let Err(e) = result {
            std::panic::resume_unwind(e);
        }
    });
}
