//! `--poll-read [auto|on|off]`, shared by `run`, `flows` and `top`.

use std::time::Duration;

use observer::kernel::{load::probe_config::ProbeConfig, read::budgeted_walk::BUDGET_SHARE};

/// When the poll-time read walks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// Walk at each poll while the walk takes at most 1% of the interval;
    /// pause it past that, with a trial walk every 60 polls.
    Auto,
    /// Walk at every poll, whatever it costs.
    On,
    /// No walk: the programs sample every segment that ends a burst and
    /// every read that drains the socket.
    Off,
}

/// The option, flattened into each subcommand's arguments.
#[derive(Clone, Copy, Debug, clap::Args)]
pub struct PollRead {
    /// Re-read, at each poll, every flow that moved since the last one,
    /// with an iterator program, so the per-packet programs may skip the
    /// full sample of a segment that ends a burst or of a read that drains
    /// the socket (request/response traffic costs about half as much per
    /// segment). The walk visits every socket, about 1-1.4 µs each, so
    /// `auto` pauses it where that is over 1% of the interval (about 7,000
    /// sockets at 1 s). `--poll-read` alone is `on`.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        default_value_t = Mode::Auto,
        num_args = 0..=1,
        default_missing_value = "on"
    )]
    pub poll_read: Mode,
}

impl PollRead {
    /// `config` with the poll-time read as asked, its budget a share of
    /// `interval` (the time between polls).
    pub fn apply(self, config: ProbeConfig, interval: Duration) -> ProbeConfig {
        ProbeConfig {
            poll_read: self.poll_read != Mode::Off,
            walk_budget: (self.poll_read == Mode::Auto).then(|| interval.mul_f64(BUDGET_SHARE)),
            ..config
        }
    }
}
