//! The scenarios judged from the receiving end (namespace B): the
//! reference experiments seen from their receiver, and downloads by real
//! clients in B from servers in A.

use observer::attribution::Verdict;
use pathemu::{Link, PathConfig};

use super::{
    model::{Expect, HttpClient, HttpServer, Scenario, Traffic, View},
    parts::{
        MS, RMEM_4MB_WINDOW, base, curl, iperf, iperf_r, nginx, ref_a, ref_b, steady, steady_or,
    },
};

/// The receiver-side scenarios, in running order.
pub fn all() -> Vec<Scenario> {
    use Verdict::*;
    vec![
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
                // Judged from 4 s: on this 110 ms path slow start fills the
                // 1 MB queue and the recovery from its overshoot (thousands
                // of out-of-order arrivals) runs until about 3.5 s.
                vec![Expect {
                    from_s: 4.0,
                    ..steady(CongestionWindow)[0]
                }],
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
                    clients: vec![HttpClient::Wget],
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
        // The sender's own limit, without loss: bbr, so `--cc cubic` does
        // not turn it into `rx-server-sndbuf-cubic` (cubic's bursts
        // overflow the queue and its cut may lead a second, 11-12 of 14
        // right in seven runs) with a stricter bar.
        Scenario {
            view: View::Receiver,
            snd_cc_default: Some("bbr"),
            ..base(
                "rx-server-sndbuf",
                "curl from nginx (bbr) with a 64 KB SO_SNDBUF (listen sndbuf=64k), 100 Mbit/s, 50 ms",
                PathConfig::bottleneck(100_000_000, MS(25), 625_000),
                curl(nginx(None, Some("64k")), None),
                steady(Sender),
            )
        },
        Scenario {
            view: View::Receiver,
            cc: Some("cubic"),
            ..base(
                "rx-chunk-reader",
                "a reader that takes everything waiting every 150 ms, 20 Mbit/s, 50 ms: it keeps the window shut between visits",
                PathConfig::bottleneck(20_000_000, MS(25), 125_000),
                Traffic::ChunkReader { period_ms: 150 },
                steady(ReceiverApplication),
            )
        },
        Scenario {
            view: View::Receiver,
            cc: Some("cubic"),
            flows: 2,
            ..base(
                "rx-shared-cubic",
                "two cubic downloads (iperf3 -R -P 2) share a 20 Mbit/s, 50 ms bottleneck: the path",
                PathConfig::bottleneck(20_000_000, MS(25), 125_000),
                iperf_r(&["-P", "2"]),
                steady(Path),
            )
        },
        Scenario {
            view: View::Receiver,
            cc: Some("bbr"),
            flows: 4,
            ..base(
                "rx-shared-bbr",
                "four bbr downloads (iperf3 -R -P 4) share a 20 Mbit/s, 50 ms bottleneck: the path",
                PathConfig::bottleneck(20_000_000, MS(25), 125_000),
                iperf_r(&["-P", "4"]),
                steady(Path),
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
                    clients: vec![HttpClient::Wget],
                },
                steady(Path),
            )
        },
        // A shared limit: the send buffer's bursts overflow the 625 KB
        // queue every few seconds (the emulator drops 10-50 packets a run),
        // and cubic's cut then binds for about half a second (the receive
        // rate dips 15-20%; with twice the queue the flow runs 25% faster).
        // The receiver cannot tell that cut from one that binds for longer,
        // so the second after a loss may name the sender's congestion
        // window; the sender must still lead.
        Scenario {
            view: View::Receiver,
            snd_cc_default: Some("cubic"),
            ..base(
                "rx-server-sndbuf-cubic",
                "curl from nginx (cubic) with a 64 KB SO_SNDBUF, 100 Mbit/s, 50 ms: its bursts overflow the queue now and then",
                PathConfig::bottleneck(100_000_000, MS(25), 625_000),
                curl(nginx(None, Some("64k")), None),
                steady_or(Sender, CongestionWindow),
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
        Scenario {
            view: View::Receiver,
            cc: Some("cubic"),
            rcv_rmem_max: Some(32 << 20),
            ..base(
                "rx-stall-reader",
                "a reader that reads 2 s and stalls 1.5 s behind a 32 MB tcp_rmem max that absorbs each stall, 50 Mbit/s, 40 ms: the path",
                PathConfig::bottleneck(50_000_000, MS(20), 250_000),
                Traffic::StallReader {
                    read_ms: 2_000,
                    stall_ms: 1_500,
                },
                // Judged from the second stall on: in the first (2-3.5 s)
                // autotuning has grown the buffer to a few MB only, the
                // window closes and the reader is the limit; from then on
                // the window (15-20 MB) absorbs every stall.
                vec![Expect {
                    from_s: 5.5,
                    ..steady(Path)[0]
                }],
            )
        },
    ]
}
