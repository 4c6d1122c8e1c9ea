//! Optional aggregation labels (process, cgroup, local port, remote subnet)
//! with a cap on distinct label sets: past the cap, new sets fold into
//! `other`, so series never grow with the number of flows.

use std::collections::HashMap;
use std::net::IpAddr;

use crate::model::flow::Flow;

/// Which aggregation labels are on; all off by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Aggregation {
    /// Label `comm`: the owning process's command name.
    pub comm: bool,
    /// Label `cgroup`: the owning process's cgroup v2 id.
    pub cgroup: bool,
    /// Label `local_port`.
    pub local_port: bool,
    /// Label `remote_subnet`, with these prefix lengths for IPv4 and IPv6
    /// remotes, when set.
    pub remote_prefix: Option<(u8, u8)>,
    /// Label `workload`: the owner's pod, container, unit or cgroup
    /// ([`crate::model::workload::Workload::name`]).
    pub workload: bool,
}

/// The value every aggregation label takes past the cap.
pub const OTHER: &str = "other";

impl Aggregation {
    /// Names of the enabled labels, in a fixed order.
    pub fn names(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.comm {
            v.push("comm");
        }
        if self.cgroup {
            v.push("cgroup");
        }
        if self.local_port {
            v.push("local_port");
        }
        if self.remote_prefix.is_some() {
            v.push("remote_subnet");
        }
        if self.workload {
            v.push("workload");
        }
        v
    }

    /// The enabled labels' values for `flow`, in [`Aggregation::names`] order.
    pub fn values(&self, flow: &Flow) -> Vec<String> {
        let mut v = Vec::new();
        if self.comm {
            v.push(if flow.comm.is_empty() {
                "unknown".to_string()
            } else {
                flow.comm.clone()
            });
        }
        if self.cgroup {
            v.push(flow.cgroup_id.to_string());
        }
        if self.local_port {
            v.push(flow.local.port().to_string());
        }
        if let Some((v4, v6)) = self.remote_prefix {
            v.push(subnet(flow.remote.ip(), v4, v6));
        }
        if self.workload {
            let name = flow.workload.get().name();
            v.push(if name.is_empty() {
                "unknown".to_string()
            } else {
                name
            });
        }
        v
    }
}

/// `ip` masked to `v4` bits (IPv4) or `v6` bits (IPv6), as `net/len`.
pub fn subnet(ip: IpAddr, v4: u8, v6: u8) -> String {
    match ip {
        IpAddr::V4(addr) => {
            let p = v4.min(32);
            let mask = if p == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(p))
            };
            let net = std::net::Ipv4Addr::from(u32::from(addr) & mask);
            format!("{net}/{p}")
        }
        IpAddr::V6(addr) => {
            let p = u32::from(v6.min(128));
            let mask = if p == 0 { 0 } else { u128::MAX << (128 - p) };
            let net = std::net::Ipv6Addr::from(u128::from(addr) & mask);
            format!("{net}/{p}")
        }
    }
}

/// Admits label sets up to a cap; folds the rest into [`OTHER`]. A set
/// not used for the idle time given is forgotten ([`Limiter::expire`]),
/// which frees its place: on a client host `--label-local-port` sees a new
/// ephemeral port with every connection, and a cap that never forgot would
/// fill for good.
#[derive(Debug)]
pub struct Limiter {
    cap: usize,
    idle_ns: u64,
    /// The time uses are stamped with (ns, any monotonic origin).
    now_ns: u64,
    /// Admitted sets, with when each was last used.
    seen: HashMap<Vec<String>, u64>,
    /// Refused sets (folded into `other`), with when each was last seen:
    /// each is counted once in [`Limiter::overflowed`] until it expires.
    refused: HashMap<Vec<String>, u64>,
    /// Distinct label sets folded into `other` so far.
    pub overflowed: u64,
}

impl Limiter {
    /// A limiter admitting at most `cap` distinct sets, forgetting a set
    /// unused for `idle_ns` (0: never).
    pub fn new(cap: usize, idle_ns: u64) -> Limiter {
        Limiter {
            cap,
            idle_ns,
            now_ns: 0,
            seen: HashMap::new(),
            refused: HashMap::new(),
            overflowed: 0,
        }
    }

    /// Sets the time later uses are stamped with.
    pub fn set_now(&mut self, now_ns: u64) {
        self.now_ns = now_ns;
    }

    /// `values` if admitted, else every value replaced by [`OTHER`].
    pub fn admit(&mut self, values: Vec<String>) -> Vec<String> {
        if values.is_empty() {
            return values;
        }
        if let Some(t) = self.seen.get_mut(&values) {
            *t = self.now_ns;
            return values;
        }
        if self.seen.len() < self.cap {
            self.seen.insert(values.clone(), self.now_ns);
            return values;
        }
        let folded = values.iter().map(|_| OTHER.to_string()).collect();
        if self.refused.insert(values, self.now_ns).is_none() {
            self.overflowed += 1;
        }
        folded
    }

    /// Forgets the sets unused for the idle time as of the last
    /// [`Limiter::set_now`]; returns the admitted ones forgotten, whose series
    /// the caller removes.
    pub fn expire(&mut self) -> Vec<Vec<String>> {
        if self.idle_ns == 0 {
            return Vec::new();
        }
        let (now, idle) = (self.now_ns, self.idle_ns);
        let stale = |t: &u64| now.saturating_sub(*t) >= idle;
        self.refused.retain(|_, t| !stale(t));
        let gone: Vec<Vec<String>> = self
            .seen
            .iter()
            .filter(|(_, t)| stale(t))
            .map(|(v, _)| v.clone())
            .collect();
        for v in &gone {
            self.seen.remove(v);
        }
        gone
    }

