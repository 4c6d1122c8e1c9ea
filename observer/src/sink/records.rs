//! Renders flows for people (an aligned table) and scripts (NDJSON).

use std::io::Write;

use crate::{track::snapshot::Report, units};

/// Writes one JSON object per flow, one per line.
///
/// # Errors
/// Write or serialisation failures.
pub fn write_json(out: &mut impl Write, flows: &[Report]) -> std::io::Result<()> {
    for f in flows {
        serde_json::to_writer(&mut *out, f)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

const COLUMNS: usize = 17;
const HEADERS: [&str; COLUMNS] = [
    "LOCAL",
    "REMOTE",
    "PID",
    "COMM",
    "STATE",
    "ACKED",
    "RECEIVED",
    "RATE",
    "SRTT",
    "MIN_RTT",
    "CWND",
    "SND_WND",
    "INFLIGHT",
    "RETRANS",
    "RWND_LIM%",
    "CC",
    "VERDICT",
];

fn row(r: &Report) -> [String; COLUMNS] {
    let f = &r.flow;
    let ev = &r.attribution.evidence;
    let rate = ev.rate_bps.max(ev.recv_rate_bps);
    // A download's CWND, INFLIGHT and RWND_LIM% are the sending end's,
    // which this end cannot read (its own are of its ACKs): `-`, as in
    // `top`.
    let download = r.attribution.side == crate::attribution::Side::Receiver;
    let sender_only = |cell: String| if download { "-".to_string() } else { cell };
    let rwnd_pct = if f.busy_us > 0 {
        format!("{:.0}", f.rwnd_limited_us as f64 * 100.0 / f.busy_us as f64)
    } else {
        "-".to_string()
    };
    let state = if f.closed {
        "closed".to_string()
    } else {
        f.state.to_string()
    };
    [
        f.local.to_string(),
        f.remote.to_string(),
        if f.pid == 0 {
            "-".into()
        } else {
            f.pid.to_string()
        },
        if f.comm.is_empty() {
            "-".into()
        } else {
            f.comm.clone()
        },
        state,
        units::compact(&units::bytes(f.bytes_acked as f64)),
        units::compact(&units::bytes(f.bytes_received as f64)),
        // ↓ marks a flow judged from its receiving end (a download), as in `top`.
        match r.attribution.side {
            crate::attribution::Side::Receiver => {
                format!("↓{}", units::compact(&units::rate(rate)))
            }
            crate::attribution::Side::Sender => units::compact(&units::rate(rate)),
        },
        units::compact(&units::time_us(f64::from(f.srtt_us))),
        units::compact(&units::time_us(f64::from(f.min_rtt_us))),
        sender_only(f.snd_cwnd.to_string()),
        units::compact(&units::bytes(f64::from(f.snd_wnd))),
        sender_only(f.inflight.to_string()),
        f.retransmits.to_string(),
        sender_only(rwnd_pct),
        if f.cc.is_empty() {
            "-".into()
        } else {
            f.cc.clone()
        },
        r.attribution.verdict.name().to_string(),
    ]
}

/// Writes an aligned table with a header line.
///
/// # Errors
/// Write failures.
pub fn write_table(out: &mut impl Write, flows: &[Report]) -> std::io::Result<()> {
    let rows: Vec<[String; COLUMNS]> = flows.iter().map(row).collect();
    let mut width = HEADERS.map(str::len);
    for r in &rows {
        widen(&mut width, r);
    }
    writeln!(out, "{}", line(&HEADERS.map(String::from), &width))?;
    for r in &rows {
        writeln!(out, "{}", line(r, &width))?;
    }
    Ok(())
}

/// The table of [`write_table`] for a stream of rows (`observer flows
/// --follow`): the header once, then each batch of rows as it comes,
/// aligned to the widest cell seen so far (a column widens when a wider
/// cell comes, and stays wide).
#[derive(Debug)]
pub struct TableStream {
    width: [usize; COLUMNS],
    header_written: bool,
}

impl Default for TableStream {
    fn default() -> Self {
        // Room for the usual cells from the start (IPv4 endpoints with
        // ephemeral ports, a 15-character command name, `established`,
        // `123.4Mbit/s`, `104.5ms`), so that few rows shift the columns.
        const USUAL: [usize; COLUMNS] = [21, 21, 7, 15, 11, 8, 8, 11, 8, 8, 5, 8, 8, 7, 9, 5, 0];
        let mut width = HEADERS.map(str::len);
        for (w, usual) in width.iter_mut().zip(USUAL) {
            *w = (*w).max(usual);
        }
        TableStream {
            width,
            header_written: false,
        }
    }
}

impl TableStream {
    /// Writes `flows` as rows (the header first, the first time).
    ///
    /// # Errors
    /// Write failures.
    pub fn write(&mut self, out: &mut impl Write, flows: &[Report]) -> std::io::Result<()> {
        if !self.header_written {
            writeln!(out, "{}", line(&HEADERS.map(String::from), &self.width))?;
            self.header_written = true;
        }
        for r in flows.iter().map(row) {
            widen(&mut self.width, &r);
            writeln!(out, "{}", line(&r, &self.width))?;
        }
        Ok(())
    }
}

/// Widens `width` to fit `cells`, in terminal columns, not bytes: a
/// command name in Cyrillic or CJK takes two or three bytes a character,
/// and one or two columns.
pub(super) fn widen(width: &mut [usize], cells: &[String]) {
    use unicode_width::UnicodeWidthStr as _;
    for (w, cell) in width.iter_mut().zip(cells.iter()) {
        *w = (*w).max(cell.width());
    }
}

/// One line of the table: `cells` padded to `width`, two spaces apart.
pub(super) fn line(cells: &[String], width: &[usize]) -> String {
    use unicode_width::UnicodeWidthStr as _;
    let mut l = String::new();
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            l.push_str("  ");
        }
        l.push_str(c);
        l.push_str(&" ".repeat(width[i].saturating_sub(c.width())));
    }
    l.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{attribution, model::clock::Clock, track::snapshot::FlowTable};
    use observer_common::FlowSample;

    /// docs/json.md's table of columns lists every column the table prints,
    /// in order.
    #[test]
    fn the_documented_columns_are_the_tables() {
        let doc = include_str!("../../../docs/json.md");
        let section = doc
            .split("## The table's columns")
            .nth(1)
            .and_then(|s| s.split("\n\n").nth(2))
            .expect("docs/json.md's table of columns");
        let documented: Vec<&str> = section
            .lines()
            .skip(2)
            .flat_map(|l| l.split('|').nth(1))
            .flat_map(|cell| cell.split(','))
            .map(|c| c.trim().trim_matches('`'))
            .collect();
        assert_eq!(documented, HEADERS);
    }

    fn flow() -> Report {
        let mut s = FlowSample::ZERO;
        s.cookie = 7;
        s.saddr = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1];
        s.daddr = s.saddr;
        s.sport = 40000;
        s.dport = 5201;
        s.bytes_acked = 10 * 1024 * 1024;
        s.snd_wnd = 80_480;
        s.max_window = 131_072;
        s.srtt_us = 104_500;
        s.chrono_stat = [10, 30, 0];
        s.state = 1;
        s.first_seen_ns = 1;
        let mut t = FlowTable::new();
        t.update(s, 2);
        let cfg = attribution::Config::default();
        t.reports(&Clock::fixed(0, 250), 3, 0, &cfg).remove(0)
    }

    #[test]
    fn table_has_header_and_aligned_row() {
        let mut out = Vec::new();
        write_table(&mut out, &[flow()]).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("LOCAL"));
        assert!(lines[1].starts_with("127.0.0.1:40000"));
        // 10 MiB acked, the window and srtt in the units of every view.
        assert!(lines[1].contains("10.49MB"), "{}", lines[1]);
        assert!(lines[1].contains("80.5KB"), "{}", lines[1]);
        assert!(lines[1].contains("104.5ms"), "{}", lines[1]);
        // rwnd-limited 30 of 40 busy jiffies.
        let cells: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(cells.len(), 17, "{cells:?}");
        assert_eq!(cells[14], "75");
        assert_eq!(cells[16], "unknown");
    }

    #[test]
    fn a_download_leaves_the_senders_columns_empty() {
        let mut down = flow();
        down.attribution.side = crate::attribution::Side::Receiver;
        let (up, down) = (row(&flow()), row(&down));
        // CWND, INFLIGHT and RWND_LIM%: the sending end's.
        for i in [10, 12, 14] {
            assert_ne!(up[i], "-", "{} {up:?}", HEADERS[i]);
            assert_eq!(down[i], "-", "{} {down:?}", HEADERS[i]);
        }
        assert!(down[7].starts_with('↓'), "{down:?}");
        assert_eq!(down[11], up[11]);
    }

    #[test]
    fn columns_align_by_display_width() {
        use unicode_width::UnicodeWidthStr as _;
        let mut wide = flow();
        wide.flow.comm = "服务器".to_string();
        let mut cyrillic = flow();
        cyrillic.flow.comm = "сервер".to_string();
        let mut out = Vec::new();
        write_table(&mut out, &[flow(), wide, cyrillic]).unwrap();
        let text = String::from_utf8(out).unwrap();
        // The STATE column starts at the same terminal column on every line.
        let starts: Vec<usize> = text
            .lines()
            .map(|l| {
                let at = l.find(if l.starts_with("LOCAL") {
                    "STATE"
                } else {
                    "established"
                });
                l[..at.unwrap_or_else(|| panic!("{l}"))].width()
            })
            .collect();
        assert_eq!(starts.len(), 4);
        assert!(starts.iter().all(|s| *s == starts[0]), "{starts:?}\n{text}");
    }

    #[test]
    fn streamed_table_writes_its_header_once_and_keeps_columns() {
        let mut t = TableStream::default();
        let mut out = Vec::new();
        t.write(&mut out, &[flow()]).unwrap();
        let mut wide = flow();
        wide.flow.comm = "a-command-name-wider-than-15".to_string();
        t.write(&mut out, &[wide, flow()]).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].starts_with("LOCAL"));
        assert!(lines[1..].iter().all(|l| l.starts_with("127.0.0.1:40000")));
        let state_at = |l: &str| l.find("established").unwrap();
        // The wide name pushed STATE right, and it stays there.
        assert!(state_at(lines[2]) > state_at(lines[1]));
        assert_eq!(state_at(lines[3]), state_at(lines[2]));
    }

    #[test]
    fn json_keys_and_values() {
        let mut out = Vec::new();
        write_json(&mut out, &[flow()]).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["cookie"], 7);
        assert_eq!(v["local"], "127.0.0.1:40000");
        assert_eq!(v["snd_wnd"], 80_480);
        assert_eq!(v["snd_wnd_max"], 131_072);
        assert_eq!(v["busy_us"], 160_000);
        assert_eq!(v["rwnd_limited_us"], 120_000);
        assert_eq!(v["closed"], false);
        assert_eq!(v["verdict"], "unknown");
        assert_eq!(v["side"], "sender");
        assert!(v["explanation"].as_str().unwrap().starts_with("unknown: "));
        assert!(v["evidence"]["shares"]["idle"].is_number());
        assert!(v["evidence"]["ceilings"]["rwnd_bps"].is_number());
        for key in [
            "netns",
            "remote",
            "pid",
            "comm",
            "state",
            "bytes_acked",
            "bytes_received",
            "bytes_sent",
            "srtt_us",
            "min_rtt_us",
            "snd_cwnd",
            "mss",
            "inflight",
            "retransmits",
            "sndbuf_limited_us",
            "cwnd_limited_us",
            "cc",
            "first_seen",
            "last_seen",
            "unacked",
            "sacked",
            "lost",
            "retrans_out",
            "rto_us",
            "pacing_rate_bps",
            "reordering",
            "delivered_ce",
            "dsack_dups",
            "last_data_sent_ms",
            "last_data_recv_ms",
            "last_ack_recv_ms",
        ] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
    }
}
