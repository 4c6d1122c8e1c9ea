//! Resolves [`Offsets`] for the running kernel from its BTF.
//!
//! Paths start at `struct tcp_sock` unless the entry names another struct
//! (`net`, `tcp_congestion_ops`, `socket`), whose members are reached through a
//! pointer the probes read first.

use observer_common::{OFFSET_NONE, Offsets};

use crate::kernel::load::btf::{Btf, BtfError};

/// How a member is handed to the kernel programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// A byte offset; the member must not be a bitfield.
    Byte,
    /// A bitfield: bit offset into `<name>_bit`, width into `<name>_width`.
    Bits,
}

/// What the load does where the kernel lacks a member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Need {
    /// It fails: the probes cannot run without the member.
    Required,
    /// It goes on: the figures the member feeds read as 0
    /// ([`Resolved::missing`]).
    Optional,
}

/// One member the probes read.
struct Spec {
    /// The [`Offsets`] field it fills (`<field>_bit` and `<field>_width`
    /// for [`Kind::Bits`]).
    field: &'static str,
    /// The kernel struct the path starts at (`tcp_sock`, `net`, ...).
    ty: &'static str,
    /// The member's path in that struct, as the kernel source names it
    /// (`inet_conn.icsk_inet.sk.__sk_common.skc_family`).
    path: String,
    /// How it is handed to the programs.
    kind: Kind,
    /// Whether the load fails without it.
    need: Need,
}

const SK: &str = "inet_conn.icsk_inet.sk";

macro_rules! spec {
    ($field:literal, $ty:literal, $path:expr, $kind:ident, $need:ident) => {
        Spec {
            field: $field,
            ty: $ty,
            path: $path.to_string(),
            kind: Kind::$kind,
            need: Need::$need,
        }
    };
}

