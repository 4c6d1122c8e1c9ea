//! The kernel's tick rate (HZ), learned from the running kernel itself.
//!
//! `tcp_sock.chrono_stat[]` (busy, rwnd-limited, sndbuf-limited time) counts
//! in jiffies, so every figure built on it needs HZ. A host publishes it in
//! its kernel config (`/proc/config.gz`, `/boot/config-$(uname -r)`), but a
//! pod sees neither, and container runtimes mask `/proc/timer_list`. So
//! observer asks the kernel: it test-runs a small program (`observer_tick`
//! in observer-ebpf) with `BPF_PROG_TEST_RUN` twice, 200 ms or more apart;
//! each run reads `bpf_jiffies64()` and `bpf_ktime_get_ns()` together, in
//! the kernel, so however long the agent waits to be scheduled between the
//! two runs (a busy node) only lengthens the span. The jiffies counted over
//! it are off by less than one, under 5% at HZ=100 over 200 ms, and the
//! rate snaps to the nearest HZ Linux can be built with (250 and 300, the
//! closest pair, are 18% apart). The config files, where present, are only
//! a cross-check.

use std::time::Duration;

use aya::{
    EbpfLoader,
    maps::{Array, MapData},
    programs::{RawTracePoint, RawTracePointRunOptions, TestRun as _},
};
use observer_common::{MAP_CLOSED, MAP_FLOWS, MAP_TICK};

use crate::model::clock::{config_hz, snap_hz};

use crate::kernel::load::objects::OBJECT;

/// The program `BPF_PROG_TEST_RUN` runs (observer-ebpf's `programs` module).
const TICK_PROGRAM: &str = "observer_tick";

/// How long the measurement spans, at least.
const SPAN: Duration = Duration::from_millis(200);

/// Errors learning HZ.
#[derive(Debug, thiserror::Error)]
pub enum TickError {
    /// The tick-reading program did not load or run.
    #[error(
        "cannot learn the kernel's HZ: running the tick-reading program failed ({0}){hint}; \
         observer needs CAP_BPF and CAP_PERFMON (or root) and Linux 5.10 or later",
        hint = crate::kernel::load::probe_error::eperm_hint(.0)
    )]
    Run(String),
    /// The kernel's tick counter did not advance.
    #[error("cannot learn the kernel's HZ: jiffies did not advance in {0:?} (a tickless kernel?)")]
    Stalled(Duration),
}

/// The kernel's HZ and how it was learned.
#[derive(Clone, Debug, PartialEq)]
pub struct Hz {
    /// Jiffies per second, snapped to a value Linux can be configured with
    /// (100, 250, 300 or 1000).
    pub hz: u32,
    /// The rate measured, before snapping (jiffies per second); `None` when
    /// the kernel could not run the tick program and `hz` is the config's.
    pub measured: Option<f64>,
    /// Why it could not be measured, when `measured` is `None`.
    pub unmeasured: Option<String>,
    /// `CONFIG_HZ` from the kernel's config file, when one is readable.
    pub config: Option<u32>,
}

impl Hz {
    /// One line saying where `hz` came from, for the log.
    pub fn describe(&self) -> String {
        match self.measured {
            Some(m) => format!("the kernel ticks at HZ={} (measured {m:.1} Hz)", self.hz),
            None => format!(
                "the kernel ticks at HZ={} (from its config file; measuring failed: {})",
                self.hz,
                self.unmeasured.as_deref().unwrap_or("-")
            ),
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

/// Learns the running kernel's HZ (takes about 200 ms): measured (see
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
            unmeasured: None,
            config,
        }),
        Err(e) => match config {
            Some(hz) => Ok(Hz {
                hz,
                measured: None,
                unmeasured: Some(e.to_string()),
                config,
            }),
            None => Err(e),
        },
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
    let run =
        |e: &dyn std::error::Error| TickError::Run(crate::kernel::load::probe_error::chain(e));
    let page = crate::args::page_size();
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
            jiffies: slot(observer_common::TICK_JIFFIES)?,
            ns: slot(observer_common::TICK_NS)?,
        })
    };
    let first = read()?;
    std::thread::sleep(SPAN);
    let last = read()?;
    let span = Duration::from_nanos(last.ns.saturating_sub(first.ns));
    let ticks = last.jiffies.wrapping_sub(first.jiffies);
    if ticks == 0 {
        return Err(TickError::Stalled(span));
    }
    Ok(rate(ticks, span))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_and_snap() {
        // 51 ticks over 200.2 ms: 254.7 Hz, HZ=250.
        let r = rate(51, Duration::from_micros(200_200));
        assert!((r - 254.7).abs() < 0.1, "{r}");
        assert_eq!(snap_hz(r), 250);
        // Off by a tick either way over the shortest span (200 ms), each HZ
        // still snaps to itself: the count is within one of span x HZ.
        for hz in [100u64, 250, 300, 1000] {
            let n = hz / 5;
            for ticks in [n - 1, n, n + 1] {
                let got = snap_hz(rate(ticks, Duration::from_millis(200)));
                assert_eq!(u64::from(got), hz, "{ticks} ticks in 200 ms");
            }
        }
        // A longer span (the agent descheduled between the runs) only
        // narrows it.
        assert_eq!(snap_hz(rate(250, Duration::from_millis(1000))), 250);
        assert_eq!(rate(5, Duration::ZERO), 0.0);
    }

    #[test]
    fn disagreement_names_both() {
        let h = Hz {
            hz: 250,
            measured: Some(250.4),
            unmeasured: None,
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
            unmeasured: Some("no BPF_PROG_TEST_RUN".into()),
            config: Some(1000),
        };
        assert_eq!(fallback.disagreement(), None);
        assert!(fallback.describe().contains("config file"));
        assert!(fallback.describe().contains("no BPF_PROG_TEST_RUN"));
        let same = Hz {
            config: Some(250),
            ..h.clone()
        };
        assert_eq!(same.disagreement(), None);
        let none = Hz { config: None, ..h };
        assert_eq!(none.disagreement(), None);
    }
}
