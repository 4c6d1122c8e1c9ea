//! The demo's transfers, each with what it shows and the figures the seed
//! experiment published for it (../shared/docs/seed-experiments.md, A: a
//! 35 Mbit/s path with a 104 ms RTT), and the closing table that sets
//! observer's figures for each beside them.

use serde_json::Value;

/// What the seed experiment published for one run, as printed there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Published {
    /// The sender's rate (iperf3's sender line).
    pub sender: &'static str,
    /// The receiver's rate.
    pub receiver: &'static str,
    /// Retransmitted segments.
    pub retransmits: &'static str,
    /// What the article found limits it.
    pub limit: &'static str,
}

/// One transfer of the demo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Its name in the table: iperf3's options.
    pub name: &'static str,
    /// iperf3's arguments after `-c ADDR -p PORT -t SECS`.
    pub args: &'static [&'static str],
    /// What it is, in words.
    pub about: &'static str,
    /// The seed's figures for it.
    pub published: Published,
}

/// The transfers, in the order they run.
pub const STEPS: [Step; 3] = [
    Step {
        name: "-C cubic",
        args: &["-C", "cubic"],
        about: "one stream, cubic, windows autotuned",
        published: Published {
            sender: "26.3 Mbit/s",
            receiver: "23.0 Mbit/s",
            retransmits: "39",
            limit: "cwnd, the path with loss",
        },
    },
    Step {
        name: "-w 64K",
        args: &["-w", "64K"],
        about: "one stream with a 64 KB window",
        published: Published {
            sender: "5.77 Mbit/s",
            receiver: "5.71 Mbit/s",
            retransmits: "11",
            limit: "window: 64 KB / 104 ms",
        },
    },
    Step {
        name: "-w 64K -P 4",
        args: &["-w", "64K", "-P", "4"],
        about: "four streams with 64 KB windows",
        published: Published {
            sender: "21.2 Mbit/s",
            receiver: "21.0 Mbit/s",
            retransmits: "6",
            limit: "each stream's window",
        },
    },
];

/// Seconds each transfer runs (iperf3 `-t`).
pub const SECONDS: u32 = 10;

/// Bytes below which an upload is iperf3's control connection, not a
/// stream of the test (it moves a few hundred bytes).
const STREAM_BYTES: u64 = 100_000;

impl Step {
    /// The line that names it as it starts: "now: iperf3 -w 64K -P 4,
    /// four streams with 64 KB windows (3 of 3, 10 s)".
    pub fn announce(&self, n: usize) -> String {
        format!(
            "now: iperf3 {}, {} ({n} of {}, {SECONDS} s)",
            self.name,
            self.about,
            STEPS.len()
        )
    }
}

/// What observer recorded of one transfer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measured {
    /// The test's streams (uploads from iperf3's client).
    pub streams: usize,
    /// Their rates summed, at the sending end (bits/s).
    pub sender_bps: f64,
    /// Their rates summed, at the receiving end (bits/s).
    pub receiver_bps: f64,
    /// Their retransmitted segments.
    pub retransmits: u64,
    /// Their verdicts at the sending end, most common first: `path`,
    /// `receive_window x4`.
    pub verdicts: String,
}

