//! The user-space flow model: a kernel [`FlowSample`] turned into the
//! figures an operator reads, in the units `tcp_info` uses.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::SystemTime;

use observer_common::{
    FlowSample, SOCK_RCVBUF_LOCK, SOCK_SNDBUF_LOCK, advertised_window, tcp_state,
};
use serde::Serialize;

use crate::model::{
    clock::Clock,
    integrals::{Integrals, stale_us, window_closed},
    workload::SharedWorkload,
};

/// A wall-clock time, written as RFC 3339 in UTC to the millisecond
/// (`2026-12-02T06:53:28.066Z`) in JSON and text. Kept as a time and
/// written only when shown: a poll builds a [`Flow`] for each judgement,
/// and most are never printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stamp(pub SystemTime);

impl std::fmt::Display for Stamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&humantime::format_rfc3339_millis(self.0), f)
    }
}

impl Serialize for Stamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Writes a shared name as a JSON string (serde writes `Arc<str>` only
/// with its `rc` feature).
fn optional_text<S: serde::Serializer>(v: &Option<Arc<str>>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(text) => s.serialize_str(text),
        None => s.serialize_none(),
    }
}

/// Chrono figures as `tcp_get_info_chrono_stats()` (net/ipv4/tcp.c) reports
/// them, in µs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Chrono {
    /// `tcpi_busy_time`: busy + rwnd-limited + sndbuf-limited (µs).
    pub busy_us: u64,
    /// `tcpi_rwnd_limited` (µs).
    pub rwnd_limited_us: u64,
    /// `tcpi_sndbuf_limited` (µs).
    pub sndbuf_limited_us: u64,
}

/// Computes [`Chrono`] from a sample, adding the period in progress up to
/// `jiffies_now` (u32 jiffies, like `tcp_jiffies32`) exactly as the kernel
/// does: the running type gets `jiffies_now - chrono_start`.
pub fn chrono(s: &FlowSample, jiffies_now: u32, us_per_jiffy: u64) -> Chrono {
    let mut stats = [0u64; 3];
    for (i, stat) in stats.iter_mut().enumerate() {
        *stat = u64::from(s.chrono_stat[i]);
        if usize::from(s.chrono_type) == i + 1 {
            *stat += u64::from(jiffies_now.wrapping_sub(s.chrono_start));
        }
        *stat *= us_per_jiffy;
    }
    Chrono {
        busy_us: stats.iter().sum(),
        rwnd_limited_us: stats[1],
        sndbuf_limited_us: stats[2],
    }
}

/// The address of a flow endpoint: IPv4-mapped addresses print as IPv4.
pub fn endpoint(addr: [u8; 16], port: u16) -> SocketAddr {
    let v6 = Ipv6Addr::from(addr);
    let ip = match v6.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(v6),
    };
    SocketAddr::new(ip, port)
}

