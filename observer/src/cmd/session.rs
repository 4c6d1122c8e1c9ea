//! What every subcommand that watches flows does first: preflight, load,
//! attach, and learn the kernel's clock.

use anyhow::Context as _;
use observer::{
    kernel::load::preflight,
    kernel::load::tick::kernel_hz,
    kernel::{load::probe_config::ProbeConfig, probes::Probes},
    model::clock::Clock,
};

/// Attached probes and the clock to read their samples with.
pub struct Session {
    /// The attached programs.
    pub probes: Probes,
    /// Kernel HZ and monotonic-to-wall mapping.
    pub clock: Clock,
}

/// Checks the host, loads and attaches the probes, and says which figures
/// this kernel cannot provide (warn) and which fallbacks cost more per
/// packet (info).
///
/// # Errors
/// The first precondition or load failure, with what to do about it.
pub fn start(config: ProbeConfig) -> anyhow::Result<Session> {
    preflight::check()?;
    let hz = kernel_hz()?;
    log::info!("{}", hz.describe());
    if let Some(line) = hz.disagreement() {
        log::warn!("{line}");
    }
    let hz = hz.hz;
    let config = ProbeConfig {
        rx_gap_ns: observer_common::rx_gap_ns(hz),
        ..config
    };
    let probes = Probes::load(config).context("cannot start the kernel probes")?;
    for note in &probes.degraded {
        log::log!(note.level(), "{note}");
    }
    // Everything privileged is done: the maps are read through open fds.
    observer::kernel::load::privilege::drop_all()?;
    log::info!("programs attached; dropped all capabilities");
    Ok(Session {
        probes,
        clock: Clock::new(hz),
    })
}
