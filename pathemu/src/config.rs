//! Path configuration: per-direction link settings and path-wide options.

use std::time::Duration;

use crate::error::{Error, Result};

/// The settings of one direction of the path (A to B, or B to A).
///
/// The model, applied to every IP packet read from the sending side's TUN:
/// 1. with probability `loss` the packet is dropped at random (counted as a
///    loss drop; it takes no queue space and no serialisation time);
/// 2. otherwise it joins the bottleneck queue, unless the bytes still waiting
///    to be serialised plus its own size exceed `queue_bytes` (then it is
///    dropped and counted as a queue drop);
/// 3. its serialisation at `rate_bps` finishes at
///    `d = max(arrival, previous d) + size * 8 / rate_bps`;
/// 4. it is written to the receiving side's TUN at `d + delay`.
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
}

impl Link {
    /// A link with no rate limit, no delay, an unlimited queue and no loss.
    pub const fn unlimited() -> Self {
        Link {
            rate_bps: 0,
            delay: Duration::ZERO,
            queue_bytes: 0,
            loss: 0.0,
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

    /// The bandwidth-delay product of this link alone in bytes
    /// (`rate_bps * delay / 8`), 0 when the rate is unlimited.
    pub fn bdp_bytes(&self) -> u64 {
        let bits = u128::from(self.rate_bps) * self.delay.as_nanos() / 1_000_000_000;
        u64::try_from(bits / 8).unwrap_or(u64::MAX)
    }

    /// Checks that the values are in range; `what` names the direction in the message.
    pub(crate) fn validate(&self, what: &str) -> Result<()> {
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
}

impl PathConfig {
    /// A path with the given settings in each direction, seed 1, IPv6 on,
    /// realtime relay threads.
    pub fn new(forward: Link, reverse: Link) -> Self {
        PathConfig {
            forward,
            reverse,
            seed: 1,
            ipv6: true,
            realtime: true,
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

    /// The seed of the reverse direction's loss generator.
    pub(crate) fn reverse_seed(&self) -> u64 {
        self.seed ^ 0x9E37_79B9_7F4A_7C15
    }

    /// Checks both directions.
    pub(crate) fn validate(&self) -> Result<()> {
        self.forward.validate("forward")?;
        self.reverse.validate("reverse")
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
    fn bdp() {
        let l = Link::unlimited()
            .rate(35_000_000)
            .delay(Duration::from_millis(104));
        assert_eq!(l.bdp_bytes(), 455_000);
    }
}
