//! The per-flow state the kernel keeps (value of the flow map, keyed by
//! socket cookie) and hands over when a flow closes (ring-buffer record).

/// One TCP socket's state as last sampled in the kernel.
///
/// Kernel figures are copied as `tcp_get_info()` (net/ipv4/tcp.c) would see
/// them at sample time; see each field for its unit and source member.
/// Timestamps are `bpf_ktime_get_ns()` (CLOCK_MONOTONIC, ns); user space
/// converts them to wall-clock time. Layout: 8-byte fields, then 16-byte
/// arrays, then 4-, 2- and 1-byte fields, then explicit padding.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowSample {
    /// `bpf_get_socket_cookie()`: the flow's key, stable for the socket's life.
    pub cookie: u64,
    /// When the kernel first saw the flow (monotonic ns).
    pub first_seen_ns: u64,
    /// When the kernel last sampled the flow (monotonic ns).
    pub last_seen_ns: u64,
    /// When the socket entered TCP_CLOSE (monotonic ns); 0 while open.
    pub closed_ns: u64,
    /// `tcp_sock.bytes_acked` (bytes).
    pub bytes_acked: u64,
    /// `tcp_sock.bytes_received` (bytes).
    pub bytes_received: u64,
    /// `tcp_sock.bytes_sent` (bytes, retransmissions included).
    pub bytes_sent: u64,
    /// Time with the congestion window full: in-flight (packets out, less
    /// SACKed and lost, plus retransmitted) >= cwnd, or more than a segment
    /// waiting to be sent while less than a third of the window is open
    /// (TSO deferral holds it back: `tcp_tso_should_defer()`), summed
    /// between consecutive samples (ns). The kernel keeps no chrono for
    /// this (its `is_cwnd_limited` flag stays set for a round trip after
    /// the window was last full, so it is not used); each interval is
    /// charged to the state seen at its start, where a sample taken before
    /// an ACK is processed (`tcp_probe`) counts the window as that ACK and
    /// the sends it lets out leave it.
    pub cwnd_limited_ns: u64,
    /// Time the send buffer held the sender back, by observer's own test
    /// (ns): the writer waits for buffer space (`SOCK_NOSPACE`), everything
    /// it wrote is already sent (nothing unsent), and the congestion window
    /// has room. The kernel's `TCP_CHRONO_SNDBUF_LIMITED` starts only when a
    /// send leaves the write queue empty (net/ipv4/tcp_output.c
    /// `tcp_cwnd_validate()`), which a sender moving in bursts never does.
    /// Charged like `cwnd_limited_ns`.
    pub sndbuf_full_ns: u64,
    /// Cgroup v2 id of the owning process (`bpf_get_current_cgroup_id()`).
    pub cgroup_id: u64,
    /// `bpf_jiffies64()` at sample time (jiffies), for chrono arithmetic.
    pub jiffies: u64,
    /// Number of samples taken of this flow (probe hits).
    pub samples: u64,
    /// Time covered by the integrals below (µs): the sum of the intervals
    /// between consecutive samples. Each integral charges an interval to
    /// the value seen at its start (sample and hold, like
    /// `cwnd_limited_ns`) and wraps (u64); user space divides the
    /// difference of two readings by the difference of this one to get a
    /// time-weighted mean over any interval.
    pub integral_us: u64,
    /// Integral of the advertised receive window ([`FlowSample::rcv_wnd`]
    /// clamped to the scale in use, as `tcp_select_window()` in
    /// net/ipv4/tcp_output.c puts it on the wire) over time (byte·µs).
    pub rcv_wnd_integral: u64,
    /// Integral of the unread bytes ([`FlowSample::unread`]) over time (byte·µs).
    pub unread_integral: u64,
    /// Integral of the receiver RTT estimate (`rcv_rtt_us`, while nonzero)
    /// over time (µs·µs).
    pub rcv_rtt_integral: u64,
    /// Time covered by `rcv_rtt_integral` (µs): intervals whose starting
    /// sample had a receiver RTT estimate.
    pub rcv_rtt_integral_us: u64,
    /// Integral of `snd_wnd` over time (byte·µs).
    pub snd_wnd_integral: u64,
    /// Integral of `srtt_us` over time (µs·µs).
    pub srtt_integral: u64,
    /// Integral of `snd_cwnd` over time (segment·µs).
    pub cwnd_integral: u64,
    /// Time during which the advertised window was closed or nearly so
    /// (less than two of the peer's segments, `2 x rcv_mss`, left of it)
    /// while unread data held the rest: the reader kept it shut. Summed
    /// between samples like `cwnd_limited_ns`; a data segment that closes
    /// the window is always sampled (ns).
    pub rwnd_closed_ns: u64,
    /// Time spent in gaps longer than the pause threshold
    /// ([`crate::rx_gap_ns`]) between data segments arriving (ns): the
    /// sender sent nothing for that long. Measured between the data
    /// segments the sample gate lets through, on the flow's entry (so a
    /// flow whose segments move between CPUs is measured whole), and
    /// counted when the gap ends.
    pub rx_gap_ns: u64,
    /// When a sampled data segment last arrived (monotonic ns).
    pub last_rx_ns: u64,
    /// When `rcv_ooopack` was last seen to grow (monotonic ns; 0: never).
    pub last_ooo_ns: u64,
    /// Bytes (headers included) of data segments that arrived in bursts:
    /// at least twice as fast as the flow's mean spacing over active
    /// periods (see observer-ebpf's `arrivals`).
    pub burst_bytes: u64,
    /// The spacing of those segments from the ones before them, summed
    /// (ns): `burst_bytes / burst_ns` is the rate within bursts, an
    /// estimate of the bottleneck's rate.
    pub burst_ns: u64,
    /// Local address; IPv4 as IPv4-mapped IPv6 (`::ffff:a.b.c.d`).
    pub saddr: [u8; 16],
    /// Remote address; IPv4 as IPv4-mapped IPv6.
    pub daddr: [u8; 16],
    /// Command name of the owning process (NUL-padded, `TASK_COMM_LEN`).
    pub comm: [u8; 16],
    /// Congestion control name (`tcp_congestion_ops.name`, NUL-padded).
    pub cc: [u8; 16],
    /// Network namespace inode (`net.ns.inum`).
    pub netns: u32,
    /// Owning process id (tgid); 0 until a process touches the socket.
    pub pid: u32,
    /// `tcp_sock.snd_wnd`: the peer's advertised window (bytes).
    pub snd_wnd: u32,
    /// `tcp_sock.snd_cwnd` (segments).
    pub snd_cwnd: u32,
    /// `tcp_sock.snd_ssthresh` (segments).
    pub snd_ssthresh: u32,
    /// Smoothed RTT (µs): `tcp_sock.srtt_us >> 3`.
    pub srtt_us: u32,
    /// Windowed minimum RTT (µs): `tcp_sock.rtt_min`.
    pub min_rtt_us: u32,
    /// `tcp_sock.mss_cache` (bytes).
    pub mss: u32,
    /// `tcp_packets_in_flight()`: packets_out - (sacked_out + lost_out) + retrans_out (segments).
    pub inflight: u32,
    /// `tcp_sock.packets_out` (segments).
    pub packets_out: u32,
    /// `tcp_sock.retrans_out` (segments).
    pub retrans_out: u32,
    /// `tcp_sock.lost_out` (segments).
    pub lost_out: u32,
    /// `tcp_sock.sacked_out` (segments).
    pub sacked_out: u32,
    /// `tcp_sock.total_retrans` (segments).
    pub total_retrans: u32,
    /// `tcp_sock.delivered` (segments).
    pub delivered: u32,
    /// `tcp_sock.rate_delivered`: segments in the last delivery-rate sample.
    pub rate_delivered: u32,
    /// `tcp_sock.rate_interval_us`: interval of that sample (µs).
    pub rate_interval_us: u32,
    /// `tcp_sock.chrono_start` (u32 jiffies).
    pub chrono_start: u32,
    /// `tcp_sock.chrono_stat[]`: jiffies spent busy, rwnd-limited and
    /// sndbuf-limited, not counting the period in progress.
    pub chrono_stat: [u32; 3],
    /// `sock.sk_sndbuf` (bytes).
    pub sk_sndbuf: u32,
    /// `sock.sk_wmem_queued` (bytes).
    pub sk_wmem_queued: u32,
    /// Bytes written by the application and not yet sent
    /// (`write_seq - snd_nxt`, `ss`'s `notsent`).
    pub notsent: u32,
    /// `sock.sk_rcvbuf` (bytes).
    pub sk_rcvbuf: u32,
    /// `tcp_sock.rcv_wnd`: the window this host last advertised (bytes).
    pub rcv_wnd: u32,
    /// `tcp_sock.rcv_rtt_est.rtt_us >> 3`: the receiver's RTT estimate (µs),
    /// what `tcpi_rcv_rtt` reports.
    pub rcv_rtt_us: u32,
    /// Bytes received but not yet read by the application:
    /// `rcv_nxt - copied_seq` (what `ss` shows as Recv-Q on a connected socket).
    pub unread: u32,
    /// What is left of the last advertised window: `rcv_wup + rcv_wnd -
    /// rcv_nxt`, `tcp_receive_window()` in include/net/tcp.h (bytes).
    pub rcv_wnd_left: u32,
    /// `tcp_sock.window_clamp`: the most this host will ever advertise (bytes).
    pub window_clamp: u32,
    /// `tcp_sock.rcv_ssthresh`: the current window growth limit
    /// (`tcpi_rcv_ssthresh`, bytes).
    pub rcv_ssthresh: u32,
    /// `tcp_sock.rcvq_space.space`: bytes the application read in the last
    /// receiver RTT, which autotuning sizes the buffer for
    /// (`tcpi_rcv_space`, bytes).
    pub rcv_space: u32,
    /// `tcp_sock.rcv_ooopack`: data segments that arrived out of order
    /// (`tcpi_rcv_ooopack`; loss or reordering on the path).
    pub rcv_ooopack: u32,
    /// `tcp_sock.segs_in`: segments received (`tcpi_segs_in`).
    pub segs_in: u32,
    /// `tcp_sock.data_segs_in`: segments with payload received (`tcpi_data_segs_in`).
    pub data_segs_in: u32,
    /// Smallest nonzero receiver RTT estimate seen over the flow (µs).
    pub rcv_rtt_min_us: u32,
    /// The namespace's `net.ipv4.tcp_rmem` maximum (`net->ipv4.sysctl_tcp_rmem[2]`,
    /// bytes); 0 where the kernel does not expose it.
    pub tcp_rmem_max: u32,
    /// `inet_connection_sock.icsk_ack.rcv_mss`: the peer's segment size as
    /// this host estimates it (`tcpi_rcv_mss`, bytes).
    pub rcv_mss: u32,
    /// Local port (host byte order).
    pub sport: u16,
    /// Remote port (host byte order).
    pub dport: u16,
    /// `AF_INET` or `AF_INET6`.
    pub family: u16,
    /// TCP state (`include/net/tcp_states.h`) at sample time.
    pub state: u8,
    /// `icsk_ca_state` (TCP_CA_Open = 0 ... TCP_CA_Loss = 4).
    pub ca_state: u8,
    /// `tcp_sock.chrono_type`: the clock that runs, a [`crate::chrono`] constant.
    pub chrono_type: u8,
    /// `tcp_sock.rate_app_limited` of the last delivery-rate sample (0/1).
    pub rate_app_limited: u8,
    /// Whether the last sample was cwnd-limited (0/1).
    pub cwnd_limited: u8,
    /// Whether the last sample was send-buffer-limited, as
    /// `sndbuf_full_ns` counts it (0/1).
    pub sndbuf_full: u8,
    /// 1 when observer first saw the flow at its close (it never sampled it
    /// open, e.g. an idle flow older than the agent): its counters cover a
    /// life observer did not watch, so no rate can be derived from them.
    pub born_at_close: u8,
    /// `sock.sk_userlocks`: bit 0 SO_SNDBUF set by the application
    /// (`SOCK_SNDBUF_LOCK`), bit 1 SO_RCVBUF set (`SOCK_RCVBUF_LOCK`).
    pub userlocks: u8,
    /// `tcp_sock.rx_opt.wscale_ok`: both ends agreed on window scaling (0/1).
    pub wscale_ok: u8,
    /// `tcp_sock.rx_opt.rcv_wscale`: the shift this host applies to the
    /// window it advertises.
    pub rcv_wscale: u8,
    /// `tcp_sock.rx_opt.snd_wscale`: the shift the peer applies to its window.
    pub snd_wscale: u8,
    /// `tcp_sock.rx_opt.tstamp_ok`: timestamps in use (0/1).
    pub tstamp_ok: u8,
    /// `tcp_sock.rx_opt.sack_ok`: SACK in use (nonzero; bit flags).
    pub sack_ok: u8,
    /// 1 when observer saw the connection being set up (SYN_SENT or
    /// ESTABLISHED): its counters start at this flow's birth. 0 for a flow
    /// first seen mid-life, whose counters include what it moved before.
    pub seen_from_start: u8,
    /// How many of the gaps summed in [`FlowSample::rx_gap_ns`] ended
    /// (count): `rx_gap_ns / rx_gaps` is the mean pause of the sender. A
    /// sender held by its congestion window waits at most about a round
    /// trip for ACKs; longer pauses wait for data or a timer.
    pub rx_gaps: u32,
    /// Start of the current delivery-rate epoch (monotonic ns; epochs are
    /// [`crate::DELIVERY_EPOCH_NS`] long, rotated at the first sample
    /// after one ends).
    pub delivery_epoch_ns: u64,
    /// The fastest delivery-rate sample of the current epoch, as
    /// (`rate_delivered` segments, `rate_interval_us` µs); [0, 0]: none.
    /// With [`FlowSample::delivery_prev`], the flow's recent best rate: what
    /// the path has shown it can carry (BBR keeps the same windowed max,
    /// net/ipv4/tcp_bbr.c `bbr_update_bw()`). Kept with direct reads only.
    pub delivery_best: [u32; 2],
    /// The fastest sample of the previous epoch (same shape; [0, 0] when
    /// that epoch saw none or ended over an epoch ago).
    pub delivery_prev: [u32; 2],
    /// Time whose latest delivery-rate sample was application-limited
    /// (`rate_app_limited`), summed between samples like `cwnd_limited_ns`
    /// (ns): the share of an interval the kernel's rate sampler judged the
    /// sender short of data (net/ipv4/tcp_rate.c `tcp_rate_check_app_limited()`),
    /// not one flag read at its end.
    pub app_limited_ns: u64,
    /// `tcp_sock.max_window`: the largest window the peer has advertised
    /// over the connection (bytes; `tcp_ack_update_window()`,
    /// net/ipv4/tcp_input.c). A window now offered well below it is a peer
    /// buffer holding data its application has not read.
    pub max_window: u32,
    /// `inet_connection_sock.icsk_rto`: the retransmission timeout
    /// (jiffies; `tcpi_rto` is it in µs).
    pub rto_jiffies: u32,
    /// `sock.sk_pacing_rate` (bytes/s; `u64::MAX`, the kernel's `~0UL`:
    /// not paced), what `tcpi_pacing_rate` reports.
    pub pacing_rate: u64,
    /// `tcp_sock.lsndtime`: when data was last sent (u32 jiffies;
    /// `tcpi_last_data_sent` is its age).
    pub lsndtime: u32,
    /// `inet_connection_sock.icsk_ack.lrcvtime`: when data was last
    /// received (u32 jiffies; `tcpi_last_data_recv` is its age). Carried
    /// forward to the sampled segment's arrival for in-order data.
    pub lrcvtime: u32,
    /// `tcp_sock.rcv_tstamp`: when an ACK was last received (u32 jiffies;
    /// `tcpi_last_ack_recv` is its age). Carried forward to the sampled
    /// segment's arrival for an ACK the kernel will take.
    pub rcv_tstamp: u32,
    /// `tcp_sock.reordering`: how far out of order the sender takes
    /// segments to be before it calls them lost (segments; `tcpi_reordering`).
    pub reordering: u32,
    /// `tcp_sock.delivered_ce`: segments delivered with an ECN CE mark
    /// (`tcpi_delivered_ce`).
    pub delivered_ce: u32,
    /// `tcp_sock.dsack_dups`: segments the peer reported received twice
    /// with D-SACK, spurious retransmissions (`tcpi_dsack_dups`).
    pub dsack_dups: u32,
    /// How many times a sample found the reader caught up (`copied_seq ==
    /// rcv_nxt`) after the sample before it had found data waiting unread
    /// (count). A reader that keeps up drains its socket many times a
    /// round trip; one that is the slowest stage leaves data waiting from
    /// one read to the next and drains it seldom or never. Exact: the gate
    /// always lets through a read that drains data a sample saw waiting.
    pub reader_drains: u32,
    /// The journal epoch in which the programs last wrote this flow's
    /// cookie to the change journal ([`crate::journal`]): a flow is
    /// journaled once per epoch, not once per sample. Kernel-side
    /// bookkeeping; carries no figure.
    pub journal_epoch: u32,
    /// Of [`FlowSample::rx_gap_ns`], the time the reader kept the window
    /// shut (ns): `rwnd_closed_ns` summed over each gap as it ends. The
    /// rest of a gap the window was open (the sender sees room a round trip
    /// after the reader makes it), so a pause of the sender's own is told
    /// from one the reader imposed.
    pub rx_gap_shut_ns: u64,
    /// `rwnd_closed_ns` when a sampled data segment last arrived (ns, at
    /// `last_rx_ns`): where the next gap's shut time starts. Kernel-side
    /// bookkeeping; carries no figure.
    pub rx_shut_mark_ns: u64,
    /// Of [`FlowSample::rx_gap_ns`], the gaps in which this host sent data,
    /// whole (ns): a sender that waits for this host's next request pauses
    /// for this host, not on its own. Sent data is seen by
    /// `tcp_sock.first_tx_mstamp` (µs: this end began sending from nothing
    /// in flight after the data before the gap arrived, to the
    /// microsecond), or by `lsndtime` a jiffy or more later than that
    /// data's `lrcvtime` (data sent while some was still in flight).
    pub rx_gap_asked_ns: u64,
    /// `sock.sk_max_pacing_rate` (bytes/s; `u64::MAX`, the kernel's
    /// `~0UL`: no cap): the cap an application set with
    /// `SO_MAX_PACING_RATE` (`sk_setsockopt()`, net/core/sock.c), which
    /// `sk_pacing_rate` never exceeds.
    pub max_pacing_rate: u64,
}