/// A NUL-padded kernel string as text.
pub fn c_str(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// Delivery rate of the last rate sample in bits/s, as
/// `tcp_compute_delivery_rate()` (net/ipv4/tcp.c) computes `tcpi_delivery_rate`
/// (which is in bytes/s).
pub fn delivery_rate_bps(s: &FlowSample) -> u64 {
    rate_of(s.rate_delivered, s.rate_interval_us, s.mss)
}

/// `delivered` segments of `mss` bytes over `interval_us`, in bits/s; 0
/// for an empty sample.
fn rate_of(delivered: u32, interval_us: u32, mss: u32) -> u64 {
    if delivered == 0 || interval_us == 0 {
        return 0;
    }
    // In u128: the kernel's product (packets x MSS x 10^6) fits its u64,
    // but not always once x 8 for bits; saturate rather than wrap.
    let bps = u128::from(delivered) * u128::from(mss) * 8_000_000 / u128::from(interval_us);
    u64::try_from(bps).unwrap_or(u64::MAX)
}

/// The fastest delivery-rate sample of the two seconds before `at_ns`
/// (monotonic ns; [`FlowSample::delivery_best`] and `delivery_prev`, aged
/// here because the kernel rotates its epochs only when it samples), in
/// bits/s: what the path has recently shown the flow can carry. 0 when
/// none was kept (helper reads, or no data ACKed in that time).
pub fn recent_max_delivery_rate_bps(s: &FlowSample, at_ns: u64) -> u64 {
    let epoch = observer_common::DELIVERY_EPOCH_NS;
    let age = at_ns.saturating_sub(s.delivery_epoch_ns);
    let [d, i] = s.delivery_best;
    let [pd, pi] = s.delivery_prev;
    match age {
        a if a < epoch => rate_of(d, i, s.mss).max(rate_of(pd, pi, s.mss)),
        a if a < 2 * epoch => rate_of(d, i, s.mss),
        _ => 0,
    }
}

/// Whether observer can judge the flow from its birth: it was set up at or
/// after `start_ns` (monotonic ns) and observer saw the setup
/// ([`FlowSample::seen_from_start`]), so its counters started at zero
/// then, or it was first seen at its close (judged `unknown` then). A flow
/// first seen mid-life, even after `start_ns`, is older: its counters
/// include what it moved before, so its span starts at its first read.
pub fn born_since(s: &FlowSample, start_ns: u64) -> bool {
    s.born_at_close != 0 || (s.seen_from_start != 0 && s.first_seen_ns >= start_ns)
}

/// One flow as observer reports it. Units are in the field names or docs;
/// `docs/json.md` documents each JSON key.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Flow {
    /// Socket cookie: the flow's key.
    pub cookie: u64,
    /// Network namespace inode.
    pub netns: u32,
    /// The namespace's `ip netns` name ([`crate::track::netns`]), `None`
    /// where it has none or it is not resolved; absent from the JSON then.
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "optional_text"
    )]
    pub netns_name: Option<Arc<str>>,
    /// Local `ip:port`.
    pub local: SocketAddr,
    /// Remote `ip:port`.
    pub remote: SocketAddr,
    /// Socket family as `ss -f` names it: `inet` (IPv4) or `inet6` (IPv6,
    /// also an IPv6 socket with IPv4-mapped addresses, which `local` and
    /// `remote` print as IPv4).
    pub family: &'static str,
    /// Owning process id (0: not yet known).
    pub pid: u32,
    /// Owning process command name.
    pub comm: String,
    /// Cgroup v2 id of the owner.
    pub cgroup_id: u64,
    /// The owner's workload (cgroup path, systemd unit, container, pod),
    /// resolved from `cgroup_id` by the tracking stage; empty until then.
    #[serde(flatten)]
    pub workload: SharedWorkload,
    /// TCP state name as `ss` prints it.
    pub state: &'static str,
    /// Whether the flow has closed.
    pub closed: bool,
    /// Bytes the peer acknowledged (`tcpi_bytes_acked`).
    pub bytes_acked: u64,
    /// Bytes received (`tcpi_bytes_received`).
    pub bytes_received: u64,
    /// Bytes sent, retransmissions included (`tcpi_bytes_sent`).
    pub bytes_sent: u64,
    /// Smoothed RTT (µs).
    pub srtt_us: u32,
    /// Minimum RTT (µs).
    pub min_rtt_us: u32,
    /// Congestion window (segments).
    pub snd_cwnd: u32,
    /// Slow-start threshold (segments).
    pub snd_ssthresh: u32,
    /// Sender MSS (bytes).
    pub mss: u32,
    /// Peer's advertised receive window (bytes).
    pub snd_wnd: u32,
    /// The largest window the peer has advertised over the connection
    /// (`tcp_sock.max_window`, bytes; 0 where the kernel lacks it).
    pub snd_wnd_max: u32,
    /// Window this host last advertised, as it went on the wire (bytes):
    /// `tcp_sock.rcv_wnd` clamped to `65535 << rcv_wscale`
    /// ([`observer_common::advertised_window`]).
    pub rcv_wnd: u32,
    /// The kernel's own `tcp_sock.rcv_wnd` (bytes), unclamped: without
    /// window scaling it grows past what the peer is ever told.
    pub rcv_wnd_internal: u32,
    /// What is left open of the last advertised window (bytes):
    /// `tcp_receive_window()`, `rcv_wup + rcv_wnd - rcv_nxt`.
    pub rcv_wnd_left: u32,
    /// Bytes received and not yet read by the application
    /// (`rcv_nxt - copied_seq`; `ss` Recv-Q).
    pub unread_bytes: u32,
    /// The most this host will advertise (`tcp_sock.window_clamp`, bytes).
    pub window_clamp: u32,
    /// The window's current growth limit (`tcpi_rcv_ssthresh`, bytes).
    pub rcv_ssthresh: u32,
    /// Bytes read per receiver RTT that autotuning sizes the buffer for
    /// (`tcpi_rcv_space`, bytes).
    pub rcv_space: u32,
    /// The peer's segment size as this host estimates it (`tcpi_rcv_mss`, bytes).
    pub rcv_mss: u32,
    /// The namespace's `net.ipv4.tcp_rmem` maximum (bytes; 0: unknown).
    pub tcp_rmem_max: u32,
    /// The application set SO_RCVBUF (`SOCK_RCVBUF_LOCK`): autotuning is off.
    pub rcvbuf_locked: bool,
    /// The application set SO_SNDBUF (`SOCK_SNDBUF_LOCK`).
    pub sndbuf_locked: bool,
    /// Window scaling in use on this connection (`rx_opt.wscale_ok`).
    pub wscale_ok: bool,
    /// Shift applied to the window this host advertises (`tcpi_rcv_wscale`).
    pub rcv_wscale: u8,
    /// Shift the peer applies to its window (`tcpi_snd_wscale`).
    pub snd_wscale: u8,
    /// TCP timestamps in use (`rx_opt.tstamp_ok`).
    pub tstamp_ok: bool,
    /// SACK in use (`rx_opt.sack_ok`).
    pub sack_ok: bool,
    /// Receiver-side RTT estimate (`tcpi_rcv_rtt`, µs; 0 until measured).
    pub rcv_rtt_us: u32,
    /// Smallest receiver RTT estimate seen over the flow (µs; 0: none yet).
    pub rcv_rtt_min_us: u32,
    /// Data segments that arrived out of order (`tcpi_rcv_ooopack`).
    pub rcv_ooopack: u32,
    /// Segments received (`tcpi_segs_in`).
    pub segs_in: u32,
    /// Segments with payload received (`tcpi_data_segs_in`).
    pub data_segs_in: u32,
    /// Time the advertised window was closed or nearly so, under two of the
    /// peer's segments (µs).
    pub rwnd_closed_us: u64,
    /// Time in gaps of more than 10 ms (`observer_common::rx_gap_ns`: 25 ms
    /// at HZ=100) between arriving data segments (µs):
    /// the sender sent nothing for that long.
    pub rx_gap_us: u64,
    /// How many such gaps ended (count): `rx_gap_us / rx_gaps` is the
    /// sender's mean pause (`FlowSample::rx_gaps`).
    pub rx_gaps: u32,
    /// Of `rx_gap_us`, the time the reader kept the window shut (µs;
    /// `FlowSample::rx_gap_shut_ns`): the rest of it the window was open.
    pub rx_gap_shut_us: u64,
    /// Of `rx_gap_us`, the gaps in which this host sent data, whole (µs;
    /// `FlowSample::rx_gap_asked_ns`): the sender may have waited for this
    /// host's next request.
    pub rx_gap_asked_us: u64,
    /// How many times the reader caught up with data a sample had seen
    /// waiting unread (count; `FlowSample::reader_drains`): many a round
    /// trip for a reader that keeps up, seldom or never for one that is
    /// the slowest stage.
    pub reader_drains: u32,
    /// Packets in flight (segments).
    pub inflight: u32,
    /// Total retransmitted segments (`tcpi_total_retrans`).
    pub retransmits: u32,
    /// `tcpi_busy_time` (µs).
    pub busy_us: u64,
    /// `tcpi_rwnd_limited` (µs).
    pub rwnd_limited_us: u64,
    /// `tcpi_sndbuf_limited` (µs).
    pub sndbuf_limited_us: u64,
    /// Time with the congestion window full: in-flight >= cwnd (µs).
    pub cwnd_limited_us: u64,
    /// Time the send buffer held the sender back by observer's own test
    /// (µs): the writer waited for buffer space with everything written
    /// already sent and the congestion window open. Catches what
    /// `tcpi_sndbuf_limited` misses when the sender moves in bursts
    /// (see `FlowSample::sndbuf_full_ns`).
    pub sndbuf_full_us: u64,
    /// Time whose latest delivery-rate sample was application-limited
    /// (µs; observer's own sum, `FlowSample::app_limited_ns`).
    pub app_limited_us: u64,
    /// Last delivery-rate sample (bits/s).
    pub delivery_rate_bps: u64,
    /// The fastest delivery-rate sample of the last two seconds
    /// (bits/s; 0: none kept): what the path has recently shown it can
    /// carry ([`recent_max_delivery_rate_bps`]).
    pub delivery_rate_max_bps: u64,
    /// Whether the last delivery-rate sample was application-limited.
    pub app_limited: bool,
    /// Congestion-avoidance state (`icsk_ca_state`: 0 open .. 4 loss).
    pub ca_state: u8,
    /// Congestion control algorithm.
    pub cc: String,
    /// Send buffer size (`sk_sndbuf`, bytes).
    pub sndbuf: u32,
    /// Bytes queued in the send buffer (`sk_wmem_queued`).
    pub sndbuf_queued: u32,
    /// Bytes written by the application and not yet sent (`ss`'s notsent).
    pub notsent: u32,
    /// Receive buffer size (`sk_rcvbuf`, bytes).
    pub rcvbuf: u32,
    /// Segments sent and not yet acknowledged (`tcpi_unacked`,
    /// `tcp_sock.packets_out`).
    pub unacked: u32,
    /// Segments the peer has SACKed (`tcpi_sacked`, `tcp_sock.sacked_out`).
    pub sacked: u32,
    /// Segments marked lost (`tcpi_lost`, `tcp_sock.lost_out`).
    pub lost: u32,
    /// Retransmitted segments still in flight (`tcpi_retrans`,
    /// `tcp_sock.retrans_out`; `ss`'s `retrans:A/B` shows it as A).
    pub retrans_out: u32,
    /// Retransmission timeout (`tcpi_rto`, µs; `icsk_rto` in jiffies).
    pub rto_us: u64,
    /// Pacing rate (`tcpi_pacing_rate` x 8, bits/s; `None`: not paced,
    /// the kernel's `~0`).
    pub pacing_rate_bps: Option<u64>,
    /// The pacing cap the application set with `SO_MAX_PACING_RATE`
    /// (`sk_max_pacing_rate` x 8, bits/s; `None`: no cap, the kernel's
    /// `~0`, or a kernel observer cannot read it on).
    pub max_pacing_rate_bps: Option<u64>,
    /// Reordering the sender tolerates before it calls a segment lost
    /// (`tcpi_reordering`, segments; 3 unless reordering was seen).
    pub reordering: u32,
    /// Segments delivered with an ECN CE mark (`tcpi_delivered_ce`).
    pub delivered_ce: u32,
    /// Segments the peer reported received twice with D-SACK: spurious
    /// retransmissions (`tcpi_dsack_dups`).
    pub dsack_dups: u32,
    /// Time since data was last sent (`tcpi_last_data_sent`, ms), as of
    /// the record: now for an open flow, its close for a closed one.
    pub last_data_sent_ms: u64,
    /// Time since data was last received (`tcpi_last_data_recv`, ms), as of
    /// the record.
    pub last_data_recv_ms: u64,
    /// Time since an ACK was last received (`tcpi_last_ack_recv`, ms), as of
    /// the record.
    pub last_ack_recv_ms: u64,
    /// First seen (RFC 3339, UTC).
    pub first_seen: Stamp,
    /// Last sampled, or closed (RFC 3339, UTC).
    pub last_seen: Stamp,
    /// Samples taken in the kernel.
    pub samples: u64,
    /// Time integrals for interval means (not printed).
    #[serde(skip)]
    pub integrals: Integrals,
    /// When `rcv_ooopack` last grew (monotonic ns; 0: never). Not printed.
    #[serde(skip)]
    pub last_ooo_ns: u64,
    /// When a sampled data segment last arrived (monotonic ns,
    /// `FlowSample::last_rx_ns`): where a gap running now began. Not
    /// printed.
    #[serde(skip)]
    pub last_rx_ns: u64,
    /// `rwnd_closed_us` at that arrival (µs, `FlowSample::rx_shut_mark_ns`):
    /// the closed time since is the running gap's shut part. Not printed.
    #[serde(skip)]
    pub rx_shut_mark_us: u64,
}