fn specs() -> Vec<Spec> {
    let sk = |p: &str| format!("{SK}.{p}");
    vec![
        spec!(
            "family",
            "tcp_sock",
            sk("__sk_common.skc_family"),
            Byte,
            Required
        ),
        spec!(
            "state",
            "tcp_sock",
            sk("__sk_common.skc_state"),
            Byte,
            Required
        ),
        spec!(
            "sk_cookie",
            "tcp_sock",
            sk("__sk_common.skc_cookie.counter"),
            Byte,
            Optional
        ),
        spec!("protocol", "tcp_sock", sk("sk_protocol"), Bits, Required),
        spec!(
            "sport",
            "tcp_sock",
            "inet_conn.icsk_inet.inet_sport",
            Byte,
            Required
        ),
        spec!(
            "dport",
            "tcp_sock",
            sk("__sk_common.skc_dport"),
            Byte,
            Required
        ),
        spec!(
            "saddr4",
            "tcp_sock",
            sk("__sk_common.skc_rcv_saddr"),
            Byte,
            Required
        ),
        spec!(
            "daddr4",
            "tcp_sock",
            sk("__sk_common.skc_daddr"),
            Byte,
            Required
        ),
        spec!(
            "saddr6",
            "tcp_sock",
            sk("__sk_common.skc_v6_rcv_saddr"),
            Byte,
            Optional
        ),
        spec!(
            "daddr6",
            "tcp_sock",
            sk("__sk_common.skc_v6_daddr"),
            Byte,
            Optional
        ),
        spec!("net", "tcp_sock", sk("__sk_common.skc_net"), Byte, Optional),
        spec!("net_inum", "net", "ns.inum", Byte, Optional),
        spec!("sk_sndbuf", "tcp_sock", sk("sk_sndbuf"), Byte, Optional),
        spec!("sk_rcvbuf", "tcp_sock", sk("sk_rcvbuf"), Byte, Optional),
        spec!(
            "sk_wmem_queued",
            "tcp_sock",
            sk("sk_wmem_queued"),
            Byte,
            Optional
        ),
        spec!("sk_socket", "tcp_sock", sk("sk_socket"), Byte, Optional),
        spec!("socket_flags", "socket", "flags", Byte, Optional),
        spec!(
            "ca_ops",
            "tcp_sock",
            "inet_conn.icsk_ca_ops",
            Byte,
            Optional
        ),
        spec!("ca_name", "tcp_congestion_ops", "name", Byte, Optional),
        spec!(
            "ca_state",
            "tcp_sock",
            "inet_conn.icsk_ca_state",
            Bits,
            Optional
        ),
        spec!("snd_wnd", "tcp_sock", "snd_wnd", Byte, Required),
        spec!("max_window", "tcp_sock", "max_window", Byte, Optional),
        spec!("snd_cwnd", "tcp_sock", "snd_cwnd", Byte, Required),
        spec!("snd_ssthresh", "tcp_sock", "snd_ssthresh", Byte, Optional),
        spec!("srtt_us", "tcp_sock", "srtt_us", Byte, Required),
        spec!("min_rtt", "tcp_sock", "rtt_min.s.v", Byte, Optional),
        spec!("mss_cache", "tcp_sock", "mss_cache", Byte, Required),
        spec!("packets_out", "tcp_sock", "packets_out", Byte, Required),
        spec!("sacked_out", "tcp_sock", "sacked_out", Byte, Optional),
        spec!("lost_out", "tcp_sock", "lost_out", Byte, Optional),
        spec!("retrans_out", "tcp_sock", "retrans_out", Byte, Optional),
        spec!("total_retrans", "tcp_sock", "total_retrans", Byte, Optional),
        spec!("bytes_acked", "tcp_sock", "bytes_acked", Byte, Required),
        spec!(
            "bytes_received",
            "tcp_sock",
            "bytes_received",
            Byte,
            Required
        ),
        spec!("bytes_sent", "tcp_sock", "bytes_sent", Byte, Optional),
        spec!("delivered", "tcp_sock", "delivered", Byte, Optional),
        spec!(
            "rate_delivered",
            "tcp_sock",
            "rate_delivered",
            Byte,
            Optional
        ),
        spec!(
            "rate_interval_us",
            "tcp_sock",
            "rate_interval_us",
            Byte,
            Optional
        ),
        spec!(
            "rate_app_limited",
            "tcp_sock",
            "rate_app_limited",
            Bits,
            Optional
        ),
        spec!("chrono_start", "tcp_sock", "chrono_start", Byte, Optional),
        spec!("chrono_stat", "tcp_sock", "chrono_stat", Byte, Optional),
        spec!("chrono_type", "tcp_sock", "chrono_type", Bits, Optional),
        spec!("rcv_wnd", "tcp_sock", "rcv_wnd", Byte, Optional),
        spec!("snd_una", "tcp_sock", "snd_una", Byte, Optional),
        spec!("snd_nxt", "tcp_sock", "snd_nxt", Byte, Optional),
        spec!("write_seq", "tcp_sock", "write_seq", Byte, Optional),
        spec!("rcv_nxt", "tcp_sock", "rcv_nxt", Byte, Optional),
        spec!("copied_seq", "tcp_sock", "copied_seq", Byte, Optional),
        spec!("skb_cb", "sk_buff", "cb", Byte, Optional),
        spec!("skb_len", "sk_buff", "len", Byte, Optional),
        spec!("tcb_seq", "tcp_skb_cb", "seq", Byte, Optional),
        spec!("tcb_end_seq", "tcp_skb_cb", "end_seq", Byte, Optional),
        spec!("tcb_ack_seq", "tcp_skb_cb", "ack_seq", Byte, Optional),
        spec!("tcb_flags", "tcp_skb_cb", "tcp_flags", Byte, Optional),
        spec!("rcv_rtt", "tcp_sock", "rcv_rtt_est.rtt_us", Byte, Optional),
        spec!("rcv_wup", "tcp_sock", "rcv_wup", Byte, Optional),
        spec!("window_clamp", "tcp_sock", "window_clamp", Byte, Optional),
        spec!("rcv_ssthresh", "tcp_sock", "rcv_ssthresh", Byte, Optional),
        spec!("rcvq_space", "tcp_sock", "rcvq_space.space", Byte, Optional),
        spec!("rcv_ooopack", "tcp_sock", "rcv_ooopack", Byte, Optional),
        spec!("segs_in", "tcp_sock", "segs_in", Byte, Optional),
        spec!("data_segs_in", "tcp_sock", "data_segs_in", Byte, Optional),
        spec!(
            "rcv_mss",
            "tcp_sock",
            "inet_conn.icsk_ack.rcv_mss",
            Byte,
            Optional
        ),
        spec!("userlocks", "tcp_sock", sk("sk_userlocks"), Bits, Optional),
        spec!("wscale_ok", "tcp_sock", "rx_opt.wscale_ok", Bits, Optional),
        spec!(
            "rcv_wscale",
            "tcp_sock",
            "rx_opt.rcv_wscale",
            Bits,
            Optional
        ),
        spec!(
            "snd_wscale",
            "tcp_sock",
            "rx_opt.snd_wscale",
            Bits,
            Optional
        ),
        spec!("tstamp_ok", "tcp_sock", "rx_opt.tstamp_ok", Bits, Optional),
        spec!("sack_ok", "tcp_sock", "rx_opt.sack_ok", Bits, Optional),
        spec!("tcp_rmem", "net", "ipv4.sysctl_tcp_rmem", Byte, Optional),
        spec!("icsk_rto", "tcp_sock", "inet_conn.icsk_rto", Byte, Optional),
        spec!(
            "sk_pacing_rate",
            "tcp_sock",
            sk("sk_pacing_rate"),
            Byte,
            Optional
        ),
        spec!(
            "sk_max_pacing_rate",
            "tcp_sock",
            sk("sk_max_pacing_rate"),
            Byte,
            Optional
        ),
        spec!("lsndtime", "tcp_sock", "lsndtime", Byte, Optional),
        spec!(
            "lrcvtime",
            "tcp_sock",
            "inet_conn.icsk_ack.lrcvtime",
            Byte,
            Optional
        ),
        spec!("rcv_tstamp", "tcp_sock", "rcv_tstamp", Byte, Optional),
        spec!("reordering", "tcp_sock", "reordering", Byte, Optional),
        spec!("delivered_ce", "tcp_sock", "delivered_ce", Byte, Optional),
        spec!("dsack_dups", "tcp_sock", "dsack_dups", Byte, Optional),
        spec!("tcp_mstamp", "tcp_sock", "tcp_mstamp", Byte, Optional),
        spec!(
            "first_tx_mstamp",
            "tcp_sock",
            "first_tx_mstamp",
            Byte,
            Optional
        ),
        // The owner walk (observer-ebpf/src/owner.rs).
        spec!("socket_sk", "socket", "sk", Byte, Optional),
        spec!("task_tgid", "task_struct", "tgid", Byte, Optional),
        spec!("task_comm", "task_struct", "comm", Byte, Optional),
        spec!("task_cgroups", "task_struct", "cgroups", Byte, Optional),
        spec!("css_dfl_cgrp", "css_set", "dfl_cgrp", Byte, Optional),
        spec!("cgroup_kn", "cgroup", "kn", Byte, Optional),
        spec!("kernfs_id", "kernfs_node", "id", Byte, Optional),
    ]
}

