//! The flow model, shared by the stages (not a stage of its own).
//!
//! In: a raw [`observer_common::FlowSample`]. Out:
//! [`flow::Flow`], a flow's figures in the units `tcp_info` uses, the
//! chrono arithmetic between two samples, and [`clock::Clock`], the
//! kernel's time bases (HZ for the chrono jiffies, monotonic to wall time),
//! and [`workload::Workload`], what a cgroup path says of the workload
//! (unit, container, pod). Pure code: no I/O except reading HZ once at
//! start-up.

pub mod clock;
pub mod flow;
pub mod integrals;
pub mod workload;
