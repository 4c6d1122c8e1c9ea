//! Unit tests of `model::flow`: a sample as the figures an operator reads.
use super::*;

fn sample() -> FlowSample {
    let mut s = FlowSample::ZERO;
    s.cookie = 42;
    s.saddr = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1];
    s.daddr = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    s.sport = 40000;
    s.dport = 5201;
    s.chrono_stat = [100, 50, 10];
    s.chrono_start = u32::MAX - 4;
    s.chrono_type = 2;
    s.state = tcp_state::ESTABLISHED;
    s.comm = *b"iperf3\0\0\0\0\0\0\0\0\0\0";
    s
}

#[test]
fn chrono_adds_the_running_period_to_its_type() {
    let s = sample();
    // 5 jiffies since chrono_start, across the u32 wrap.
    let c = chrono(&s, 0, 4000);
    assert_eq!(c.rwnd_limited_us, (50 + 5) * 4000);
    assert_eq!(c.sndbuf_limited_us, 10 * 4000);
    assert_eq!(c.busy_us, (100 + 55 + 10) * 4000);
    let mut idle = s;
    idle.chrono_type = 0;
    assert_eq!(chrono(&idle, 0, 4000).busy_us, 160 * 4000);
}

#[test]
fn endpoints_print_like_ss() {
    let s = sample();
    assert_eq!(endpoint(s.saddr, s.sport).to_string(), "10.0.0.1:40000");
    assert_eq!(endpoint(s.daddr, s.dport).to_string(), "[2001:db8::1]:5201");
}

#[test]
fn no_rtt_sample_yet_reads_as_zero_not_the_kernels_sentinel() {
    let mut s = sample();
    s.min_rtt_us = u32::MAX;
    let f = Flow::from_sample(&s, &Clock::fixed(0, 250), 0);
    assert_eq!(f.min_rtt_us, 0);
}

#[test]
fn ss_fields_in_tcp_info_units() {
    let mut s = sample();
    s.jiffies = 1_000;
    s.last_seen_ns = 2_000_000_000;
    s.lsndtime = 900; // 100 jiffies before the sample
    s.lrcvtime = 1_000;
    s.rcv_tstamp = u32::MAX - 9; // across the u32 wrap: 1,010 jiffies
    s.rto_jiffies = 51;
    s.pacing_rate = 1_250_000;
    s.packets_out = 7;
    let clock = Clock::fixed(0, 250);
    // An open flow's ages run on: 20 ms (5 jiffies) after its sample.
    let f = Flow::from_sample(&s, &clock, 2_020_000_000);
    assert_eq!(f.last_data_sent_ms, 105 * 4);
    assert_eq!(f.last_data_recv_ms, 20);
    assert_eq!(f.last_ack_recv_ms, 1_015 * 4);
    // As of 40 ms (10 jiffies) before the sample (a reading taken before
    // the poll that re-sampled the flow): the ages count back.
    let before = Flow::from_sample(&s, &clock, 1_960_000_000);
    assert_eq!(before.last_data_sent_ms, 90 * 4);
    assert_eq!(before.last_ack_recv_ms, 1_000 * 4);
    assert_eq!(f.rto_us, 204_000);
    assert_eq!(f.pacing_rate_bps, Some(10_000_000));
    assert_eq!(f.unacked, 7);
    // A closed flow's stop at its close.
    s.closed_ns = 2_000_000_000;
    let c = Flow::from_sample(&s, &clock, 9_000_000_000);
    assert_eq!(c.last_data_sent_ms, 400);
    s.pacing_rate = u64::MAX;
    assert_eq!(Flow::from_sample(&s, &clock, 0).pacing_rate_bps, None);
    // SO_MAX_PACING_RATE: bytes/s to bits/s; ~0 (no cap) and 0 (a kernel
    // observer read no member on) are none.
    s.max_pacing_rate = 1_250_000;
    assert_eq!(
        Flow::from_sample(&s, &clock, 0).max_pacing_rate_bps,
        Some(10_000_000)
    );
    for none in [u64::MAX, 0] {
        s.max_pacing_rate = none;
        assert_eq!(Flow::from_sample(&s, &clock, 0).max_pacing_rate_bps, None);
    }
}

