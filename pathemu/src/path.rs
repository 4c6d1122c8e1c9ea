//! [`Path`]: the guard that owns the two namespaces, their TUN devices and
//! the relay between them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::OwnedFd;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::config::PathConfig;
use crate::error::Result;
use crate::model::DirectionModel;
use crate::netns::{self, Namespace};
use crate::relay::{DirectionSpec, Relay};
use crate::stats::{LinkCounters, LinkStats};
use crate::tun::{self, Ends};
use crate::veth;

/// Number of the next path created by this process (the `<n>` in names and addresses).
static NEXT_INDEX: AtomicU32 = AtomicU32::new(0);

/// One end of the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// Namespace A, the sending side of the forward direction (address `10.77.<n>.1`).
    A,
    /// Namespace B, the receiving side of the forward direction (address `10.77.<n>.2`).
    B,
}

impl Side {
    /// The other end.
    pub fn peer(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }
}

/// One direction of the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// From A to B (configured by [`PathConfig::forward`]).
    Forward,
    /// From B to A (configured by [`PathConfig::reverse`]).
    Reverse,
}

/// An emulated path between two fresh network namespaces, A and B, joined by
/// a TUN device in each and a relay in this process that applies the link
/// model of [`crate::Link`] per direction (delay, bottleneck rate and
/// drop-tail queue, shaper, token-bucket policer, random loss, jitter,
/// reordering, outages, a PMTU black hole); or, with
/// [`PathConfig::veth`](crate::PathConfig::veth()), by a plain veth pair
/// and the kernel's own forwarding, with no model and no relay.
///
/// Dropping the `Path` (also during a panic) kills every process still in
/// either namespace, stops the relay threads, and deletes both namespaces.
#[derive(Debug)]
pub struct Path {
    relay: Option<Relay>,
    tuns: Option<(Arc<OwnedFd>, Arc<OwnedFd>)>,
    ns_a: Namespace,
    ns_b: Namespace,
    index: u32,
    config: PathConfig,
    ends_a: Ends,
    forward: Arc<LinkCounters>,
    reverse: Arc<LinkCounters>,
}

impl Path {
    /// Builds a path: sweeps away stale `pe-` namespaces of dead processes,
    /// creates namespaces `pe-<pid>-<n>-a` and `-b`, a TUN `pe0` in each
    /// (MTU `config.mtu`, `lo` up, addresses `10.77.<n mod 256>.1` and `.2`
    /// /32 with peer, and with `config.ipv6` `fd77:<n>::1` and `::2` /128
    /// with peer), and starts the relay threads. With `config.veth` the
    /// two ends are a veth pair named `pe0`, configured the same way, and
    /// no relay runs. Needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN).
    ///
    /// # Errors
    /// [`crate::Error::InvalidConfig`] for a configuration out of range
    /// (before anything is created), else the failed system call or `ip` command.
    pub fn new(config: PathConfig) -> Result<Path> {
        config.validate()?;
        netns::sweep_stale();
        let index = NEXT_INDEX.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let ns_a = Namespace::create(&netns::make_name(pid, index, "a"))?;
        let ns_b = Namespace::create(&netns::make_name(pid, index, "b"))?;
        let tuns = if config.veth {
            veth::create_pair(&ns_a, &ns_b)?;
            None
        } else {
            Some((
                Arc::new(tun::create_tun(&ns_a)?),
                Arc::new(tun::create_tun(&ns_b)?),
            ))
        };

        let octet = u8::try_from(index % 256).unwrap_or(0);
        let v4 = |host| Ipv4Addr::new(10, 77, octet, host);
        let hextet = u16::try_from(index % 65_536).unwrap_or(0);
        let v6 = |host| Ipv6Addr::new(0xfd77, hextet, 0, 0, 0, 0, 0, host);
        let ends_a = Ends {
            local4: v4(1),
            peer4: v4(2),
            v6: config.ipv6.then(|| (v6(1), v6(2))),
        };
        let ends_b = Ends {
            local4: v4(2),
            peer4: v4(1),
            v6: config.ipv6.then(|| (v6(2), v6(1))),
        };

        let forward = Arc::new(LinkCounters::default());
        let reverse = Arc::new(LinkCounters::default());
        let mut path = Path {
            relay: None,
            tuns: tuns.clone(),
            ns_a,
            ns_b,
            index,
            config,
            ends_a,
            forward,
            reverse,
        };
        tun::configure(&path.ns_a, &ends_a, path.config.mtu)?;
        tun::configure(&path.ns_b, &ends_b, path.config.mtu)?;
        let Some((tun_a, tun_b)) = tuns else {
            // A veth path: the kernel forwards; nothing to relay.
            return Ok(path);
        };
        let specs = vec![
            DirectionSpec {
                name: "pathemu-fwd",
                input: Arc::clone(&tun_a),
                output: Arc::clone(&tun_b),
                model: DirectionModel::new(&path.config.forward, path.config.seed),
                counters: Arc::clone(&path.forward),
                mtu: path.config.mtu,
            },
            DirectionSpec {
                name: "pathemu-rev",
                input: tun_b,
                output: tun_a,
                model: DirectionModel::new(&path.config.reverse, path.config.reverse_seed()),
                counters: Arc::clone(&path.reverse),
                mtu: path.config.mtu,
            },
        ];
        path.relay = Some(Relay::start(specs, path.config.realtime)?);
        Ok(path)
    }

