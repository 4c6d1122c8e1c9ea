//! observer: a passive TCP flow observer built on eBPF.
//!
//! Data flows one way, one folder per stage:
//!
//! ```text
//! kernel ──FlowSample──▶ model ──Flow──▶ track ──(first, latest)──▶ attribution ──Attribution──▶ sink
//! ```
//!
//! - [`kernel`]: load and attach the programs (observer-ebpf), read the
//!   flow map, the closed-flow ring and the self-counters: raw
//!   [`observer_common::FlowSample`]s.
//! - [`model`]: a sample as the figures an operator reads ([`model::flow::Flow`],
//!   tcp_info's units), and the kernel's clocks (HZ, monotonic to wall).
//! - [`track`]: which samples of which flow are kept: the one-shot
//!   [`track::snapshot`] of `observer flows`, and the [`track::live`] book
//!   of `observer run` and `observer top`, fed by [`track::poller`].
//! - [`attribution`]: what limits a flow over an interval, with the
//!   evidence and the what-if arithmetic.
//! - [`sink`]: where results go: flow records (text and NDJSON), the
//!   Prometheus exporter, the terminal view.
//!
//! [`args`] holds the command-line value parsers (in the library so the
//! fuzz targets reach them); the subcommands themselves are in the binary.

pub mod args;
pub mod attribution;
pub mod kernel;
pub mod model;
pub mod sink;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod track;
pub mod units;
