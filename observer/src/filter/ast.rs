//! The parsed filter: an expression tree of terms. Its text is in
//! `print.rs`, its evaluation in `eval.rs`.

use std::{
    fmt,
    net::{IpAddr, Ipv6Addr},
};

use crate::attribution::{Side, Verdict};

/// A filter expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Expr {
    /// One test of a flow.
    Term(Term),
    /// Selected when the inner expression is not.
    Not(Box<Expr>),
    /// Every one (two or more).
    And(Vec<Expr>),
    /// Any one (two or more).
    Or(Vec<Expr>),
}

/// One test of a flow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Term {
    /// `sport`, `dport`, `port`, `pid`, `cgroup`, `netns` against a
    /// number.
    Num { field: Field, op: Cmp, value: u64 },
    /// `src` or `dst` within a prefix, on a port.
    Host { end: End, host: Host },
    /// `state`: a state or a group of them.
    State(StateSel),
    /// `comm`: a pattern with `*` and `?`.
    Comm(String),
    /// `netns = NAME`: the namespace's `ip netns` name, exactly (as
    /// [`crate::track::netns`] resolved it for the flow).
    NetnsName(String),
    /// `verdict`: the attribution's verdict.
    Verdict(Verdict),
    /// `side`: the end the attribution was made from.
    Side(Side),
    /// `rate`: the attribution's rate (bits/s), the larger of sent and
    /// received, as the `flows` and `top` tables' RATE column.
    Rate { op: Cmp, bps: u64 },
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cmp {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
}

impl Cmp {
    /// `ss`'s word for a comparison (`eq`, `neq`/`ne`, `lt`, ...), any case.
    pub fn from_word(word: &str) -> Option<Cmp> {
        Some(match word.to_ascii_lowercase().as_str() {
            "eq" => Cmp::Eq,
            "neq" | "ne" => Cmp::Ne,
            "lt" => Cmp::Lt,
            "gt" => Cmp::Gt,
            "le" => Cmp::Le,
            "ge" => Cmp::Ge,
            _ => return None,
        })
    }

    /// Whether `a OP b`.
    pub fn holds(self, a: u64, b: u64) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
            Cmp::Lt => a < b,
            Cmp::Gt => a > b,
            Cmp::Le => a <= b,
            Cmp::Ge => a >= b,
        }
    }

    /// The canonical symbol.
    pub fn symbol(self) -> &'static str {
        match self {
            Cmp::Eq => "=",
            Cmp::Ne => "!=",
            Cmp::Lt => "<",
            Cmp::Gt => ">",
            Cmp::Le => "<=",
            Cmp::Ge => ">=",
        }
    }
}

/// A numeric field of a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Field {
    Sport,
    Dport,
    /// Either end's port, as tcpdump's `port`; `!=` is neither end's.
    Port,
    Pid,
    Cgroup,
    Netns,
}

impl Field {
    /// Every field with its keyword.
    pub const ALL: [(&'static str, Field); 6] = [
        ("sport", Field::Sport),
        ("dport", Field::Dport),
        ("port", Field::Port),
        ("pid", Field::Pid),
        ("cgroup", Field::Cgroup),
        ("netns", Field::Netns),
    ];

    /// The keyword.
    pub fn name(self) -> &'static str {
        match self {
            Field::Sport => "sport",
            Field::Dport => "dport",
            Field::Port => "port",
            Field::Pid => "pid",
            Field::Cgroup => "cgroup",
            Field::Netns => "netns",
        }
    }

    /// The largest value the field holds.
    pub fn max(self) -> u64 {
        match self {
            Field::Sport | Field::Dport | Field::Port => u64::from(u16::MAX),
            Field::Pid | Field::Netns => u64::from(u32::MAX),
            Field::Cgroup => u64::MAX,
        }
    }

    /// Whether the value is a port (written `:443` or `443`).
    pub fn is_port(self) -> bool {
        matches!(self, Field::Sport | Field::Dport | Field::Port)
    }
}

/// Which end of the flow a `src`/`dst` term looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum End {
    /// `src`: the local end.
    Local,
    /// `dst`: the remote end.
    Remote,
}

/// An address prefix in one shape: IPv6, IPv4 as IPv4-mapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Prefix {
    /// The address with the bits past `len` cleared.
    bits: u128,
    /// Prefix length in the IPv6 shape, 0 to 128 (an IPv4 /8 is 104).
    len: u8,
    /// Written as IPv6 (`::ffff:10.0.0.1` too): it selects only IPv6
    /// sockets, as `ss` does; an IPv4 prefix selects IPv4 sockets and
    /// IPv6 sockets with IPv4-mapped addresses.
    inet6: bool,
}

impl Prefix {
    /// `ip/len`, `len` counted in `ip`'s own family (at most 32 for
    /// IPv4, 128 for IPv6; larger is clamped). Host bits are masked off.
    pub fn new(ip: IpAddr, len: u8) -> Prefix {
        let len = match ip {
            IpAddr::V4(_) => 96 + len.min(32),
            IpAddr::V6(_) => len.min(128),
        };
        Prefix {
            bits: shape(ip) & mask(len),
            len,
            inet6: ip.is_ipv6(),
        }
    }

    /// Whether `ip` (either family) of a socket of family `inet6` (true:
    /// `AF_INET6`) is within the prefix.
    pub fn contains(&self, ip: IpAddr, inet6: bool) -> bool {
        (inet6 || !self.inet6) && shape(ip) & mask(self.len) == self.bits
    }
}

/// `ip` as a u128 in the one shape (IPv4 as `::ffff:a.b.c.d`).
fn shape(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

/// The top `len` bits set.
fn mask(len: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0)
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v6 = Ipv6Addr::from(self.bits);
        match v6.to_ipv4_mapped() {
            Some(v4) if self.len >= 96 && !self.inet6 => write!(f, "{v4}/{}", self.len - 96),
            _ => write!(f, "[{v6}]/{}", self.len),
        }
    }
}

/// A `src`/`dst` host: a prefix (`None`: `*`) and maybe a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Host {
    /// Addresses matched; `None` is any.
    pub prefix: Option<Prefix>,
    /// The port, when given.
    pub port: Option<u16>,
}

/// A `state` name: one state, or one of `ss`'s groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StateSel {
    /// One state, by the name [`Flow::state`](crate::model::flow::Flow)
    /// gives it (`close` for closed flows).
    One(&'static str),
    All,
    Connected,
    Synchronized,
    Bucket,
    Big,
}

impl StateSel {
    /// Every name `state` takes, canonical names first (`listen` and
    /// `close` are `ss`'s aliases).
    pub const NAMES: [(&'static str, StateSel); 18] = [
        ("established", StateSel::One("established")),
        ("syn-sent", StateSel::One("syn-sent")),
        ("syn-recv", StateSel::One("syn-recv")),
        ("fin-wait-1", StateSel::One("fin-wait-1")),
        ("fin-wait-2", StateSel::One("fin-wait-2")),
        ("time-wait", StateSel::One("time-wait")),
        ("close-wait", StateSel::One("close-wait")),
        ("last-ack", StateSel::One("last-ack")),
        ("listening", StateSel::One("listen")),
        ("closing", StateSel::One("closing")),
        ("closed", StateSel::One("close")),
        ("all", StateSel::All),
        ("connected", StateSel::Connected),
        ("synchronized", StateSel::Synchronized),
        ("bucket", StateSel::Bucket),
        ("big", StateSel::Big),
        ("listen", StateSel::One("listen")),
        ("close", StateSel::One("close")),
    ];

    /// The canonical name.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, s)| *s == self)
            .map_or("all", |(n, _)| n)
    }
}
