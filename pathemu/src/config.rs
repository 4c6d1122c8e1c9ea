//! Path configuration: per-direction link settings and path-wide options.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::tun::{MAX_MTU, MIN_MTU, TUN_MTU};

/// The smallest MTU IPv6 allows (bytes, RFC 8200); a path with IPv6 on needs at least this.
const IPV6_MIN_MTU: u32 = 1280;

/// The settings of one direction of the path (A to B, or B to A).
///
/// The model, applied to every IP packet read from the sending side's TUN:
/// 1. with probability `loss` the packet is dropped at random (counted as a
///    loss drop; it takes no policer tokens, no queue space and no
///    serialisation time);
/// 2. otherwise, when `police_bps` is set, it meets a token-bucket policer at
///    the ingress of the link (one bucket, or with `police_per_flow` one per
///    flow, each as configured): the bucket holds up to `police_burst_bytes`
///    bytes of tokens, starts full and refills continuously at
///    `police_bps / 8` bytes per second; a packet of `size` bytes conforms if
///    at least `size` tokens are left (it then takes them), else it is
///    dropped, taking no tokens, and counted as a police drop (it is never
///    queued, and takes no queue space and no serialisation time);
/// 3. otherwise it joins the bottleneck queue, unless the bytes still waiting
///    to be serialised plus its own size exceed `queue_bytes` (then it is
///    dropped and counted as a queue drop; it has already taken its tokens);
/// 4. its serialisation at `rate_bps` finishes at
///    `d = max(arrival, previous d) + size * 8 / rate_bps`;
/// 5. it is written to the receiving side's TUN at `d + delay`.
///
/// Sizes are IP packet bytes (IP header included, no link-layer framing).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    /// Bottleneck rate in bits per second of IP packet bytes; 0 means unlimited
    /// (no serialisation time and no queue).
    pub rate_bps: u64,
    /// One-way propagation delay added after serialisation.
    pub delay: Duration,
    /// Drop-tail limit of the bottleneck queue in bytes (IP packet bytes that
    /// are waiting to be serialised, including the unsent rest of the packet
    /// being serialised); 0 means unlimited. Ignored when `rate_bps` is 0.
    pub queue_bytes: u64,
    /// Probability in `0.0..=1.0` that a packet is dropped at random.
    pub loss: f64,
    /// Token-bucket policer rate in bits per second of IP packet bytes
    /// (the bucket refills at `police_bps / 8` bytes/s); 0 means no policer.
    pub police_bps: u64,
    /// Depth of the policer's token bucket in bytes: the largest burst that
    /// conforms after an idle period. Must be at least the path MTU when
    /// `police_bps` is set; ignored when `police_bps` is 0.
    pub police_burst_bytes: u64,
    /// Whether the policer keeps a bucket per flow (protocol, addresses,
    /// ports), each of `police_bps` and `police_burst_bytes`, as a
    /// per-flow rate limit does, instead of one for the whole link.
    pub police_per_flow: bool,
}

impl Link {
    /// A link with no rate limit, no delay, an unlimited queue and no loss.
    pub const fn unlimited() -> Self {
        Link {
            rate_bps: 0,
            delay: Duration::ZERO,
            queue_bytes: 0,
            loss: 0.0,
            police_bps: 0,
            police_burst_bytes: 0,
            police_per_flow: false,
        }
    }

    /// An unlimited link with a one-way `delay`.
    pub const fn with_delay_only(delay: Duration) -> Self {
        Link {
            delay,
            ..Link::unlimited()
        }
    }

    /// Returns this link with bottleneck rate `rate_bps` (bits/s, 0 = unlimited).
    pub const fn rate(mut self, rate_bps: u64) -> Self {
        self.rate_bps = rate_bps;
        self
    }

    /// Returns this link with one-way propagation delay `delay`.
    pub const fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Returns this link with a drop-tail queue of `queue_bytes` bytes (0 = unlimited).
    pub const fn queue(mut self, queue_bytes: u64) -> Self {
        self.queue_bytes = queue_bytes;
        self
    }

    /// Returns this link with random loss probability `loss` (0.0..=1.0).
    pub const fn loss(mut self, loss: f64) -> Self {
        self.loss = loss;
        self
    }

    /// Returns this link with a token-bucket policer of `rate_bps` bits/s
    /// (0 = no policer) and a bucket of `burst_bytes` bytes (at least the path MTU).
    pub const fn police(mut self, rate_bps: u64, burst_bytes: u64) -> Self {
        self.police_bps = rate_bps;
        self.police_burst_bytes = burst_bytes;
        self.police_per_flow = false;
        self
    }

