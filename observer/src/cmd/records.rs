//! `observer run --records`: the flow log opened at start, and each poll's
//! records written to it (the records themselves: `sink::flow_log`).

use std::time::{Duration, Instant};

use super::warn_rate::may_warn;
use observer::{
    sink::{
        flow_log::{FlowLog, Origin, RecordKind, Rotation},
        metrics::{Catalogue, FlowLogCounters},
    },
    track::{event::Event, live::LiveFlows, phase::Phase, snapshot::Report},
};

/// Where `--records` writes, and how.
pub(super) struct Options<'a> {
    /// `--records`.
    pub(super) path: Option<&'a std::path::Path>,
    /// `--records-max-bytes` and `--records-keep`.
    pub(super) rotation: Rotation,
}

/// The flow log `--records` asks for, if any, opened before anything is
/// loaded.
///
/// # Errors
/// The file cannot be opened ([`super::Usage`]: exit status 2).
pub(super) fn open(o: &Options<'_>) -> anyhow::Result<Option<FlowLog>> {
    let Some(path) = o.path else {
        return Ok(None);
    };
    let log = FlowLog::open(path, o.rotation, Origin::of_this_host()).map_err(|e| {
        super::Usage(format!(
            "--records: cannot open {e}; give a writable file or - for standard output"
        ))
    })?;
    if path == std::path::Path::new("-") {
        log::info!("writing each closed flow's record to standard output");
    } else {
        log::info!(
            "writing each closed flow's record to {} (rotated past {} bytes, {} kept)",
            path.display(),
            o.rotation.max_bytes,
            o.rotation.keep
        );
    }
    Ok(Some(log))
}

/// The flow log and its counters.
pub(super) struct Records {
    log: FlowLog,
    counters: FlowLogCounters,
    /// When a dropped record was last said (at most one line per
    /// [`super::warn_rate::WARN_EVERY`]).
    warned: Option<Instant>,
    /// `--records-every`, and when the next update records are due.
    every: Option<Duration>,
    next_update: Option<Instant>,
    /// Bytes each open flow had moved at its last update record, by
    /// cookie (a flow that moved nothing since gets none).
    updated: std::collections::HashMap<u64, u64>,
}

impl Records {
    /// Records to `log`, counted in `counters`, with updates every `every`.
    pub(super) fn new(log: FlowLog, counters: FlowLogCounters, every: Option<Duration>) -> Records {
        Records {
            log,
            counters,
            warned: None,
            every,
            next_update: every.map(|e| Instant::now() + e),
            updated: std::collections::HashMap::new(),
        }
    }

    /// Writes the record of each flow that closed in `events` and that
    /// the agent's filter selects, counting each written or dropped.
    pub(super) fn closed(&mut self, events: &[Event], catalogue: &Catalogue) {
        for e in events {
            let Event::Closed { life, flow, .. } = e else {
                continue;
            };
            self.updated.remove(&flow.cookie);
            if !catalogue.selects_record(flow, life) {
                continue;
            }
            let report = Report {
                flow: (**flow).clone(),
                attribution: (**life).clone(),
            };
            self.write(&report, RecordKind::Final);
        }
    }

    /// Once `--records-every` has passed since the last time: an update
    /// record of each open flow the filter selects that is at least that
    /// old and moved data since its last one.
    pub(super) fn updates(&mut self, live: &LiveFlows, catalogue: &Catalogue) {
        let (Some(every), Some(due)) = (self.every, self.next_update) else {
            return;
        };
        let now = Instant::now();
        if now < due {
            return;
        }
        self.next_update = Some(now + every);
        let every_ns = u64::try_from(every.as_nanos()).unwrap_or(u64::MAX);
        let now_ns = observer::model::clock::monotonic_ns();
        for t in live.flows().filter(|t| t.phase == Phase::Awake) {
            let moved = t.flow.bytes_acked.max(t.flow.bytes_received);
            let old = now_ns.saturating_sub(t.latest.first_seen_ns) >= every_ns;
            let since = self.updated.get(&t.flow.cookie).copied().unwrap_or(0);
            if !old || moved <= since || !catalogue.selects_record(&t.flow, &t.life) {
                continue;
            }
            self.updated.insert(t.flow.cookie, moved);
            let report = Report {
                flow: t.flow.clone(),
                attribution: live.explained_life(t),
            };
            self.write(&report, RecordKind::Update);
        }
    }

    /// Writes `report` as a record of `kind`, counting it written or
    /// dropped.
    fn write(&mut self, report: &Report, kind: RecordKind) {
        match self.log.write(report, kind) {
            Ok(()) => self.counters.written(),
            Err(err) => {
                self.counters.dropped(err.reason());
                if may_warn(&mut self.warned) {
                    log::warn!(
                        "--records: a flow record was dropped ({err}); \
                         observer_records_dropped_total counts them"
                    );
                }
            }
        }
    }
}
