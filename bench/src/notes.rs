//! The benchmark page's last section: for each target a run missed, by
//! how much and what the run's own figures say about why.

use super::{
    report::Results,
    targets::{
        TARGET_BULK_CPU_PCT_PER_GBPS, TARGET_CPU_PCT_10K, TARGET_OWN_NS, TARGET_OWN_NS_CHURN,
        TARGET_PEER_RATIO, TARGET_POLL_MS_100K, TARGET_RR_CPU_RATIO, TARGET_RR_RATIO,
        TARGET_THROUGHPUT_RATIO,
    },
};

impl Results {
    /// Says, for each target this run missed, by how much and what the
    /// run's own figures show about why; empty when none was missed.
    pub(super) fn notes(&self) -> String {
        let ran = |part: &str| self.parts.iter().any(|p| p == part);
        let tp = ran("throughput");
        let mut n = Vec::new();
        if ran("peer") {
            n.extend(self.peer_notes());
        }
        if let Some(f) = self
            .fixed_load
            .as_ref()
            .filter(|f| f.ratio.median > TARGET_RR_CPU_RATIO)
        {
            n.push(format!(
                "- **CPU per transaction at a fixed load: missed by {:.3}** (median {:.3}, \
                 rounds {:.3}-{:.3}, against {TARGET_RR_CPU_RATIO}). The A/A control spread \
                 {:.3}-{:.3} in the same run; {:.1} µs of CPU a transaction with observer \
                 against {:.1} without, at {:.0} transactions/s ({:.3} of them made with \
                 observer on).",
                f.ratio.median - TARGET_RR_CPU_RATIO,
                f.ratio.median,
                f.ratio.min,
                f.ratio.max,
                f.aa_ratio.min,
                f.aa_ratio.max,
                f.with_us.median,
                f.without_us.median,
                f.offered_per_s,
                f.achieved.median,
            ));
        }
        if tp && self.own_ns_per_hit > TARGET_OWN_NS {
            n.push(self.own_note());
        }
        if tp && ran("churn") && self.own_ns_per_run_churn > TARGET_OWN_NS_CHURN {
            n.push(format!(
                "- **Own work per run under churn: missed by {:.0} ns** ({:.0} ns above the \
                 floor against {TARGET_OWN_NS_CHURN:.0}). Under churn the runs are those of \
                 the state-change, owner and destroy programs, which create, attribute and \
                 close flows, beside the per-packet ones; the largest shares: {}.",
                self.own_ns_per_run_churn - TARGET_OWN_NS_CHURN,
                self.own_ns_per_run_churn,
                self.churn
                    .last()
                    .map(|c| largest_shares(&c.programs))
                    .unwrap_or_else(|| "none measured".to_string()),
            ));
        }
        if tp && self.bulk_cpu_pct_per_gbps > TARGET_BULK_CPU_PCT_PER_GBPS {
            n.push(self.bulk_cpu_note());
        }
        for r in self.rr.iter().filter(|r| r.ratio.median < TARGET_RR_RATIO) {
            n.push(self.rr_note(r));
        }
        for (streams, ratio) in [(1, self.throughput_ratio), (4, self.throughput_ratio_p4)] {
            if !tp || ratio >= TARGET_THROUGHPUT_RATIO {
                continue;
            }
            n.push(self.throughput_note(streams, ratio));
        }
        if let Some(note) = self.agent_note() {
            n.push(note);
        }
        if n.is_empty() {
            return String::new();
        }
        format!("\n## Targets missed in this run\n\n{}\n", n.join("\n"))
    }

