//! What the kernel's TCP stack makes of a setting on these paths: the
//! segment and ACK sizes, the window a receive buffer gives, the flight a
//! send buffer allows, and the defaults the harness sets. The space draws
//! settings with these conversions and the truth reads ceilings from them.

/// TCP payload per full segment on the emulated paths (bytes): MTU 1500
/// less 20 (IPv4), 20 (TCP) and 12 (timestamps).
pub const MSS: u64 = 1_448;
/// IP bytes of a full segment.
pub const PACKET_BYTES: u64 = 1_500;
/// IP bytes of a pure ACK with timestamps (20 + 20 + 12).
pub const ACK_BYTES: u64 = 52;
/// Full segments a receiver acknowledges per ACK once out of quick-ack
/// (`__tcp_ack_snd_check()`: more than one full frame received).
pub const SEGMENTS_PER_ACK: u64 = 2;
/// The initial congestion window (segments, `TCP_INIT_CWND`).
pub const INIT_CWND: u64 = 10;
/// The advertised window per byte of receive buffer on this kernel:
/// `tcp_win_from_space()` scales by `scaling_ratio`, the payload share of
/// the receive path's skb truesize (net/ipv4/tcp_input.c,
/// `tcp_measure_rcv_mss()`). Measured on pathemu's TUN path, Linux 6.18
/// (docs/cases/2026-12-07-buffer-ratios.md).
pub const RCV_WINDOW_PER_BUFFER: f64 = 0.61;
/// Bytes in flight per byte of send buffer (`sk_sndbuf`) when the buffer
/// binds: the writer sleeps until a third of it is free
/// (`sk_stream_write_space()`), and skb truesize takes its share.
/// Measured as [`RCV_WINDOW_PER_BUFFER`] was.
pub const FLIGHT_PER_SNDBUF: f64 = 0.74;
/// `net.ipv4.tcp_rmem` the harness sets in both namespaces (bytes): the
/// kernel's own defaults, so the truth does not depend on the host.
pub const TCP_RMEM: [u64; 3] = [4_096, 131_072, 6_291_456];
/// `net.ipv4.tcp_wmem` the harness sets in both namespaces (bytes).
pub const TCP_WMEM: [u64; 3] = [4_096, 16_384, 4_194_304];
/// `SO_RCVBUF` and `SO_SNDBUF` are drawn no larger than this (bytes):
/// the kernel's default `net.core.rmem_max` and `wmem_max`, which cap
/// them; larger buffers are drawn as `tcp_rmem` / `tcp_wmem`.
pub const SOCKOPT_BUF_MAX: u64 = 212_992;
/// Goodput of `ip_bps` bits/s of full-sized IP packets.
pub fn goodput(ip_bps: f64) -> f64 {
    ip_bps * MSS as f64 / PACKET_BYTES as f64
}

/// The `tcp_rmem` max that gives a window of `window` bytes.
pub fn rmem_for_window(window: f64) -> u64 {
    (window / RCV_WINDOW_PER_BUFFER) as u64
}

/// The `SO_RCVBUF` that gives a window of `window` bytes (the kernel
/// doubles it), at most [`SOCKOPT_BUF_MAX`].
pub fn rcvbuf_for_window(window: f64) -> u64 {
    ((window / RCV_WINDOW_PER_BUFFER / 2.0) as u64).min(SOCKOPT_BUF_MAX)
}

/// The `tcp_wmem` max that lets `flight` bytes be in flight.
pub fn wmem_for_flight(flight: f64) -> u64 {
    (flight / FLIGHT_PER_SNDBUF) as u64
}

/// The `SO_SNDBUF` that lets `flight` bytes be in flight (the kernel
/// doubles it), at most [`SOCKOPT_BUF_MAX`].
pub fn sndbuf_for_flight(flight: f64) -> u64 {
    ((flight / FLIGHT_PER_SNDBUF / 2.0) as u64).min(SOCKOPT_BUF_MAX)
}

/// The reverse rate (bits/s) whose ACKs clock `acked_bps` of goodput.
pub fn reverse_for_acked(acked_bps: f64) -> u64 {
    let acks_per_s = acked_bps / (8.0 * (SEGMENTS_PER_ACK * MSS) as f64);
    ((acks_per_s * (8 * ACK_BYTES) as f64) as u64).max(8_000)
}

/// RFC 9438's CUBIC constant C (segments / s^3).
pub const CUBIC_C: f64 = 0.4;
/// RFC 9438's multiplicative decrease (Linux: 717/1024).
pub const CUBIC_BETA: f64 = 0.7;