/// The offsets for the running kernel, and the optional members it lacks.
#[derive(Debug)]
pub struct Resolved {
    /// Offsets to hand to the kernel programs.
    pub offsets: Offsets,
    /// `struct.path` of each optional member not found; the figures they
    /// feed read as zero.
    pub missing: Vec<String>,
}

/// Resolves every member the probes read.
///
/// # Errors
/// The first *required* member the kernel lacks, or a member expected to be
/// byte-addressable that is a bitfield on this kernel.
pub fn resolve(btf: &Btf) -> Result<Resolved, BtfError> {
    let mut offsets = Offsets::NONE;
    let mut missing = Vec::new();
    for s in specs() {
        let f = match btf.member(s.ty, &s.path) {
            Ok(f) => f,
            Err(e @ (BtfError::NoSuchMember { .. } | BtfError::NoSuchStruct(_))) => {
                if s.need == Need::Required {
                    return Err(e);
                }
                missing.push(format!("{}.{}", s.ty, s.path));
                continue;
            }
            Err(e) => return Err(e),
        };
        if f.bit_offset == OFFSET_NONE || f.bits == OFFSET_NONE {
            return Err(BtfError::Malformed(format!(
                "{}.{} has an offset no kernel struct has",
                s.ty, s.path
            )));
        }
        match s.kind {
            Kind::Byte if f.bitfield => {
                return Err(BtfError::Malformed(format!(
                    "{}.{} is a bitfield on this kernel; observer expects a whole member",
                    s.ty, s.path
                )));
            }
            Kind::Byte => set(&mut offsets, s.field, f.byte_offset()),
            Kind::Bits => {
                set(&mut offsets, &format!("{}_bit", s.field), f.bit_offset);
                set(&mut offsets, &format!("{}_width", s.field), f.bits);
            }
        }
    }
    Ok(Resolved { offsets, missing })
}

fn set(o: &mut Offsets, name: &str, value: u32) {
    // Every spec names a field of Offsets (checked by a unit test), so this
    // cannot fail; OFFSET_NONE would mark it unavailable if it did.
    if !o.set(name, value) {
        debug_assert!(false, "unknown offsets field {name}");
    }
    debug_assert!(value != OFFSET_NONE);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spec_names_an_offsets_field() {
        for s in specs() {
            match s.kind {
                Kind::Byte => assert!(Offsets::NONE.get(s.field).is_some(), "{}", s.field),
                Kind::Bits => {
                    assert!(Offsets::NONE.get(&format!("{}_bit", s.field)).is_some());
                    assert!(Offsets::NONE.get(&format!("{}_width", s.field)).is_some());
                }
            }
        }
        // ...and every Offsets field is fed by a spec.
        let fed: usize = specs()
            .iter()
            .map(|s| if s.kind == Kind::Bits { 2 } else { 1 })
            .sum();
        assert_eq!(fed, Offsets::NAMES.len());
    }

    #[test]
    fn running_kernel_resolves_every_member() {
        let path = "/sys/kernel/btf/vmlinux";
        if !std::path::Path::new(path).exists() {
            eprintln!("skipped: {path} missing");
            return;
        }
        let btf = Btf::from_file(path).unwrap();
        let r = resolve(&btf).unwrap();
        assert!(
            r.missing.is_empty(),
            "missing on this kernel: {:?}",
            r.missing
        );
        assert_eq!(r.offsets.family, 16);
        assert!(matches!(r.offsets.chrono_type_width, 2 | 8));
        assert_eq!(r.offsets.protocol_width, 16);
        assert!(r.offsets.snd_wnd > 1000 && r.offsets.snd_wnd < 4096);
        for name in Offsets::NAMES {
            assert_ne!(r.offsets.get(name), Some(OFFSET_NONE), "{name}");
        }
    }
}
