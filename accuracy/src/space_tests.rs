//! The draw: one situation per (seed, cc, index), in the documented ranges.

use crate::space::*;

#[test]
fn a_situation_depends_on_seed_cc_and_index_only() {
    assert_eq!(draw(7, Cc::Cubic, 12), draw(7, Cc::Cubic, 12));
    assert_ne!(draw(7, Cc::Cubic, 12), draw(8, Cc::Cubic, 12));
    assert_ne!(draw(7, Cc::Cubic, 12).rtt_us, draw(7, Cc::Bbr, 12).rtt_us);
}

#[test]
fn draws_stay_in_the_documented_ranges() {
    let mut kinds = std::collections::BTreeMap::new();
    for i in 0..2_000 {
        let s = draw(1, Cc::Cubic, i);
        *kinds.entry(s.kind).or_insert(0) += 1;
        assert!((SECS_MIN..=SECS_MAX).contains(&s.secs), "{s:?}");
        if s.kind == Kind::Lan {
            assert_eq!((s.rtt_us, s.link_bps), (0, 0));
            continue;
        }
        assert!((RTT_MIN_US..=RTT_MAX_US).contains(&s.rtt_us), "{s:?}");
        assert!((LINK_MIN_BPS..=LINK_MAX_BPS).contains(&s.link_bps), "{s:?}");
        let bdp = bytes_in(s.link_bps as f64, s.rtt_us);
        assert!(bdp <= BDP_MAX_BYTES as f64 * 1.001, "{s:?}");
        assert!(s.queue_bytes >= MIN_QUEUE_BYTES);
        assert!(s.queue_bytes as f64 <= (bdp * QUEUE_BDP.1).max(MIN_QUEUE_BYTES as f64) + 1.0);
        assert!(s.loss_fwd <= LOSS_RANGE.1 && s.loss_rev <= LOSS_RANGE.1);
        if let Some((bps, bucket)) = s.police {
            assert!(bps < s.link_bps && bucket >= MIN_QUEUE_BYTES);
        }
        if let Some(Stall::Outage { for_ms, every_ms }) = s.stall {
            assert!(2 * for_ms <= every_ms);
        }
    }
    // Stratified: every kind an equal share.
    assert_eq!(kinds.len(), Kind::ALL.len());
    assert!(
        kinds.values().all(|&n| (166..=167).contains(&n)),
        "{kinds:?}"
    );
}

#[test]
fn one_hundred_per_cc_give_every_kind_at_least_eight() {
    for cc in [Cc::Cubic, Cc::Bbr] {
        let mut n = std::collections::BTreeMap::new();
        for i in 0..100 {
            *n.entry(draw(3, cc, i).kind).or_insert(0) += 1;
        }
        assert!(n.values().all(|&k| k >= 8), "{n:?}");
    }
}