impl FlowSample {
    /// An all-zero sample.
    pub const ZERO: FlowSample = FlowSample {
        cookie: 0,
        first_seen_ns: 0,
        last_seen_ns: 0,
        closed_ns: 0,
        bytes_acked: 0,
        bytes_received: 0,
        bytes_sent: 0,
        cwnd_limited_ns: 0,
        sndbuf_full_ns: 0,
        cgroup_id: 0,
        jiffies: 0,
        samples: 0,
        integral_us: 0,
        rcv_wnd_integral: 0,
        unread_integral: 0,
        rcv_rtt_integral: 0,
        rcv_rtt_integral_us: 0,
        snd_wnd_integral: 0,
        srtt_integral: 0,
        cwnd_integral: 0,
        rwnd_closed_ns: 0,
        rx_gap_ns: 0,
        last_rx_ns: 0,
        last_ooo_ns: 0,
        burst_bytes: 0,
        burst_ns: 0,
        saddr: [0; 16],
        daddr: [0; 16],
        comm: [0; 16],
        cc: [0; 16],
        netns: 0,
        pid: 0,
        snd_wnd: 0,
        snd_cwnd: 0,
        snd_ssthresh: 0,
        srtt_us: 0,
        min_rtt_us: 0,
        mss: 0,
        inflight: 0,
        packets_out: 0,
        retrans_out: 0,
        lost_out: 0,
        sacked_out: 0,
        total_retrans: 0,
        delivered: 0,
        rate_delivered: 0,
        rate_interval_us: 0,
        chrono_start: 0,
        chrono_stat: [0; 3],
        sk_sndbuf: 0,
        sk_wmem_queued: 0,
        notsent: 0,
        sk_rcvbuf: 0,
        rcv_wnd: 0,
        rcv_rtt_us: 0,
        unread: 0,
        rcv_wnd_left: 0,
        window_clamp: 0,
        rcv_ssthresh: 0,
        rcv_space: 0,
        rcv_ooopack: 0,
        segs_in: 0,
        data_segs_in: 0,
        rcv_rtt_min_us: 0,
        tcp_rmem_max: 0,
        rcv_mss: 0,
        sport: 0,
        dport: 0,
        family: 0,
        state: 0,
        ca_state: 0,
        chrono_type: 0,
        rate_app_limited: 0,
        cwnd_limited: 0,
        sndbuf_full: 0,
        born_at_close: 0,
        userlocks: 0,
        wscale_ok: 0,
        rcv_wscale: 0,
        snd_wscale: 0,
        tstamp_ok: 0,
        sack_ok: 0,
        seen_from_start: 0,
        rx_gaps: 0,
        delivery_epoch_ns: 0,
        delivery_best: [0; 2],
        delivery_prev: [0; 2],
        app_limited_ns: 0,
        max_window: 0,
        rto_jiffies: 0,
        pacing_rate: 0,
        lsndtime: 0,
        lrcvtime: 0,
        rcv_tstamp: 0,
        reordering: 0,
        delivered_ce: 0,
        dsack_dups: 0,
        reader_drains: 0,
        journal_epoch: 0,
        rx_gap_shut_ns: 0,
        rx_shut_mark_ns: 0,
        rx_gap_asked_ns: 0,
        max_pacing_rate: 0,
    };
}

