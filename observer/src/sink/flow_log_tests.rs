//! The flow log: whole records, rotation within its bound, and a failed
//! write cut back to the last whole record.
#![allow(clippy::unwrap_used, reason = "tests: a failure should panic")]

use super::*;
use crate::{attribution, model::clock::Clock, track::snapshot::FlowTable};
use observer_common::FlowSample;

/// A closed upload's report, cookie `cookie`.
fn closed(cookie: u64) -> Report {
    let mut s = FlowSample::ZERO;
    s.cookie = cookie;
    s.saddr = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1];
    s.daddr = s.saddr;
    s.sport = 40000;
    s.dport = 5201;
    s.bytes_acked = 1 << 20;
    s.srtt_us = 1_000;
    s.chrono_stat = [10, 0, 0];
    s.state = 7;
    s.first_seen_ns = 1;
    s.closed_ns = 2;
    let mut t = FlowTable::new();
    t.update(s, 2);
    let cfg = attribution::Config::default();
    t.reports(&Clock::fixed(0, 250), 3, 0, &cfg).remove(0)
}

impl FlowLog {
    fn write_final(&mut self, r: &Report) -> Result<(), FlowLogError> {
        self.write(r, RecordKind::Final)
    }
}

fn origin() -> Origin {
    Origin {
        host: "db-3".into(),
        boot_id: "5c1e".into(),
    }
}

/// A fresh directory for `name`'s files.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("observer-flowlog-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn lines(p: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_record_is_the_flows_json_object_with_its_host() {
    let d = dir("record");
    let path = d.join("flows.ndjson");
    let rotation = Rotation {
        max_bytes: 1 << 20,
        keep: 2,
    };
    let mut log = FlowLog::open(&path, rotation, origin()).unwrap();
    log.write_final(&closed(7)).unwrap();
    let got = lines(&path);
    assert_eq!(got.len(), 1);
    let r = &got[0];
    assert_eq!(r["schema"], SCHEMA);
    assert_eq!(r["record"], "final");
    assert_eq!(
        (&r["host"], &r["boot_id"]),
        (&"db-3".into(), &"5c1e".into())
    );
    assert_eq!(r["cookie"], 7);
    // The keys `flows --json` prints, advice included.
    let mut flows = Vec::new();
    super::super::records::write_json(&mut flows, &[closed(7)]).unwrap();
    let flows: serde_json::Value = serde_json::from_slice(&flows).unwrap();
    for (k, v) in flows.as_object().unwrap() {
        assert_eq!(&r[k], v, "{k}");
    }
    // Appended to, not truncated, when opened again.
    let mut log = FlowLog::open(&path, rotation, origin()).unwrap();
    log.write_final(&closed(8)).unwrap();
    assert_eq!(lines(&path).len(), 2);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn the_file_rotates_and_keeps_its_bound() {
    let d = dir("rotate");
    let path = d.join("flows.ndjson");
    let one = {
        let mut v = Vec::new();
        let mut log = FlowLog::open(
            &d.join("probe"),
            Rotation {
                max_bytes: u64::MAX,
                keep: 0,
            },
            origin(),
        )
        .unwrap();
        log.write_final(&closed(1)).unwrap();
        v.extend(std::fs::read(d.join("probe")).unwrap());
        v.len() as u64
    };
    // Room for two records a file, two rotated files kept.
    let rotation = Rotation {
        max_bytes: 2 * one + one / 2,
        keep: 2,
    };
    let mut log = FlowLog::open(&path, rotation, origin()).unwrap();
    for cookie in 1..=9 {
        log.write_final(&closed(cookie)).unwrap();
    }
    let cookies = |p: &Path| -> Vec<u64> {
        lines(p)
            .iter()
            .map(|r| r["cookie"].as_u64().unwrap())
            .collect()
    };
    // Nine records: 1-2, 3-4, 5-6, 7-8 rotated out in turn, 9 current.
    assert_eq!(cookies(&path), vec![9]);
    assert_eq!(cookies(&numbered(&path, 1)), vec![7, 8]);
    assert_eq!(cookies(&numbered(&path, 2)), vec![5, 6]);
    assert!(!numbered(&path, 3).exists());
    let used: u64 = [path.clone(), numbered(&path, 1), numbered(&path, 2)]
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert!(used <= rotation.max_bytes * 3, "{used}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_full_disk_drops_the_record_and_leaves_no_partial_line() {
    // /dev/full takes no byte: every write fails with ENOSPC.
    if !Path::new("/dev/full").exists() {
        return;
    }
    let rotation = Rotation {
        max_bytes: u64::MAX,
        keep: 1,
    };
    let mut log = FlowLog::open(Path::new("/dev/full"), rotation, origin()).unwrap();
    let e = log.write_final(&closed(1)).unwrap_err();
    assert_eq!(e.reason(), "disk_full", "{e}");
    assert!(e.to_string().starts_with("/dev/full: "), "{e}");
}

#[test]
fn a_path_that_cannot_be_opened_is_one_error_naming_it() {
    let d = dir("missing");
    let path = d.join("no-such-dir").join("flows.ndjson");
    let rotation = Rotation {
        max_bytes: 1 << 20,
        keep: 1,
    };
    let Err(e) = FlowLog::open(&path, rotation, origin()) else {
        panic!("opened {}", path.display());
    };
    assert!(
        e.to_string().starts_with(&path.display().to_string()),
        "{e}"
    );
    assert_eq!(e.reason(), "write");
    std::fs::remove_dir_all(&d).unwrap();
}
