//! The token-bucket policer at the ingress of one direction, and policing
//! per flow: one bucket for the link, or one for each flow (5-tuple), as a
//! per-subscriber or per-flow rate limit keeps them.

use std::{collections::HashMap, net::IpAddr};

use etherparse::{NetSlice, SlicedPacket, TransportSlice};

use crate::config::Link;

const NS_PER_S: u128 = 1_000_000_000;

/// Policer token units per byte: tokens are counted in `1 / (8 * 10^9)` bytes,
/// so a rate of `police_bps` bits/s adds exactly `police_bps` units per ns and
/// refilling needs no division (no rounding, no drift over long runs).
const UNITS_PER_BYTE: u128 = 8 * NS_PER_S;

/// A token-bucket policer at the ingress of one direction: packets conform
/// while tokens last and are dropped (never queued) when too few are left.
///
/// The bucket holds up to `police_burst_bytes` bytes of tokens, starts full
/// and refills continuously at `police_bps / 8` bytes per second. A packet of
/// `size` bytes conforms when at least `size` tokens are left and then takes
/// them; a non-conforming packet takes none. Exact integer arithmetic: over
/// any interval of `t` ns the bytes that conform are at most
/// `burst + police_bps * t / (8 * 10^9)`.
#[derive(Debug, Clone)]
pub struct Policer {
    /// Refill rate (bits/s); 0 means no policer (everything conforms).
    rate_bps: u64,
    /// Bucket depth in token units ([`UNITS_PER_BYTE`] per byte).
    depth: u128,
    /// Tokens in the bucket at `last_ns`, in token units.
    tokens: u128,
    /// When `tokens` was last brought up to date (ns).
    last_ns: u64,
}

impl Policer {
    /// The policer of `link` (`police_bps`, `police_burst_bytes`), with a full
    /// bucket; disabled when `police_bps` is 0.
    pub fn new(link: &Link) -> Self {
        let depth = u128::from(link.police_burst_bytes) * UNITS_PER_BYTE;
        Policer {
            rate_bps: link.police_bps,
            depth,
            tokens: depth,
            last_ns: 0,
        }
    }

    /// Whether the policer is active (a non-zero rate).
    pub fn is_enabled(&self) -> bool {
        self.rate_bps != 0
    }

    /// The tokens the bucket would hold at `now_ns`, in token units.
    fn tokens_at(&self, now_ns: u64) -> u128 {
        let elapsed = u128::from(now_ns.saturating_sub(self.last_ns));
        self.tokens
            .saturating_add(elapsed * u128::from(self.rate_bps))
            .min(self.depth)
    }

    /// Whole bytes of tokens in the bucket at `now_ns` (rounded down); 0 when disabled.
    pub fn tokens_bytes(&self, now_ns: u64) -> u64 {
        if !self.is_enabled() {
            return 0;
        }
        u64::try_from(self.tokens_at(now_ns) / UNITS_PER_BYTE).unwrap_or(u64::MAX)
    }

    /// Offers a packet of `size_bytes` arriving at `now_ns`: `true` when it
    /// conforms (its tokens are taken), `false` when it is to be dropped.
    /// Always `true` when disabled. Arrival times must not go backwards (an
    /// earlier time than the last one refills nothing).
    pub fn conforms(&mut self, now_ns: u64, size_bytes: u64) -> bool {
        if !self.is_enabled() {
            return true;
        }
        self.tokens = self.tokens_at(now_ns);
        self.last_ns = self.last_ns.max(now_ns);
        let need = u128::from(size_bytes) * UNITS_PER_BYTE;
        if self.tokens < need {
            return false;
        }
        self.tokens -= need;
        true
    }
}

/// A flow as a per-flow policer tells flows apart: protocol, addresses and
/// ports (0 for a protocol without ports).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowKey {
    /// IP protocol number (6: TCP, 17: UDP).
    pub protocol: u8,
    /// Source and destination address.
    pub addrs: (IpAddr, IpAddr),
    /// Source and destination port.
    pub ports: (u16, u16),
}

impl FlowKey {
    /// The flow of IP packet `packet` (IPv4 or IPv6, from its first byte);
    /// `None` for what is not an IP packet.
    pub fn of(packet: &[u8]) -> Option<FlowKey> {
        let sliced = SlicedPacket::from_ip(packet).ok()?;
        let (addrs, protocol) = match sliced.net? {
            NetSlice::Ipv4(v4) => {
                let h = v4.header();
                (
                    (h.source_addr().into(), h.destination_addr().into()),
                    h.protocol().0,
                )
            }
            NetSlice::Ipv6(v6) => {
                let h = v6.header();
                (
                    (h.source_addr().into(), h.destination_addr().into()),
                    v6.payload().ip_number.0,
                )
            }
            NetSlice::Arp(_) => return None,
        };
        let ports = match sliced.transport {
            Some(TransportSlice::Tcp(t)) => (t.source_port(), t.destination_port()),
            Some(TransportSlice::Udp(u)) => (u.source_port(), u.destination_port()),
            _ => (0, 0),
        };
        Some(FlowKey {
            protocol,
            addrs,
            ports,
        })
    }
}

