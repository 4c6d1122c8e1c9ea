//! The pure queue, timing and loss model of one direction, free of I/O.
//!
//! Times are nanoseconds on any monotonic clock (the relay uses
//! `CLOCK_MONOTONIC`); sizes are IP packet bytes. [`DirectionModel`] runs a
//! packet through the steps [`Link`] documents; the outage, jitter and
//! reorder steps live in [`crate::outage`], [`crate::jitter`] and
//! [`crate::reorder`], the policer in [`crate::policer`].

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use crate::{
    config::Link,
    jitter::Jitter,
    outage::Outage,
    policer::{FlowKey, Policing},
    reorder::Reorder,
};

const NS_PER_S: u128 = 1_000_000_000;

/// Mixed into a direction's seed for its jitter generator, so that its
/// draws are a stream of their own (the loss generator takes the seed as is).
const JITTER_STREAM: u64 = 0x6A09_E667_F3BC_C908;
/// Mixed into a direction's seed for its reorder generator.
const REORDER_STREAM: u64 = 0xBB67_AE85_84CA_A73B;

/// What becomes of one arriving packet: delivered at a time, or dropped (and why).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Deliver the packet to the other side at `at_ns` (ns, same clock as the arrival time).
    Deliver {
        /// When its serialisation at the last rate stage finishes (the
        /// shaper when the link has one, else the bottleneck; ns), before
        /// jitter, hold and delay.
        departs_ns: u64,
        /// When it is to be written to the other side (ns): departure,
        /// plus jitter and hold, plus the delay.
        at_ns: u64,
        /// Whether the reorder draw held it back (by `reorder_delay`), so
        /// that packets behind it may be delivered before it.
        reordered: bool,
    },
    /// The drop-tail queue of the bottleneck was full: dropped.
    DropQueue,
    /// The drop-tail queue of the shaper was full: dropped.
    DropShaper,
    /// The policer's token bucket held fewer tokens than the packet's size: dropped.
    DropPolice,
    /// Dropped by the random-loss draw.
    DropLoss,
    /// Arrived while the direction was in an outage: dropped.
    DropOutage,
    /// Longer than the link's `drop_over_bytes`: dropped silently (PMTU black hole).
    DropOversize,
}

/// The bottleneck of one direction: a serialiser at a fixed rate behind a
/// drop-tail queue measured in bytes, followed by a fixed delay line.
#[derive(Debug, Clone)]
pub struct Bottleneck {
    rate_bps: u64,
    queue_bytes: u64,
    delay_ns: u64,
    /// When the serialiser finishes its current backlog (ns); 0 before the first packet.
    busy_until_ns: u64,
}

impl Bottleneck {
    /// A bottleneck with the rate, queue limit and delay of `link` (loss is not used here).
    pub fn new(link: &Link) -> Self {
        Bottleneck {
            delay_ns: u64::try_from(link.delay.as_nanos()).unwrap_or(u64::MAX),
            ..Bottleneck::stage(link.rate_bps, link.queue_bytes)
        }
    }

    /// A rate stage alone: a serialiser at `rate_bps` bits/s (0 = unlimited:
    /// no serialisation time, no queue) behind a drop-tail queue of
    /// `queue_bytes` bytes (0 = unlimited), with no delay line.
    pub fn stage(rate_bps: u64, queue_bytes: u64) -> Self {
        Bottleneck {
            rate_bps,
            queue_bytes,
            delay_ns: 0,
            busy_until_ns: 0,
        }
    }

    /// The shaper of `link` (`shaper_bps`, `shaper_queue_bytes`) as a rate
    /// stage with no delay; it passes everything unchanged when `shaper_bps` is 0.
    pub fn shaper(link: &Link) -> Self {
        Bottleneck::stage(link.shaper_bps, link.shaper_queue_bytes)
    }

    /// Time to serialise `size_bytes` at the bottleneck rate (ns, rounded up); 0 when unlimited.
    pub fn serialisation_ns(&self, size_bytes: u64) -> u64 {
        if self.rate_bps == 0 {
            return 0;
        }
        let bits = u128::from(size_bytes) * 8 * NS_PER_S;
        u64::try_from(bits.div_ceil(u128::from(self.rate_bps))).unwrap_or(u64::MAX)
    }