    /// The agent's missed targets without the walk (poll of 100k flows, CPU
    /// at 10k): its cost per open flow per poll at each scale measured.
    fn agent_note(&self) -> Option<String> {
        let rows: Vec<_> = self
            .scale
            .iter()
            .filter(|a| !a.poll_read && a.poll_ms > 0.0)
            .collect();
        let poll_missed = self.poll_ms_100k_flows > TARGET_POLL_MS_100K;
        let cpu_missed = self.agent_cpu_pct_10k_flows > TARGET_CPU_PCT_10K;
        if rows.is_empty() || !(poll_missed || cpu_missed) {
            return None;
        }
        let per_flow: Vec<String> = rows
            .iter()
            .map(|a| {
                let moved = (a.flows / super::agent::MOVE_ONE_IN).max(1);
                format!("{:.1} µs at {}", a.poll_ms * 1000.0 / moved as f64, a.flows)
            })
            .collect();
        Some(format!(
            "- **Agent at scale: {}.** Every flow is tracked from its birth and 1% \
             move each second. A poll reads only the flows sampled since the last one \
             (the change journal) and visits only those and the ones that moved at the \
             poll before, whose verdict window turns; the others are quiet and step in \
             one sum. What remains is per flow that moved: judging it (twice), its \
             lookup, and the cache misses of a flow not touched for a while; every 64th \
             poll also reads the whole map. Poll time per flow that moved: {}.",
            [
                poll_missed.then(|| {
                    format!(
                        "poll of 100k flows missed by {:.1} ms ({:.1} ms against {TARGET_POLL_MS_100K:.0})",
                        self.poll_ms_100k_flows - TARGET_POLL_MS_100K,
                        self.poll_ms_100k_flows
                    )
                }),
                cpu_missed.then(|| {
                    format!(
                        "CPU at 10k flows missed by {:.2} points ({:.2}% of a core against {TARGET_CPU_PCT_10K:.0}%)",
                        self.agent_cpu_pct_10k_flows - TARGET_CPU_PCT_10K,
                        self.agent_cpu_pct_10k_flows
                    )
                }),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("; "),
            per_flow.join(", ")
        ))
    }

    /// The missed own work per packet: the floor, and the stage table's
    /// largest steps.
    fn own_note(&self) -> String {
        let largest = largest_steps(&self.stages);
        format!(
            "- **Own work per packet: missed by {:.0} ns** ({:.0} ns above the floor against \
             {TARGET_OWN_NS:.0}). The per-packet program costs {:.0} ns per hit in all; an \
             empty program on the same hook costs {:.0} ns here (the BPF trampoline and the \
             run-time accounting that `kernel.bpf_stats_enabled` itself adds). {}",
            self.own_ns_per_hit - TARGET_OWN_NS,
            self.own_ns_per_hit,
            self.probe_ns_per_hit,
            self.floor_ns_per_hit,
            if largest.is_empty() {
                "No stage table in this run.".to_string()
            } else {
                format!("The largest steps in the stage table: {largest}.")
            },
        )
    }

    /// The missed CPU per Gbit/s of a bulk transfer: which programs.
    fn bulk_cpu_note(&self) -> String {
        let t = self.throughput.iter().find(|t| t.streams == 1);
        format!(
            "- **Programs per Gbit/s (bulk): missed by {:.3} points** ({:.3}% of a CPU per \
             Gbit/s against {TARGET_BULK_CPU_PCT_PER_GBPS}%, at {:.2} Gbit/s). The largest \
             shares: {}.",
            self.bulk_cpu_pct_per_gbps - TARGET_BULK_CPU_PCT_PER_GBPS,
            self.bulk_cpu_pct_per_gbps,
            t.map_or(0.0, |t| t.with_bps.median / 1e9),
            t.map_or_else(
                || "none measured".to_string(),
                |t| largest_shares(&t.programs)
            ),
        )
    }

    /// A missed request/response ratio: its spread against the A/A
    /// control, and the programs' time per transaction against the time a
    /// transaction takes.
    fn rr_note(&self, r: &super::rr::RrOverhead) -> String {
        let tx_ns = if r.without_tps.median > 0.0 {
            1e9 / r.without_tps.median * f64::from(r.connections.min(2))
        } else {
            0.0
        };
        let prog_ns = r.programs_ns_per_segment * r.segments_per_transaction;
        let control = if r.aa_ratio.n > 0 && r.ratio.median >= r.aa_ratio.min {
            format!(
                "The A/A control spread {:.3}-{:.3} in the same run: the median lies within \
                 what identical sides differ by here.",
                r.aa_ratio.min, r.aa_ratio.max
            )
        } else {
            format!(
                "The A/A control spread {:.3}-{:.3}: the median lies below it.",
                r.aa_ratio.min, r.aa_ratio.max
            )
        };
        format!(
            "- **Request/response, {} connection(s): missed by {:.3}** (median {:.3}, rounds \
             {:.3}-{:.3}). {control} observer's programs ran {prog_ns:.0} ns per transaction \
             ({:.2} segments at {:.0} ns each), against about {tx_ns:.0} ns of CPU a \
             transaction takes without observer (its time on the busy CPUs); the rest of the \
             loss would be the agent's own wake-ups and the cache lines the programs touch.",
            r.connections,
            TARGET_RR_RATIO - r.ratio.median,
            r.ratio.median,
            r.ratio.min,
            r.ratio.max,
            r.segments_per_transaction,
            r.programs_ns_per_segment,
        )
    }

    /// The missed throughput ratio with `streams` streams: its spread, the
    /// A/A control, the programs' own share of the CPUs.
    fn throughput_note(&self, streams: u32, ratio: f64) -> String {
        let t = self.throughput.iter().find(|t| t.streams == streams);
        let spread = t.map_or("?".into(), |t| {
            format!("{:.3}-{:.3}", t.ratio.min, t.ratio.max)
        });
        // The programs' own share of the CPUs during the with-rounds.
        let own_pct = t.map_or(0.0, |t| {
            if t.programs.is_empty() {
                t.probe_hits_per_s * t.probe_ns_per_hit / 1e7
            } else {
                t.programs.iter().map(|p| p.cpu_pct).sum()
            }
        });
        let aa = t.map(|t| t.aa_ratio).filter(|a| a.n > 0);
        let control = match aa {
            Some(a) if ratio >= a.min => format!(
                "The A/A control (two transfers without observer) spread {:.3}-{:.3} in \
                 the same run, so this median is within what identical sides differ by \
                 here: the run cannot tell the loss from noise.",
                a.min, a.max
            ),
            Some(a) => format!(
                "The A/A control (two transfers without observer) spread {:.3}-{:.3}: \
                 this median is below the control's lowest round, though whole runs on \
                 this machine differ from one another by more than that.",
                a.min, a.max
            ),
            None => "No A/A control in this run.".to_string(),
        };
        format!(
            "- **Throughput, {streams} stream(s): missed by {:.3}** (median ratio {ratio:.3}, \
             rounds {spread}). {control} observer's programs ran for {own_pct:.1}% of \
             one CPU (all hooks; table above), against a {:.0}% loss \
             of throughput; with {} socket ends busy on two vCPUs, any rest would be \
             indirect (cache lines the program touches, the agent's wake-ups).",
            TARGET_THROUGHPUT_RATIO - ratio,
            (1.0 - ratio) * 100.0,
            2 * streams,
        )
    }
}

/// The two programs with the largest share of a CPU, with their runs/s and
/// ns per run.
impl Results {
    /// One line per load kind whose worst peer ratio missed its target:
    /// by how much, at which load, and the programs' largest shares from
    /// that load's own section (request/response or throughput).
    fn peer_notes(&self) -> Vec<String> {
        let mut n = Vec::new();
        for (kind, worst) in [("bulk", self.peer_ratio_bulk), ("rr", self.peer_ratio_rr)] {
            if worst <= TARGET_PEER_RATIO {
                continue;
            }
            let Some(c) = self
                .peer
                .iter()
                .filter(|c| c.load == kind)
                .max_by(|a, b| a.ratio.median.total_cmp(&b.ratio.median))
            else {
                continue;
            };
            let (what, programs) = if kind == "rr" {
                (
                    format!("request/response, {} connection(s)", c.flows),
                    self.rr
                        .iter()
                        .find(|r| r.connections == c.flows)
                        .map(|r| &r.programs),
                )
            } else {
                (
                    format!("bulk, {} stream(s)", c.flows),
                    self.throughput
                        .iter()
                        .find(|t| t.streams == c.flows)
                        .map(|t| &t.programs),
                )
            };
            let (table, on) = match (kind, c.flows) {
                ("rr", _) => (
                    &self.stages_rr,
                    "one request/response connection, where every segment ends a burst",
                ),
                (_, 1) => (&self.stages, "one stream"),
                _ => (&self.stages_bulk4, "four streams"),
            };
            let stages = match largest_steps(table) {
                steps if !steps.is_empty() && (kind != "rr" || c.flows == 1) => {
                    format!(" On {on}, the per-packet program's largest steps: {steps}.")
                }
                _ => String::new(),
            };
            let floors = if c.floor_ns_per_run.is_empty() || c.peer_ns_per_run.median <= 0.0 {
                String::new()
            } else {
                let f = c.floors_ns_per_segment.median;
                format!(
                    " Empty programs on the hooks observer ran cost {f:.0} ns per segment over the \
                     same load ({} ns per run): with nothing in them observer's programs would \
                     stand at {:.2} of the peer, and its own work above them is {:.0} ns per \
                     segment.",
                    super::report::counted_floors(&c.floor_ns_per_run, &c.programs),
                    f / c.peer_ns_per_run.median,
                    c.observer_ns_per_segment.median - f,
                )
            };
            let felt = match &self.fixed_load {
                Some(f) if kind == "rr" && f.peer_ratio.n > 0 => format!(
                    " Where the host's CPU counts both (the fixed-load table: CPU per \
                     transaction, the tracepoint's copy and the agent included), the CPU per \
                     transaction with observer was {:.3} of the run's without it, and with the \
                     counter {:.3} (medians of the rounds' ratios; medians {:.1} and {:.1} µs a \
                     transaction against {:.1}). {}",
                    f.ratio.median,
                    f.peer_ratio.median,
                    f.with_us.median,
                    f.peer_us.median,
                    f.without_us.median,
                    super::fixed_load::reading(f),
                ),
                _ => String::new(),
            };
            n.push(format!(
                "- **Programs per segment over the bpftrace peer, {what}: missed by {:.2}** \
                 (median {:.2}, rounds {:.2}-{:.2}, against {TARGET_PEER_RATIO}): {:.0} ns of \
                 observer's programs per segment against the peer's {:.0} ns per run.{floors} \
                 That load's section shows where the time goes; the largest shares: \
                 {}.{stages}{felt}",
                c.ratio.median - TARGET_PEER_RATIO,
                c.ratio.median,
                c.ratio.min,
                c.ratio.max,
                c.observer_ns_per_segment.median,
                c.peer_ns_per_run.median,
                programs.map_or_else(
                    || match super::report::by_program(&c.programs).as_str() {
                        "-" => "none measured".to_string(),
                        own => format!("{own} ns per segment in these rounds"),
                    },
                    |p| largest_shares(p)
                ),
            ));
        }
        n
    }
}

/// The three largest steps of a stage table (the empty program's floor
/// left out), most first: `flow-map lookup (+84 ns); ...`; empty without
/// a table.
fn largest_steps(stages: &[super::breakdown::StageCost]) -> String {
    let mut steps: Vec<_> = stages.iter().skip(1).collect();
    steps.sort_by(|a, b| b.adds_ns.total_cmp(&a.adds_ns));
    steps
        .iter()
        .take(3)
        .map(|s| {
            format!(
                "{} ({:+.0} ns)",
                s.stage.trim_start_matches("+ "),
                s.adds_ns
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn largest_shares(programs: &[super::throughput::ProgramShare]) -> String {
    let mut p: Vec<_> = programs.iter().collect();
    p.sort_by(|a, b| b.cpu_pct.total_cmp(&a.cpu_pct));
    let top: Vec<String> = p
        .iter()
        .take(2)
        .map(|p| {
            format!(
                "`{}` {:.2}% of a CPU ({:.0} runs/s at {:.0} ns)",
                p.name, p.cpu_pct, p.hits_per_s, p.ns_per_hit
            )
        })
        .collect();
    if top.is_empty() {
        "none measured".to_string()
    } else {
        top.join(", ")
    }
}
