//! The kernel's tick rate (HZ), learned from the running kernel itself.
//!
//! `tcp_sock.chrono_stat[]` (busy, rwnd-limited, sndbuf-limited time) counts
//! in jiffies, so every figure built on it needs HZ. A host publishes it in
//! its kernel config (`/proc/config.gz`, `/boot/config-$(uname -r)`), but a
//! pod sees neither, and container runtimes mask `/proc/timer_list`. So
//! observer asks the kernel: it test-runs a one-helper program
//! (`observer_tick` in observer-ebpf, `bpf_jiffies64()`) with
//! `BPF_PROG_TEST_RUN` at two tick edges a known time apart on
//! `CLOCK_MONOTONIC`, and snaps the measured rate to the nearest HZ Linux
//! can be built with. The config files, where present, are only a
//! cross-check.

use std::time::{Duration, Instant};

use aya::{
    EbpfLoader,
    maps::{Array, MapData},
    programs::{RawTracePoint, RawTracePointRunOptions, TestRun as _},
};
use observer_common::{MAP_CLOSED, MAP_FLOWS, MAP_TICK};

use crate::model::clock::{config_hz, snap_hz};

use super::probes::OBJECT;

/// The program `BPF_PROG_TEST_RUN` runs (observer-ebpf's `programs` module).
const TICK_PROGRAM: &str = "observer_tick";

/// How long the measurement spans, between its two tick edges (at least).
const SPAN: Duration = Duration::from_millis(150);

/// Errors learning HZ.
#[derive(Debug, thiserror::Error)]
pub enum TickError {
    /// The tick-reading program did not load or run.
    #[error(
        "cannot learn the kernel's HZ: running the tick-reading program failed ({0}){hint}; \
         observer needs CAP_BPF and CAP_PERFMON (or root) and Linux 5.10 or later",
        hint = super::probes::eperm_hint(.0)
    )]
    Run(String),
    /// The kernel's tick counter did not advance.
    #[error("cannot learn the kernel's HZ: jiffies did not advance in {0:?}")]
    Stalled(Duration),
}

/// The kernel's HZ and how it was learned.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hz {
    /// Jiffies per second, snapped to a value Linux can be configured with
    /// (100, 250, 300 or 1000).
    pub hz: u32,
    /// The rate measured, before snapping (jiffies per second); `None` when
    /// the kernel could not run the tick program and `hz` is the config's.
    pub measured: Option<f64>,
    /// `CONFIG_HZ` from the kernel's config file, when one is readable.
    pub config: Option<u32>,
}

impl Hz {
    /// One line saying where `hz` came from, for the log.
    pub fn describe(&self) -> String {
        match self.measured {
            Some(m) => format!("the kernel ticks at HZ={} (measured {m:.1} Hz)", self.hz),
            None => format!("the kernel ticks at HZ={} (from its config file)", self.hz),
        }
    }

    /// A warning line when the config file disagrees with the kernel (the
    /// file belongs to another build), else `None`. The measured value is
    /// the one used.
    pub fn disagreement(&self) -> Option<String> {
        match (self.measured, self.config) {
            (Some(m), Some(c)) if c != self.hz => Some(format!(
                "the kernel ticks at {m:.1} Hz (HZ={}), but its config file says CONFIG_HZ={c}; \
                 using {}",
                self.hz, self.hz
            )),
            _ => None,
        }
    }
}

/// Learns the running kernel's HZ (takes about 150-170 ms): measured (see
/// [`measure`]), else, where the kernel cannot test-run the program
/// (before Linux 5.10), from its config file.
///
/// # Errors
/// The measurement's [`TickError`] when there is no config file to fall
/// back on.
pub fn kernel_hz() -> Result<Hz, TickError> {
    let config = config_hz();
    match measure() {
        Ok(measured) => Ok(Hz {
            hz: snap_hz(measured),
            measured: Some(measured),
            config,
        }),
        Err(e) => config
            .map(|hz| Hz {
                hz,
                measured: None,
                config,
            })
            .ok_or(e),
    }
}

