//! The observer integration tests, one binary: one module per part of the
//! program under test, `support` for what they share. Most load eBPF
//! programs and so need root (`cargo xtask test`); without it they say so
//! and pass. `cargo xtask test` runs each module in a process of its own
//! (`integration MODULE::`), as when each was its own binary.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "integration tests: a failure should panic the test"
)]

mod support;

mod cli;
mod counters;
mod endpoint;
mod exporter;
mod faults;
mod flows;
mod image;
mod life;
mod netns;
mod parking;
mod poll;
mod preconditions;
mod reader;
mod receiver;
mod records;
mod restart;
mod select;
mod sender;
mod soak;
mod ss;
mod tls;
mod top;
mod upgrade;
mod workload;
