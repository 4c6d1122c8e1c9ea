//! observer attached as the runners attach it: the kernel probes loaded
//! as `observer` loads them by default, and a poller over them.

use anyhow::Context as _;
use observer::{
    kernel::load::preflight,
    kernel::{load::probe_config::ProbeConfig, probes::Probes},
    model::clock::Clock,
    track::live::LiveConfig,
    track::poller::Poller,
};

use crate::run::POLL;

/// Loads the probes (as `observer` does with `--poll-read auto`: the
/// poll-time read and the owner walk, so no program on reads) and
/// returns a poller with the default attribution settings at `hz`.
///
/// # Errors
/// The kernel lacks what observer needs (`preflight`), or the probes
/// could not be loaded.
pub fn start(hz: u32) -> anyhow::Result<Poller> {
    preflight::check()?;
    let cfg = ProbeConfig {
        rx_gap_ns: observer_common::rx_gap_ns(hz),
        poll_read: true,
        walk_budget: Some(POLL.mul_f64(observer::kernel::read::budgeted_walk::BUDGET_SHARE)),
        ..ProbeConfig::default()
    };
    let probes = Probes::load(cfg.clone()).context("cannot start the kernel probes")?;
    Ok(Poller::new(
        probes,
        Clock::new(hz),
        live_config(hz),
        cfg.max_flows,
    ))
}

/// The live flows' settings the runners judge with on a host whose jiffy
/// rate is `hz`: the default attribution, one history point. A replay of
/// their recordings judges with the same (`accuracy::replayed`).
pub fn live_config(hz: u32) -> LiveConfig {
    LiveConfig {
        history: 1,
        attribution: observer::attribution::Config::default().with_hz(hz),
        ..LiveConfig::default()
    }
}
