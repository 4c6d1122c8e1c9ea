//! The scenarios: each one imposes a known constraint on real kernel TCP
//! across an emulated path, so observer's verdict has a ground truth.
//! Names are stable: scripts and dashboards use them.

use std::time::Duration;

use observer::attribution::Verdict;
use pathemu::{Link, PathConfig, Side};

/// Which end's flows the scenario judges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum View {
    /// The sending namespace (A).
    Sender,
    /// The receiving namespace (B): a download as a laptop sees it.
    Receiver,
}

/// What makes the traffic.
#[derive(Clone, Debug)]
pub enum Traffic {
    /// iperf3 client in A (sender) to a server in B, with extra arguments.
    Iperf {
        /// Extra client arguments (`-w 64K`, `-P 4`, `-b 2M`, `-C bbr`...).
        args: Vec<String>,
    },
    /// observer's own sender in A with SO_SNDBUF set (bytes), to a plain
    /// receiver in B.
    SmallSndbuf {
        /// SO_SNDBUF for the sender (the kernel doubles it).
        sndbuf: i32,
    },
    /// observer's own sender: `app_rate_bps` for `app_secs`, then as fast as
    /// it can.
    Phases {
        /// Rate of the application-limited phase (bits/s).
        app_rate_bps: u64,
        /// Length of that phase.
        app_secs: u64,
    },
    /// A download with iperf3 the other way round: the server in A sends,
    /// the client in B runs with `-R` (and `-C` where the scenario sets `cc`,
    /// which the server applies to its data sockets).
    IperfReverse {
        /// Extra client arguments (`-w 64K`, `-b 3M`...).
        args: Vec<String>,
    },
    /// An HTTP download: a server in A serves a generated file, a client in
    /// B fetches it. The server's congestion control is A's namespace
    /// default (`Scenario::snd_cc_default`).
    Http {
        /// The server in A.
        server: HttpServer,
        /// The client in B.
        client: HttpClient,
    },
}

/// An HTTP server in A.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpServer {
    /// nginx (`nginx-light`), in the foreground, with its configuration,
    /// pid, logs and temp paths in a temporary directory.
    Nginx {
        /// `limit_rate` for every response (nginx's syntax: `375k` is
        /// 375 KiB/s), if set.
        limit_rate: Option<&'static str>,
        /// `sndbuf=` on the `listen` directive (SO_SNDBUF of the accepted
        /// sockets; the kernel doubles it), if set.
        sndbuf: Option<&'static str>,
    },
    /// `python3 -m http.server`.
    Python,
}

/// An HTTP client in B.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HttpClient {
    /// curl, stopped after the transfer length (`--max-time`); the file is
    /// larger than the path can carry in that time.
    Curl {
        /// `--limit-rate` (curl's syntax: `250k` is 250 KiB/s), if set.
        limit_rate: Option<&'static str>,
    },
    /// wget, fetching a file sized for the transfer length at the path's
    /// bottleneck rate (wget has no total time limit).
    Wget,
}

/// An expected verdict over part of a flow's life (seconds from its start).
#[derive(Clone, Copy, Debug)]
pub struct Expect {
    /// Start of the span judged (s).
    pub from_s: f64,
    /// End of the span (s); `f64::INFINITY` for the flow's end.
    pub to_s: f64,
    /// What observer must say there.
    pub verdict: Verdict,
}