    /// Bytes still waiting to be serialised at `now_ns` (rounded up), including
    /// the unsent remainder of the packet in service; 0 when unlimited.
    pub fn backlog_bytes(&self, now_ns: u64) -> u64 {
        if self.rate_bps == 0 || self.busy_until_ns <= now_ns {
            return 0;
        }
        let left_ns = u128::from(self.busy_until_ns - now_ns);
        let bits = left_ns * u128::from(self.rate_bps);
        u64::try_from(bits.div_ceil(8 * NS_PER_S)).unwrap_or(u64::MAX)
    }

    /// Whether a packet of `size_bytes` arriving at `now_ns` would be tail-dropped.
    pub fn would_drop(&self, now_ns: u64, size_bytes: u64) -> bool {
        self.rate_bps != 0
            && self.queue_bytes != 0
            && self.backlog_bytes(now_ns).saturating_add(size_bytes) > self.queue_bytes
    }

    /// Offers a packet of `size_bytes` arriving at `now_ns`: either drops it
    /// (queue full) or schedules it, updating the serialiser's state.
    /// Arrival times must not go backwards.
    pub fn offer(&mut self, now_ns: u64, size_bytes: u64) -> Fate {
        if self.would_drop(now_ns, size_bytes) {
            return Fate::DropQueue;
        }
        let start = self.busy_until_ns.max(now_ns);
        let departs_ns = start.saturating_add(self.serialisation_ns(size_bytes));
        self.busy_until_ns = departs_ns;
        Fate::Deliver {
            departs_ns,
            at_ns: departs_ns.saturating_add(self.delay_ns),
            reordered: false,
        }
    }
}

/// The seeded random-loss decision: one draw per arriving packet.
#[derive(Debug, Clone)]
pub struct LossGate {
    probability: f64,
    rng: Xoshiro256PlusPlus,
}

impl LossGate {
    /// A gate dropping each packet with `probability` (0.0..=1.0), driven by a
    /// xoshiro256++ generator seeded with `seed` (same seed, same pattern).
    pub fn new(probability: f64, seed: u64) -> Self {
        LossGate {
            probability,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
        }
    }

    /// Decides for the next packet: `true` means drop it. With probability 0
    /// no random number is drawn.
    pub fn lose(&mut self) -> bool {
        if self.probability <= 0.0 {
            return false;
        }
        self.rng.random::<f64>() < self.probability
    }
}

/// The whole per-direction model, in the order [`Link`] documents:
/// oversize drop, outage drop, random loss, policer, bottleneck, shaper,
/// jitter, reorder hold, delay.
#[derive(Debug, Clone)]
pub struct DirectionModel {
    /// Longest packet carried (bytes); 0 means no limit.
    drop_over_bytes: u64,
    outage: Outage,
    loss: LossGate,
    policing: Policing,
    /// The bottleneck's queue and serialiser (its delay is `delay_ns`, applied last).
    bottleneck: Bottleneck,
    /// The shaper's queue and serialiser (a pass-through when the link has none).
    shaper: Bottleneck,
    jitter: Jitter,
    reorder: Reorder,
    /// One-way propagation delay (ns).
    delay_ns: u64,
}

