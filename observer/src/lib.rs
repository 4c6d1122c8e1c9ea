//! observer: a passive TCP flow observer built on eBPF.
//!
//! Data flows one way, one folder per stage:
//!
//! ```text
//! kernel ──FlowSample──▶ track ──(two Points of a flow)──▶ attribution ──Attribution──▶ track ──(flows, events)──▶ sink
//! ```
//!
//! - [`kernel`]: load and attach the programs (observer-ebpf), read the
//!   flow map, the closed-flow ring and the self-counters: raw
//!   [`observer_common::FlowSample`]s.
//! - [`track`]: which samples of which flow are kept between polls: the
//!   one-shot [`track::snapshot`] of `observer flows`, and the
//!   [`track::live`] flows of `observer run` and `observer top`, fed by
//!   [`track::poller`]. It asks attribution for each flow's verdicts and
//!   keeps them with the flow.
//! - [`attribution`]: what limits a flow between two points, with the
//!   evidence and the what-if arithmetic. Pure code.
//! - [`sink`]: where the judged flows go: records (text and NDJSON), the
//!   Prometheus exporter, the terminal view.
//!
//! Shared by the stages, not a stage: [`model`] (a sample as the figures
//! an operator reads, [`model::flow::Flow`], in tcp_info's units; the
//! kernel's clocks), [`units`] (every number as text), [`args`] (the
//! command-line value parsers, in the library so the fuzz targets reach
//! them), and [`filter`] (the `ss`-style flow filter language that
//! `flows`, `top` and `run` take as `--filter`; pure code). `testkit`
//! holds test fixtures. The subcommands themselves are in the binary
//! (`src/cmd/`).

pub mod args;
pub mod attribution;
pub mod filter;
pub mod kernel;
pub mod model;
pub mod sink;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod track;
pub mod units;
