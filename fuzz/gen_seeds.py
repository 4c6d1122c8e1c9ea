#!/usr/bin/env python3
"""Writes the seed corpus in seeds/: small valid BTF blobs (encoded as the
kernel encodes BTF, Documentation/bpf/btf.rst), flow-sample records, and a
few interesting strings. The output is committed; rerun after changing it:
    python3 fuzz/gen_seeds.py
"""
import os
import struct

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds")

INT, PTR, ARRAY, STRUCT, UNION, ENUM, FWD, TYPEDEF, VOLATILE, CONST = range(1, 11)
FUNC, FUNC_PROTO, VAR, DATASEC, FLOAT, DECL_TAG, TYPE_TAG, ENUM64 = range(12, 20)


class Btf:
    def __init__(self):
        self.types = b""
        self.strings = b"\0"
        self.next_id = 1

    def s(self, name):
        if not name:
            return 0
        off = len(self.strings)
        self.strings += name.encode() + b"\0"
        return off

    def rec(self, name, kind, vlen, size_or_type, extra=b"", kflag=0):
        info = (kflag << 31) | (kind << 24) | vlen
        self.types += struct.pack("<III", self.s(name), info, size_or_type) + extra
        self.next_id += 1
        return self.next_id - 1

    def int(self, name, size, bits=None, offset=0):
        bits = size * 8 if bits is None else bits
        return self.rec(name, INT, 0, size, struct.pack("<I", (offset << 16) | bits))

    def ptr(self, target):
        return self.rec("", PTR, 0, target)

    def array(self, elem, n, index):
        return self.rec("", ARRAY, 0, 0, struct.pack("<III", elem, index, n))

    def comp(self, name, size, members, union=False, kflag=0):
        extra = b"".join(struct.pack("<III", self.s(m), t, off) for m, t, off in members)
        return self.rec(name, UNION if union else STRUCT, len(members), size, extra, kflag)

    def typedef(self, name, target):
        return self.rec(name, TYPEDEF, 0, target)

    def bytes(self):
        hdr = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(self.types),
                          len(self.types), len(self.strings))
        return hdr + self.types + self.strings


def tcp_sock_like():
    """The nesting observer's layout walks: tcp_sock > inet_connection_sock >
    inet_sock > sock > sock_common, anonymous unions, a bitfield struct, an
    array member, typedefs and modifiers."""
    b = Btf()
    u8 = b.int("unsigned char", 1)
    u16 = b.int("short unsigned int", 2)
    u32 = b.int("unsigned int", 4)
    u64 = b.int("long long unsigned int", 8)
    u32_t = b.typedef("u32", u32)
    cu32 = b.rec("", CONST, 0, u32_t)
    daddr_pair = b.comp("", 8, [("skc_daddr", u32, 0), ("skc_rcv_saddr", cu32, 32)])
    addr_union = b.comp("", 8, [("skc_addrpair", u64, 0), ("", daddr_pair, 0)], union=True)
    net = b.comp("net", 16, [("ns", 0, 0)])
    netp = b.ptr(net)
    common = b.comp("sock_common", 64, [("", addr_union, 0), ("skc_family", u16, 128),
                                         ("skc_state", u8, 144), ("skc_dport", u16, 160),
                                         ("skc_net", netp, 192)])
    sock = b.comp("sock", 128, [("__sk_common", common, 0),
                                ("sk_protocol", u16, (16 << 24) | 528),
                                ("sk_sndbuf", u32, 576), ("sk_rcvbuf", u32, 608)], kflag=1)
    inet = b.comp("inet_sock", 136, [("sk", sock, 0), ("inet_sport", u16, 1024)])
    ops = b.comp("tcp_congestion_ops", 32, [("name", b.array(u8, 16, u32), 0)])
    icsk = b.comp("inet_connection_sock", 160, [("icsk_inet", inet, 0),
                                                ("icsk_ca_ops", b.ptr(ops), 1088),
                                                ("icsk_ca_state", u8, (5 << 24) | 1152)], kflag=1)
    sample = b.comp("minmax_sample", 8, [("t", u32, 0), ("v", u32, 32)])
    minmax = b.comp("minmax", 24, [("s", b.array(sample, 3, u32), 0)])
    vol = b.rec("", VOLATILE, 0, u32)
    b.comp("tcp_sock", 256, [("inet_conn", icsk, 0), ("snd_wnd", vol, 1280),
                             ("snd_cwnd", u32, 1312), ("srtt_us", u32, 1344),
                             ("mss_cache", u32, 1376), ("packets_out", u32, 1408),
                             ("bytes_acked", u64, 1472), ("bytes_received", u64, 1536),
                             ("rtt_min", minmax, 1600)])
    return b.bytes()