impl Flow {
    /// Whether the receive buffer has grown to the namespace's
    /// `net.ipv4.tcp_rmem` maximum (within 5%): autotuning can grow it no
    /// further.
    pub fn at_rmem_max(&self) -> bool {
        self.tcp_rmem_max > 0 && u64::from(self.rcvbuf) * 100 >= u64::from(self.tcp_rmem_max) * 95
    }

    /// The same flow with every counter at zero: its state at birth.
    pub fn zero_like(f: &Flow) -> Flow {
        Flow {
            bytes_acked: 0,
            bytes_received: 0,
            bytes_sent: 0,
            retransmits: 0,
            busy_us: 0,
            rwnd_limited_us: 0,
            sndbuf_limited_us: 0,
            cwnd_limited_us: 0,
            sndbuf_full_us: 0,
            app_limited_us: 0,
            samples: 0,
            rcv_ooopack: 0,
            segs_in: 0,
            data_segs_in: 0,
            rwnd_closed_us: 0,
            rx_gap_us: 0,
            rx_gaps: 0,
            rx_gap_shut_us: 0,
            rx_gap_asked_us: 0,
            reader_drains: 0,
            delivered_ce: 0,
            dsack_dups: 0,
            integrals: Integrals::default(),
            last_ooo_ns: 0,
            last_rx_ns: 0,
            rx_shut_mark_us: 0,
            ..f.clone()
        }
    }

