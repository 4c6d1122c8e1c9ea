//! Sender-side cases of issue 14's real-world shapes: a send buffer that
//! the sender overshoots in bursts, a window ceiling the rate outran, and
//! app-limited marks that BBR sets itself.

use super::fixtures::{P, checked, point, verdict_between};
use crate::attribution::*;

/// A flow that delivers 40 Mbit/s while its time-weighted cwnd / srtt says
/// 10 Mbit/s (an RTT overstated by bursts): the kernel's clocks say the
/// cwnd binds, its arithmetic says it cannot: no verdict rests on it.
#[test]
fn a_ceiling_the_flow_outran_is_not_the_verdict() {
    let a = verdict_between(
        P::at(0.0),
        P::at(1.0)
            .acked(5_000_000)
            .busy_ms(1000)
            .cwnd_ms(900)
            .cwnd(40)
            .srtt_us(50_000)
            .min_rtt_us(48_000),
    );
    assert_eq!(a.verdict, Verdict::Unknown, "{}", a.explanation);
    assert!(
        a.explanation.contains("congestion window binds")
            && a.explanation
                .contains("9.3 Mbit/s is below the 40.0 Mbit/s"),
        "{}",
        a.explanation
    );
}

/// A steady application-limited cubic sender: cwnd validation keeps its
/// cwnd near what it uses, so it delivers 86% of cwnd / srtt with
/// app-limited delivery samples: `application`. The same figures from a
/// BBR sender, whose ProbeRTT marks its own samples app-limited, are not.
#[test]
fn app_limited_marks_name_the_application_except_for_bbr() {
    let end = |cc: &str| {
        let mut p = point(
            P::at(1.0)
                .acked(2_500_000)
                .busy_ms(1000)
                .cwnd(100)
                .app_limited_ms(900),
        );
        p.flow.cc = cc.to_string();
        p
    };
    let from = point(P::default());
    let cubic = checked(attribute(Some(&from), &end("cubic"), &Config::default()));
    assert_eq!(cubic.verdict, Verdict::Application, "{}", cubic.explanation);
    let bbr = checked(attribute(Some(&from), &end("bbr"), &Config::default()));
    assert_ne!(bbr.verdict, Verdict::Application, "{}", bbr.explanation);
}

/// Issue 14's first input: a 16 KB SO_SNDBUF (sk_sndbuf 32 KB) on a 20 ms,
/// 100 Mbit/s path. The sender moves in bursts that overshoot the buffer
/// and delivers 40 Mbit/s, above sk_sndbuf / srtt; the kernel's
/// sndbuf-limited clock never ran, observer's own saw the writer wait 55%
/// of busy time, the window full 35%.
#[test]
fn bursty_send_buffer_is_send_buffer_without_a_ceiling() {
    let from = point(P::at(0.0));
    let mut to = point(
        P::at(1.0)
            .acked(5_000_000)
            .busy_ms(1000)
            .sndbuf_full_ms(550)
            .cwnd_ms(350)
            .srtt_us(24_800)
            .min_rtt_us(20_000)
            .cwnd(139),
    );
    to.flow.sndbuf = 32_768;
    to.flow.sndbuf_locked = true;
    let a = checked(attribute(Some(&from), &to, &Config::default()));
    assert_eq!(a.verdict, Verdict::SendBuffer, "{}", a.explanation);
    assert_eq!(a.evidence.shares.sndbuf_limited, 0.55);
    assert!(
        a.explanation.contains("window open 55% of busy time")
            && a.explanation.contains(
                "the application set SO_SNDBUF 16.4 KB, sk_sndbuf 32.8 KB, moving in bursts"
            )
            && a.explanation.contains("cwnd-limited 35% of busy"),
        "{}",
        a.explanation
    );
    // 32 KB / 24.8 ms = 10.6 Mbit/s is below the 40 Mbit/s measured: no
    // arithmetic that the measurement contradicts.
    assert!(a.what_if.is_none());
}

