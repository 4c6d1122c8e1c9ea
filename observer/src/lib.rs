//! observer: a passive TCP flow observer built on eBPF.
//!
//! Data flows one way: kernel samples ([`probes`]) -> flow table
//! ([`table`]) -> sinks ([`output`]).

pub mod args;
pub mod attribution;
pub mod batch;
pub mod book;
pub mod btf;
pub mod clock;
pub mod closed;
pub mod exporter;
pub mod floor;
pub mod flow;
pub mod layout;
pub mod monitor;
pub mod output;
pub mod preflight;
pub mod privilege;
pub mod probes;
pub mod proginfo;
pub mod table;
pub mod tui;