    /// Builds a flow from its latest sample as of monotonic `now_ns`.
    pub fn from_sample(s: &FlowSample, clock: &Clock, now_ns: u64) -> Flow {
        let closed = s.closed_ns != 0;
        // Only the low 32 bits count (chrono_start is a u32 jiffy). A
        // moment before the sample (a reading taken just before the poll
        // that re-sampled the flow) counts back from it.
        let jiffies_now = if closed {
            s.jiffies
        } else if now_ns >= s.last_seen_ns {
            s.jiffies
                .wrapping_add(clock.jiffies_in(now_ns - s.last_seen_ns))
        } else {
            s.jiffies
                .wrapping_sub(clock.jiffies_in(s.last_seen_ns - now_ns))
        };
        let ch = chrono(s, jiffies_now as u32, clock.us_per_jiffy());
        let stamp = |ns: u64| Stamp(clock.wall(ns));
        // tcp_get_info(): jiffies_to_msecs(now - stamp), in u32 jiffies.
        let hz = u64::from(clock.hz.max(1));
        let age_ms = |stamp: u32| u64::from((jiffies_now as u32).wrapping_sub(stamp)) * 1000 / hz;
        Flow {
            cookie: s.cookie,
            netns: s.netns,
            netns_name: None,
            local: endpoint(s.saddr, s.sport),
            remote: endpoint(s.daddr, s.dport),
            family: if s.family == observer_common::AF_INET6 {
                "inet6"
            } else {
                "inet"
            },
            pid: s.pid,
            comm: c_str(&s.comm),
            cgroup_id: s.cgroup_id,
            workload: SharedWorkload::default(),
            state: tcp_state::name(s.state),
            closed,
            bytes_acked: s.bytes_acked,
            bytes_received: s.bytes_received,
            bytes_sent: s.bytes_sent,
            srtt_us: s.srtt_us,
            // The kernel's "no sample yet" (~0U in tcp_sock.rtt_min) is 0 here.
            min_rtt_us: if s.min_rtt_us == u32::MAX {
                0
            } else {
                s.min_rtt_us
            },
            snd_cwnd: s.snd_cwnd,
            snd_ssthresh: s.snd_ssthresh,
            mss: s.mss,
            snd_wnd: s.snd_wnd,
            snd_wnd_max: s.max_window,
            rcv_wnd: advertised_window(s.rcv_wnd, s.rcv_wscale),
            rcv_wnd_internal: s.rcv_wnd,
            rcv_wnd_left: s.rcv_wnd_left,
            unread_bytes: s.unread,
            window_clamp: s.window_clamp,
            rcv_ssthresh: s.rcv_ssthresh,
            rcv_space: s.rcv_space,
            rcv_mss: s.rcv_mss,
            tcp_rmem_max: s.tcp_rmem_max,
            rcvbuf_locked: s.userlocks & SOCK_RCVBUF_LOCK != 0,
            sndbuf_locked: s.userlocks & SOCK_SNDBUF_LOCK != 0,
            wscale_ok: s.wscale_ok != 0,
            rcv_wscale: s.rcv_wscale,
            snd_wscale: s.snd_wscale,
            tstamp_ok: s.tstamp_ok != 0,
            sack_ok: s.sack_ok != 0,
            rcv_rtt_us: s.rcv_rtt_us,
            rcv_rtt_min_us: s.rcv_rtt_min_us,
            rcv_ooopack: s.rcv_ooopack,
            segs_in: s.segs_in,
            data_segs_in: s.data_segs_in,
            // The window the last sample left shut stays shut until the
            // next (`integrals`).
            rwnd_closed_us: s.rwnd_closed_ns / 1000
                + if window_closed(s) {
                    stale_us(s, now_ns)
                } else {
                    0
                },
            rx_gap_us: s.rx_gap_ns / 1000,
            rx_gaps: s.rx_gaps,
            rx_gap_shut_us: s.rx_gap_shut_ns / 1000,
            rx_gap_asked_us: s.rx_gap_asked_ns / 1000,
            reader_drains: s.reader_drains,
            inflight: s.inflight,
            retransmits: s.total_retrans,
            busy_us: ch.busy_us,
            rwnd_limited_us: ch.rwnd_limited_us,
            sndbuf_limited_us: ch.sndbuf_limited_us,
            cwnd_limited_us: s.cwnd_limited_ns / 1000,
            sndbuf_full_us: s.sndbuf_full_ns / 1000,
            app_limited_us: s.app_limited_ns / 1000,
            delivery_rate_bps: delivery_rate_bps(s),
            delivery_rate_max_bps: recent_max_delivery_rate_bps(
                s,
                if s.closed_ns != 0 {
                    s.closed_ns
                } else {
                    now_ns
                },
            ),
            app_limited: s.rate_app_limited != 0,
            ca_state: s.ca_state,
            cc: c_str(&s.cc),
            sndbuf: s.sk_sndbuf,
            sndbuf_queued: s.sk_wmem_queued,
            notsent: s.notsent,
            rcvbuf: s.sk_rcvbuf,
            unacked: s.packets_out,
            sacked: s.sacked_out,
            lost: s.lost_out,
            retrans_out: s.retrans_out,
            rto_us: u64::from(s.rto_jiffies) * 1_000_000 / hz,
            pacing_rate_bps: (s.pacing_rate != u64::MAX).then(|| s.pacing_rate.saturating_mul(8)),
            max_pacing_rate_bps: (s.max_pacing_rate != u64::MAX && s.max_pacing_rate != 0)
                .then(|| s.max_pacing_rate.saturating_mul(8)),
            reordering: s.reordering,
            delivered_ce: s.delivered_ce,
            dsack_dups: s.dsack_dups,
            last_data_sent_ms: age_ms(s.lsndtime),
            last_data_recv_ms: age_ms(s.lrcvtime),
            last_ack_recv_ms: age_ms(s.rcv_tstamp),
            first_seen: stamp(s.first_seen_ns),
            last_seen: stamp(if closed { s.closed_ns } else { s.last_seen_ns }),
            samples: s.samples,
            integrals: Integrals::of(s),
            last_ooo_ns: s.last_ooo_ns,
            last_rx_ns: s.last_rx_ns,
            rx_shut_mark_us: s.rx_shut_mark_ns / 1000,
        }
    }
}

#[cfg(test)]
#[path = "flow_tests.rs"]
mod tests;
