//! `pathemu`: an emulated WAN path between two network namespaces.
//!
//! A [`Path`] creates two network namespaces, A and B, each with a TUN
//! device, and relays IP packets between the two TUNs in threads of the
//! calling process. Per direction it applies, in this order (see [`Link`]
//! for the exact model): a PMTU black hole (packets over a size dropped
//! silently), periodic outages, a seeded random loss, an optional
//! token-bucket policer, a drop-tail bottleneck queue (bytes) and rate
//! (bits/s of IP packet bytes), an optional shaper (a second rate stage
//! with its own drop-tail queue), order-keeping delay jitter, seeded reordering (a share of the
//! packets held back and overtaken) and a one-way propagation delay, so
//! real kernel TCP (iperf3, curl, test sockets) runs across it. Every drop
//! is counted by its kind in [`LinkStats`]. A [`PathConfig::veth()`] path
//! joins A and B by a plain veth pair instead, with no model and no relay,
//! for sub-millisecond round trips.
//!
//! Needs root. No `netem` or `fq` qdisc is used.
//!
//! Names and addresses: path number `<n>` of process `<pid>` uses
//! namespaces `pe-<pid>-<n>-a` and `pe-<pid>-<n>-b`, a TUN (or on a veth
//! path a veth end) named `pe0` in each (MTU [`TUN_MTU`], 1500, unless [`PathConfig::mtu()`] sets another),
//! IPv4 `10.77.<n mod 256>.1` (A) and `.2` (B), and IPv6 `fd77:<n as hex>::1`
//! and `::2`. Addresses exist only inside the namespaces.
//! A test that needs no path takes a [`Namespace::standalone`]
//! (`pe-<pid>-<n>-s`, loopback only) and guards its children with
//! [`ChildGuard`].
//!
//! Timing and capacity, measured on a 2-core VM (Linux 6.18): packets are
//! written out on average 20-50 us after their scheduled time (never more
//! than 2 us early; see [`LinkStats::lateness_hist`]). With a configured
//! bottleneck, a single iperf3 TCP flow ran at the configured rate with
//! 99.7% of packets less than 100 us late at 300 Mbit/s (26k packets/s,
//! mean 22 us) and 99.8% less than 250 us late at 600 Mbit/s (mean 19 us);
//! at 1 Gbit/s it fell short (836 Mbit/s, millisecond lateness). With no rate
//! limit the relay forwarded about 2 Gbit/s (172k packets/s), with
//! lateness then reaching milliseconds.
//!
//! ```no_run
//! use std::time::Duration;
//! use pathemu::{ChildGuard, Direction, Path, PathConfig, Side};
//!
//! # fn main() -> pathemu::Result<()> {
//! // 35 Mbit/s A->B with a 460 kB queue, 52 ms each way (RTT 104 ms).
//! let path = Path::new(PathConfig::bottleneck(35_000_000, Duration::from_millis(52), 460_000))?;
//! let _server = ChildGuard::spawn(path.command(Side::B, "iperf3").arg("-s"))?;
//! let out = path
//!     .command(Side::A, "iperf3")
//!     .args(["-c", &path.addr(Side::B).to_string(), "-t", "10"])
//!     .output();
//! // Own sockets inside a namespace:
//! let sock = path.run_in(Side::B, || std::net::UdpSocket::bind("0.0.0.0:0"))?;
//! println!("{:?}", path.stats(Direction::Forward));
//! # let _ = (out, sock);
//! # Ok(())
//! # }
//! // Dropping `path` kills the server, stops the relay, deletes the namespaces.
//! ```

mod child;
mod clock;
mod config;
mod delay_line;
mod error;
pub mod jitter;
pub mod model;
mod netns;
pub mod outage;
mod path;
pub mod policer;
mod relay;
pub mod reorder;
pub mod sockets;
mod stats;
mod tun;
mod veth;

pub use child::ChildGuard;
pub use clock::now_ns;
pub use config::{Link, PathConfig};
pub use error::{Error, Result};
pub use netns::{
    NAME_PREFIX, Namespace, connect_routable, run_in_netns, sweep_stale, wait_routable,
};
pub use path::{Direction, Path, Side};
pub use stats::{LATENESS_BUCKETS_NS, LinkStats};
pub use tun::{MAX_MTU, MIN_MTU, TUN_MTU, TUN_NAME};