    /// Distinct sets admitted.
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    /// Whether nothing was admitted yet.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}

/// The aggregation labels of per-flow metrics: which are on, and the cap
/// on the distinct sets they take.
#[derive(Debug)]
pub struct Labeller {
    agg: Aggregation,
    limiter: Limiter,
}

impl Labeller {
    /// Labels `agg`, at most `cap` distinct sets, each forgotten after
    /// `idle_ns` unused (0: never).
    pub fn new(agg: Aggregation, cap: usize, idle_ns: u64) -> Labeller {
        Labeller {
            agg,
            limiter: Limiter::new(cap, idle_ns),
        }
    }

    /// Names of the enabled labels ([`Aggregation::names`]).
    pub fn names(&self) -> Vec<&'static str> {
        self.agg.names()
    }

    /// Label values: `first`, then the admitted aggregation values for
    /// `flow` (`unknown` for each when the flow is not known).
    pub fn values(&mut self, first: &[&str], flow: Option<&Flow>) -> Vec<String> {
        let agg = match flow {
            Some(f) => self.limiter.admit(self.agg.values(f)),
            None => self
                .agg
                .names()
                .iter()
                .map(|_| "unknown".to_string())
                .collect(),
        };
        first.iter().map(|s| s.to_string()).chain(agg).collect()
    }

    /// Sets the time uses are stamped with (ns).
    pub fn set_now(&mut self, now_ns: u64) {
        self.limiter.set_now(now_ns);
    }

    /// The admitted sets unused for the idle time, now forgotten
    /// ([`Limiter::expire`]).
    pub fn expire(&mut self) -> Vec<Vec<String>> {
        self.limiter.expire()
    }

    /// Distinct label sets folded into `other` so far.
    pub fn overflowed(&self) -> u64 {
        self.limiter.overflowed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subnets() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(subnet(ip("192.0.2.77"), 24, 64), "192.0.2.0/24");
        assert_eq!(subnet(ip("192.0.2.77"), 0, 64), "0.0.0.0/0");
        assert_eq!(subnet(ip("192.0.2.77"), 40, 64), "192.0.2.77/32");
        assert_eq!(subnet(ip("2001:db8:1:2::7"), 24, 64), "2001:db8:1:2::/64");
        assert_eq!(subnet(ip("2001:db8:1:2::7"), 24, 32), "2001:db8::/32");
    }

    #[test]
    fn cap_folds_into_other() {
        let mut l = Limiter::new(2, 0);
        let v = |s: &str| vec![s.to_string(), "1".to_string()];
        assert_eq!(l.admit(v("a")), v("a"));
        assert_eq!(l.admit(v("b")), v("b"));
        assert_eq!(l.admit(v("a")), v("a"));
        assert_eq!(l.admit(v("c")), vec!["other", "other"]);
        // Sets are counted, not assignments.
        assert_eq!(l.admit(v("c")), vec!["other", "other"]);
        assert_eq!(l.overflowed, 1);
        assert_eq!(l.admit(v("d")), vec!["other", "other"]);
        assert_eq!(l.overflowed, 2);
        assert_eq!(l.len(), 2);
        // Without an idle time nothing is forgotten.
        l.set_now(u64::MAX);
        assert!(l.expire().is_empty());
        assert!(Limiter::new(0, 0).admit(Vec::new()).is_empty());
    }

    #[test]
    fn idle_sets_are_forgotten_and_free_their_place() {
        const MIN: u64 = 60_000_000_000;
        let mut l = Limiter::new(2, 10 * MIN);
        let v = |s: &str| vec![s.to_string()];
        l.set_now(0);
        l.admit(v("40001"));
        l.admit(v("40002"));
        assert_eq!(l.admit(v("40003")), v("other"));
        // 40002 stays in use; 40001 and the refused 40003 are not seen again.
        l.set_now(6 * MIN);
        l.admit(v("40002"));
        l.set_now(10 * MIN);
        assert_eq!(l.expire(), vec![v("40001")]);
        assert_eq!(l.len(), 1);
        // Its place is free, and the refused set is counted again if it
        // is refused again after it expired.
        assert_eq!(l.admit(v("40004")), v("40004"));
        assert_eq!(l.admit(v("40003")), v("other"));
        assert_eq!(l.overflowed, 2);
        l.set_now(16 * MIN);
        let mut gone = l.expire();
        gone.sort();
        assert_eq!(gone, vec![v("40002")]);
    }

    #[test]
    fn an_ownerless_flow_is_unknown_not_empty() {
        // No owner yet (an accepted flow before its first read) and no
        // workload found for its cgroup: docs/metrics.md says `unknown`.
        let flow = crate::testkit::sample::SampleBuilder::new(1).flow();
        assert!(flow.comm.is_empty() && flow.workload.get().name().is_empty());
        let a = Aggregation {
            comm: true,
            workload: true,
            ..Aggregation::default()
        };
        assert_eq!(a.values(&flow), vec!["unknown", "unknown"]);
    }

    #[test]
    fn names_follow_flags() {
        let a = Aggregation {
            comm: true,
            local_port: true,
            remote_prefix: Some((24, 64)),
            ..Aggregation::default()
        };
        assert_eq!(a.names(), vec!["comm", "local_port", "remote_subnet"]);
        assert!(Aggregation::default().names().is_empty());
    }
}