#[test]
fn a_queue_needs_the_flow_at_the_paths_rate_to_be_a_full_bottleneck() {
    // Cubic bound by its cwnd with srtt 208 ms against 104 ms: a full
    // 35 Mbit/s link when its best recent delivery rate is what it
    // delivers; its own bursts queueing at a link that has carried
    // 60 Mbit/s for it when that rate is far above (a sample spans a
    // min_rtt at least, so 600 x 1448 B / 104 ms = 67 Mbit/s at most).
    let start = P::at(0.0).cwnd(600);
    // One second, busy throughout, cwnd-limited 70% of it.
    let end = P::at(1.0)
        .acked(4_300_000)
        .busy_ms(1000)
        .cwnd_ms(700)
        .cwnd(600)
        .srtt_us(208_000)
        .min_rtt_us(104_000);
    let judge_with = |delivery_max_bps: u64, retransmits: u32| {
        verdict_between(
            start,
            end.delivery_max_bps(delivery_max_bps)
                .retransmits(retransmits),
        )
    };
    let judge = |delivery_max_bps: u64| judge_with(delivery_max_bps, 0);
    let full = judge(36_000_000);
    assert_eq!(full.verdict, Verdict::Path, "{}", full.explanation);
    assert_eq!(full.evidence.delivery_rate_max_bps, 36_000_000);
    let bursts = judge(60_000_000);
    assert_eq!(
        bursts.verdict,
        Verdict::CongestionWindow,
        "{}",
        bursts.explanation
    );
    assert!(
        bursts.explanation.contains(
            "104.0 ms standing queue; the path has delivered 60.0 Mbit/s for it in the last seconds, so the queue is its own bursts'"
        ),
        "{}",
        bursts.explanation
    );
    // Near the bar: 34.4 Mbit/s is 82% of 42 Mbit/s (and 78% of 44).
    assert_eq!(judge(42_000_000).verdict, Verdict::Path);
    assert_eq!(judge(44_000_000).verdict, Verdict::CongestionWindow);
    // One of four flows sharing a full link (ref-b-bbr-p4): samples above
    // its share as the others back off, but the queue overflows.
    let shared = judge_with(60_000_000, 12);
    assert_eq!(shared.verdict, Verdict::Path, "{}", shared.explanation);
    // Idle 40% of the interval, then the full link: its rate while busy,
    // not over the wall clock, is what the path has shown.
    let idle_then_bulk = verdict_between(
        start,
        end.acked(2_580_000)
            .busy_ms(600)
            .cwnd_ms(420)
            .delivery_max_bps(36_000_000),
    );
    assert_eq!(
        idle_then_bulk.verdict,
        Verdict::Path,
        "{}",
        idle_then_bulk.explanation
    );
    // A life verdict (an interval longer than the best sample's span)
    // leaves the queue to decide.
    let life = verdict_between(
        start,
        end.t(10.0)
            .acked(43_000_000)
            .busy_ms(10_000)
            .cwnd_ms(7_000)
            .delivery_max_bps(60_000_000),
    );
    assert_eq!(life.verdict, Verdict::Path, "{}", life.explanation);
}

#[test]
fn a_send_buffer_that_runs_dry_each_burst_binds_though_the_cwnd_fills_longer() {
    // The sndbuf scenario under cubic: 64 KB SO_SNDBUF, 100 Mbit/s, 50 ms;
    // waiting on the buffer 42% and cwnd-limited 47% of busy time, at
    // half the link.
    let start = P::at(0.0).cwnd(404);
    let end = P::at(2.0)
        .acked(12_250_000)
        .busy_ms(2000)
        .sndbuf_full_ms(840)
        .cwnd_ms(940)
        .cwnd(404)
        .srtt_us(52_000)
        .min_rtt_us(50_000);
    let a = verdict_between(start, end);
    assert_eq!(a.verdict, Verdict::SendBuffer, "{}", a.explanation);
    assert!(
        a.explanation
            .contains("open 42% of busy time (sk_sndbuf 16.4 KB, sized by net.ipv4.tcp_wmem, moving in bursts that overshoot it); delivering 49.0 Mbit/s with cwnd-limited 47% of busy"),
        "{}",
        a.explanation
    );
    // The same shares at a full bottleneck (a standing queue, and loss):
    // the larger cwnd share decides, as more buffer would add queue.
    let full = verdict_between(start, end.srtt_us(80_000).retransmits(5));
    assert_eq!(full.verdict, Verdict::Path, "{}", full.explanation);
}