/// How one direction polices: with one bucket for everything, or with a
/// bucket of the same rate and depth for each flow ([`Link::police_per_flow`]).
#[derive(Debug, Clone)]
pub enum Policing {
    /// One bucket (disabled when the link has no policer).
    One(Policer),
    /// A bucket per flow, each started full from `template` when the flow's
    /// first packet arrives. Flows are never forgotten: a path lives for
    /// one test.
    PerFlow {
        /// The bucket a new flow starts with.
        template: Policer,
        /// Each flow's bucket (`None`: packets that are not IP, together).
        flows: HashMap<Option<FlowKey>, Policer>,
    },
}

impl Policing {
    /// The policing of `link`.
    pub fn new(link: &Link) -> Self {
        let p = Policer::new(link);
        if link.police_per_flow && p.is_enabled() {
            Policing::PerFlow {
                template: p,
                flows: HashMap::new(),
            }
        } else {
            Policing::One(p)
        }
    }

    /// Whether a packet needs its flow to be policed (per-flow policing).
    pub fn per_flow(&self) -> bool {
        matches!(self, Policing::PerFlow { .. })
    }

    /// Offers a packet of `size_bytes` of flow `flow` at `now_ns` to its
    /// bucket ([`Policer::conforms`]). Per flow, a packet with no flow
    /// (not IP) shares one bucket with every other such packet.
    pub fn conforms(&mut self, now_ns: u64, size_bytes: u64, flow: Option<FlowKey>) -> bool {
        match self {
            Policing::One(p) => p.conforms(now_ns, size_bytes),
            Policing::PerFlow { template, flows } => flows
                .entry(flow)
                .or_insert_with(|| template.clone())
                .conforms(now_ns, size_bytes),
        }
    }

