use super::*;
use crate::testkit::btf::BtfBuilder;

/// ids: 1 u32, 2 u8, 3 struct inner {u32 a; u32 b}, 4 u32[3] array,
/// 5 anonymous union {u32 c}, 6 struct outer, 7 typedef outer_t -> 6.
fn sample() -> Vec<u8> {
    let mut b = BtfBuilder::new();
    b.int("unsigned int", 4);
    b.int("unsigned char", 1);
    b.composite(4, "inner", 8, false, &[("a", 1, 0), ("b", 1, 32)]);
    b.words(&[0, 3 << 24, 0, 1, 1, 3]);
    b.composite(5, "", 4, false, &[("c", 1, 0)]);
    // kind_flag struct: flags:2 at bit 72, mode:3 at bit 74.
    b.composite(
        4,
        "outer",
        32,
        true,
        &[
            ("in", 3, 0),
            ("flags", 2, (2 << 24) | 72),
            ("mode", 2, (3 << 24) | 74),
            ("arr", 4, 96),
            ("", 5, 192),
        ],
    );
    let n = b.string("outer_t");
    b.words(&[n, 8 << 24, 6]);
    b.bytes()
}

#[test]
fn resolves_nested_and_anonymous_members() {
    let btf = Btf::parse(&sample()).unwrap();
    let b = btf.member("outer", "in.b").unwrap();
    assert_eq!((b.bit_offset, b.bits, b.bitfield), (32, 32, false));
    assert_eq!(b.byte_offset(), 4);
    let arr = btf.member("outer", "arr").unwrap();
    assert_eq!((arr.byte_offset(), arr.bits), (12, 96));
    let c = btf.member("outer", "c").unwrap();
    assert_eq!((c.byte_offset(), c.bits), (24, 32));
}

#[test]
fn resolves_bitfields() {
    let btf = Btf::parse(&sample()).unwrap();
    let flags = btf.member("outer", "flags").unwrap();
    assert_eq!(
        (flags.bit_offset, flags.bits, flags.bitfield),
        (72, 2, true)
    );
    let mode = btf.member("outer", "mode").unwrap();
    assert_eq!((mode.bit_offset, mode.bits, mode.bitfield), (74, 3, true));
}

#[test]
fn reports_what_is_missing() {
    let btf = Btf::parse(&sample()).unwrap();
    let err = btf.member("outer", "in.zz").unwrap_err();
    assert_eq!(
        err.to_string(),
        "kernel BTF: struct outer.in has no member zz"
    );
    let err = btf.member("nope", "a").unwrap_err();
    assert_eq!(err.to_string(), "kernel BTF has no struct nope");
}

#[test]
fn rejects_malformed_input_without_panicking() {
    let good = sample();
    assert!(Btf::parse(&[]).is_err());
    assert!(Btf::parse(&good[..good.len() - 30]).is_err());
    let mut bad_magic = good.clone();
    bad_magic[0] = 0;
    assert!(matches!(
        Btf::parse(&bad_magic),
        Err(BtfError::Malformed(_))
    ));
    // Every truncation and every single-byte corruption must return, not panic.
    for cut in 0..good.len() {
        let _ = Btf::parse(&good[..cut]);
    }
    for i in 0..good.len() {
        let mut g = good.clone();
        g[i] ^= 0xff;
        if let Ok(btf) = Btf::parse(&g) {
            let _ = btf.member("outer", "in.b");
            let _ = btf.member("outer", "c");
        }
    }
}

#[test]
fn typedef_cycles_are_errors() {
    let mut b = BtfBuilder::new();
    let n = b.string("loop");
    b.words(&[n, 8 << 24, 2]);
    b.words(&[n, 8 << 24, 1]);
    b.composite(4, "s", 4, false, &[("x", 1, 0)]);
    let btf = Btf::parse(&b.bytes()).unwrap();
    assert!(btf.member("s", "x").is_err());
}

/// Against the running kernel: members the probes need exist, and the
/// layout facts that every Linux kernel shares hold.
#[test]
fn running_kernel_layout() {
    let path = "/sys/kernel/btf/vmlinux";
    if !std::path::Path::new(path).exists() {
        eprintln!("skipped: {path} missing (kernel without CONFIG_DEBUG_INFO_BTF)");
        return;
    }
    let btf = Btf::from_file(path).unwrap();
    // struct sock starts with sock_common, whose skc_family follows the
    // 8-byte address pair, the 4-byte hash and the 4-byte port pair.
    let fam = btf.member("sock", "__sk_common.skc_family").unwrap();
    assert_eq!((fam.byte_offset(), fam.bits), (16, 16));
    // skc_daddr lives inside an anonymous union/struct.
    let daddr = btf.member("sock_common", "skc_daddr").unwrap();
    assert_eq!((daddr.byte_offset(), daddr.bits), (0, 32));
    assert_eq!(btf.member("tcp_sock", "inet_conn").unwrap().bit_offset, 0);
    // A 2-bit bitfield until 6.x, a whole u8 since: both must resolve.
    let chrono = btf.member("tcp_sock", "chrono_type").unwrap();
    assert!(chrono.bits == 2 || chrono.bits == 8, "{chrono:?}");
    assert_eq!(chrono.bitfield, chrono.bits == 2);
    let stat = btf.member("tcp_sock", "chrono_stat").unwrap();
    assert_eq!(stat.bits, 96);
    let minrtt = btf.member("tcp_sock", "rtt_min.s.v").unwrap();
    let base = btf.member("tcp_sock", "rtt_min").unwrap();
    assert_eq!(minrtt.bit_offset - base.bit_offset, 32);
    let acked = btf.member("tcp_sock", "bytes_acked").unwrap();
    assert_eq!(acked.bits, 64);
    assert_eq!(acked.bit_offset % 64, 0);
}

/// Found by fuzz/btf: a member past its struct's end resolved to an offset
/// (even OFFSET_NONE) instead of an error.
#[test]
fn members_outside_their_struct_are_malformed() {
    let mut b = BtfBuilder::new();
    b.int("unsigned int", 4);
    b.composite(
        4,
        "s",
        8,
        false,
        &[("x", 1, 32), ("far", 1, 64), ("wrap", 1, u32::MAX - 7)],
    );
    let btf = Btf::parse(&b.bytes()).unwrap();
    assert_eq!(btf.member("s", "x").unwrap().byte_offset(), 4);
    for m in ["far", "wrap"] {
        assert!(
            matches!(btf.member("s", m), Err(BtfError::Malformed(_))),
            "{m}"
        );
    }
}

#[test]
fn finds_kernel_functions_by_name() {
    let mut b = BtfBuilder::new();
    b.int("unsigned int", 4);
    // FUNC_PROTO (kind 13) returning u32, no parameters; FUNC (kind 12)
    // of that proto.
    b.words(&[0, 13 << 24, 1]);
    let n = b.string("bpf_get_socket_ptr_cookie");
    b.words(&[n, 12 << 24, 2]);
    let btf = Btf::parse(&b.bytes()).unwrap();
    assert!(btf.has_func("bpf_get_socket_ptr_cookie"));
    assert!(!btf.has_func("bpf_sock_from_file"));
    // A struct of the name is not a function.
    assert!(!btf.has_func("unsigned int"));
    assert!(!Btf::parse(&sample()).unwrap().has_func("outer"));
}
