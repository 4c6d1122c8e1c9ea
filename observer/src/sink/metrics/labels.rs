//! Optional aggregation labels (process, cgroup, local port, remote subnet)
//! with a cap on distinct label sets: past the cap, new sets fold into
//! `other`, so series never grow with the number of flows.

use std::collections::HashSet;
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

/// Admits label sets up to a cap; folds the rest into [`OTHER`].
#[derive(Debug)]
pub struct Limiter {
    cap: usize,
    seen: HashSet<Vec<String>>,
    /// Label sets folded into `other` so far.
    pub overflowed: u64,
}

impl Limiter {
    /// A limiter admitting at most `cap` distinct sets.
    pub fn new(cap: usize) -> Limiter {
        Limiter {
            cap,
            seen: HashSet::new(),
            overflowed: 0,
        }
    }

    /// `values` if admitted, else every value replaced by [`OTHER`].
    pub fn admit(&mut self, values: Vec<String>) -> Vec<String> {
        if values.is_empty() || self.seen.contains(&values) {
            return values;
        }
        if self.seen.len() < self.cap {
            self.seen.insert(values.clone());
            return values;
        }
        self.overflowed += 1;
        values.iter().map(|_| OTHER.to_string()).collect()
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
    /// Labels `agg`, at most `cap` distinct sets.
    pub fn new(agg: Aggregation, cap: usize) -> Labeller {
        Labeller {
            agg,
            limiter: Limiter::new(cap),
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

    /// Label sets folded into `other` so far.
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
        let mut l = Limiter::new(2);
        let v = |s: &str| vec![s.to_string(), "1".to_string()];
        assert_eq!(l.admit(v("a")), v("a"));
        assert_eq!(l.admit(v("b")), v("b"));
        assert_eq!(l.admit(v("a")), v("a"));
        assert_eq!(l.admit(v("c")), vec!["other", "other"]);
        assert_eq!(l.overflowed, 1);
        assert_eq!(l.len(), 2);
        assert!(Limiter::new(0).admit(Vec::new()).is_empty());
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