/// The figures of the transfer whose client was `pid`, from the records
/// of `observer flows --json` (one object each): its uploads are the
/// client's flows, its downloads the server's flows whose remote port is
/// one of the client's local ports.
pub fn measure(records: &[Value], pid: u32) -> Measured {
    let port = |addr: Option<&str>| addr.and_then(|a| a.rsplit(':').next()).map(str::to_string);
    let streams: Vec<&Value> = records
        .iter()
        .filter(|r| r["pid"].as_u64() == Some(u64::from(pid)))
        .filter(|r| r["bytes_acked"].as_u64().unwrap_or(0) >= STREAM_BYTES)
        .collect();
    let ports: Vec<String> = streams
        .iter()
        .filter_map(|r| port(r["local"].as_str()))
        .collect();
    let downloads = records.iter().filter(|r| {
        r["side"] == "receiver"
            && port(r["remote"].as_str()).is_some_and(|p| ports.contains(&p))
            && r["pid"].as_u64() != Some(u64::from(pid))
    });
    let mut names: Vec<(String, usize)> = Vec::new();
    for s in &streams {
        let v = s["verdict"].as_str().unwrap_or("-").to_string();
        match names.iter_mut().find(|(n, _)| *n == v) {
            Some((_, c)) => *c += 1,
            None => names.push((v, 1)),
        }
    }
    names.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Measured {
        streams: streams.len(),
        sender_bps: streams
            .iter()
            .filter_map(|r| r["evidence"]["rate_bps"].as_f64())
            .sum(),
        receiver_bps: downloads
            .filter_map(|r| r["evidence"]["recv_rate_bps"].as_f64())
            .sum(),
        retransmits: streams
            .iter()
            .filter_map(|r| r["retransmits"].as_u64())
            .sum(),
        verdicts: names
            .iter()
            .map(|(n, c)| {
                if *c > 1 {
                    format!("{n} x{c}")
                } else {
                    n.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// A rate as the seed prints it: `5.77 Mbit/s`.
fn mbit(bps: f64) -> String {
    // An empty sum is -0.0.
    format!("{:.2} Mbit/s", bps / 1e6 + 0.0)
}

/// The closing table: each transfer that ran (`measured`, in [`STEPS`]'s
/// order; `None` for one that did not) with observer's figures beside the
/// figures published for reference A (docs/scenarios.md), and a line on
/// why cubic alone differs.
pub fn table(measured: &[Option<Measured>]) -> String {
    let header = [
        "TRANSFER",
        "STREAMS",
        "SENDER",
        "RECEIVER",
        "RETR",
        "VERDICT",
        "|",
        "SEED SENDER",
        "RECEIVER",
        "RETR",
        "WHAT LIMITS IT",
    ];
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|h| (*h).to_string()).collect()];
    for (step, m) in STEPS
        .iter()
        .zip(measured.iter().chain(std::iter::repeat(&None)))
    {
        let p = step.published;
        let ours = match m {
            Some(m) if m.streams > 0 => vec![
                m.streams.to_string(),
                mbit(m.sender_bps),
                mbit(m.receiver_bps),
                m.retransmits.to_string(),
                if m.verdicts.is_empty() {
                    "-".to_string()
                } else {
                    m.verdicts.clone()
                },
            ],
            Some(_) => vec![
                "none seen".to_string(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ],
            None => vec![
                "not run".to_string(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ],
        };
        let mut row = vec![step.name.to_string()];
        row.extend(ours);
        row.push("|".to_string());
        row.extend([p.sender, p.receiver, p.retransmits, p.limit].map(str::to_string));
        rows.push(row);
    }
    let mut width = vec![0; header.len()];
    for r in &rows {
        for (w, cell) in width.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::from(
        "observer's figures on this emulated path (35 Mbit/s, 104 ms), beside those published \
         for reference A, a lab path of the same rate and delay (docs/scenarios.md):\n",
    );
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&width)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out.push_str(
        "The windowed runs match the lab's. Cubic alone runs faster here: this path queues one \
         bandwidth-delay product, so cubic fills the link (the path binds), where the lab's \
         smaller queue dropped sooner and held it to its congestion window.\n",
    );
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests: a failure should panic")]

    use super::*;

    #[test]
    fn each_step_is_named_as_it_starts() {
        assert_eq!(
            STEPS[2].announce(3),
            "now: iperf3 -w 64K -P 4, four streams with 64 KB windows (3 of 3, 10 s)"
        );
        // iperf3's arguments are the name's.
        for s in STEPS {
            assert_eq!(s.args.join(" "), s.name);
        }
    }

    /// A record as `observer flows --json` prints one.
    fn record(pid: u32, local: &str, remote: &str, side: &str, bytes: u64, rate: f64) -> Value {
        serde_json::json!({
            "pid": pid, "local": local, "remote": remote, "side": side,
            "bytes_acked": if side == "sender" { bytes } else { 1 },
            "retransmits": if side == "sender" { 2 } else { 0 },
            "verdict": if side == "sender" { "receive_window" } else { "path" },
            "evidence": {"rate_bps": rate, "recv_rate_bps": rate * 0.99},
        })
    }

    #[test]
    fn a_transfer_is_its_clients_streams_and_the_servers_ends_of_them() {
        let mut records = vec![
            // The control connection: a few hundred bytes.
            record(20, "10.77.0.1:40000", "10.77.0.2:5201", "sender", 300, 0.0),
            record(10, "10.77.0.2:5201", "10.77.0.1:40000", "receiver", 0, 0.0),
            // Another transfer's stream, to the same server.
            record(
                21,
                "10.77.0.1:40100",
                "10.77.0.2:5201",
                "sender",
                9_000_000,
                30e6,
            ),
            record(10, "10.77.0.2:5201", "10.77.0.1:40100", "receiver", 0, 30e6),
        ];
        for p in 1..=4 {
            let local = format!("10.77.0.1:4000{p}");
            records.push(record(
                20,
                &local,
                "10.77.0.2:5201",
                "sender",
                7_000_000,
                5.5e6,
            ));
            records.push(record(10, "10.77.0.2:5201", &local, "receiver", 0, 5.5e6));
        }
        let m = measure(&records, 20);
        assert_eq!(m.streams, 4);
        assert!((m.sender_bps - 22e6).abs() < 1.0, "{m:?}");
        assert!((m.receiver_bps - 22e6 * 0.99).abs() < 1.0, "{m:?}");
        assert_eq!(m.retransmits, 8);
        assert_eq!(m.verdicts, "receive_window x4");
        assert_eq!(measure(&records, 99), Measured::default());
    }

    #[test]
    fn the_table_sets_each_transfer_beside_the_seeds_figures() {
        let one = Measured {
            streams: 1,
            sender_bps: 5.78e6,
            receiver_bps: 5.71e6,
            retransmits: 0,
            verdicts: "receive_window".into(),
        };
        let text = table(&[None, Some(one), Some(Measured::default())]);
        let lines: Vec<&str> = text.lines().collect();
        // A caption, the header, a row per transfer, and the note on cubic.
        assert_eq!(lines.len(), 6, "{text}");
        assert!(
            lines[5].starts_with("The windowed runs match the lab's."),
            "{text}"
        );
        let header: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(
            header[..6],
            [
                "TRANSFER", "STREAMS", "SENDER", "RECEIVER", "RETR", "VERDICT"
            ]
        );
        assert!(
            lines[2].starts_with("-C cubic") && lines[2].contains("not run"),
            "{text}"
        );
        assert!(lines[2].contains("26.3 Mbit/s  23.0 Mbit/s  39"), "{text}");
        let w64: Vec<&str> = lines[3].split(" | ").collect();
        assert_eq!(w64.len(), 2, "{text}");
        assert_eq!(
            w64[0].split_whitespace().collect::<Vec<_>>(),
            [
                "-w",
                "64K",
                "1",
                "5.78",
                "Mbit/s",
                "5.71",
                "Mbit/s",
                "0",
                "receive_window"
            ]
        );
        assert!(w64[1].trim().starts_with("5.77 Mbit/s"), "{text}");
        assert!(lines[4].ends_with("each stream's window"), "{text}");
        // A transfer observer saw no stream of says so, with no -0.00.
        assert!(lines[4].starts_with("-w 64K -P 4  none seen  -"), "{text}");
        assert_eq!(mbit([0.0f64; 0].iter().sum()), "0.00 Mbit/s");
        // The columns line up: every row's bar at one place.
        let bar = lines[1].find('|').unwrap();
        assert!(
            lines[2..5].iter().all(|l| l.find('|') == Some(bar)),
            "{text}"
        );
    }
}
