//! The agent process's own metrics (`process_*`): rust-prometheus's
//! [`ProcessCollector`] for memory, open files, threads and start time,
//! with its `process_cpu_seconds_total` replaced by one with sub-second
//! precision.
//!
//! The library keeps CPU time in an integer counter, whole seconds of
//! `utime + stime` rounded down: an agent that uses 0.3 s of CPU a minute
//! reads flat for minutes and then steps by 1, so `rate()` over a short
//! window reads 0 or a spike. The kernel's per-process CPU clock
//! (`CLOCK_PROCESS_CPUTIME_ID`, nanoseconds) gives the same figure,
//! exact, as other client libraries (Go's, Python's) export it.

use prometheus::{
    Counter, Opts,
    core::{Collector, Desc},
    process_collector::ProcessCollector,
    proto::MetricFamily,
};

/// The metric the library exports in whole seconds.
const CPU: &str = "process_cpu_seconds_total";

/// The `process_*` metrics of this process, CPU time in seconds with a
/// fraction.
pub struct ProcessMetrics {
    /// The library's collector, less its CPU counter.
    inner: ProcessCollector,
    /// CPU time, user and system (seconds).
    cpu: Counter,
    /// The library's descriptors but its CPU counter's, then ours.
    descs: Vec<Desc>,
}

impl ProcessMetrics {
    /// The collector for this process.
    ///
    /// # Errors
    /// A malformed metric definition (a build problem).
    pub fn for_self() -> Result<ProcessMetrics, prometheus::Error> {
        let inner = ProcessCollector::for_self();
        let cpu = Counter::with_opts(Opts::new(
            CPU,
            "Total user and system CPU time spent in seconds.",
        ))?;
        let descs = inner
            .desc()
            .into_iter()
            .filter(|d| d.fq_name != CPU)
            .chain(cpu.desc())
            .cloned()
            .collect();
        Ok(ProcessMetrics { inner, cpu, descs })
    }
}

/// This process's CPU time, user and system, in seconds; None where the
/// clock cannot be read.
pub fn cpu_seconds() -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to write.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &raw mut ts) };
    (rc == 0).then(|| ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9)
}

impl Collector for ProcessMetrics {
    fn desc(&self) -> Vec<&Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        let mut families: Vec<MetricFamily> = self
            .inner
            .collect()
            .into_iter()
            .filter(|f| f.name() != CPU)
            .collect();
        if let Some(now) = cpu_seconds() {
            // A counter only rises: two scrapes at once add the
            // difference once.
            let past = self.cpu.get();
            if now > past {
                self.cpu.inc_by(now - past);
            }
            families.extend(self.cpu.collect());
        }
        families
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_seconds_have_a_fraction_and_the_rest_stay() {
        // Spend a little CPU, so the clock is past zero.
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        std::hint::black_box(x);
        let registry = prometheus::Registry::new();
        registry
            .register(Box::new(ProcessMetrics::for_self().unwrap()))
            .unwrap();
        let text = super::super::encode(&registry).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("process_cpu_seconds_total "))
            .unwrap();
        let v: f64 = line.split(' ').nth(1).unwrap().parse().unwrap();
        assert!(v > 0.0 && v.fract() != 0.0, "{line}");
        assert!(
            text.contains("# TYPE process_cpu_seconds_total counter"),
            "{text}"
        );
        // Once, and the library's other metrics beside it.
        assert_eq!(text.matches("# TYPE process_cpu_seconds_total").count(), 1);
        for other in [
            "process_resident_memory_bytes",
            "process_start_time_seconds",
        ] {
            assert!(text.contains(&format!("\n{other} ")), "{other} in {text}");
        }
    }
}
