//! What a scenario is: the emulated path and the settings of both ends,
//! the traffic, and the verdicts expected of observer, with the criteria
//! a run is judged by.

use observer::attribution::{Verdict, group::judge::Limit};
use pathemu::{PathConfig, Side};

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
    /// observer's own bulk sender in A; the reader in B sleeps `period_ms`,
    /// then reads everything waiting, over and over: a reader that keeps
    /// the window shut between its reads.
    ChunkReader {
        /// Time between the reader's visits (ms).
        period_ms: u64,
    },
    /// observer's own bulk sender in A; the reader in B reads as fast as
    /// data arrives for `read_ms`, then stalls for `stall_ms` (its disk or
    /// its CPU), over and over.
    StallReader {
        /// Each reading stretch (ms).
        read_ms: u64,
        /// Each stall (ms).
        stall_ms: u64,
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
        /// The clients in B, each a process of its own, started together.
        clients: Vec<HttpClient>,
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
    /// A reader that takes at most `chunk` bytes every `period_ms` (a
    /// small Python client, `http::STEADY_READER`), stopped after the
    /// transfer length: a slow reader whose window, once its buffer is
    /// full, opens by one chunk at a time. curl's `--limit-rate` reads in
    /// bursts and sleeps, so its window opens wide between them.
    Steady {
        /// Bytes per read.
        chunk: u32,
        /// Time between reads (ms).
        period_ms: u64,
    },
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
    /// A second verdict that also counts as right, where the scenario's
    /// limit is shared (its catalogue entry says how); `verdict` must then
    /// still hold at least [`MIN_SHARE`] of the samples.
    pub also: Option<Verdict>,
}

/// What the judged end's flows must show as a group of one peer (the
/// host view, `observer flows --by peer`), each flow judged over its
/// whole life.
#[derive(Clone, Copy, Debug)]
pub struct GroupExpect {
    /// The group's judgement.
    pub limit: Limit,
    /// Limits (`KnobWhatIf::knob`: `peer_window`, `reader`, `path`...)
    /// that must each hold some of the group's bytes in its advice.
    pub knobs: &'static [&'static str],
    /// What the advice must say of a bigger window: `Some(false)`, that
    /// no window would help (no window entry says it would); `Some(true)`,
    /// that one would; `None`, either.
    pub window_helps: Option<bool>,
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
    /// Where set, the constraint of each of the traffic's streams in its
    /// order (an HTTP client each): the i-th stream's flow is judged by the
    /// i-th list instead of `expect`, as where one peer is reached by a
    /// slow reader and a fast one.
    pub expect_each: Vec<Vec<Expect>>,
    /// What the judged end's flows to the other end must show as a
    /// group, where the scenario asks.
    pub group: Option<GroupExpect>,
    /// The published figure for the whole transfer (bits/s), where one exists.
    pub reference_bps: Option<f64>,
    /// The emulator must reproduce this total throughput (bits/s) within
    /// [`EMULATOR_TOLERANCE`].
    pub emulator_check_bps: Option<f64>,
}

/// Sender-side scenarios: share of samples in a span that must carry the
/// expected verdict (as the majority).
pub const MIN_SHARE: f64 = 0.6;
/// Receiver-side scenarios: share of the samples in a span (from 3 s into
/// the flow) that must be the expected verdict.
pub const RX_MIN_ACCURACY: f64 = 0.8;
/// Receiver-side scenarios: a span must hold at least this many samples.
pub const RX_MIN_SAMPLES: usize = 4;
/// A verdict must settle within this long after the span starts.
pub const SETTLE_S: f64 = 3.0;
/// A bottleneck that carried less than this share of its rate over a
/// sample's verdict window stood idle 30% of it or more: the path did not
/// hold the flow there, a limit before it did (the sender's cwnd cut below
/// the path's BDP by a burst of losses and regrowing, say), and the
/// sender-side verdicts are right (`crate::judge::read_at_link`). Where the
/// path was the expected limit, the suite's samples of 2026-12-05 carried
/// 0.70-1.0 of the rate (1.0 in most; the lowest in `rx-stall-reader` and
/// `rx-bbr-path`, where a queue empties now and then or BBR drains it).
pub const IDLE_LINK_USE: f64 = 0.7;
/// Tolerance of the emulator's throughput against its reference (15%).
pub const EMULATOR_TOLERANCE: f64 = 0.15;

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
