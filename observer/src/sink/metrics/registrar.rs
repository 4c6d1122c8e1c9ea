//! Defines metrics and registers them in one step, so that each metric is
//! written once: where its group creates it.

use prometheus::{
    Gauge, GaugeVec, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, core::Collector,
};

/// A registry plus the aggregation label names that per-flow metrics carry
/// after their own labels.
pub(super) struct Registrar<'a> {
    pub registry: &'a Registry,
    pub aggregation: &'a [&'static str],
}

type Result<T> = std::result::Result<T, prometheus::Error>;

impl Registrar<'_> {
    /// `first` followed by the aggregation labels.
    pub fn with(&self, first: &[&'static str]) -> Vec<&'static str> {
        first
            .iter()
            .chain(self.aggregation.iter())
            .copied()
            .collect()
    }

    fn register<C: Collector + Clone + 'static>(&self, c: C) -> Result<C> {
        self.registry.register(Box::new(c.clone()))?;
        Ok(c)
    }

    pub fn counter(&self, name: &str, help: &str) -> Result<IntCounter> {
        self.register(IntCounter::new(name, help)?)
    }

    pub fn counter_vec(&self, name: &str, help: &str, labels: &[&str]) -> Result<IntCounterVec> {
        self.register(IntCounterVec::new(Opts::new(name, help), labels)?)
    }

    /// A counter of seconds (fractional), by `labels`.
    pub fn seconds_vec(
        &self,
        name: &str,
        help: &str,
        labels: &[&str],
    ) -> Result<prometheus::CounterVec> {
        self.register(prometheus::CounterVec::new(Opts::new(name, help), labels)?)
    }

    pub fn gauge(&self, name: &str, help: &str) -> Result<Gauge> {
        self.register(Gauge::new(name, help)?)
    }

    pub fn gauge_vec(&self, name: &str, help: &str, labels: &[&str]) -> Result<GaugeVec> {
        self.register(GaugeVec::new(Opts::new(name, help), labels)?)
    }

    pub fn int_gauge(&self, name: &str, help: &str) -> Result<IntGauge> {
        self.register(IntGauge::new(name, help)?)
    }

    pub fn int_gauge_vec(&self, name: &str, help: &str, labels: &[&str]) -> Result<IntGaugeVec> {
        self.register(IntGaugeVec::new(Opts::new(name, help), labels)?)
    }

    pub fn histogram(&self, name: &str, help: &str, buckets: Vec<f64>) -> Result<Histogram> {
        self.register(Histogram::with_opts(
            HistogramOpts::new(name, help).buckets(buckets),
        )?)
    }

    pub fn histogram_vec(
        &self,
        name: &str,
        help: &str,
        buckets: Vec<f64>,
        labels: &[&str],
    ) -> Result<HistogramVec> {
        self.register(HistogramVec::new(
            HistogramOpts::new(name, help).buckets(buckets),
            labels,
        )?)
    }
}

/// `count` buckets from `start`, each `factor` times the last.
pub(super) fn exp_buckets(start: f64, factor: f64, count: usize) -> Result<Vec<f64>> {
    prometheus::exponential_buckets(start, factor, count)
}