    /// Returns this link with a token-bucket policer per flow (protocol,
    /// addresses and ports): each flow's bucket refills at `rate_bps`
    /// bits/s and holds `burst_bytes` bytes (at least the path MTU).
    pub const fn police_each_flow(mut self, rate_bps: u64, burst_bytes: u64) -> Self {
        self.police_bps = rate_bps;
        self.police_burst_bytes = burst_bytes;
        self.police_per_flow = true;
        self
    }

    /// The bandwidth-delay product of this link alone in bytes
    /// (`rate_bps * delay / 8`), 0 when the rate is unlimited.
    pub fn bdp_bytes(&self) -> u64 {
        let bits = u128::from(self.rate_bps) * self.delay.as_nanos() / 1_000_000_000;
        u64::try_from(bits / 8).unwrap_or(u64::MAX)
    }

    /// Checks that the values are in range for a path of MTU `mtu_bytes`;
    /// `what` names the direction in the message.
    pub(crate) fn validate(&self, what: &str, mtu_bytes: u32) -> Result<()> {
        if !(0.0..=1.0).contains(&self.loss) {
            return Err(Error::InvalidConfig(format!(
                "{what}: loss must be within 0.0..=1.0, got {}",
                self.loss
            )));
        }
        if self.delay > Duration::from_secs(3600) {
            return Err(Error::InvalidConfig(format!(
                "{what}: delay {:?} is longer than one hour",
                self.delay
            )));
        }
        if self.police_bps != 0 && self.police_burst_bytes < u64::from(mtu_bytes) {
            return Err(Error::InvalidConfig(format!(
                "{what}: policer burst of {} bytes is smaller than the MTU ({mtu_bytes} bytes), \
                 so a full-sized packet could never conform",
                self.police_burst_bytes
            )));
        }
        Ok(())
    }
}

impl Default for Link {
    fn default() -> Self {
        Link::unlimited()
    }
}

/// Everything needed to build a [`crate::Path`].
#[derive(Debug, Clone, PartialEq)]
pub struct PathConfig {
    /// The direction from namespace A to namespace B.
    pub forward: Link,
    /// The direction from namespace B to namespace A.
    pub reverse: Link,
    /// Seed of the random-loss generators: the forward direction uses
    /// `seed`, the reverse direction `seed ^ 0x9E37_79B9_7F4A_7C15`, so a
    /// given seed always yields the same drop pattern per packet sequence.
    pub seed: u64,
    /// Also configure IPv6 ULA addresses (`fd77:<n>::1` and `::2`, /128 with peer).
    pub ipv6: bool,
    /// Run the relay threads with `SCHED_FIFO` priority (root only; ignored
    /// when the kernel refuses), which keeps delivery timing tight on a
    /// loaded machine.
    pub realtime: bool,
    /// MTU of both TUN devices in bytes (the largest IP packet the path
    /// carries), within [`MIN_MTU`]`..=`[`MAX_MTU`], and at least 1280 when
    /// `ipv6` is on. Default [`TUN_MTU`] (1500); e.g. 1280 emulates a VPN
    /// tunnel (TCP MSS 1240 over IPv4, 1228 with timestamps).
    pub mtu: u32,
}

impl PathConfig {
    /// A path with the given settings in each direction, seed 1, IPv6 on,
    /// realtime relay threads, MTU [`TUN_MTU`] (1500 bytes).
    pub fn new(forward: Link, reverse: Link) -> Self {
        PathConfig {
            forward,
            reverse,
            seed: 1,
            ipv6: true,
            realtime: true,
            mtu: TUN_MTU,
        }
    }

    /// A path with `one_way` delay in both directions and no other limits
    /// (RTT = 2 * `one_way`).
    pub fn symmetric_delay(one_way: Duration) -> Self {
        let link = Link::with_delay_only(one_way);
        PathConfig::new(link, link)
    }

    /// A WAN-like path: `one_way` delay in both directions, and on the forward
    /// direction (A to B) a bottleneck of `rate_bps` bits/s with a drop-tail
    /// queue of `queue_bytes` bytes. The reverse direction (ACKs) is unlimited.
    pub fn bottleneck(rate_bps: u64, one_way: Duration, queue_bytes: u64) -> Self {
        let reverse = Link::with_delay_only(one_way);
        let forward = reverse.rate(rate_bps).queue(queue_bytes);
        PathConfig::new(forward, reverse)
    }

