//! Kernel struct member offsets, resolved in user space from the running
//! kernel's BTF (`/sys/kernel/btf/vmlinux`) and handed to the kernel programs
//! as the read-only global [`crate::GLOBAL_OFFSETS`].
//!
//! Plain members are byte offsets from the start of `struct tcp_sock` (which
//! begins with `inet_connection_sock`, `inet_sock`, `sock` and `sock_common`,
//! so one base pointer serves them all). Bitfield members (`*_bit`) are bit
//! offsets from that start, with their width in the matching `*_width`.
//! A member the running kernel lacks is [`OFFSET_NONE`]; the kernel programs
//! then leave the figure at zero and user space says which one is missing.

/// Marks a member the running kernel does not have.
pub const OFFSET_NONE: u32 = u32::MAX;

macro_rules! offsets {
    ($( $(#[$doc:meta])* $field:ident ),* $(,)?) => {
        /// Offsets of every kernel member the probes read. See the module
        /// docs for the units.
        #[repr(C)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct Offsets {
            $( $(#[$doc])* pub $field: u32, )*
        }

        impl Offsets {
            /// Every field set to [`OFFSET_NONE`].
            pub const NONE: Offsets = Offsets { $( $field: OFFSET_NONE, )* };

            /// The field names, in declaration order.
            pub const NAMES: &'static [&'static str] = &[ $( stringify!($field), )* ];

            /// Sets the field called `name`; returns false for an unknown name.
            pub fn set(&mut self, name: &str, value: u32) -> bool {
                match name {
                    $( stringify!($field) => { self.$field = value; true } )*
                    _ => false,
                }
            }

            /// The value of the field called `name`, if there is one.
            pub fn get(&self, name: &str) -> Option<u32> {
                match name {
                    $( stringify!($field) => Some(self.$field), )*
                    _ => None,
                }
            }
        }
    };
}

offsets! {
    /// `sock_common.skc_family` (u16).
    family,
    /// `sock_common.skc_state` (u8).
    state,
    /// `sock_common.skc_cookie.counter` (u64): the socket cookie once
    /// `bpf_get_socket_cookie()` (`__sock_gen_cookie()`, net/core/sock_diag.c)
    /// has set it, else 0.
    sk_cookie,
    /// `sock.sk_protocol` (bit offset; a bitfield on older kernels).
    protocol_bit,
    /// Width of `sk_protocol` in bits.
    protocol_width,
    /// `inet_sock.inet_sport`: local port, network byte order (u16). Not
    /// `skc_num`, which the kernel zeroes when a closing socket releases its port.
    sport,
    /// `sock_common.skc_dport`: remote port, network byte order (u16).
    dport,
    /// `sock_common.skc_rcv_saddr` (IPv4, network byte order).
    saddr4,
    /// `sock_common.skc_daddr` (IPv4, network byte order).
    daddr4,
    /// `sock_common.skc_v6_rcv_saddr` (16 bytes).
    saddr6,
    /// `sock_common.skc_v6_daddr` (16 bytes).
    daddr6,
    /// `sock_common.skc_net`: pointer to `struct net`.
    net,
    /// `net.ns.inum`, relative to `struct net` (u32).
    net_inum,
    /// `sock.sk_sndbuf` (int, bytes).
    sk_sndbuf,
    /// `sock.sk_rcvbuf` (int, bytes).
    sk_rcvbuf,
    /// `sock.sk_wmem_queued` (int, bytes).
    sk_wmem_queued,
    /// `sock.sk_socket`: pointer to the `struct socket` the process holds
    /// (NULL once the process has closed it).
    sk_socket,
    /// `socket.flags`, relative to `struct socket` (unsigned long):
    /// `SOCK_NOSPACE` and its siblings (include/linux/net.h).
    socket_flags,
    /// `inet_connection_sock.icsk_ca_ops`: pointer to `tcp_congestion_ops`.
    ca_ops,
    /// `tcp_congestion_ops.name`, relative to `tcp_congestion_ops` (`char[16]`).
    ca_name,
    /// `inet_connection_sock.icsk_ca_state` (bitfield: bit offset).
    ca_state_bit,
    /// Width of `icsk_ca_state` in bits.
    ca_state_width,
    /// `tcp_sock.snd_wnd` (u32, bytes).
    snd_wnd,
    /// `tcp_sock.max_window` (u32, bytes).
    max_window,
    /// `tcp_sock.snd_cwnd` (u32, segments).
    snd_cwnd,
    /// `tcp_sock.snd_ssthresh` (u32, segments).
    snd_ssthresh,
    /// `tcp_sock.srtt_us` (u32, µs << 3).
    srtt_us,
    /// `tcp_sock.rtt_min.s[0].v` (u32, µs): the windowed minimum RTT.
    min_rtt,
    /// `tcp_sock.mss_cache` (u32, bytes).
    mss_cache,
    /// `tcp_sock.packets_out` (u32, segments).
    packets_out,
    /// `tcp_sock.sacked_out` (u32, segments).
    sacked_out,
    /// `tcp_sock.lost_out` (u32, segments).
    lost_out,
    /// `tcp_sock.retrans_out` (u32, segments).
    retrans_out,
    /// `tcp_sock.total_retrans` (u32, segments).
    total_retrans,
    /// `tcp_sock.bytes_acked` (u64, bytes).
    bytes_acked,
    /// `tcp_sock.bytes_received` (u64, bytes).
    bytes_received,
    /// `tcp_sock.bytes_sent` (u64, bytes).
    bytes_sent,
    /// `tcp_sock.delivered` (u32, segments).
    delivered,
    /// `tcp_sock.rate_delivered` (u32, segments).
    rate_delivered,
    /// `tcp_sock.rate_interval_us` (u32, µs).
    rate_interval_us,
    /// `tcp_sock.rate_app_limited` (bitfield: bit offset).
    rate_app_limited_bit,
    /// Width of `rate_app_limited` in bits.
    rate_app_limited_width,
    /// `tcp_sock.chrono_start` (u32, jiffies).
    chrono_start,
    /// `tcp_sock.chrono_stat` (`u32[3]`, jiffies).
    chrono_stat,
    /// `tcp_sock.chrono_type` (bitfield: bit offset).
    chrono_type_bit,
    /// Width of `chrono_type` in bits.
    chrono_type_width,
    /// `tcp_sock.rcv_wnd` (u32, bytes).
    rcv_wnd,
    /// `tcp_sock.snd_una` (u32, sequence number).
    snd_una,
    /// `tcp_sock.snd_nxt` (u32, sequence number).
    snd_nxt,
    /// `tcp_sock.write_seq` (u32, sequence number).
    write_seq,
    /// `tcp_sock.rcv_nxt` (u32, sequence number).
    rcv_nxt,
    /// `tcp_sock.copied_seq` (u32, sequence number): the next byte the
    /// reading process will be handed.
    copied_seq,
    /// `sk_buff.cb`, relative to `struct sk_buff`: where `TCP_SKB_CB(skb)`
    /// (`struct tcp_skb_cb`) lives (`char[48]`).
    skb_cb,
    /// `sk_buff.len`, relative to `struct sk_buff` (u32, bytes): at
    /// `tcp_rcv_established()`, the TCP header plus payload.
    skb_len,
    /// `tcp_skb_cb.seq`, relative to `tcp_skb_cb` (u32, host order).
    tcb_seq,
    /// `tcp_skb_cb.end_seq`: seq + SYN + FIN + payload length (u32).
    tcb_end_seq,
    /// `tcp_skb_cb.ack_seq` (u32, host order).
    tcb_ack_seq,
    /// `tcp_skb_cb.tcp_flags` (u8).
    tcb_flags,
    /// `tcp_sock.rcv_rtt_est.rtt_us` (u32, µs << 3).
    rcv_rtt,
    /// `tcp_sock.rcv_wup` (u32, sequence number): rcv_nxt when the window
    /// was last advertised.
    rcv_wup,
    /// `tcp_sock.window_clamp` (u32, bytes).
    window_clamp,
    /// `tcp_sock.rcv_ssthresh` (u32, bytes).
    rcv_ssthresh,
    /// `tcp_sock.rcvq_space.space` (u32, bytes).
    rcvq_space,
    /// `tcp_sock.rcv_ooopack` (u32, segments).
    rcv_ooopack,
    /// `tcp_sock.segs_in` (u32, segments).
    segs_in,
    /// `tcp_sock.data_segs_in` (u32, segments).
    data_segs_in,
    /// `inet_connection_sock.icsk_ack.rcv_mss` (u16, bytes).
    rcv_mss,
    /// `sock.sk_userlocks` (bit offset; a bitfield on older kernels).
    userlocks_bit,
    /// Width of `sk_userlocks` in bits.
    userlocks_width,
    /// `tcp_sock.rx_opt.wscale_ok` (bitfield: bit offset).
    wscale_ok_bit,
    /// Width of `wscale_ok`.
    wscale_ok_width,
    /// `tcp_sock.rx_opt.rcv_wscale` (bitfield: bit offset).
    rcv_wscale_bit,
    /// Width of `rcv_wscale`.
    rcv_wscale_width,
    /// `tcp_sock.rx_opt.snd_wscale` (bitfield: bit offset).
    snd_wscale_bit,
    /// Width of `snd_wscale`.
    snd_wscale_width,
    /// `tcp_sock.rx_opt.tstamp_ok` (bitfield: bit offset).
    tstamp_ok_bit,
    /// Width of `tstamp_ok`.
    tstamp_ok_width,
    /// `tcp_sock.rx_opt.sack_ok` (bitfield: bit offset).
    sack_ok_bit,
    /// Width of `sack_ok`.
    sack_ok_width,
    /// `net.ipv4.sysctl_tcp_rmem`, relative to `struct net` (`int[3]`, bytes).
    tcp_rmem,
    /// `inet_connection_sock.icsk_rto` (u32, jiffies): the retransmission timeout.
    icsk_rto,
    /// `sock.sk_pacing_rate` (unsigned long, bytes/s; `~0UL`: no pacing).
    sk_pacing_rate,
    /// `sock.sk_max_pacing_rate` (unsigned long, bytes/s; `~0UL`: no cap):
    /// the cap `SO_MAX_PACING_RATE` sets.
    sk_max_pacing_rate,
    /// `tcp_sock.lsndtime` (u32, jiffies): when data was last sent.
    lsndtime,
    /// `inet_connection_sock.icsk_ack.lrcvtime` (u32, jiffies): when data
    /// was last received.
    lrcvtime,
    /// `tcp_sock.rcv_tstamp` (u32, jiffies): when an ACK was last received.
    rcv_tstamp,
    /// `tcp_sock.reordering` (u32, segments): the reordering the sender tolerates.
    reordering,
    /// `tcp_sock.delivered_ce` (u32, segments): delivered with an ECN CE mark.
    delivered_ce,
    /// `tcp_sock.dsack_dups` (u32, segments): duplicate segments reported by D-SACK.
    dsack_dups,
    /// `tcp_sock.tcp_mstamp` (u64, µs of `CLOCK_MONOTONIC`): the socket's
    /// last event, as `tcp_mstamp_refresh()` (net/ipv4/tcp_output.c) stamps
    /// it when a segment is processed or sent and, up to Linux 6.18, when
    /// a read copies data (`tcp_rcv_space_adjust()`).
    tcp_mstamp,
    /// `tcp_sock.first_tx_mstamp` (u64, µs of `CLOCK_MONOTONIC`): when this
    /// end last began sending data with nothing in flight, the departure
    /// time `tcp_rate_skb_sent()` (net/ipv4/tcp_rate.c) stamps on a data
    /// segment (never on a pure ACK) when `packets_out` is 0.
    first_tx_mstamp,
    /// `socket.sk`, relative to `struct socket`: the `struct sock *` a
    /// process's socket file holds (the owner walk, observer-ebpf/src/owner.rs).
    socket_sk,
    /// `task_struct.tgid`, relative to `struct task_struct` (the pid).
    task_tgid,
    /// `task_struct.comm`, relative to `struct task_struct` (`char[16]`).
    task_comm,
    /// `task_struct.cgroups`: pointer to the task's `struct css_set`.
    task_cgroups,
    /// `css_set.dfl_cgrp`, relative to `struct css_set`: pointer to the
    /// task's cgroup v2 `struct cgroup`.
    css_dfl_cgrp,
    /// `cgroup.kn`, relative to `struct cgroup`: pointer to its
    /// `struct kernfs_node`.
    cgroup_kn,
    /// `kernfs_node.id`, relative to `struct kernfs_node` (u64): the cgroup
    /// id `bpf_get_current_cgroup_id()` returns (kernel/bpf/helpers.c).
    kernfs_id,
}

#[cfg(feature = "user")]
// SAFETY: `Offsets` is `#[repr(C)]` and made only of `u32`s: no padding,
// every bit pattern valid.
unsafe impl aya::Pod for Offsets {}

const _: () = assert!(core::mem::size_of::<Offsets>() == Offsets::NAMES.len() * 4);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_and_get_by_name() {
        let mut o = Offsets::NONE;
        assert!(o.set("snd_wnd", 1234));
        assert_eq!(o.snd_wnd, 1234);
        assert_eq!(o.get("snd_wnd"), Some(1234));
        assert_eq!(o.get("snd_cwnd"), Some(OFFSET_NONE));
        assert!(!o.set("no_such_member", 1));
        assert_eq!(o.get("no_such_member"), None);
    }

    #[test]
    fn names_are_in_layout_order() {
        // Field i sits at byte 4*i: pins the layout user space writes.
        let mut o = Offsets::NONE;
        for (i, name) in Offsets::NAMES.iter().enumerate() {
            assert!(o.set(name, i as u32));
        }
        // SAFETY: Offsets is repr(C) of u32s; reading it as bytes is sound.
        let bytes = unsafe {
            core::slice::from_raw_parts(
                (&o as *const Offsets).cast::<u8>(),
                core::mem::size_of::<Offsets>(),
            )
        };
        for i in 0..Offsets::NAMES.len() {
            let v = u32::from_ne_bytes([
                bytes[4 * i],
                bytes[4 * i + 1],
                bytes[4 * i + 2],
                bytes[4 * i + 3],
            ]);
            assert_eq!(v, i as u32);
        }
        assert_eq!(Offsets::NAMES[0], "family");
        assert_eq!(Offsets::NAMES.len(), 98);
    }
}