/// Issue 14's slow reader from a BBR sender: pacing at the 23.9 Mbit/s the
/// reader's window lets through (below 80% of snd_wnd 300 KB / srtt 70.7
/// ms, 33.9 Mbit/s), its probes meet that window 9% of busy time and never
/// the cwnd: `receive_window`, and the what-if names the peer's reader
/// (srtt stretched 20 ms over min_rtt while the window allows 48 Mbit/s
/// there). Without the probes' window time it is the path.
#[test]
fn a_pacing_senders_probes_that_meet_the_peers_window_name_that_window() {
    let end = |rwnd_ms: u64| {
        P::at(1.0)
            .acked(2_987_500)
            .busy_ms(1000)
            .rwnd_ms(rwnd_ms)
            .srtt_us(70_700)
            .min_rtt_us(50_400)
            .snd_wnd(300_000)
            .cwnd(400)
    };
    let a = verdict_between(P::default(), end(90));
    assert_eq!(a.verdict, Verdict::ReceiveWindow, "{}", a.explanation);
    assert!(
        a.explanation.starts_with(
            "receive window: pacing at 23.9 Mbit/s without a window limit most of the time, but its probes for more meet the peer's window (rwnd-limited 9% of busy, cwnd-limited 0%)"
        ),
        "{}",
        a.explanation
    );
    let w = a.what_if.expect("a window verdict has its arithmetic");
    assert!(!w.window_helps, "{}", w.summary);
    assert!(
        w.other_fix
            .as_deref()
            .is_some_and(|f| f.starts_with("the peer's reader")),
        "{:?}",
        w.other_fix
    );
    let b = verdict_between(P::default(), end(20));
    assert_eq!(b.verdict, Verdict::Path, "{}", b.explanation);
}

/// Issue 14's slow reader (64 KB every 20 ms, 25 ms each way) as the 6.1
/// test VM once showed it from a cubic sender: the peer's buffer holds
/// 2.46 MB unread, its window (1.01 MB) is never full, and its late ACKs
/// stretch srtt to 110.4 ms over min_rtt 53.5 ms while the cwnd (390
/// segments) is full 55% of busy time: the cwnd's clocks and the "queue"
/// say `path`. The peer offers a third of the 3 MB it offered before:
/// `receive_window`, naming the reader, and no window is asked for. With
/// the window at its largest it is the path.
#[test]
fn a_peer_window_shrunk_by_unread_data_is_the_peers_reader() {
    let end = |snd_wnd_max: u32| {
        P::at(1.0)
            .acked(3_412_500)
            .busy_ms(1000)
            .cwnd_ms(550)
            .srtt_us(110_400)
            .min_rtt_us(53_500)
            .snd_wnd(1_010_000)
            .snd_wnd_max(snd_wnd_max)
            .cwnd(390)
    };
    let a = verdict_between(P::default(), end(3_000_000));
    assert_eq!(a.verdict, Verdict::ReceiveWindow, "{}", a.explanation);
    assert!(
        a.explanation.starts_with(
            "receive window: the peer's reader, whose unread data holds its window well under the largest it offered; its ACKs wait for reads (srtt 110.4 ms vs min_rtt 53.5 ms); delivering 27.3 Mbit/s (rwnd-limited 0% of busy, cwnd-limited 55%); a larger window would not help: the peer's reader, not its window's size: the peer offered 1.01 MB on average (1.01 MB now), 34% of the 3.00 MB it has offered before"
        ),
        "{}",
        a.explanation
    );
    let w = a.what_if.expect("a window verdict has its arithmetic");
    assert!(
        !w.window_helps && !w.summary.contains("would need"),
        "{}",
        w.summary
    );
    assert!(
        w.other_fix
            .as_deref()
            .is_some_and(|f| f
                .starts_with("the peer's reader, not its window's size: the peer offered 1.01 MB")),
        "{:?}",
        w.other_fix
    );
    let b = verdict_between(P::default(), end(1_010_000));
    assert_eq!(b.verdict, Verdict::Path, "{}", b.explanation);
}