    /// Returns this configuration with loss seed `seed`.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Returns this configuration with IPv6 addresses on (`true`) or off.
    pub fn ipv6(mut self, on: bool) -> Self {
        self.ipv6 = on;
        self
    }

    /// Returns this configuration with realtime relay threads on (`true`) or off.
    pub fn realtime(mut self, on: bool) -> Self {
        self.realtime = on;
        self
    }

    /// Returns this configuration with an MTU of `bytes` on both TUN devices
    /// ([`MIN_MTU`]`..=`[`MAX_MTU`], at least 1280 with IPv6 on).
    pub fn mtu(mut self, bytes: u32) -> Self {
        self.mtu = bytes;
        self
    }

    /// The seed of the reverse direction's loss generator.
    pub(crate) fn reverse_seed(&self) -> u64 {
        self.seed ^ 0x9E37_79B9_7F4A_7C15
    }

    /// Checks the MTU and both directions.
    pub(crate) fn validate(&self) -> Result<()> {
        if !(MIN_MTU..=MAX_MTU).contains(&self.mtu) {
            return Err(Error::InvalidConfig(format!(
                "MTU must be within {MIN_MTU}..={MAX_MTU} bytes, got {}",
                self.mtu
            )));
        }
        if self.ipv6 && self.mtu < IPV6_MIN_MTU {
            return Err(Error::InvalidConfig(format!(
                "MTU {} is below IPv6's minimum of {IPV6_MIN_MTU} bytes; turn IPv6 off",
                self.mtu
            )));
        }
        self.forward.validate("forward", self.mtu)?;
        self.reverse.validate("reverse", self.mtu)
    }
}

impl Default for PathConfig {
    fn default() -> Self {
        PathConfig::new(Link::unlimited(), Link::unlimited())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bottleneck_puts_rate_on_forward_only() {
        let c = PathConfig::bottleneck(35_000_000, Duration::from_millis(52), 460_000);
        assert_eq!(c.forward.rate_bps, 35_000_000);
        assert_eq!(c.forward.queue_bytes, 460_000);
        assert_eq!(c.reverse.rate_bps, 0);
        assert_eq!(c.forward.delay, c.reverse.delay);
        assert!(c.validate().is_ok());
    }

    #[test]
    fn loss_out_of_range_is_rejected() {
        let c = PathConfig::new(Link::unlimited().loss(1.5), Link::unlimited());
        assert!(matches!(c.validate(), Err(Error::InvalidConfig(_))));
        let c = PathConfig::new(Link::unlimited(), Link::unlimited().loss(f64::NAN));
        assert!(c.validate().is_err());
    }

    #[test]
    fn mtu_defaults_and_range() {
        assert_eq!(PathConfig::default().mtu, 1500);
        assert!(PathConfig::default().mtu(1280).validate().is_ok());
        assert!(PathConfig::default().mtu(9000).validate().is_ok());
        for bad in [0, 575, 9001] {
            let c = PathConfig::default().ipv6(false).mtu(bad);
            assert!(
                matches!(c.validate(), Err(Error::InvalidConfig(_))),
                "{bad}"
            );
        }
        // Below 1280 only without IPv6.
        assert!(PathConfig::default().mtu(576).validate().is_err());
        assert!(
            PathConfig::default()
                .mtu(576)
                .ipv6(false)
                .validate()
                .is_ok()
        );
    }

    #[test]
    fn police_burst_must_hold_a_full_packet() {
        let policed = |burst| Link::unlimited().police(10_000_000, burst);
        let c = PathConfig::new(policed(1500), Link::unlimited());
        assert!(c.validate().is_ok());
        let c = PathConfig::new(Link::unlimited(), policed(1499));
        assert!(matches!(c.validate(), Err(Error::InvalidConfig(_))));
        // Against the configured MTU, not 1500.
        let c = PathConfig::new(policed(1280), Link::unlimited()).mtu(1280);
        assert!(c.validate().is_ok());
        let c = PathConfig::new(policed(1500), Link::unlimited()).mtu(9000);
        assert!(c.validate().is_err());
        // No policer: the burst is ignored.
        let l = Link::unlimited().police(0, 0);
        assert_eq!(l, Link::unlimited());
        assert!(PathConfig::new(l, l).validate().is_ok());
    }

    #[test]
    fn bdp() {
        let l = Link::unlimited()
            .rate(35_000_000)
            .delay(Duration::from_millis(104));
        assert_eq!(l.bdp_bytes(), 455_000);
    }
}
