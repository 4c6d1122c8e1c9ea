//! The scenario suite: emulated WAN paths (pathemu) carrying real kernel TCP
//! with a known constraint each, observed by observer, whose verdicts are
//! judged against that ground truth.

pub mod catalog;
pub mod group;
pub mod http;
pub mod judge;
pub mod link;
pub mod monitor;
pub mod report;
pub mod run;
pub mod traffic;
