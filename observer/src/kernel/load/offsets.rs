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

/// One member the probes read: (offsets field, struct, path, kind, required).
struct Spec {
    field: &'static str,
    ty: &'static str,
    path: String,
    kind: Kind,
    required: bool,
}

const SK: &str = "inet_conn.icsk_inet.sk";

macro_rules! spec {
    ($field:literal, $ty:literal, $path:expr, $kind:ident, $req:literal) => {
        Spec {
            field: $field,
            ty: $ty,
            path: $path.to_string(),
            kind: Kind::$kind,
            required: $req,
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
            true
        ),
        spec!("state", "tcp_sock", sk("__sk_common.skc_state"), Byte, true),
        spec!(
            "sk_cookie",
            "tcp_sock",
            sk("__sk_common.skc_cookie.counter"),
            Byte,
            false
        ),
        spec!("protocol", "tcp_sock", sk("sk_protocol"), Bits, true),
        spec!(
            "sport",
            "tcp_sock",
            "inet_conn.icsk_inet.inet_sport",
            Byte,
            true
        ),
        spec!("dport", "tcp_sock", sk("__sk_common.skc_dport"), Byte, true),
        spec!(
            "saddr4",
            "tcp_sock",
            sk("__sk_common.skc_rcv_saddr"),
            Byte,
            true
        ),
        spec!(
            "daddr4",
            "tcp_sock",
            sk("__sk_common.skc_daddr"),
            Byte,
            true
        ),
        spec!(
            "saddr6",
            "tcp_sock",
            sk("__sk_common.skc_v6_rcv_saddr"),
            Byte,
            false
        ),
        spec!(
            "daddr6",
            "tcp_sock",
            sk("__sk_common.skc_v6_daddr"),
            Byte,
            false
        ),
        spec!("net", "tcp_sock", sk("__sk_common.skc_net"), Byte, false),
        spec!("net_inum", "net", "ns.inum", Byte, false),
        spec!("sk_sndbuf", "tcp_sock", sk("sk_sndbuf"), Byte, false),
        spec!("sk_rcvbuf", "tcp_sock", sk("sk_rcvbuf"), Byte, false),
        spec!(
            "sk_wmem_queued",
            "tcp_sock",
            sk("sk_wmem_queued"),
            Byte,
            false
        ),
        spec!("sk_socket", "tcp_sock", sk("sk_socket"), Byte, false),
        spec!("socket_flags", "socket", "flags", Byte, false),
        spec!("ca_ops", "tcp_sock", "inet_conn.icsk_ca_ops", Byte, false),
        spec!("ca_name", "tcp_congestion_ops", "name", Byte, false),
        spec!(
            "ca_state",
            "tcp_sock",
            "inet_conn.icsk_ca_state",
            Bits,
            false
        ),
        spec!("snd_wnd", "tcp_sock", "snd_wnd", Byte, true),
        spec!("max_window", "tcp_sock", "max_window", Byte, false),
        spec!("snd_cwnd", "tcp_sock", "snd_cwnd", Byte, true),
        spec!("snd_ssthresh", "tcp_sock", "snd_ssthresh", Byte, false),
        spec!("srtt_us", "tcp_sock", "srtt_us", Byte, true),
        spec!("min_rtt", "tcp_sock", "rtt_min.s.v", Byte, false),
        spec!("mss_cache", "tcp_sock", "mss_cache", Byte, true),
        spec!("packets_out", "tcp_sock", "packets_out", Byte, true),
        spec!("sacked_out", "tcp_sock", "sacked_out", Byte, false),
        spec!("lost_out", "tcp_sock", "lost_out", Byte, false),
        spec!("retrans_out", "tcp_sock", "retrans_out", Byte, false),
        spec!("total_retrans", "tcp_sock", "total_retrans", Byte, false),
        spec!("bytes_acked", "tcp_sock", "bytes_acked", Byte, true),
        spec!("bytes_received", "tcp_sock", "bytes_received", Byte, true),
        spec!("bytes_sent", "tcp_sock", "bytes_sent", Byte, false),
        spec!("delivered", "tcp_sock", "delivered", Byte, false),
        spec!("rate_delivered", "tcp_sock", "rate_delivered", Byte, false),
        spec!(
            "rate_interval_us",
            "tcp_sock",
            "rate_interval_us",
            Byte,
            false
        ),
        spec!(
            "rate_app_limited",
            "tcp_sock",
            "rate_app_limited",
            Bits,
            false
        ),
        spec!("chrono_start", "tcp_sock", "chrono_start", Byte, false),
        spec!("chrono_stat", "tcp_sock", "chrono_stat", Byte, false),
        spec!("chrono_type", "tcp_sock", "chrono_type", Bits, false),
        spec!("rcv_wnd", "tcp_sock", "rcv_wnd", Byte, false),
        spec!("snd_una", "tcp_sock", "snd_una", Byte, false),
        spec!("snd_nxt", "tcp_sock", "snd_nxt", Byte, false),
        spec!("write_seq", "tcp_sock", "write_seq", Byte, false),
        spec!("rcv_nxt", "tcp_sock", "rcv_nxt", Byte, false),
        spec!("copied_seq", "tcp_sock", "copied_seq", Byte, false),
        spec!("skb_cb", "sk_buff", "cb", Byte, false),
        spec!("skb_len", "sk_buff", "len", Byte, false),
        spec!("tcb_seq", "tcp_skb_cb", "seq", Byte, false),
        spec!("tcb_end_seq", "tcp_skb_cb", "end_seq", Byte, false),
        spec!("tcb_ack_seq", "tcp_skb_cb", "ack_seq", Byte, false),
        spec!("tcb_flags", "tcp_skb_cb", "tcp_flags", Byte, false),
        spec!("rcv_rtt", "tcp_sock", "rcv_rtt_est.rtt_us", Byte, false),
        spec!("rcv_wup", "tcp_sock", "rcv_wup", Byte, false),
        spec!("window_clamp", "tcp_sock", "window_clamp", Byte, false),
        spec!("rcv_ssthresh", "tcp_sock", "rcv_ssthresh", Byte, false),
        spec!("rcvq_space", "tcp_sock", "rcvq_space.space", Byte, false),
        spec!("rcv_ooopack", "tcp_sock", "rcv_ooopack", Byte, false),
        spec!("segs_in", "tcp_sock", "segs_in", Byte, false),
        spec!("data_segs_in", "tcp_sock", "data_segs_in", Byte, false),
        spec!(
            "rcv_mss",
            "tcp_sock",
            "inet_conn.icsk_ack.rcv_mss",
            Byte,
            false
        ),
        spec!("userlocks", "tcp_sock", sk("sk_userlocks"), Bits, false),
        spec!("wscale_ok", "tcp_sock", "rx_opt.wscale_ok", Bits, false),
        spec!("rcv_wscale", "tcp_sock", "rx_opt.rcv_wscale", Bits, false),
        spec!("snd_wscale", "tcp_sock", "rx_opt.snd_wscale", Bits, false),
        spec!("tstamp_ok", "tcp_sock", "rx_opt.tstamp_ok", Bits, false),
        spec!("sack_ok", "tcp_sock", "rx_opt.sack_ok", Bits, false),
        spec!("tcp_rmem", "net", "ipv4.sysctl_tcp_rmem", Byte, false),
        spec!("icsk_rto", "tcp_sock", "inet_conn.icsk_rto", Byte, false),
        spec!(
            "sk_pacing_rate",
            "tcp_sock",
            sk("sk_pacing_rate"),
            Byte,
            false
        ),
        spec!("lsndtime", "tcp_sock", "lsndtime", Byte, false),
        spec!(
            "lrcvtime",
            "tcp_sock",
            "inet_conn.icsk_ack.lrcvtime",
            Byte,
            false
        ),
        spec!("rcv_tstamp", "tcp_sock", "rcv_tstamp", Byte, false),
        spec!("reordering", "tcp_sock", "reordering", Byte, false),
        spec!("delivered_ce", "tcp_sock", "delivered_ce", Byte, false),
        spec!("dsack_dups", "tcp_sock", "dsack_dups", Byte, false),
        // The owner walk (observer-ebpf/src/owner.rs).
        spec!("socket_sk", "socket", "sk", Byte, false),
        spec!("task_tgid", "task_struct", "tgid", Byte, false),
        spec!("task_comm", "task_struct", "comm", Byte, false),
        spec!("task_cgroups", "task_struct", "cgroups", Byte, false),
        spec!("css_dfl_cgrp", "css_set", "dfl_cgrp", Byte, false),
        spec!("cgroup_kn", "cgroup", "kn", Byte, false),
        spec!("kernfs_id", "kernfs_node", "id", Byte, false),
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
                if s.required {
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