impl DirectionModel {
    /// The model of `link`, with its loss generator seeded with `seed` and
    /// its jitter and reorder generators with streams of their own derived
    /// from `seed`.
    pub fn new(link: &Link, seed: u64) -> Self {
        DirectionModel {
            drop_over_bytes: u64::from(link.drop_over_bytes),
            outage: Outage::new(link.outage_every, link.outage_for),
            loss: LossGate::new(link.loss, seed),
            policing: Policing::new(link),
            bottleneck: Bottleneck::stage(link.rate_bps, link.queue_bytes),
            shaper: Bottleneck::shaper(link),
            jitter: Jitter::new(link.jitter, seed ^ JITTER_STREAM),
            reorder: Reorder::new(
                link.reorder_share,
                link.reorder_delay,
                seed ^ REORDER_STREAM,
            ),
            delay_ns: u64::try_from(link.delay.as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// Decides the fate of a packet of `size_bytes` arriving at `now_ns`
    /// (ns), policed as a packet of no flow.
    pub fn offer(&mut self, now_ns: u64, size_bytes: u64) -> Fate {
        self.offer_flow(now_ns, size_bytes, None)
    }

    /// Decides the fate of IP packet `packet` arriving at `now_ns` (ns):
    /// its size is its length; a per-flow policer reads its flow.
    pub fn offer_packet(&mut self, now_ns: u64, packet: &[u8]) -> Fate {
        let flow = if self.policing.per_flow() {
            FlowKey::of(packet)
        } else {
            None
        };
        self.offer_flow(now_ns, packet.len() as u64, flow)
    }

    fn offer_flow(&mut self, now_ns: u64, size_bytes: u64, flow: Option<FlowKey>) -> Fate {
        // Every packet the direction sees starts (or runs) the outage clock,
        // an oversize one included, so the outage is noted before the size check.
        let dark = self.outage.arrive(now_ns);
        if self.drop_over_bytes != 0 && size_bytes > self.drop_over_bytes {
            return Fate::DropOversize;
        }
        if dark {
            return Fate::DropOutage;
        }
        if self.loss.lose() {
            return Fate::DropLoss;
        }
        if !self.policing.conforms(now_ns, size_bytes, flow) {
            return Fate::DropPolice;
        }
        let Fate::Deliver { departs_ns: d1, .. } = self.bottleneck.offer(now_ns, size_bytes) else {
            return Fate::DropQueue;
        };
        // The shaper sees the packet when the bottleneck has sent it: its
        // arrivals (bottleneck departures) never go backwards.
        let Fate::Deliver { departs_ns: d2, .. } = self.shaper.offer(d1, size_bytes) else {
            return Fate::DropShaper;
        };
        let t = self.jitter.apply(d2);
        let hold = self.reorder.hold_ns();
        Fate::Deliver {
            departs_ns: d2,
            at_ns: t.saturating_add(hold).saturating_add(self.delay_ns),
            reordered: hold != 0,
        }
    }
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod direction_tests;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const MS: u64 = 1_000_000;

    fn link(rate_bps: u64, delay_ms: u64, queue_bytes: u64) -> Link {
        Link::unlimited()
            .rate(rate_bps)
            .delay(Duration::from_millis(delay_ms))
            .queue(queue_bytes)
    }

    #[test]
    fn unlimited_link_only_delays() {
        let mut b = Bottleneck::new(&link(0, 26, 0));
        for t in [0, 5, 5, 100] {
            assert_eq!(
                b.offer(t * MS, 1500),
                Fate::Deliver {
                    departs_ns: t * MS,
                    at_ns: (t + 26) * MS,
                    reordered: false,
                }
            );
        }
        assert_eq!(b.backlog_bytes(0), 0);
    }

    #[test]
    fn serialisation_time() {
        let b = Bottleneck::new(&link(12_000_000, 0, 0));
        // 1500 B = 12000 bit at 12 Mbit/s = 1 ms.
        assert_eq!(b.serialisation_ns(1500), MS);
        // Rounded up to whole ns.
        let b = Bottleneck::new(&link(3, 0, 0));
        assert_eq!(b.serialisation_ns(1), 2_666_666_667);
    }

    #[test]
    fn departures_queue_back_to_back() {
        // 12 Mbit/s: 1 ms per 1500 B packet; 10 ms delay.
        let mut b = Bottleneck::new(&link(12_000_000, 10, 0));
        // Three packets arriving together leave 1 ms apart.
        let v: Vec<_> = (0..3).map(|_| b.offer(0, 1500)).collect();
        assert_eq!(
            v,
            vec![
                Fate::Deliver {
                    departs_ns: MS,
                    at_ns: 11 * MS,
                    reordered: false,
                },
                Fate::Deliver {
                    departs_ns: 2 * MS,
                    at_ns: 12 * MS,
                    reordered: false,
                },
                Fate::Deliver {
                    departs_ns: 3 * MS,
                    at_ns: 13 * MS,
                    reordered: false,
                },
            ]
        );
        // Half-way through the second packet, 1.5 packets are left.
        assert_eq!(b.backlog_bytes(MS + MS / 2), 2250);
        // A packet after the queue drained starts at its own arrival.
        assert_eq!(
            b.offer(10 * MS, 750),
            Fate::Deliver {
                departs_ns: 10 * MS + MS / 2,
                at_ns: 20 * MS + MS / 2,
                reordered: false,
            }
        );
    }

    #[test]
    fn drop_tail_counts_waiting_bytes() {
        // 12 Mbit/s, queue 3000 B: two full packets fit, the third is dropped.
        let mut b = Bottleneck::new(&link(12_000_000, 0, 3000));
        assert!(matches!(b.offer(0, 1500), Fate::Deliver { .. }));
        assert!(matches!(b.offer(0, 1500), Fate::Deliver { .. }));
        assert_eq!(b.offer(0, 1500), Fate::DropQueue);
        // A dropped packet does not advance the serialiser.
        assert_eq!(b.backlog_bytes(0), 3000);
        // 1 byte still fits exactly? 3000 + 1 > 3000: no.
        assert!(b.would_drop(0, 1));
        // After 1 ms one packet has gone: another fits.
        assert!(!b.would_drop(MS, 1500));
        assert!(b.would_drop(MS, 1501));
        assert_eq!(
            b.offer(MS, 1500),
            Fate::Deliver {
                departs_ns: 3 * MS,
                at_ns: 3 * MS,
                reordered: false,
            }
        );
    }

    #[test]
    fn long_run_rate_matches_configuration() {
        // Offer 2x the rate for 1 s into a 15 kB queue: delivered ~ rate*T + queue.
        let rate = 10_000_000u64;
        let mut b = Bottleneck::new(&link(rate, 0, 15_000));
        let mut delivered = 0u64;
        let mut dropped = 0u64;
        let gap = b.serialisation_ns(1000) / 2;
        let mut t = 0;
        while t < 1_000 * MS {
            match b.offer(t, 1000) {
                Fate::Deliver { .. } => delivered += 1000,
                Fate::DropQueue => dropped += 1,
                other => unreachable!("{other:?}"),
            }
            t += gap;
        }
        let expect = rate / 8 + 15_000;
        assert!(
            delivered.abs_diff(expect) <= 2000,
            "{delivered} vs {expect}"
        );
        assert!(dropped > 1000);
    }

    #[test]
    fn loss_is_deterministic_per_seed() {
        let pattern = |seed| {
            let mut g = LossGate::new(0.05, seed);
            (0..10_000).map(|_| g.lose()).collect::<Vec<_>>()
        };
        assert_eq!(pattern(7), pattern(7));
        assert_ne!(pattern(7), pattern(8));
        let lost = pattern(7).iter().filter(|x| **x).count() as f64;
        // 4-sigma binomial bound around 500.
        let sigma = (10_000.0f64 * 0.05 * 0.95).sqrt();
        assert!((lost - 500.0).abs() < 4.0 * sigma, "{lost}");
    }

    #[test]
    fn loss_extremes() {
        let mut never = LossGate::new(0.0, 1);
        let mut always = LossGate::new(1.0, 1);
        assert!((0..1000).all(|_| !never.lose()));
        assert!((0..1000).all(|_| always.lose()));
    }

    #[test]
    fn direction_model_draws_loss_before_queue() {
        let l = link(12_000_000, 1, 1500).loss(1.0);
        let mut m = DirectionModel::new(&l, 3);
        for _ in 0..5 {
            assert_eq!(m.offer(0, 1500), Fate::DropLoss);
        }
        let mut m = DirectionModel::new(&l.loss(0.0), 3);
        assert!(matches!(m.offer(0, 1500), Fate::Deliver { .. }));
        assert_eq!(m.offer(0, 1500), Fate::DropQueue);
    }

    #[test]
    fn zero_police_rate_is_disabled() {
        let mut p = crate::policer::Policer::new(&Link::unlimited().police(0, 0));
        assert!(!p.is_enabled());
        assert!((0..10_000).all(|i| p.conforms(i, 9000)));
        assert_eq!(p.tokens_bytes(0), 0);
        let mut m = DirectionModel::new(&link(0, 5, 0).police(0, 0), 1);
        assert!((0..1000).all(|i| matches!(m.offer(i, 1500), Fate::Deliver { .. })));
    }

    #[test]
    fn direction_model_polices_after_loss_and_before_queue() {
        // 12 Mbit/s with a 1500 B queue behind a policer with a 3000 B bucket.
        let l = link(12_000_000, 1, 1500).police(8_000_000, 3000);
        // Lost packets take no tokens.
        let mut m = DirectionModel::new(&l.loss(1.0), 3);
        assert!((0..5).all(|_| m.offer(0, 1500) == Fate::DropLoss));
        assert_eq!(m.policing.tokens_bytes(0, None), 3000);
        let mut m = DirectionModel::new(&l, 3);
        // Conforms and is queued; conforms (takes tokens) but the queue is
        // full; then the bucket is empty: dropped by the policer, before the
        // queue, which it takes no room in.
        assert!(matches!(m.offer(0, 1500), Fate::Deliver { .. }));
        assert_eq!(m.offer(0, 1500), Fate::DropQueue);
        assert_eq!(m.policing.tokens_bytes(0, None), 0);
        assert_eq!(m.offer(0, 1500), Fate::DropPolice);
        assert_eq!(m.bottleneck.backlog_bytes(0), 1500);
        // 1.5 ms later: refilled 1500 B, queue drained: delivered.
        assert!(matches!(m.offer(MS + MS / 2, 1500), Fate::Deliver { .. }));
    }
}