    /// Whole bytes of tokens in the bucket of `flow` (the one bucket
    /// without per-flow policing; a full one for a flow not yet seen).
    pub fn tokens_bytes(&self, now_ns: u64, flow: Option<FlowKey>) -> u64 {
        match self {
            Policing::One(p) => p.tokens_bytes(now_ns),
            Policing::PerFlow { template, flows } => {
                flows.get(&flow).unwrap_or(template).tokens_bytes(now_ns)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn policer(rate_bps: u64, burst_bytes: u64) -> Policer {
        Policer::new(&Link::unlimited().police(rate_bps, burst_bytes))
    }

    #[test]
    fn policer_starts_full_and_passes_one_bucket() {
        // 8 Mbit/s = 1000 B/ms; bucket 15000 B.
        let mut p = policer(8_000_000, 15_000);
        assert!(p.is_enabled());
        assert_eq!(p.tokens_bytes(0), 15_000);
        // A back-to-back burst: 10 full packets conform, then all drop.
        let passed: Vec<_> = (0..14).map(|_| p.conforms(0, 1500)).collect();
        assert_eq!(passed.iter().filter(|x| **x).count(), 10);
        assert!(passed[..10].iter().all(|x| *x));
        assert_eq!(p.tokens_bytes(0), 0);
        // Smaller packets: the bucket counts bytes, not packets.
        let mut p = policer(8_000_000, 15_000);
        assert_eq!((0..20).filter(|_| p.conforms(0, 1000)).count(), 15);
    }

    #[test]
    fn policer_refills_at_its_rate_up_to_the_depth() {
        let mut p = policer(8_000_000, 15_000);
        assert_eq!((0..10).filter(|_| p.conforms(0, 1500)).count(), 10);
        // After 1 ms, 1000 B of tokens: a 1500 B packet is dropped and takes none.
        assert_eq!(p.tokens_bytes(MS), 1000);
        assert!(!p.conforms(MS, 1500));
        assert_eq!(p.tokens_bytes(MS), 1000);
        assert!(p.conforms(MS, 1000));
        assert_eq!(p.tokens_bytes(MS), 0);
        // 1.5 ms later exactly one full packet's worth.
        assert!(!p.conforms(2 * MS + MS / 2 - 1, 1500));
        assert!(p.conforms(2 * MS + MS / 2, 1500));
        assert!(!p.conforms(2 * MS + MS / 2, 1));
        // A long idle period fills the bucket to its depth, no further.
        assert_eq!(p.tokens_bytes(10_000 * MS), 15_000);
        assert_eq!(
            (0..20).filter(|_| p.conforms(10_000 * MS, 1500)).count(),
            10
        );
        // Fractions of a byte are kept: 3 bit/s gives 3 bytes in 8 s, not 0.
        let mut p = policer(3, 1500);
        assert!(p.conforms(0, 1500));
        let t = (0..8).map(|s| s * 1_000 * MS);
        assert!(t.clone().all(|t| !p.conforms(t, 3)));
        assert!(p.conforms(8_000 * MS, 3));
    }

    #[test]
    fn policer_long_run_rate_matches_configuration() {
        // Offer 2x the rate for 100 s in 1000 B packets (an odd rate so that
        // refills are fractional): what conforms is rate * T + burst, to
        // within one packet, and never more at any moment.
        let rate = 7_777_777u64;
        let burst = 20_000u64;
        let mut p = policer(rate, burst);
        let gap = u64::try_from(8_000 * NS_PER_S / u128::from(2 * rate)).unwrap();
        let (mut passed, mut dropped) = (0u64, 0u64);
        let mut t = 0u64;
        while t <= 100_000 * MS {
            if p.conforms(t, 1000) {
                passed += 1000;
            } else {
                dropped += 1;
            }
            let ceiling = u128::from(burst) + u128::from(rate) * u128::from(t) / UNITS_PER_BYTE;
            assert!(u128::from(passed) <= ceiling, "{passed} > {ceiling} at {t}");
            t += gap;
        }
        let t_end = t - gap;
        let expect =
            burst + u64::try_from(u128::from(rate) * u128::from(t_end) / UNITS_PER_BYTE).unwrap();
        assert!(
            passed <= expect && expect - passed < 1000,
            "{passed} vs {expect}"
        );
        // About half of the offered packets were dropped.
        let offered = passed / 1000 + dropped;
        assert!(
            dropped.abs_diff(offered / 2) < offered / 100,
            "{dropped} of {offered}"
        );
    }

    /// A TCP/IPv4 packet of `len` bytes from port `sport` to 80.
    fn tcp4(sport: u16, len: usize) -> Vec<u8> {
        let mut p = vec![0u8; len];
        p[0] = 0x45; // version 4, 20-byte header
        p[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        p[8] = 64; // TTL
        p[9] = 6; // TCP
        p[12..16].copy_from_slice(&[10, 77, 0, 1]);
        p[16..20].copy_from_slice(&[10, 77, 0, 2]);
        p[20..22].copy_from_slice(&sport.to_be_bytes());
        p[22..24].copy_from_slice(&80u16.to_be_bytes());
        p[32] = 5 << 4; // data offset: 20 bytes
        p
    }

    #[test]
    fn flow_key_reads_the_five_tuple() {
        let k = FlowKey::of(&tcp4(40_000, 1500)).unwrap();
        assert_eq!(k.protocol, 6);
        assert_eq!(k.ports, (40_000, 80));
        assert_eq!(
            k.addrs,
            (IpAddr::from([10, 77, 0, 1]), IpAddr::from([10, 77, 0, 2]))
        );
        assert_ne!(k, FlowKey::of(&tcp4(40_001, 1500)).unwrap());
        assert_eq!(FlowKey::of(&[0u8; 40]), None);
    }

    #[test]
    fn per_flow_policing_gives_each_flow_its_own_bucket() {
        // 8 Mbit/s (1000 B/ms) per flow, a 3000 B bucket each.
        let link = Link::unlimited().police_each_flow(8_000_000, 3000);
        let mut p = Policing::new(&link);
        assert!(p.per_flow());
        let (a, b) = (FlowKey::of(&tcp4(1, 1500)), FlowKey::of(&tcp4(2, 1500)));
        // Each flow passes its own two packets at once; a third drops.
        for f in [a, b] {
            assert!(p.conforms(0, 1500, f));
            assert!(p.conforms(0, 1500, f));
            assert!(!p.conforms(0, 1500, f));
        }
        assert_eq!(p.tokens_bytes(0, a), 0);
        // 1.5 ms later each has refilled one packet: flow b's drop took
        // nothing from flow a.
        assert!(p.conforms(MS + MS / 2, 1500, a));
        assert!(!p.conforms(MS + MS / 2, 1500, a));
        assert!(p.conforms(MS + MS / 2, 1500, b));
        // The same link with one bucket: the two flows share 3000 B.
        let mut one = Policing::new(&Link::unlimited().police(8_000_000, 3000));
        assert!(!one.per_flow());
        assert!(one.conforms(0, 1500, a));
        assert!(one.conforms(0, 1500, b));
        assert!(!one.conforms(0, 1500, a));
        assert!(!one.conforms(0, 1500, b));
    }
}