/// Window scaling off at the receiver over a 10 Mbit/s path, 10 ms each
/// way, 250 KB queue (an adversarial run, 4 of 4): 65,535 B is 2.6 times
/// the path's BDP, so the window fills the link and its excess stands in
/// the queue (srtt 53.7 ms against min_rtt 20 ms). The kernel's clock
/// says the window binds; at min_rtt it would allow 26.2 Mbit/s: `path`,
/// not "19.1 Mbit/s would need 128.4 KB". The same window at a path
/// without the queue stays `receive_window`.
#[test]
fn a_window_full_only_through_a_queue_is_the_path() {
    let end = |srtt_us: u32, acked: u64| {
        P::at(1.0)
            .acked(acked)
            .busy_ms(1000)
            .rwnd_ms(900)
            .srtt_us(srtt_us)
            .min_rtt_us(20_000)
            .snd_wnd(65_535)
            .snd_wnd_max(65_535)
            .cwnd(200)
    };
    let a = verdict_between(P::default(), end(53_700, 1_200_000));
    assert_eq!(a.verdict, Verdict::Path, "{}", a.explanation);
    assert_eq!(
        a.explanation,
        "path: the bottleneck is full: the peer's window is full (rwnd-limited 90% of busy) only through a queue: snd_wnd 65.5 KB allows 26.2 Mbit/s at min_rtt 20.0 ms, and srtt 53.7 ms vs min_rtt 20.0 ms: 33.7 ms standing queue; delivering 9.6 Mbit/s: a larger window would add queue, not rate"
    );
    assert!(a.what_if.is_none());
    // No queue: the window is the limit (65.5 KB / 20.4 ms = 25.7 Mbit/s).
    let b = verdict_between(P::default(), end(20_400, 3_100_000));
    assert_eq!(b.verdict, Verdict::ReceiveWindow, "{}", b.explanation);
    // A mild queue that stretches srtt by a fifth (a 6.1 VM's 128 KB
    // receiver: 25.9 ms against 21.2 ms, 18.0 Mbit/s in a 63 KB window,
    // which allows 23.8 Mbit/s at min_rtt): still the window.
    let c = verdict_between(
        P::default(),
        end(25_900, 2_250_000)
            .acked(2_250_000)
            .srtt_us(25_900)
            .min_rtt_us(21_200)
            .snd_wnd(63_000)
            .snd_wnd_max(63_000),
    );
    assert_eq!(c.verdict, Verdict::ReceiveWindow, "{}", c.explanation);
}

/// Cubic with a 64 KB SO_SNDBUF (sk_sndbuf 128 KB) over 10 Mbit/s, 10 ms
/// each way, a 250 KB queue (an adversarial run, 3 of 3 `send_buffer`):
/// 9.6 Mbit/s, srtt 96 ms against min_rtt 20 ms, drops at the queue, the
/// writer waiting on its buffer 70% of busy time. At min_rtt the buffer
/// would allow 52.4 Mbit/s: it is full only through the queue, `path`.
/// The sndbuf scenario's shape (a buffer that at min_rtt allows less than
/// the rate, overshot in bursts) stays `send_buffer` even with a queue.
#[test]
fn a_send_buffer_full_only_through_a_queue_is_the_path() {
    let end = |sndbuf: u32, acked: u64| {
        let mut p = point(
            P::at(1.0)
                .acked(acked)
                .busy_ms(1000)
                .sndbuf_full_ms(700)
                .cwnd_ms(200)
                .srtt_us(96_000)
                .min_rtt_us(20_000)
                .cwnd(200)
                .retransmits(8),
        );
        p.flow.sndbuf = sndbuf;
        p
    };
    let from = point(P::default());
    let a = checked(attribute(
        Some(&from),
        &end(131_072, 1_200_000),
        &Config::default(),
    ));
    assert_eq!(a.verdict, Verdict::Path, "{}", a.explanation);
    assert_eq!(
        a.explanation,
        "path: the bottleneck is full: the send buffer is full (the writer waited 70% of busy time) only through a queue: sk_sndbuf 131.1 KB allows 52.4 Mbit/s at min_rtt 20.0 ms, and srtt 96.0 ms vs min_rtt 20.0 ms: 76.0 ms standing queue; delivering 9.6 Mbit/s, 8 retransmits: a larger buffer would add queue, not rate"
    );
    // 24 KB at min_rtt allows 9.8 Mbit/s, under 1.25 x the rate.
    let b = checked(attribute(
        Some(&from),
        &end(24_576, 1_200_000),
        &Config::default(),
    ));
    assert_eq!(b.verdict, Verdict::SendBuffer, "{}", b.explanation);
}