    /// The configuration this path was built with.
    pub fn config(&self) -> &PathConfig {
        &self.config
    }

    /// This path's number `<n>` within the process (used in names and addresses).
    pub fn index(&self) -> u32 {
        self.index
    }

    fn ns(&self, side: Side) -> &Namespace {
        match side {
            Side::A => &self.ns_a,
            Side::B => &self.ns_b,
        }
    }

    /// The network namespace name of `side`, e.g. `pe-1234-0-a`.
    pub fn netns_name(&self, side: Side) -> &str {
        self.ns(side).name()
    }

    /// The inode number of `side`'s network namespace (`stat -L /run/netns/NAME`,
    /// equal to the inode of `/proc/<pid>/ns/net` of processes inside it).
    pub fn netns_inode(&self, side: Side) -> u64 {
        self.ns(side).inode()
    }

    /// The name of the interface in each namespace (`pe0`): the TUN device,
    /// or on a veth path ([`PathConfig::veth`](field@PathConfig::veth)) the veth end.
    pub fn tun_name(&self) -> &'static str {
        tun::TUN_NAME
    }

    /// The IPv4 address of `side` (only reachable inside the two namespaces).
    pub fn addr(&self, side: Side) -> Ipv4Addr {
        match side {
            Side::A => self.ends_a.local4,
            Side::B => self.ends_a.peer4,
        }
    }

    /// The IPv6 ULA address of `side`, or `None` when IPv6 is off.
    pub fn addr_v6(&self, side: Side) -> Option<Ipv6Addr> {
        self.ends_a.v6.map(|(a, b)| match side {
            Side::A => a,
            Side::B => b,
        })
    }

    /// The IPv4 address of `side` as an [`IpAddr`].
    pub fn ip(&self, side: Side) -> IpAddr {
        IpAddr::V4(self.addr(side))
    }

    /// The configured base round-trip time: forward delay + reverse delay
    /// (serialisation, queueing, jitter and holds come on top; zero on a
    /// veth path, whose round trip is the kernel's, tens of microseconds).
    pub fn base_rtt(&self) -> Duration {
        self.config.forward.delay + self.config.reverse.delay
    }

    /// A snapshot of `direction`'s counters (readable while traffic flows).
    /// All zeros on a veth path, where nothing goes through the relay.
    pub fn stats(&self, direction: Direction) -> LinkStats {
        match direction {
            Direction::Forward => self.forward.snapshot(),
            Direction::Reverse => self.reverse.snapshot(),
        }
    }

    /// A command that runs `program` inside `side`'s namespace
    /// (`ip netns exec NAME program`); add arguments, then run it, or spawn
    /// it under a [`crate::ChildGuard`] so that it is killed on drop.
    pub fn command(&self, side: Side, program: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", self.netns_name(side), program]);
        cmd
    }

    /// Runs `f` on a new thread inside `side`'s namespace and returns its
    /// result; sockets it creates belong to that namespace and can be used
    /// from any thread afterwards. A panic in `f` is resumed in the caller.
    pub fn run_in<F, R>(&self, side: Side, f: F) -> Result<R>
    where
        F: FnOnce() -> R + Send,
        R: Send,
    {
        self.ns(side).run(f)
    }
}

impl Drop for Path {
    fn drop(&mut self) {
        // Processes first (they hold the namespaces' sockets), then the relay
        // and TUN descriptors; the namespace guards then delete both names.
        self.ns_a.kill_processes();
        self.ns_b.kill_processes();
        self.relay.take();
        self.tuns.take();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_and_guards_can_cross_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Path>();
        send_sync::<crate::ChildGuard>();
    }

    #[test]
    fn side_peer() {
        assert_eq!(Side::A.peer(), Side::B);
        assert_eq!(Side::B.peer(), Side::A);
    }
}
