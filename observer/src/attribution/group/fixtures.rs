//! Test flows for the group tests: a flow with its verdict over an
//! interval, built from the figures a group reads (the verdict is given;
//! the window what-if is the engine's own arithmetic).

use std::time::{Duration, UNIX_EPOCH};

use super::{Group, GroupBy, group};
use crate::attribution::{Attribution, Bounds, Config, Evidence, Side, Verdict, what_if};
use crate::model::flow::{Flow, Stamp};
use crate::testkit::sample::{SampleBuilder, v4};

/// One flow of a group test, over `secs` seconds from `start_s`.
#[derive(Clone, Copy)]
pub(crate) struct F {
    pub(crate) remote: [u8; 16],
    pub(crate) netns: u32,
    pub(crate) pid: u32,
    pub(crate) comm: &'static str,
    /// Congestion control.
    pub(crate) cc: &'static str,
    pub(crate) side: Side,
    pub(crate) verdict: Verdict,
    pub(crate) rule: &'static str,
    /// Its rate over the interval (bits/s).
    pub(crate) rate_bps: f64,
    pub(crate) start_s: f64,
    pub(crate) secs: f64,
    pub(crate) min_rtt_us: u32,
    /// Mean srtt (the receiver RTT for a download, µs).
    pub(crate) srtt_us: u32,
    /// What the path has shown it (delivery-rate max, or burst rate).
    pub(crate) shown_bps: f64,
    /// A download's share of bytes in bursts at `shown_bps` (a window's
    /// bursts at the link's rate: most of them).
    pub(crate) burst_share: f64,
    /// The binding window (bytes) and its bounds, for window verdicts.
    pub(crate) window: Option<(u64, Bounds)>,
    pub(crate) retransmits: u32,
    pub(crate) ooo: u32,
    pub(crate) rcvbuf: u32,
    pub(crate) rcvbuf_locked: bool,
    pub(crate) tcp_rmem_max: u32,
}

impl Default for F {
    fn default() -> Self {
        F {
            remote: v4(10, 0, 0, 2),
            netns: 4_026_531_840,
            pid: 100,
            comm: "iperf3",
            cc: "cubic",
            side: Side::Sender,
            verdict: Verdict::Path,
            rule: "full_bottleneck",
            rate_bps: 10e6,
            start_s: 0.0,
            secs: 10.0,
            min_rtt_us: 104_000,
            srtt_us: 105_000,
            shown_bps: 0.0,
            burst_share: 0.6,
            window: None,
            retransmits: 0,
            ooo: 0,
            rcvbuf: 6_291_456,
            rcvbuf_locked: false,
            tcp_rmem_max: 6_291_456,
        }
    }
}

/// Seconds after an arbitrary epoch, as a stamp.
fn at(s: f64) -> Stamp {
    Stamp(UNIX_EPOCH + Duration::from_secs_f64(1_800_000_000.0 + s))
}

impl F {
    /// The flow and its attribution.
    pub(crate) fn build(&self, cookie: u64) -> (Flow, Attribution) {
        let mut flow = SampleBuilder::new(cookie)
            .ends(v4(10, 0, 0, 1), 40_000 + cookie as u16, self.remote, 5201)
            .comm(self.comm)
            .pid(self.pid)
            .flow();
        flow.netns = self.netns;
        flow.cc = self.cc.to_string();
        flow.first_seen = at(self.start_s);
        flow.last_seen = at(self.start_s + self.secs);
        flow.closed = true;
        flow.rcvbuf = self.rcvbuf;
        flow.rcvbuf_locked = self.rcvbuf_locked;
        flow.tcp_rmem_max = self.tcp_rmem_max;
        flow.wscale_ok = true;
        let bytes = (self.rate_bps * self.secs / 8.0).round() as u64;
        let mut ev = Evidence {
            interval_us: (self.secs * 1e6) as u64,
            min_rtt_us: self.min_rtt_us,
            srtt_us: self.srtt_us,
            queue_delay_us: self.srtt_us.saturating_sub(self.min_rtt_us),
            retransmits: self.retransmits,
            mss: 1448,
            ..Evidence::default()
        };
        match self.side {
            Side::Sender => {
                ev.bytes_acked = bytes;
                ev.rate_bps = self.rate_bps;
                ev.delivery_rate_max_bps = self.shown_bps as u64;
            }
            Side::Receiver => {
                ev.bytes_received = bytes;
                ev.recv_rate_bps = self.rate_bps;
                ev.receiver_rtt_us = self.srtt_us;
                ev.receive.base_rtt_us = self.min_rtt_us;
                ev.receive.rtt_mean_us = f64::from(self.srtt_us);
                ev.receive.queue_delay_us = self.srtt_us.saturating_sub(self.min_rtt_us);
                ev.receive.burst_rate_bps = self.shown_bps;
                ev.receive.burst_share = self.burst_share;
                ev.receive.ooo_packets = self.ooo;
            }
        }
        let cfg = Config::default();
        let what_if = self
            .window
            .map(|(w, bounds)| what_if(w, self.srtt_us, self.rate_bps, bounds, &cfg));
        let att = Attribution {
            verdict: self.verdict,
            rule: self.rule,
            confidence: 0.8,
            side: self.side,
            explanation: String::new(),
            evidence: ev,
            what_if,
            also: None,
        };
        (flow, att)
    }
}

/// The flows of `fs`, built (cookies 1, 2, ...).
pub(crate) fn built(fs: &[F]) -> Vec<(Flow, Attribution)> {
    fs.iter()
        .enumerate()
        .map(|(i, f)| f.build(i as u64 + 1))
        .collect()
}

/// `built` as the pairs `group` takes.
pub(crate) fn pairs(b: &[(Flow, Attribution)]) -> Vec<(&Flow, &Attribution)> {
    b.iter().map(|(f, a)| (f, a)).collect()
}

/// The groups of `fs`, built and grouped `by`.
pub(crate) fn judge_all(fs: &[F], by: GroupBy) -> Vec<Group> {
    let b = built(fs);
    group(&pairs(&b), by, &Config::default())
}

/// The one group of `fs` by peer (fails unless there is one).
pub(crate) fn only_group(fs: &[F]) -> Group {
    let mut g = judge_all(fs, GroupBy::Peer);
    assert_eq!(g.len(), 1, "{g:?}");
    g.remove(0)
}

/// A download at the path's bottleneck, `rate` bits/s, with `queue_us`
/// of queue over a 40 ms path whose bursts showed 20 Mbit/s.
pub(crate) fn at_bottleneck(rate: f64, queue_us: u32) -> F {
    F {
        side: Side::Receiver,
        verdict: Verdict::Path,
        rule: "shared_bottleneck",
        rate_bps: rate,
        min_rtt_us: 40_000,
        srtt_us: 40_000 + queue_us,
        shown_bps: 20e6,
        ..F::default()
    }
}
