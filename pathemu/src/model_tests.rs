//! The whole direction model step by step: the shaper, the oversize and
//! outage drops, jitter and reordering, each on its shape and just outside
//! it, and in its place in the order [`crate::Link`] documents.

use std::time::Duration;

use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use super::{Bottleneck, DirectionModel, Fate, LossGate};
use crate::config::Link;

const MS: u64 = 1_000_000;

fn link(rate_bps: u64, delay_ms: u64, queue_bytes: u64) -> Link {
    Link::unlimited()
        .rate(rate_bps)
        .delay(Duration::from_millis(delay_ms))
        .queue(queue_bytes)
}

/// The fates of `sizes` offered 1 ms apart from 0 (ns).
fn fates(m: &mut DirectionModel, sizes: &[u64]) -> Vec<Fate> {
    sizes
        .iter()
        .enumerate()
        .map(|(i, size)| m.offer(i as u64 * MS, *size))
        .collect()
}

fn deliver(departs_ns: u64, at_ns: u64) -> Fate {
    Fate::Deliver {
        departs_ns,
        at_ns,
        reordered: false,
    }
}

#[test]
fn original_options_alone_give_the_original_model() {
    // Loss, policer off, bottleneck and delay, fed an irregular load:
    // the model equals loss-then-`Bottleneck::new` exactly, so a link
    // without the new options behaves as before them.
    let l = link(10_000_000, 7, 20_000).loss(0.2);
    let mut m = DirectionModel::new(&l, 11);
    let mut loss = LossGate::new(0.2, 11);
    let mut b = Bottleneck::new(&l);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let mut t = 0;
    for _ in 0..20_000 {
        t += rng.random_range(0..400_000u64);
        let size = rng.random_range(40..=1500u64);
        let want = if loss.lose() {
            Fate::DropLoss
        } else {
            b.offer(t, size)
        };
        assert_eq!(m.offer(t, size), want);
    }
    // And the unlimited link only forwards, at once.
    let mut m = DirectionModel::new(&Link::unlimited(), 1);
    assert_eq!(m.offer(5, 9000), deliver(5, 5));
}

#[test]
fn shaper_slower_than_the_bottleneck_queues_and_drops_there() {
    // Bottleneck 12 Mbit/s (1 ms per 1500 B), unlimited queue; shaper
    // 6 Mbit/s (2 ms per 1500 B) with a 3000 B queue; 10 ms delay.
    let l = link(12_000_000, 10, 0).shaper(6_000_000, 3000);
    let mut m = DirectionModel::new(&l, 1);
    let v: Vec<_> = (0..5).map(|_| m.offer(0, 1500)).collect();
    // The bottleneck sends at 1, 2, 3, 4, 5 ms. At the shaper: p1 leaves
    // at 3 ms; p2 (at 2 ms: 750 B + 1500 B waiting) at 5 ms; p3 (at
    // 3 ms: 1500 + 1500 = 3000 B, just fits) at 7 ms; p4 (at 4 ms: 2250 +
    // 1500 > 3000) is dropped; p5 (at 5 ms: 1500 + 1500) leaves at 9 ms.
    assert_eq!(
        v,
        vec![
            deliver(3 * MS, 13 * MS),
            deliver(5 * MS, 15 * MS),
            deliver(7 * MS, 17 * MS),
            Fate::DropShaper,
            deliver(9 * MS, 19 * MS),
        ]
    );
    // One byte less of shaper queue: p3 no longer fits.
    let mut m = DirectionModel::new(&l.shaper(6_000_000, 2999), 1);
    let v: Vec<_> = (0..3).map(|_| m.offer(0, 1500)).collect();
    assert_eq!(v[2], Fate::DropShaper);
    // The shaper's queue, not the bottleneck's, holds the backlog.
    assert_eq!(m.bottleneck.backlog_bytes(3 * MS), 0);
    assert_eq!(m.shaper.backlog_bytes(3 * MS), 1500);
}