#[test]
fn delivery_rate_matches_tcp_info_formula() {
    let mut s = sample();
    s.mss = 1448;
    s.rate_delivered = 10;
    s.rate_interval_us = 20_000;
    // 10 * 1448 B / 20 ms = 724,000 B/s = 5,792,000 bit/s.
    assert_eq!(delivery_rate_bps(&s), 5_792_000);
    s.rate_interval_us = 0;
    assert_eq!(delivery_rate_bps(&s), 0);
    // Found by fuzz/kernel_samples: the product overflowed u64.
    s.rate_delivered = u32::MAX;
    s.mss = u32::MAX;
    s.rate_interval_us = 1;
    assert_eq!(delivery_rate_bps(&s), u64::MAX);
}

#[test]
fn recent_max_is_the_faster_of_the_two_epochs_while_they_are_recent() {
    const SEC: u64 = 1_000_000_000;
    let mut s = sample();
    s.mss = 1448;
    s.delivery_epoch_ns = 10 * SEC;
    let at = |secs: f64| 10 * SEC + (secs * SEC as f64) as u64;
    assert_eq!(recent_max_delivery_rate_bps(&s, at(0.5)), 0);
    // 10 segments in 20 ms this epoch, 30 in 20 ms the one before.
    s.delivery_best = [10, 20_000];
    s.delivery_prev = [30, 20_000];
    assert_eq!(recent_max_delivery_rate_bps(&s, at(0.5)), 17_376_000);
    // No sample for over a second: the previous epoch is too old...
    assert_eq!(recent_max_delivery_rate_bps(&s, at(1.5)), 5_792_000);
    // ...and after two, neither is recent.
    assert_eq!(recent_max_delivery_rate_bps(&s, at(2.0)), 0);
    let f = Flow::from_sample(&s, &Clock::fixed(0, 250), at(0.2));
    assert_eq!(f.delivery_rate_max_bps, 17_376_000);
}

#[test]
fn flow_from_open_sample_extrapolates_running_chrono() {
    let mut s = sample();
    s.jiffies = u64::from(u32::MAX - 4) + 5;
    s.last_seen_ns = 1_000_000_000;
    s.first_seen_ns = 500_000_000;
    let clock = Clock::fixed(0, 250);
    // 8 ms later: two more jiffies of rwnd-limited time.
    let f = Flow::from_sample(&s, &clock, 1_008_000_000);
    assert_eq!(f.rwnd_limited_us, (50 + 7) * 4000);
    assert_eq!(f.comm, "iperf3");
    assert!(!f.closed);
    assert_eq!(f.state, "established");
    assert_eq!(f.first_seen.to_string(), "1970-01-01T00:00:00.500Z");
    let mut c = s;
    c.closed_ns = 1_000_000_000;
    let f = Flow::from_sample(&c, &clock, 9_000_000_000);
    assert_eq!(f.rwnd_limited_us, (50 + 5) * 4000);
    assert!(f.closed);
}

#[test]
fn a_window_left_shut_counts_closed_until_the_poll() {
    // A throttled download: the reader left 64 KB unread and the window
    // shut at its last sample, 1.5 s before the poll, with 0.2 s closed
    // counted by then.
    let mut s = sample();
    s.last_seen_ns = 10_000_000_000;
    s.rwnd_closed_ns = 200_000_000;
    s.unread = 65_536;
    s.rcv_wnd_left = 0;
    s.rcv_mss = 1448;
    let clock = Clock::fixed(0, 250);
    let f = Flow::from_sample(&s, &clock, 11_500_000_000);
    assert_eq!(f.rwnd_closed_us, 1_700_000);
    // Open at the sample (room for two segments): no more closed time.
    s.rcv_wnd_left = 2 * 1448;
    assert_eq!(
        Flow::from_sample(&s, &clock, 11_500_000_000).rwnd_closed_us,
        200_000
    );
    // A closed connection's record ends its clock where it closed.
    s.rcv_wnd_left = 0;
    s.closed_ns = 10_100_000_000;
    assert_eq!(
        Flow::from_sample(&s, &clock, 11_500_000_000).rwnd_closed_us,
        200_000
    );
}