/// One scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Stable name.
    pub name: &'static str,
    /// What it shows, in a few words.
    pub about: &'static str,
    /// The emulated path.
    pub path: PathConfig,
    /// `net.ipv4.tcp_rmem` maximum in the receiving namespace (B), bytes, if set.
    pub rcv_rmem_max: Option<u64>,
    /// `net.ipv4.tcp_window_scaling` in the receiving namespace (B), if set.
    pub rcv_window_scaling: Option<bool>,
    /// `net.ipv4.tcp_congestion_control` in the sending namespace (A): the
    /// congestion control of sockets that do not pick one (HTTP servers).
    pub snd_cc_default: Option<&'static str>,
    /// `net.ipv4.tcp_wmem` maximum in the sending namespace (A), bytes, if set.
    pub snd_wmem_max: Option<u64>,
    /// Congestion control the sending program picks (iperf3 `-C`,
    /// TCP_CONGESTION on observer's own sender; None: A's default). HTTP
    /// servers cannot pick one: use `snd_cc_default`.
    pub cc: Option<&'static str>,
    /// Lock the sender's cwnd to this many segments with a route metric.
    pub cwnd_lock: Option<u32>,
    /// The traffic.
    pub traffic: Traffic,
    /// Transfer length.
    pub secs: u64,
    /// Number of data flows expected.
    pub flows: usize,
    /// Which end is judged.
    pub view: View,
    /// The imposed constraint (verdict vocabulary), per span.
    pub expect: Vec<Expect>,
    /// The published figure for the whole transfer (bits/s), where one exists.
    pub reference_bps: Option<f64>,
    /// The emulator must reproduce this total throughput (bits/s) within 15%.
    pub emulator_check_bps: Option<f64>,
}

/// The verdicts that make sense from the receiving end: what this host
/// (its window, its reader) or the far side (the sender, its congestion
/// window, the path) does. `send_buffer` and `application` name the
/// local sender, which a receiver is not.
pub const RECEIVER_VERDICTS: [Verdict; 6] = [
    Verdict::ReceiveWindow,
    Verdict::ReceiverApplication,
    Verdict::Sender,
    Verdict::CongestionWindow,
    Verdict::Path,
    Verdict::Unknown,
];

impl Scenario {
    /// The namespace sysctls the scenario sets before its traffic, as
    /// `(namespace, "key=value")` for `sysctl -w`.
    pub fn sysctls(&self) -> Vec<(Side, String)> {
        let mut v = Vec::new();
        if let Some(max) = self.rcv_rmem_max {
            let default = max.min(131_072);
            v.push((Side::B, format!("net.ipv4.tcp_rmem=4096 {default} {max}")));
        }
        if let Some(on) = self.rcv_window_scaling {
            v.push((
                Side::B,
                format!("net.ipv4.tcp_window_scaling={}", u8::from(on)),
            ));
        }
        if let Some(cc) = self.snd_cc_default {
            v.push((Side::A, format!("net.ipv4.tcp_congestion_control={cc}")));
        }
        if let Some(max) = self.snd_wmem_max {
            let default = max.min(16_384);
            v.push((Side::A, format!("net.ipv4.tcp_wmem=4096 {default} {max}")));
        }
        v
    }
}

const MS: fn(u64) -> Duration = Duration::from_millis;

fn steady(v: Verdict) -> Vec<Expect> {
    vec![Expect {
        from_s: 3.0,
        to_s: f64::INFINITY,
        verdict: v,
    }]
}

fn iperf(args: &[&str]) -> Traffic {
    Traffic::Iperf {
        args: args.iter().map(|s| s.to_string()).collect(),
    }
}

/// iperf3 `-R`: server in A, client in B.
fn iperf_r(args: &[&str]) -> Traffic {
    Traffic::IperfReverse {
        args: args.iter().map(|s| s.to_string()).collect(),
    }
}

fn nginx(limit_rate: Option<&'static str>, sndbuf: Option<&'static str>) -> HttpServer {
    HttpServer::Nginx { limit_rate, sndbuf }
}

fn curl(server: HttpServer, limit_rate: Option<&'static str>) -> Traffic {
    Traffic::Http {
        server,
        client: HttpClient::Curl { limit_rate },
    }
}

/// Reference A: 35 Mbit/s, queue about one BDP of the 104 ms path, with a
/// one-way delay of `one_way_us` (52 ms: 104 ms RTT; 1.8 ms: the 3.6 ms lab).
fn ref_a(one_way_us: u64) -> PathConfig {
    PathConfig::bottleneck(35_000_000, Duration::from_micros(one_way_us), 460_000)
}