/// Measures the kernel's tick rate (jiffies per second, unsnapped).
///
/// The eBPF object is loaded with its maps shrunk to their least (one page
/// of ring buffer, 64 flow entries): only the tick program is loaded, and
/// everything is unloaded on return.
///
/// # Errors
/// [`TickError::Run`] when the program cannot be loaded or run (no
/// privilege, a kernel before 5.10); [`TickError::Stalled`] when the tick
/// counter does not move.
pub fn measure() -> Result<f64, TickError> {
    let run = |e: &dyn std::error::Error| TickError::Run(super::probes::chain(e));
    let page = page_size();
    let mut ebpf = EbpfLoader::new()
        .btf(None)
        .map_max_entries(MAP_FLOWS, 64)
        .map_max_entries(MAP_CLOSED, page)
        .load(OBJECT)
        .map_err(|e| run(&e))?;
    let tick: Array<MapData, u64> = ebpf
        .take_map(MAP_TICK)
        .ok_or_else(|| TickError::Run(format!("the eBPF object has no map {MAP_TICK}")))
        .and_then(|m| Array::try_from(m).map_err(|e| run(&e)))?;
    let prog: &mut RawTracePoint = ebpf
        .program_mut(TICK_PROGRAM)
        .ok_or_else(|| TickError::Run(format!("the eBPF object has no program {TICK_PROGRAM}")))?
        .try_into()
        .map_err(|e| run(&e))?;
    prog.load().map_err(|e| run(&e))?;
    let read = || -> Result<Reading, TickError> {
        prog.test_run(RawTracePointRunOptions::new())
            .map_err(|e| run(&e))?;
        let slot = |i: u32| tick.get(&i, 0).map_err(|e| run(&e));
        Ok(Reading {
            jiffies: slot(0)?,
            ns: slot(1)?,
        })
    };
    let first = next_edge(&read)?;
    std::thread::sleep(SPAN);
    let last = next_edge(&read)?;
    Ok(rate(
        last.jiffies.wrapping_sub(first.jiffies),
        Duration::from_nanos(last.ns.saturating_sub(first.ns)),
    ))
}

/// One run of the tick program: `bpf_jiffies64()` and `bpf_ktime_get_ns()`
/// (ns, CLOCK_MONOTONIC) read together.
#[derive(Clone, Copy, Debug)]
struct Reading {
    jiffies: u64,
    ns: u64,
}

/// Jiffies per second from `ticks` counted over `span`.
pub fn rate(ticks: u64, span: Duration) -> f64 {
    let secs = span.as_secs_f64();
    if secs > 0.0 { ticks as f64 / secs } else { 0.0 }
}

/// Runs the program until the tick counter changes, and returns that
/// reading: the start of a tick, to within one run (a syscall, a few µs).
/// Gives up after 100 ms (ten ticks at HZ=100).
fn next_edge(read: &dyn Fn() -> Result<Reading, TickError>) -> Result<Reading, TickError> {
    let limit = Duration::from_millis(100);
    let start = Instant::now();
    let first = read()?;
    loop {
        let now = read()?;
        if now.jiffies != first.jiffies {
            return Ok(now);
        }
        if start.elapsed() > limit {
            return Err(TickError::Stalled(limit));
        }
    }
}

fn page_size() -> u32 {
    // SAFETY: sysconf reads a constant of the running system.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u32::try_from(p).ok().filter(|p| *p > 0).unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_and_snap() {
        // 38 ticks between edges 150.2 ms apart: 253 Hz, HZ=250.
        let r = rate(38, Duration::from_micros(150_200));
        assert!((r - 253.0).abs() < 0.1, "{r}");
        assert_eq!(snap_hz(r), 250);
        // 45 ticks over 150 ms at HZ=300, 15 at HZ=100, 150 at HZ=1000.
        assert_eq!(snap_hz(rate(45, Duration::from_millis(150))), 300);
        assert_eq!(snap_hz(rate(15, Duration::from_millis(150))), 100);
        assert_eq!(snap_hz(rate(150, Duration::from_millis(150))), 1000);
        assert_eq!(rate(5, Duration::ZERO), 0.0);
    }

    #[test]
    fn disagreement_names_both() {
        let h = Hz {
            hz: 250,
            measured: Some(250.4),
            config: Some(1000),
        };
        let line = h.disagreement().unwrap();
        assert!(
            line.contains("HZ=250") && line.contains("CONFIG_HZ=1000"),
            "{line}"
        );
        assert_eq!(
            h.describe(),
            "the kernel ticks at HZ=250 (measured 250.4 Hz)"
        );
        let fallback = Hz {
            hz: 1000,
            measured: None,
            config: Some(1000),
        };
        assert_eq!(fallback.disagreement(), None);
        assert!(fallback.describe().contains("config file"));
        let same = Hz {
            config: Some(250),
            ..h
        };
        assert_eq!(same.disagreement(), None);
        let none = Hz { config: None, ..h };
        assert_eq!(none.disagreement(), None);
    }
}