/// Size of [`FlowSample`] in bytes; the kernel and user space must agree.
pub const FLOW_SAMPLE_SIZE: usize = 560;
const _: () = assert!(core::mem::size_of::<FlowSample>() == FLOW_SAMPLE_SIZE);
const _: () = assert!(core::mem::align_of::<FlowSample>() == 8);

#[cfg(feature = "user")]
// SAFETY: `FlowSample` is `#[repr(C)]`, made of integers and integer arrays,
// with all padding explicit: every bit pattern is a valid value.
unsafe impl aya::Pod for FlowSample {}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::offset_of;

    #[test]
    fn layout_is_pinned() {
        assert_eq!(offset_of!(FlowSample, cookie), 0);
        assert_eq!(offset_of!(FlowSample, cwnd_limited_ns), 56);
        assert_eq!(offset_of!(FlowSample, sndbuf_full_ns), 64);
        assert_eq!(offset_of!(FlowSample, samples), 88);
        assert_eq!(offset_of!(FlowSample, integral_us), 96);
        assert_eq!(offset_of!(FlowSample, last_ooo_ns), 184);
        assert_eq!(offset_of!(FlowSample, burst_ns), 200);
        assert_eq!(offset_of!(FlowSample, saddr), 208);
        assert_eq!(offset_of!(FlowSample, cc), 256);
        assert_eq!(offset_of!(FlowSample, netns), 272);
        assert_eq!(offset_of!(FlowSample, chrono_stat), 344);
        assert_eq!(offset_of!(FlowSample, notsent), 364);
        assert_eq!(offset_of!(FlowSample, rcv_rtt_us), 376);
        assert_eq!(offset_of!(FlowSample, unread), 380);
        assert_eq!(offset_of!(FlowSample, rcv_mss), 420);
        assert_eq!(offset_of!(FlowSample, sport), 424);
        assert_eq!(offset_of!(FlowSample, state), 430);
        assert_eq!(offset_of!(FlowSample, cwnd_limited), 434);
        assert_eq!(offset_of!(FlowSample, sndbuf_full), 435);
        assert_eq!(offset_of!(FlowSample, born_at_close), 436);
        assert_eq!(offset_of!(FlowSample, userlocks), 437);
        assert_eq!(offset_of!(FlowSample, sack_ok), 442);
        assert_eq!(offset_of!(FlowSample, seen_from_start), 443);
        assert_eq!(offset_of!(FlowSample, rx_gaps), 444);
        assert_eq!(offset_of!(FlowSample, delivery_epoch_ns), 448);
        assert_eq!(offset_of!(FlowSample, delivery_best), 456);
        assert_eq!(offset_of!(FlowSample, delivery_prev), 464);
        assert_eq!(offset_of!(FlowSample, app_limited_ns), 472);
        assert_eq!(offset_of!(FlowSample, max_window), 480);
        assert_eq!(offset_of!(FlowSample, rto_jiffies), 484);
        assert_eq!(offset_of!(FlowSample, pacing_rate), 488);
        assert_eq!(offset_of!(FlowSample, lsndtime), 496);
        assert_eq!(offset_of!(FlowSample, rcv_tstamp), 504);
        assert_eq!(offset_of!(FlowSample, dsack_dups), 516);
        assert_eq!(offset_of!(FlowSample, reader_drains), 520);
        assert_eq!(offset_of!(FlowSample, journal_epoch), 524);
        assert_eq!(offset_of!(FlowSample, rx_gap_shut_ns), 528);
        assert_eq!(offset_of!(FlowSample, rx_shut_mark_ns), 536);
        assert_eq!(offset_of!(FlowSample, rx_gap_asked_ns), 544);
        assert_eq!(offset_of!(FlowSample, max_pacing_rate), 552);
    }

    #[test]
    fn golden_bytes() {
        let mut s = FlowSample::ZERO;
        s.cookie = 0x0102_0304_0506_0708;
        s.snd_wnd = 80_480;
        s.sport = 5201;
        s.state = crate::tcp_state::ESTABLISHED;
        // SAFETY: FlowSample is repr(C) plain data with explicit padding.
        let bytes = unsafe {
            core::slice::from_raw_parts((&s as *const FlowSample).cast::<u8>(), FLOW_SAMPLE_SIZE)
        };
        assert_eq!(&bytes[0..8], &0x0102_0304_0506_0708u64.to_ne_bytes());
        let snd_wnd = offset_of!(FlowSample, snd_wnd);
        assert_eq!(snd_wnd, 280);
        assert_eq!(&bytes[snd_wnd..snd_wnd + 4], &80_480u32.to_ne_bytes());
        assert_eq!(&bytes[424..426], &5201u16.to_ne_bytes());
        assert_eq!(bytes[430], 1);
        let nonzero = bytes.iter().filter(|b| **b != 0).count();
        assert_eq!(nonzero, 8 + 3 + 2 + 1);
    }
}