/// Reference B's shape: 110 ms RTT, a little random loss, a bottleneck
/// scaled from the article's ~300 Mbit/s to 100 Mbit/s so that the relay and
/// both iperf3 ends fit on two cores with exact timing.
fn ref_b() -> PathConfig {
    let fwd = Link::unlimited()
        .rate(100_000_000)
        .delay(MS(55))
        .queue(1_000_000)
        .loss(0.0001);
    PathConfig::new(fwd, Link::with_delay_only(MS(55))).seed(7)
}

/// `net.ipv4.tcp_rmem` maximum that gives about a 4 MB advertised window
/// (Linux advertises about half the buffer).
const RMEM_4MB_WINDOW: u64 = 8 << 20;
const RMEM_32MB_WINDOW: u64 = 64 << 20;

/// Every scenario, in running order.
pub fn all() -> Vec<Scenario> {
    use Verdict::*;
    let base = |name, about, path: PathConfig, traffic, expect: Vec<Expect>| Scenario {
        name,
        about,
        path,
        rcv_rmem_max: None,
        rcv_window_scaling: None,
        snd_cc_default: None,
        snd_wmem_max: None,
        cc: None,
        cwnd_lock: None,
        traffic,
        secs: 10,
        flows: 1,
        view: View::Sender,
        expect,
        reference_bps: None,
        emulator_check_bps: None,
    };
    let mut v = vec![
        Scenario {
            cc: Some("cubic"),
            reference_bps: Some(34.6e6),
            emulator_check_bps: Some(34.6e6),
            ..base(
                "ref-a-lowlat",
                "reference A at low latency: the 35 Mbit/s link is the limit",
                ref_a(1_800),
                iperf(&[]),
                steady(Path),
            )
        },
        Scenario {
            cc: Some("cubic"),
            reference_bps: Some(26.3e6),
            // The published 26.3 Mbit/s came from a lab path with a smaller
            // queue; with a one-BDP queue cubic fills the link (33.8 Mbit/s
            // measured on this emulator, ../shared/docs/seed-experiments.md).
            emulator_check_bps: Some(33.8e6),
            ..base(
                "ref-a-default",
                "reference A, 104 ms, default window: cubic fills the link and its queue",
                ref_a(52_000),
                iperf(&[]),
                steady(Path),
            )
        },
        Scenario {
            reference_bps: Some(5.77e6),
            emulator_check_bps: Some(5.77e6),
            ..base(
                "ref-a-w64k",
                "reference A with -w 64K: 64 KB / 104 ms is about 5 Mbit/s",
                ref_a(52_000),
                iperf(&["-w", "64K"]),
                steady(ReceiveWindow),
            )
        },
        Scenario {
            flows: 4,
            reference_bps: Some(21.2e6),
            emulator_check_bps: Some(21.2e6),
            ..base(
                "ref-a-w64k-p4",
                "four 64 KB windows in flight: each stream window-bound",
                ref_a(52_000),
                iperf(&["-w", "64K", "-P", "4"]),
                steady(ReceiveWindow),
            )
        },
        Scenario {
            cc: Some("cubic"),
            rcv_rmem_max: Some(RMEM_4MB_WINDOW),
            ..base(
                "ref-b-cubic",
                "110 ms, 4 MB window, random loss: cubic's cwnd binds, not the window",
                ref_b(),
                iperf(&[]),
                steady(CongestionWindow),
            )
        },
        Scenario {
            cc: Some("bbr"),
            rcv_rmem_max: Some(RMEM_4MB_WINDOW),
            ..base(
                "ref-b-bbr",
                "110 ms, 4 MB window: bbr runs at the bottleneck rate",
                ref_b(),
                iperf(&[]),
                steady(Path),
            )
        },
        Scenario {
            cc: Some("bbr"),
            flows: 4,
            rcv_rmem_max: Some(RMEM_4MB_WINDOW),
            ..base(
                "ref-b-bbr-p4",
                "four bbr streams share the bottleneck",
                ref_b(),
                iperf(&["-P", "4"]),
                steady(Path),
            )
        },
        Scenario {
            cc: Some("cubic"),
            rcv_rmem_max: Some(RMEM_32MB_WINDOW),
            ..base(
                "ref-b-cubic-32m",
                "a 32 MB window does not help cubic: still cwnd-bound",
                ref_b(),
                iperf(&[]),
                steady(CongestionWindow),
            )
        },
        Scenario {
            cwnd_lock: Some(10),
            ..base(
                "cwnd-clamp",
                "cwnd locked at 10 segments on a 100 Mbit/s, 50 ms path: 2.3 Mbit/s",
                PathConfig::bottleneck(100_000_000, MS(25), 625_000),
                iperf(&[]),
                steady(CongestionWindow),
            )
        },
        base(
            "sndbuf",
            "a 64 KB SO_SNDBUF at the sender, a large receive window",
            PathConfig::bottleneck(100_000_000, MS(25), 625_000),
            Traffic::SmallSndbuf { sndbuf: 64 * 1024 },
            steady(SendBuffer),
        ),
        base(
            "app-limited",
            "the sender writes 2 Mbit/s on a 100 Mbit/s path",
            PathConfig::bottleneck(100_000_000, MS(25), 625_000),
            iperf(&["-b", "2M"]),
            steady(Application),
        ),
        Scenario {
            cc: Some("cubic"),
            ..base(
                "path-cubic",
                "20 Mbit/s bottleneck, large windows, cubic",
                PathConfig::bottleneck(20_000_000, MS(25), 125_000),
                iperf(&[]),
                steady(Path),
            )
        },
        Scenario {
            cc: Some("bbr"),
            ..base(
                "path-bbr",
                "20 Mbit/s bottleneck, large windows, bbr",
                PathConfig::bottleneck(20_000_000, MS(25), 125_000),
                iperf(&[]),
                steady(Path),
            )
        },
        Scenario {
            cc: Some("cubic"),
            secs: 11,
            ..base(
                "phase-change",
                "application-limited for 5 s, then bulk into a 20 Mbit/s bottleneck",
                PathConfig::bottleneck(20_000_000, MS(25), 125_000),
                Traffic::Phases {
                    app_rate_bps: 2_000_000,
                    app_secs: 5,
                },
                vec![
                    Expect {
                        from_s: 2.5,
                        to_s: 5.0,
                        verdict: Application,
                    },
                    Expect {
                        from_s: 8.5,
                        to_s: f64::INFINITY,
                        verdict: Path,
                    },
                ],
            )
        },
        Scenario {
            view: View::Receiver,
            reference_bps: Some(5.71e6),
            ..base(
                "rx-ref-a-w64k",
                "reference A -w 64K seen from the receiver: its own window binds",
                ref_a(52_000),
                iperf(&["-w", "64K"]),
                steady(ReceiveWindow),
            )
        },
        Scenario {
            view: View::Receiver,
            cc: Some("cubic"),
            rcv_rmem_max: Some(RMEM_4MB_WINDOW),
            ..base(
                "rx-ref-b-cubic",
                "reference B cubic seen from the receiver: 0.01% loss holds cubic's window",
                ref_b(),
                iperf(&[]),
                steady(CongestionWindow),
            )
        },
        // Downloads seen from the receiver (B), with real clients in B
        // fetching from servers in A.
        Scenario {
            view: View::Receiver,
            cc: Some("cubic"),
            rcv_rmem_max: Some(128 * 1024),
            ..base(
                "rx-rmem-cap",
                "iperf3 -R, B's tcp_rmem capped at 128 KB on reference A's path: its window binds",
                ref_a(52_000),
                iperf_r(&[]),
                steady(ReceiveWindow),
            )
        },
        Scenario {
            view: View::Receiver,
            ..base(
                "rx-sorcvbuf",
                "iperf3 -R -w 64K: the client's 64 KB SO_RCVBUF binds on reference A's path",
                ref_a(52_000),
                iperf_r(&["-w", "64K"]),
                steady(ReceiveWindow),
            )
        },
        Scenario {
            view: View::Receiver,
            rcv_window_scaling: Some(false),
            snd_cc_default: Some("cubic"),
            ..base(
                "rx-no-wscale",
                "curl from python http.server, window scaling off in B: 64 KB / 60 ms on 100 Mbit/s",
                PathConfig::bottleneck(100_000_000, MS(30), 750_000),
                curl(HttpServer::Python, None),
                steady(ReceiveWindow),
            )
        },
        Scenario {
            view: View::Receiver,
            ..base(
                "rx-slow-reader",
                "curl --limit-rate 250k from nginx on a 50 Mbit/s, 30 ms path: B's reader is slow",
                PathConfig::bottleneck(50_000_000, MS(15), 190_000),
                curl(nginx(None, None), Some("250k")),
                steady(ReceiverApplication),
            )
        },
        Scenario {
            view: View::Receiver,
            snd_cc_default: Some("cubic"),
            ..base(
                "rx-loss",
                "curl from nginx (cubic), 50 Mbit/s, 30 ms, 1% loss towards B: cubic's window",
                PathConfig::new(
                    Link::unlimited()
                        .rate(50_000_000)
                        .delay(MS(15))
                        .queue(190_000)
                        .loss(0.01),
                    Link::with_delay_only(MS(15)),
                ),
                curl(nginx(None, None), None),
                steady(CongestionWindow),
            )
        },
        Scenario {
            view: View::Receiver,
            cc: Some("cubic"),
            ..base(
                "rx-bufferbloat",
                "iperf3 -R -C cubic into 10 Mbit/s with a 1 s (1.25 MB) queue: the path",
                PathConfig::bottleneck(10_000_000, MS(10), 1_250_000),
                iperf_r(&[]),
                steady(Path),
            )
        },
        Scenario {
            view: View::Receiver,
            snd_cc_default: Some("bbr"),
            ..base(
                "rx-bbr-path",
                "wget from python http.server (bbr), 20 Mbit/s, 50 ms, large windows: the path",
                PathConfig::bottleneck(20_000_000, MS(25), 125_000),
                Traffic::Http {
                    server: HttpServer::Python,
                    client: HttpClient::Wget,
                },
                steady(Path),
            )
        },
        Scenario {
            view: View::Receiver,
            ..base(
                "rx-server-paced",
                "curl from nginx with limit_rate 375k (3 Mbit/s) on a 50 Mbit/s, 40 ms path",
                PathConfig::bottleneck(50_000_000, MS(20), 250_000),
                curl(nginx(Some("375k"), None), None),
                steady(Sender),
            )
        },
        Scenario {
            view: View::Receiver,
            ..base(
                "rx-server-sndbuf",
                "curl from nginx with a 64 KB SO_SNDBUF (listen sndbuf=64k), 100 Mbit/s, 50 ms",
                PathConfig::bottleneck(100_000_000, MS(25), 625_000),
                curl(nginx(None, Some("64k")), None),
                steady(Sender),
            )
        },
        // The other congestion control where both apply.
        Scenario {
            view: View::Receiver,
            cc: Some("bbr"),
            ..base(
                "rx-bufferbloat-bbr",
                "iperf3 -R -C bbr into the same 10 Mbit/s, 1 s queue: bbr keeps it short, still the path",
                PathConfig::bottleneck(10_000_000, MS(10), 1_250_000),
                iperf_r(&[]),
                steady(Path),
            )
        },
        Scenario {
            view: View::Receiver,
            snd_cc_default: Some("cubic"),
            ..base(
                "rx-cubic-path",
                "wget from python http.server (cubic), 20 Mbit/s, 50 ms, large windows: the path",
                PathConfig::bottleneck(20_000_000, MS(25), 125_000),
                Traffic::Http {
                    server: HttpServer::Python,
                    client: HttpClient::Wget,
                },
                steady(Path),
            )
        },
        Scenario {
            view: View::Receiver,
            snd_cc_default: Some("cubic"),
            ..base(
                "rx-server-sndbuf-cubic",
                "curl from nginx (cubic) with a 64 KB SO_SNDBUF, 100 Mbit/s, 50 ms",
                PathConfig::bottleneck(100_000_000, MS(25), 625_000),
                curl(nginx(None, Some("64k")), None),
                steady(Sender),
            )
        },
        Scenario {
            view: View::Receiver,
            snd_cc_default: Some("cubic"),
            ..base(
                "rx-slow-reader-cubic",
                "curl --limit-rate 250k from nginx (cubic), 50 Mbit/s, 30 ms",
                PathConfig::bottleneck(50_000_000, MS(15), 190_000),
                curl(nginx(None, None), Some("250k")),
                steady(ReceiverApplication),
            )
        },
    ];
    for s in &mut v {
        s.path.seed = 7;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_stable_ones() {
        let names: Vec<&str> = all().iter().map(|s| s.name).collect();
        for n in [
            "ref-a-lowlat",
            "ref-a-default",
            "ref-a-w64k",
            "ref-a-w64k-p4",
            "ref-b-cubic",
            "ref-b-bbr",
            "ref-b-bbr-p4",
            "ref-b-cubic-32m",
            "cwnd-clamp",
            "sndbuf",
            "app-limited",
            "path-cubic",
            "path-bbr",
            "phase-change",
            "rx-ref-a-w64k",
            "rx-ref-b-cubic",
            "rx-rmem-cap",
            "rx-sorcvbuf",
            "rx-no-wscale",
            "rx-slow-reader",
            "rx-loss",
            "rx-bufferbloat",
            "rx-bbr-path",
            "rx-server-paced",
            "rx-server-sndbuf",
            "rx-bufferbloat-bbr",
            "rx-cubic-path",
            "rx-server-sndbuf-cubic",
            "rx-slow-reader-cubic",
        ] {
            assert!(names.contains(&n), "missing {n}");
        }
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "duplicate names");
    }

    #[test]
    fn rx_scenarios_are_judged_from_the_receiver() {
        let rx: Vec<Scenario> = all()
            .into_iter()
            .filter(|s| s.name.starts_with("rx-"))
            .collect();
        assert!(rx.len() >= 11, "only {} rx scenarios", rx.len());
        for s in &rx {
            assert_eq!(s.view, View::Receiver, "{} is not judged from B", s.name);
            assert!(!s.expect.is_empty(), "{} expects nothing", s.name);
            for e in &s.expect {
                assert!(
                    RECEIVER_VERDICTS.contains(&e.verdict) && e.verdict != Verdict::Unknown,
                    "{} expects {}, not a receiver verdict",
                    s.name,
                    e.verdict
                );
            }
        }
    }

    #[test]
    fn http_servers_take_the_namespace_congestion_control() {
        // An HTTP server cannot be given `-C`: a `cc` there would be ignored.
        for s in all() {
            if matches!(s.traffic, Traffic::Http { .. }) {
                assert!(s.cc.is_none(), "{}: use snd_cc_default", s.name);
            }
        }
    }

    #[test]
    fn namespace_settings() {
        let base = all().into_iter().find(|s| s.name == "sndbuf").unwrap();
        assert!(base.sysctls().is_empty());
        let s = Scenario {
            rcv_rmem_max: Some(128 * 1024),
            rcv_window_scaling: Some(false),
            snd_cc_default: Some("cubic"),
            ..base.clone()
        };
        assert_eq!(
            s.sysctls(),
            vec![
                (Side::B, "net.ipv4.tcp_rmem=4096 131072 131072".to_string()),
                (Side::B, "net.ipv4.tcp_window_scaling=0".to_string()),
                (Side::A, "net.ipv4.tcp_congestion_control=cubic".to_string())
            ]
        );
        let s = Scenario {
            rcv_rmem_max: Some(8 << 20),
            snd_wmem_max: Some(65_536),
            ..base
        };
        assert_eq!(
            s.sysctls(),
            vec![
                (Side::B, "net.ipv4.tcp_rmem=4096 131072 8388608".to_string()),
                (Side::A, "net.ipv4.tcp_wmem=4096 16384 65536".to_string())
            ]
        );
    }

    #[test]
    fn reference_a_path_is_104_ms_and_35_mbit() {
        let s = all().into_iter().find(|s| s.name == "ref-a-w64k").unwrap();
        assert_eq!(s.path.forward.rate_bps, 35_000_000);
        assert_eq!(
            s.path.forward.delay + s.path.reverse.delay,
            Duration::from_millis(104)
        );
    }
}
