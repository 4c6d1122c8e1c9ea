//! Path configuration: per-direction link settings and path-wide options.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::tun::{MAX_MTU, MIN_MTU, TUN_MTU};

/// The smallest MTU IPv6 allows (bytes, RFC 8200); a path with IPv6 on needs at least this.
const IPV6_MIN_MTU: u32 = 1280;

/// The longest delay, jitter or reorder hold a link accepts.
const MAX_DELAY: Duration = Duration::from_secs(3600);

/// The settings of one direction of the path (A to B, or B to A).
///
/// The model, applied to every IP packet read from the sending side's TUN,
/// in this order (a packet dropped at a step meets none of the later ones:
/// it draws no random number there, takes no tokens, no queue space and no
/// serialisation time):
/// 1. when `drop_over_bytes` is set, a packet longer than that many bytes is
///    dropped silently, with no ICMP "fragmentation needed" or "packet too
///    big" sent back (a PMTU black hole; counted as an oversize drop);
/// 2. when outages are set (`outage_every` and `outage_for`), the direction
///    is dark for `outage_for` once every `outage_every`: the first packet
///    the direction sees (of any fate, oversize drops included) at time `t0`
///    starts the clock, and outage `k` (k = 1, 2, ...) lasts from
///    `t0 + k * outage_every` for `outage_for` (so the first outage begins
///    `outage_every` after that first packet); a packet arriving during one
///    is dropped (counted as an outage drop). Packets accepted before an
///    outage began keep their schedule;
/// 3. with probability `loss` the packet is dropped at random (counted as a
///    loss drop); the draw is made for each packet that reaches this step;
/// 4. when `police_bps` is set, it meets a token-bucket policer at
///    the ingress of the link (one bucket, or with `police_per_flow` one per
///    flow, each as configured): the bucket holds up to `police_burst_bytes`
///    bytes of tokens, starts full and refills continuously at
///    `police_bps / 8` bytes per second; a packet of `size` bytes conforms if
///    at least `size` tokens are left (it then takes them), else it is
///    dropped, taking no tokens, and counted as a police drop (it is never
///    queued, and takes no queue space and no serialisation time);
/// 5. it joins the bottleneck queue, unless the bytes still waiting
///    to be serialised plus its own size exceed `queue_bytes` (then it is
///    dropped and counted as a queue drop; it has already taken its tokens);
///    its serialisation at `rate_bps` finishes at
///    `d1 = max(arrival, previous d1) + size * 8 / rate_bps`
///    (`d1 = arrival` when `rate_bps` is 0);
/// 6. when `shaper_bps` is set, it then meets the shaper, a second rate
///    stage with the same arithmetic at time `d1`: it joins the shaper's
///    queue unless the bytes waiting there at `d1` plus its own size exceed
///    `shaper_queue_bytes` (then it is dropped and counted as a shaper drop;
///    it has already taken its bottleneck serialisation time), and its
///    serialisation finishes at `d2 = max(d1, previous d2) + size * 8 /
///    shaper_bps` (`d2 = d1` without a shaper). A shaper slower than
///    `rate_bps` is the bottleneck: the standing queue builds in front of it;
/// 7. when `jitter` is set, it gets an extra delay `j` drawn uniformly from
///    `0..=jitter` (whole ns), but never overtakes the packet before it:
///    `t = max(d2 + j, previous t)`, as on a link whose queueing varies
///    (not netem's jitter, which reorders); `t = d2` without jitter;
/// 8. with probability `reorder_share` it is held back by `reorder_delay`
///    (counted as reordered): `h = reorder_delay`, else `h = 0`. The hold is
///    its own: later packets are not held behind it (they overtake it), and
///    it does not raise the floor `t` of step 7 for the packets after it;
/// 9. it is written to the receiving side's TUN at `t + h + delay`.
///
/// The random draws of steps 3, 7 and 8 each come from their own seeded
/// generator ([`PathConfig::seed`]), so adding jitter or reordering leaves
/// the loss pattern as it was. With none of the options of steps 1, 2 and
/// 6-8 set ([`Link::unlimited`]'s values), the model is steps 3-5 and 9.
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
    /// Shaper rate in bits per second of IP packet bytes: a second rate
    /// stage after the bottleneck's serialiser (model step 6); 0 means no shaper.
    pub shaper_bps: u64,
    /// Drop-tail limit of the shaper's queue in bytes (IP packet bytes
    /// waiting for the shaper's serialiser, including the unsent rest of the
    /// packet in service); 0 means unlimited. Ignored when `shaper_bps` is 0.
    pub shaper_queue_bytes: u64,
    /// Largest extra delay a packet draws (uniformly from `0..=jitter`)
    /// without overtaking the packet before it (model step 7); zero means none.
    /// At most one hour.
    pub jitter: Duration,
    /// Probability in `0.0..=1.0` that a packet is held back by
    /// `reorder_delay` and overtaken by the packets behind it (model step 8);
    /// 0 means no reordering. Needs a non-zero `reorder_delay`.
    pub reorder_share: f64,
    /// How much later a held-back packet is delivered (model step 8); at
    /// most one hour. Ignored when `reorder_share` is 0.
    pub reorder_delay: Duration,
    /// Period of the outages (model step 2): the direction goes dark once
    /// every `outage_every`, the first time `outage_every` after the first
    /// packet it sees; zero means no outages. Set together with `outage_for`.
    pub outage_every: Duration,
    /// Length of each outage, during which every arriving packet is dropped
    /// (model step 2); zero means no outages. Shorter than `outage_every`.
    pub outage_for: Duration,
    /// Largest IP packet (bytes) the direction carries: longer ones are
    /// dropped silently, with no ICMP back (a PMTU black hole, model step 1);
    /// 0 means none. When set, at least [`MIN_MTU`] (576) and below the path MTU.
    pub drop_over_bytes: u32,
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
            shaper_bps: 0,
            shaper_queue_bytes: 0,
            jitter: Duration::ZERO,
            reorder_share: 0.0,
            reorder_delay: Duration::ZERO,
            outage_every: Duration::ZERO,
            outage_for: Duration::ZERO,
            drop_over_bytes: 0,
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

    /// Returns this link with a shaper after the bottleneck (model step 6):
    /// a second serialiser at `rate_bps` bits/s (0 = no shaper) behind a
    /// drop-tail queue of `queue_bytes` bytes (0 = unlimited).
    pub const fn shaper(mut self, rate_bps: u64, queue_bytes: u64) -> Self {
        self.shaper_bps = rate_bps;
        self.shaper_queue_bytes = queue_bytes;
        self
    }

    /// Returns this link with delay jitter (model step 7): each packet gets
    /// an extra delay drawn uniformly from `0..=jitter`, order kept
    /// (`Duration::ZERO` = none).
    pub const fn jitter(mut self, jitter: Duration) -> Self {
        self.jitter = jitter;
        self
    }

    /// Returns this link with reordering (model step 8): with probability
    /// `share` (0.0..=1.0, 0 = none) a packet is delivered `hold` later
    /// than its turn, and the packets behind it overtake it.
    pub const fn reorder(mut self, share: f64, hold: Duration) -> Self {
        self.reorder_share = share;
        self.reorder_delay = hold;
        self
    }

    /// Returns this link with outages (model step 2): dark for `length`
    /// once every `every` (`length` < `every`), the first outage starting
    /// `every` after the first packet the direction sees; zero durations
    /// mean none.
    pub const fn outage(mut self, every: Duration, length: Duration) -> Self {
        self.outage_every = every;
        self.outage_for = length;
        self
    }

    /// Returns this link with a PMTU black hole (model step 1): IP packets
    /// longer than `bytes` are dropped silently (0 = none; else at least
    /// [`MIN_MTU`] and below the path MTU).
    pub const fn drop_over(mut self, bytes: u32) -> Self {
        self.drop_over_bytes = bytes;
        self
    }

    /// The names of the fields set away from [`Link::unlimited`]'s values
    /// (what a path without a link model cannot honour).
    pub(crate) fn options_set(&self) -> Vec<&'static str> {
        let none = Link::unlimited();
        let fields = [
            ("rate_bps", self.rate_bps != none.rate_bps),
            ("delay", self.delay != none.delay),
            ("queue_bytes", self.queue_bytes != none.queue_bytes),
            ("loss", self.loss != none.loss),
            ("police_bps", self.police_bps != none.police_bps),
            (
                "police_burst_bytes",
                self.police_burst_bytes != none.police_burst_bytes,
            ),
            (
                "police_per_flow",
                self.police_per_flow != none.police_per_flow,
            ),
            ("shaper_bps", self.shaper_bps != none.shaper_bps),
            (
                "shaper_queue_bytes",
                self.shaper_queue_bytes != none.shaper_queue_bytes,
            ),
            ("jitter", self.jitter != none.jitter),
            ("reorder_share", self.reorder_share != none.reorder_share),
            ("reorder_delay", self.reorder_delay != none.reorder_delay),
            ("outage_every", self.outage_every != none.outage_every),
            ("outage_for", self.outage_for != none.outage_for),
            (
                "drop_over_bytes",
                self.drop_over_bytes != none.drop_over_bytes,
            ),
        ];
        fields
            .into_iter()
            .filter_map(|(name, set)| set.then_some(name))
            .collect()
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
        for (name, value) in [
            ("delay", self.delay),
            ("jitter", self.jitter),
            ("reorder_delay", self.reorder_delay),
        ] {
            if value > MAX_DELAY {
                return Err(Error::InvalidConfig(format!(
                    "{what}: {name} {value:?} is longer than one hour"
                )));
            }
        }
        if !(0.0..=1.0).contains(&self.reorder_share) {
            return Err(Error::InvalidConfig(format!(
                "{what}: reorder_share must be within 0.0..=1.0, got {}",
                self.reorder_share
            )));
        }
        if self.reorder_share > 0.0 && self.reorder_delay.is_zero() {
            return Err(Error::InvalidConfig(format!(
                "{what}: reorder_share {} needs a non-zero reorder_delay (a hold of 0 reorders nothing)",
                self.reorder_share
            )));
        }
        if self.outage_every.is_zero() != self.outage_for.is_zero() {
            return Err(Error::InvalidConfig(format!(
                "{what}: outage_every ({:?}) and outage_for ({:?}) must be set together",
                self.outage_every, self.outage_for
            )));
        }
        if !self.outage_every.is_zero() && self.outage_for >= self.outage_every {
            return Err(Error::InvalidConfig(format!(
                "{what}: outage_for {:?} must be shorter than outage_every {:?}",
                self.outage_for, self.outage_every
            )));
        }
        if self.drop_over_bytes != 0 && !(MIN_MTU..mtu_bytes).contains(&self.drop_over_bytes) {
            return Err(Error::InvalidConfig(format!(
                "{what}: drop_over_bytes must be within {MIN_MTU}..{mtu_bytes} (at least the IPv4 \
                 minimum, below the MTU), got {}",
                self.drop_over_bytes
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
    /// Seed of the random generators: the forward direction's loss draw uses
    /// `seed`, the reverse direction's `seed ^ 0x9E37_79B9_7F4A_7C15`, so a
    /// given seed always yields the same drop pattern per packet sequence.
    /// The jitter and reorder draws of each direction use generators of their
    /// own, seeded from the same value, so they never shift the loss pattern.
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
    /// Join the two namespaces by a plain veth pair (named `pe0` at both
    /// ends, same addresses and MTU) instead of TUN devices and the relay:
    /// the kernel forwards, with no rate, delay, loss or any other model, for
    /// sub-millisecond round trips. Both links must then be
    /// [`Link::unlimited`]; `seed` and `realtime` are unused, and
    /// [`crate::Path::stats`] stays all zeros (nothing is relayed).
    pub veth: bool,
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
            veth: false,
        }
    }

    /// A plain veth path: namespaces A and B joined by a veth pair, with no
    /// link model at all (the kernel's own forwarding; round trips of tens
    /// of microseconds); both links [`Link::unlimited`], IPv6 on, MTU
    /// [`TUN_MTU`] (1500 bytes). See the `veth` field.
    pub fn veth() -> Self {
        PathConfig {
            veth: true,
            ..PathConfig::default()
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

    /// Checks the MTU and both directions (a veth path: that neither
    /// direction sets anything).
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
        if self.veth {
            for (what, link) in [("forward", &self.forward), ("reverse", &self.reverse)] {
                let set = link.options_set();
                if !set.is_empty() {
                    return Err(Error::InvalidConfig(format!(
                        "a veth path has no link model, but the {what} link sets {}; \
                         use a TUN path (veth off) for these",
                        set.join(", ")
                    )));
                }
            }
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
#[path = "config_tests.rs"]
mod tests;