#[test]
fn shaper_faster_than_the_bottleneck_adds_only_its_serialisation() {
    // Bottleneck 6 Mbit/s, shaper 12 Mbit/s with room for one packet:
    // each packet meets an idle shaper and leaves 1 ms after the bottleneck.
    let l = link(6_000_000, 0, 0).shaper(12_000_000, 1500);
    let mut m = DirectionModel::new(&l, 1);
    for i in 1..=10 {
        assert_eq!(
            m.offer(0, 1500),
            deliver((2 * i + 1) * MS, (2 * i + 1) * MS)
        );
    }
    // Rate 0 is no shaper: the same fates as without one.
    let base = link(12_000_000, 3, 4500);
    let sizes = [1500, 1500, 1500, 1500, 700, 1500, 1500, 1500, 1500, 1500];
    let a = fates(&mut DirectionModel::new(&base, 1), &sizes);
    let b = fates(&mut DirectionModel::new(&base.shaper(0, 10), 1), &sizes);
    assert_eq!(a, b);
}

#[test]
fn shaper_long_run_rate_is_the_slower_stage() {
    // Offer 2x the shaper's rate for 1 s to a faster bottleneck.
    let rate = 10_000_000u64;
    let l = link(4 * rate, 0, 0).shaper(rate, 15_000);
    let mut m = DirectionModel::new(&l, 1);
    let gap = Bottleneck::stage(rate, 0).serialisation_ns(1000) / 2;
    let (mut delivered, mut dropped, mut last) = (0u64, 0u64, 0u64);
    let mut t = 0;
    while t < 1_000 * MS {
        match m.offer(t, 1000) {
            Fate::Deliver { departs_ns, .. } => {
                delivered += 1000;
                last = departs_ns;
            }
            Fate::DropShaper => dropped += 1,
            other => panic!("{other:?}"),
        }
        t += gap;
    }
    let expect = rate / 8 + 15_000;
    assert!(
        delivered.abs_diff(expect) <= 2000,
        "{delivered} vs {expect}"
    );
    assert!(dropped > 1000);
    assert!(last > 1_000 * MS);
}

#[test]
fn oversize_drop_comes_first_and_draws_nothing() {
    let l = link(12_000_000, 1, 0).drop_over(1400);
    let mut m = DirectionModel::new(&l, 1);
    assert!(matches!(m.offer(0, 1400), Fate::Deliver { .. }));
    assert_eq!(m.offer(0, 1401), Fate::DropOversize);
    // Before loss: it is an oversize drop even when everything is lost.
    let mut m = DirectionModel::new(&l.loss(1.0), 1);
    assert_eq!(m.offer(0, 1401), Fate::DropOversize);
    assert_eq!(m.offer(0, 1400), Fate::DropLoss);
    // It takes no loss draw, tokens or queue: the small packets' fates are
    // those of the same packets without the big ones among them.
    let l = link(12_000_000, 1, 6000)
        .loss(0.3)
        .police(24_000_000, 6000)
        .drop_over(1000);
    let mixed: Vec<u64> = (0..400)
        .map(|i| if i % 3 == 0 { 1500 } else { 900 })
        .collect();
    let mut m = DirectionModel::new(&l, 8);
    let mut small = DirectionModel::new(&l, 8);
    let mut t = 0;
    for size in mixed {
        let f = m.offer(t, size);
        if size > 1000 {
            assert_eq!(f, Fate::DropOversize);
        } else {
            assert_eq!(f, small.offer(t, size));
        }
        t += MS / 4;
    }
}

#[test]
fn outage_drops_before_loss_and_its_clock_starts_at_the_first_packet() {
    // Dark 30 ms every 100 ms; everything else is lost.
    let l = Link::unlimited()
        .outage(Duration::from_millis(100), Duration::from_millis(30))
        .drop_over(1000)
        .loss(1.0);
    let mut m = DirectionModel::new(&l, 1);
    // The first packet, an oversize one, starts the clock at 5 ms.
    assert_eq!(m.offer(5 * MS, 1500), Fate::DropOversize);
    assert_eq!(m.offer(105 * MS - 1, 500), Fate::DropLoss);
    assert_eq!(m.offer(105 * MS, 500), Fate::DropOutage);
    // An oversize packet in an outage counts as oversize (step 1 first).
    assert_eq!(m.offer(110 * MS, 1500), Fate::DropOversize);
    assert_eq!(m.offer(135 * MS - 1, 500), Fate::DropOutage);
    assert_eq!(m.offer(135 * MS, 500), Fate::DropLoss);
    // Without loss, packets between outages go through.
    let mut m = DirectionModel::new(&l.loss(0.0), 1);
    let f = fates(&mut m, &[500; 300]);
    let dark: Vec<usize> = (0..300).filter(|i| f[*i] == Fate::DropOutage).collect();
    let want: Vec<usize> = (0..300).filter(|i| i % 100 < 30 && *i >= 100).collect();
    assert_eq!(dark, want);
}