def small():
    """Like observer/src/btf_tests.rs's sample: nested, array, anonymous
    union, kind_flag bitfields, a typedef."""
    b = Btf()
    u32 = b.int("unsigned int", 4)
    u8 = b.int("unsigned char", 1)
    inner = b.comp("inner", 8, [("a", u32, 0), ("b", u32, 32)])
    arr = b.array(u32, 3, u32)
    anon = b.comp("", 4, [("c", u32, 0)], union=True)
    outer = b.comp("outer", 32, [("in", inner, 0), ("flags", u8, (2 << 24) | 72),
                                 ("mode", u8, (3 << 24) | 74), ("arr", arr, 96),
                                 ("", anon, 192)], kflag=1)
    b.typedef("outer_t", outer)
    return b.bytes()


def every_kind():
    """One record of each kind observer skips over, then a struct."""
    b = Btf()
    u32 = b.int("int", 4)
    b.rec("E", ENUM, 2, 4, struct.pack("<Ii", b.s("A"), 0) + struct.pack("<Ii", b.s("B"), 1))
    b.rec("F", FWD, 0, 0)
    proto = b.rec("", FUNC_PROTO, 1, u32, struct.pack("<II", b.s("x"), u32))
    b.rec("f", FUNC, 0, proto)
    var = b.rec("v", VAR, 0, u32, struct.pack("<I", 1))
    b.rec(".data", DATASEC, 1, 4, struct.pack("<III", var, 0, 4))
    b.rec("double", FLOAT, 0, 8)
    b.rec("tag", DECL_TAG, 0, u32, struct.pack("<i", -1))
    tagged = b.rec("user", TYPE_TAG, 0, u32)
    b.rec("E64", ENUM64, 1, 8, struct.pack("<III", b.s("Z"), 1, 0))
    b.comp("s", 8, [("x", tagged, 0), ("bits", u32, 40)])
    b.int("bitfield", 4, bits=3, offset=2)
    return b.bytes()


def typedef_loop():
    b = Btf()
    b.typedef("loop", 2)
    b.typedef("loop", 1)
    b.comp("s", 4, [("x", 1, 0)])
    return b.bytes()


def sample_record(cookie, closed=False):
    """A FlowSample (observer-common/src/sample.rs, 520 bytes, little-endian;
    offsets as its layout test pins them)."""
    r = bytearray(520)
    struct.pack_into("<Q", r, 0, cookie)
    struct.pack_into("<Q", r, 8, 100_000_000_000)   # first_seen_ns
    struct.pack_into("<Q", r, 16, 103_000_000_000)  # last_seen_ns
    if closed:
        struct.pack_into("<Q", r, 24, 103_000_000_000)  # closed_ns
    struct.pack_into("<Q", r, 88, 42)               # samples
    r[208:224] = bytes(10) + b"\xff\xff" + bytes([10, 0, 0, 1])   # saddr
    r[224:240] = bytes(10) + b"\xff\xff" + bytes([10, 0, 0, 2])   # daddr
    r[256:262] = b"cubic\0"                         # cc
    struct.pack_into("<I", r, 280, 80_480)          # snd_wnd
    struct.pack_into("<HH", r, 424, 40000, 5201)    # sport, dport
    struct.pack_into("<I", r, 480, 131_072)         # max_window
    r[430] = 7 if closed else 1                     # state
    return bytes(r)


def write(target, name, data):
    path = os.path.join(HERE, target, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def main():
    write("btf", "tcp_sock_like.btf", tcp_sock_like())
    write("btf", "small.btf", small())
    write("btf", "every_kind.btf", every_kind())
    write("btf", "typedef_loop.btf", typedef_loop())
    for i, s in enumerate(["5s", "250ms", "1m", "365d", "0s", "-5s", "35M", "1.5G", "800k",
                           "1e400", "nanM", "\u30001k", "24", "16,48", "33,129", "4096",
                           "12288", "rate", "min_rtt", "cwnd_limited"]):
        write("cli_values", f"{i:02}", s)
    # One poll of two open flows, then one with a closed record.
    write("kernel_samples", "open_then_closed",
          bytes([0x02]) + sample_record(1) + sample_record(2)
          + bytes([0x09]) + sample_record(1, closed=True))
    write("top_view", "filter_iperf", bytes([100, 30]) + b"iperf3 :5201" + b"\xff" + b"jj\x00/cu\x00")
    write("top_view", "tiny", bytes([10, 3]) + b"\xff" + b"s?r\x04\x04\x00q")
    write("top_view", "wide_chars", bytes([80, 24]) + "過濾 é".encode() + b"\xff/\x85\x86\x02\x00")
    write("iperf_json", "two_streams",
          '{"start":{"connected":[{"socket":5,"local_port":40000},{"socket":7,"local_port":40002}]},'
          '"end":{"streams":[{"sender":{"socket":5,"bits_per_second":5.0e6}},'
          '{"sender":{"socket":7,"bits_per_second":6.0e6}}],"sum_sent":{"bits_per_second":11.0e6}}}')
    write("iperf_json", "error", '{"error":"unable to connect"}')


if __name__ == "__main__":
    main()
