//! [`FlowSample`]s for tests, built field by field from an established
//! flow with nothing counted yet.

use observer_common::FlowSample;

use crate::model::{clock::Clock, flow::Flow};

/// A second in nanoseconds.
const SEC: u64 = 1_000_000_000;

/// An IPv4 address as FlowSample carries it (IPv4-mapped IPv6).
pub fn v4(a: u8, b: u8, c: u8, d: u8) -> [u8; 16] {
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d]
}

/// Builds a [`FlowSample`]: `SampleBuilder::new(cookie)` is an established
/// flow (state 1, mss 1448) with every other field zero; each method sets
/// some fields, [`SampleBuilder::build`] returns the sample. Fields without
/// a method are set on the built sample.
#[derive(Clone, Copy)]
pub struct SampleBuilder(FlowSample);

impl SampleBuilder {
    /// An established flow (TCP_ESTABLISHED, mss 1448) with socket cookie
    /// `cookie`, nothing else set.
    pub fn new(cookie: u64) -> SampleBuilder {
        let mut s = FlowSample::ZERO;
        s.cookie = cookie;
        s.state = 1;
        s.mss = 1448;
        SampleBuilder(s)
    }

    /// Reference A's sender at second `t_s` of its life (born at 100 s): an
    /// 80,480 B window at 105 ms srtt (104 ms min), cwnd 500, 766,476 B
    /// acked a second (6.13 Mbit/s), busy the whole time and
    /// rwnd-limited 56% of it (in 4 ms jiffies).
    pub fn window_bound(cookie: u64, t_s: u64) -> SampleBuilder {
        let mut b = SampleBuilder::new(cookie).seen(100 * SEC, (100 + t_s) * SEC);
        let s = &mut b.0;
        s.bytes_acked = t_s * 766_476;
        s.srtt_us = 105_000;
        s.min_rtt_us = 104_000;
        s.snd_wnd = 80_480;
        s.snd_cwnd = 500;
        s.chrono_stat = [
            (t_s * 250 * 44 / 100) as u32,
            (t_s * 250 * 56 / 100) as u32,
            0,
        ];
        b
    }

    /// Local and remote addresses (16 bytes, [`v4`] for IPv4) and ports.
    pub fn ends(mut self, saddr: [u8; 16], sport: u16, daddr: [u8; 16], dport: u16) -> Self {
        self.0.saddr = saddr;
        self.0.sport = sport;
        self.0.daddr = daddr;
        self.0.dport = dport;
        self
    }

    /// The owning process's name (`comm`, at most 16 bytes).
    pub fn comm(mut self, comm: &str) -> Self {
        self.0.comm = [0; 16];
        self.0.comm[..comm.len()].copy_from_slice(comm.as_bytes());
        self
    }

    /// The owning process's pid.
    pub fn pid(mut self, pid: u32) -> Self {
        self.0.pid = pid;
        self
    }

    /// First and last seen (monotonic ns).
    pub fn seen(mut self, first_ns: u64, last_ns: u64) -> Self {
        self.0.first_seen_ns = first_ns;
        self.0.last_seen_ns = last_ns;
        self
    }

    /// The kernel's jiffies at the read.
    pub fn jiffies(mut self, jiffies: u64) -> Self {
        self.0.jiffies = jiffies;
        self
    }

    /// Closed when last seen (TCP_CLOSE), if `closed`.
    pub fn closed_if(mut self, closed: bool) -> Self {
        if closed {
            self.0.closed_ns = self.0.last_seen_ns;
            self.0.state = 7;
        }
        self
    }

    /// The sample.
    pub fn build(self) -> FlowSample {
        self.0
    }

    /// The sample as a [`Flow`] read at 0 ns, 250 Hz jiffies.
    pub fn flow(self) -> Flow {
        Flow::from_sample(&self.0, &Clock::fixed(0, 250), 0)
    }
}