#[test]
fn jitter_keeps_order_and_stays_in_range() {
    let l = link(0, 10, 0).jitter(Duration::from_millis(4));
    let mut m = DirectionModel::new(&l, 2);
    let f = fates(&mut m, &[1000; 5000]);
    let mut prev = 0;
    for (i, fate) in f.iter().enumerate() {
        let Fate::Deliver {
            departs_ns,
            at_ns,
            reordered,
        } = *fate
        else {
            panic!("{fate:?}");
        };
        let sent = i as u64 * MS;
        assert_eq!(departs_ns, sent);
        assert!(!reordered);
        assert!(at_ns >= prev, "{i}: order kept");
        assert!(at_ns >= sent + 10 * MS);
        assert!(at_ns <= sent + 14 * MS || at_ns == prev, "{i}");
        prev = at_ns;
    }
    // Some packets draw close to 0, some close to the full 4 ms.
    let extra = |i: usize| match f[i] {
        Fate::Deliver { at_ns, .. } => at_ns - i as u64 * MS - 10 * MS,
        _ => 0,
    };
    assert!((0..5000).any(|i| extra(i) < MS / 10));
    assert!((0..5000).any(|i| extra(i) > 4 * MS - MS / 10));
}

#[test]
fn held_back_packets_do_not_hold_back_the_ones_behind() {
    // Packets 1 ms apart, a third held back by 5 ms, with jitter.
    let l = link(0, 10, 0)
        .jitter(Duration::from_micros(300))
        .reorder(0.3, Duration::from_millis(5));
    let mut m = DirectionModel::new(&l, 6);
    let f = fates(&mut m, &[1000; 10_000]);
    let mut held = 0;
    let mut floor = 0;
    let mut overtaken = 0;
    for (i, fate) in f.iter().enumerate() {
        let Fate::Deliver {
            at_ns, reordered, ..
        } = *fate
        else {
            panic!("{fate:?}");
        };
        let sent = i as u64 * MS;
        if reordered {
            held += 1;
            // Its own jittered time plus the hold.
            assert!((sent + 15 * MS..=sent + 15 * MS + 300_000).contains(&at_ns));
            // The next packet, if not held, is delivered before it.
            if let Some(Fate::Deliver {
                at_ns: next,
                reordered: false,
                ..
            }) = f.get(i + 1)
            {
                assert!(*next < at_ns);
                overtaken += 1;
            }
        } else {
            // Packets not held keep their order among themselves, and
            // a held one before them did not raise their floor.
            assert!(at_ns >= floor);
            assert!(at_ns <= sent + 10 * MS + 300_000 || at_ns == floor, "{i}");
            floor = at_ns;
        }
    }
    let sigma = (10_000.0f64 * 0.3 * 0.7).sqrt();
    assert!((f64::from(held) - 3000.0).abs() < 4.0 * sigma, "{held}");
    assert!(overtaken > 1500, "{overtaken}");
}

#[test]
fn jitter_and_reordering_leave_the_loss_pattern_alone() {
    let base = link(20_000_000, 5, 0).loss(0.25);
    let with = base
        .jitter(Duration::from_millis(2))
        .reorder(0.2, Duration::from_millis(3));
    let lost = |l: &Link| {
        let mut m = DirectionModel::new(l, 77);
        fates(&mut m, &[1200; 5000])
            .iter()
            .map(|f| *f == Fate::DropLoss)
            .collect::<Vec<_>>()
    };
    assert_eq!(lost(&base), lost(&with));
    // The reorder draw is a stream of its own, not the loss stream's
    // draws: at 50% each, the held pattern differs from the loss pattern.
    let l = link(0, 0, 0).reorder(0.5, Duration::from_millis(1));
    let mut m = DirectionModel::new(&l, 77);
    let held: Vec<bool> = fates(&mut m, &[100; 2000])
        .iter()
        .map(|f| {
            matches!(
                f,
                Fate::Deliver {
                    reordered: true,
                    ..
                }
            )
        })
        .collect();
    let mut lg = LossGate::new(0.5, 77);
    let lost: Vec<bool> = (0..2000).map(|_| lg.lose()).collect();
    assert_ne!(held, lost);
    let same = held.iter().zip(&lost).filter(|(a, b)| a == b).count();
    assert!((800..1200).contains(&same), "{same} of 2000 agree");
}
