//! The scenarios judged from the sending end (namespace A).

use observer::attribution::{Verdict, group::judge::Limit};
use pathemu::PathConfig;

use super::{
    model::{Expect, Scenario, Traffic},
    parts::{
        MS, RMEM_4MB_WINDOW, RMEM_32MB_WINDOW, base, grouped, iperf, policed, ref_a, ref_b, steady,
        tunnel,
    },
};

/// The sender-side scenarios, in running order.
pub fn all() -> Vec<Scenario> {
    use Verdict::*;
    vec![
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
            group: grouped(Limit::Shared, &["path"], Some(false)),
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
            group: grouped(Limit::PerFlow, &["peer_window"], None),
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
            group: grouped(Limit::PerFlow, &["peer_window"], None),
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
            group: grouped(Limit::PerFlow, &["congestion_window"], Some(false)),
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
            group: grouped(Limit::Shared, &["path"], Some(false)),
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
            group: grouped(Limit::Shared, &["path"], Some(false)),
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
        Scenario {
            cc: Some("cubic"),
            ..base(
                "sndbuf-bursty",
                "a 16 KB SO_SNDBUF on a 100 Mbit/s, 20 ms path with a 250 KB queue: the sender moves in bursts, about half the link",
                PathConfig::bottleneck(100_000_000, MS(10), 250_000),
                Traffic::SmallSndbuf { sndbuf: 16 * 1024 },
                steady(SendBuffer),
            )
        },
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
            cc: Some("bbr"),
            ..base(
                "path-bbr-shallow",
                "50 Mbit/s, 20 ms, a 15 KB queue (a tenth of the BDP), bbr: the link is full though no queue can stand",
                PathConfig::bottleneck(50_000_000, MS(10), 15_000),
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
                        also: None,
                    },
                    Expect {
                        from_s: 8.5,
                        to_s: f64::INFINITY,
                        verdict: Path,
                        also: None,
                    },
                ],
            )
        },
        Scenario {
            cc: Some("cubic"),
            rcv_rmem_max: Some(RMEM_32MB_WINDOW),
            ..base(
                "tunnel-cubic",
                "an upload through a tunnel (MTU 1280) at 300 ms with 1% loss: the loss holds cubic's cwnd",
                tunnel(),
                iperf(&[]),
                steady(CongestionWindow),
            )
        },
        Scenario {
            cc: Some("bbr"),
            rcv_rmem_max: Some(RMEM_32MB_WINDOW),
            secs: 14,
            ..base(
                "tunnel-bbr",
                "the same upload with bbr: it ramps for seconds at 300 ms, then runs at the link's rate",
                tunnel(),
                iperf(&[]),
                // BBR paces at its estimate of the path, which grows by a
                // quarter every eight round trips (2.4 s here) once out of
                // STARTUP: congestion_window (still ramping, the link
                // under-used, no queue), then path at the 40 Mbit/s link
                // (by 6-6.5 s in ten runs), until its first ProbeRTT, about
                // 10 s after its min_rtt was taken, cuts its cwnd to four
                // segments for a round trip and a fifth of a second.
                vec![
                    Expect {
                        from_s: 2.5,
                        to_s: 5.5,
                        verdict: CongestionWindow,
                        also: None,
                    },
                    Expect {
                        from_s: 7.0,
                        to_s: 12.0,
                        verdict: Path,
                        also: None,
                    },
                ],
            )
        },
        Scenario {
            cc: Some("cubic"),
            rcv_rmem_max: Some(RMEM_32MB_WINDOW),
            // Fourteen seconds: a second's 5-14 drops are few enough that
            // one interval in about ten reads isolated loss.
            secs: 14,
            ..base(
                "policer",
                "cubic through a 10 Mbit/s policer with a one-BDP (50 KB) bucket on a 100 Mbit/s, 40 ms path: drops without a queue, the path",
                policed(50_000),
                iperf(&[]),
                steady(Path),
            )
        },
        Scenario {
            cc: Some("cubic"),
            rcv_rmem_max: Some(RMEM_32MB_WINDOW),
            ..base(
                "policer-tiny",
                "the same through a 10 KB bucket: isolated drops hold cubic's cwnd under the policed rate",
                policed(10_000),
                iperf(&[]),
                steady(CongestionWindow),
            )
        },
    ]
}
