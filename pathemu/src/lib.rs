//! `pathemu`: an emulated WAN path between two network namespaces.
//!
//! A [`Path`] creates two network namespaces, A and B, each with a TUN
//! device, and relays IP packets between the two TUNs in threads of the
//! calling process. Per direction it applies a seeded random loss, a
//! drop-tail bottleneck queue (bytes), a bottleneck rate (bits/s of IP packet
//! bytes) and a one-way propagation delay (see [`Link`] for the exact model),
//! so real kernel TCP (iperf3, curl, test sockets) runs across it.
//!
//! Needs root. No `netem` or `fq` qdisc is used.
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
mod error;
pub mod model;
mod netns;
mod path;
mod relay;
mod stats;
mod tun;

pub use child::ChildGuard;
pub use clock::now_ns;
pub use config::{Link, PathConfig};
pub use error::{Error, Result};
pub use netns::{NAME_PREFIX, run_in_netns, sweep_stale};
pub use path::{Direction, Path, Side};
pub use stats::{LATENESS_BUCKETS_NS, LinkStats};
pub use tun::{TUN_MTU, TUN_NAME};
