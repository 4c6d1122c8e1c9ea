//! The benchmark's results: machine-readable JSON and the table in
//! `docs/benchmarks.md`, each figure against its target.

use serde::Serialize;

use super::{
    Stat, agent::Scale, breakdown::StageCost, churn::ChurnStep, fixed_load::FixedLoad,
    peer::PeerComparison, rr::RrOverhead, throughput::Overhead,
};

/// Everything one run measured.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct Results {
    /// When (RFC 3339).
    pub date: String,
    /// Kernel release.
    pub kernel: String,
    /// CPU model and count.
    pub cpu: String,
    /// Git commit.
    pub commit: String,
    /// Median with/without ratio, one stream.
    pub throughput_ratio: f64,
    /// Median with/without ratio, four streams.
    pub throughput_ratio_p4: f64,
    /// Parts that ran (`throughput`, `agent`, `churn`).
    pub parts: Vec<String>,
    /// A `--quick` run: fewer rounds, shorter steps, no 100k-flow step.
    #[serde(default)]
    pub quick: bool,
    /// Mean kernel ns per hit of the per-packet program during bulk transfer.
    pub probe_ns_per_hit: f64,
    /// Mean kernel ns per hit of an empty program on the same hook.
    pub floor_ns_per_hit: f64,
    /// Mean kernel ns per program run during connection churn.
    pub probe_ns_per_hit_churn: f64,
    /// Agent CPU (% of one core) at 10k flows.
    pub agent_cpu_pct_10k_flows: f64,
    /// Poll latency (ms) at 100k flows.
    pub poll_ms_100k_flows: f64,
    /// Agent RSS (MiB) at 100k flows.
    pub rss_mib_100k_flows: f64,
    /// Agent CPU (% of one core) at 10k flows with `--poll-read`.
    #[serde(default)]
    pub agent_cpu_pct_10k_flows_walk: f64,
    /// Poll latency (ms) at 100k flows with `--poll-read`.
    #[serde(default)]
    pub poll_ms_100k_flows_walk: f64,
    /// Flows reported / flows made at 10k connections/s.
    pub churn_reported_ratio: f64,
    /// Ring-buffer drops during the 10k connections/s step.
    pub churn_drops_10k: u64,
    /// Lowest churn rate (connections/s) with a lost flow or a drop; 0 if none.
    pub churn_first_loss_per_s: f64,
    /// `ss -tin` wall time (ms) at 100k flows.
    pub ss_poll_ms_100k_flows: f64,
    /// observer's own ns per hit of the per-packet program in the
    /// one-stream bulk transfer: `probe_ns_per_hit - floor_ns_per_hit`.
    #[serde(default)]
    pub own_ns_per_hit: f64,
    /// observer's own ns per program run at the highest churn rate:
    /// `probe_ns_per_hit_churn - floor_ns_per_hit` (0 when the throughput
    /// part, which measures the floor, did not run).
    #[serde(default)]
    pub own_ns_per_run_churn: f64,
    /// Every observer program's run time during the one-stream bulk
    /// with-rounds, % of one CPU per Gbit/s transferred.
    #[serde(default)]
    pub bulk_cpu_pct_per_gbps: f64,
    /// Median request/response transactions/s with/without, 1 connection.
    #[serde(default)]
    pub rr_ratio_1: f64,
    /// Median request/response transactions/s with/without, 16 connections.
    #[serde(default)]
    pub rr_ratio_16: f64,
    /// observer's programs per segment over the one-map bpftrace peer's
    /// ns per run, the worse median of the 1- and 4-stream bulk loads (0:
    /// the peer part did not run).
    #[serde(default)]
    pub peer_ratio_bulk: f64,
    /// The same for request/response, the worse of 1 and 16 connections.
    #[serde(default)]
    pub peer_ratio_rr: f64,
    /// Details.
    #[serde(default)]
    pub peer: Vec<PeerComparison>,
    /// Details.
    #[serde(default)]
    pub rr: Vec<RrOverhead>,
    /// CPU per request/response transaction at a fixed offered load, with
    /// over without observer (median; 0: not run).
    #[serde(default)]
    pub rr_cpu_ratio: f64,
    /// Details.
    #[serde(default)]
    pub fixed_load: Option<FixedLoad>,
    /// Details.
    pub throughput: Vec<Overhead>,
    /// Details.
    pub scale: Vec<Scale>,
    /// Details.
    pub churn: Vec<ChurnStep>,
    /// The per-packet program's cost, stage by stage (one stream).
    pub stages: Vec<StageCost>,
    /// The same on four streams.
    #[serde(default)]
    pub stages_bulk4: Vec<StageCost>,
    /// The same on one request/response connection, where every segment
    /// ends a burst.
    #[serde(default)]
    pub stages_rr: Vec<StageCost>,
    /// Candidate flow-state lookups, each alone on the per-packet hook
    /// (one stream); `adds_ns` is above the empty program's floor.
    #[serde(default)]
    pub candidates: Vec<StageCost>,
}

/// Writes a Markdown table to `s`: the header (its cells separated by
/// ` | `), its `---` rule, one line per row. An empty header cell is written
/// as one space.
fn table(s: &mut String, header: &str, rows: impl IntoIterator<Item = Vec<String>>) {
    let header: Vec<&str> = header.split(" | ").collect();
    let line = |s: &mut String, cells: &mut dyn Iterator<Item = &str>| {
        s.push('|');
        for c in cells {
            s.push(' ');
            s.push_str(c);
            if !c.is_empty() {
                s.push(' ');
            }
            s.push('|');
        }
        s.push('\n');
    };
    line(s, &mut header.iter().copied());
    line(s, &mut header.iter().map(|_| "---"));
    for row in rows {
        s.push('|');
        for c in &row {
            s.push_str(&format!(" {c} |"));
        }
        s.push('\n');
    }
}

/// One row per program: ns per run, runs/s, % of one CPU.
fn programs_table(s: &mut String, programs: &[super::throughput::ProgramShare]) {
    table(
        s,
        "program | ns per run | runs/s | % of one CPU",
        programs.iter().map(|p| {
            vec![
                p.name.to_string(),
                format!("{:.0}", p.ns_per_hit),
                format!("{:.0}", p.hits_per_s),
                format!("{:.2}", p.cpu_pct),
            ]
        }),
    );
}

/// `median (min-max)` with `digits` decimals.
fn spread(x: &Stat, digits: usize) -> String {
    format!(
        "{:.digits$} ({:.digits$}-{:.digits$})",
        x.median, x.min, x.max
    )
}

impl Results {
    /// Fills in the figures derived from the measured ones: observer's own
    /// work above the empty program's floor (bulk per hit, churn per run)
    /// and the bulk transfer's program time per Gbit/s. Nothing without a
    /// floor (the throughput part did not run).
    pub fn derive(&mut self) {
        if self.floor_ns_per_hit <= 0.0 {
            return;
        }
        self.own_ns_per_hit = (self.probe_ns_per_hit - self.floor_ns_per_hit).max(0.0);
        if self.probe_ns_per_hit_churn > 0.0 {
            self.own_ns_per_run_churn =
                (self.probe_ns_per_hit_churn - self.floor_ns_per_hit).max(0.0);
        }
        if let Some(t) = self.throughput.iter().find(|t| t.streams == 1)
            && t.with_bps.median > 0.0
        {
            let pct: f64 = t.programs.iter().map(|p| p.cpu_pct).sum();
            self.bulk_cpu_pct_per_gbps = pct / (t.with_bps.median / 1e9);
        }
    }

    /// The markdown page.
    pub fn markdown(&self) -> String {
        let mut s = self.preamble();
        table(&mut s, "measure | result | target | ", self.target_table());
        self.peer_table(&mut s);
        self.rr_tables(&mut s);
        self.throughput_tables(&mut s);
        for (stages, load) in [
            (&self.stages, "one stream"),
            (&self.stages_bulk4, "four streams"),
            (
                &self.stages_rr,
                "request/response, 1 connection: every segment ends a burst",
            ),
        ] {
            if stages.is_empty() {
                continue;
            }
            s.push_str(&format!(
                "\n## Where the per-packet time goes ({load}; the program cut short after each stage)\n\n"
            ));
            table(
                &mut s,
                "what runs | ns per hit | adds",
                stages.iter().map(|st| {
                    vec![
                        st.stage.to_string(),
                        format!("{:.0}", st.ns_per_hit),
                        format!("{:+.0}", st.adds_ns),
                    ]
                }),
            );
        }
        if !self.candidates.is_empty() {
            s.push_str(
                "\n## Candidate flow-state lookups (each alone on tcp_probe, one stream; \
                 it finds or makes one socket's counter and adds one)\n\n",
            );
            table(
                &mut s,
                "lookup | ns per hit | above the floor",
                self.candidates.iter().map(|c| {
                    vec![
                        c.stage.to_string(),
                        format!("{:.0}", c.ns_per_hit),
                        format!("{:+.0}", c.adds_ns),
                    ]
                }),
            );
        }
        s.push_str(
            "\n## Agent at scale (open loopback flows, 1% send a byte each second; 1 s interval; \
             the agent started first and tracks every flow)\n\n",
        );
        table(
            &mut s,
            "flows | `--poll-read` | agent CPU % | CPU ms/poll | poll ms | RSS MiB | \
             `ss -tin` ms (median, min-max) | `ss` CPU ms",
            self.scale.iter().map(|a| {
                vec![
                    a.flows.to_string(),
                    if a.poll_read { "on" } else { "off" }.to_string(),
                    format!("{:.2}", a.cpu_pct),
                    format!("{:.1}", a.cpu_ms_per_poll),
                    format!("{:.1}", a.poll_ms),
                    format!("{:.0}", a.rss_mib),
                    spread(&a.ss_ms, 1),
                    format!("{:.1}", a.ss_cpu_ms),
                ]
            }),
        );
        self.churn_table(&mut s);
        s.push_str(&self.notes());
        s
    }

    /// The title, how the page was made and the run's particulars.
    fn preamble(&self) -> String {
        let mut s = String::new();
        s.push_str("# Benchmarks\n\n");
        s.push_str("Written by `cargo xtask bench`; rerun it to refresh. Comparisons are ratios within one run,\n");
        s.push_str("the sides alternated over rounds: each round's ratio, then the median of the rounds with\n");
        s.push_str(
            "their min and max (so a ratio need not equal the quotient of the median columns).\n\n",
        );
        s.push_str(&format!(
            "- date: {}\n- kernel: {}\n- CPU: {}\n- commit: {} (the page is committed after the \
             commit it measured)\n- run: {}\n\n",
            self.date,
            self.kernel,
            self.cpu,
            self.commit,
            if self.quick {
                "`--quick` (3 rounds, shorter steps, no 100k-flow step)"
            } else {
                "full"
            }
        ));
        s
    }

    /// observer against the bpftrace peer, load by load.
    fn peer_table(&self, s: &mut String) {
        if self.peer.is_empty() {
            return;
        }
        s.push_str(&format!(
            "\n## observer against a one-map bpftrace counter (the same loads, rounds alternated)\n\n\
             The peer: `bpftrace -e '{}'`. observer's side: every observer program's run time \
             over the load divided by the segments `observer_tcp_probe` saw. The floors: empty \
             programs on the hooks observer's hot path may take (`tcp_probe`, per segment; \
             `sock_recv_length`, per receive call), attached alone over the same load in a \
             third side of each round; each round counts those where observer ran a program \
             (the read hook only where no poll-time walk replaces it), their run time over the \
             segments: what observer's programs would cost with nothing in them. The peer's \
             classic tracepoint copies the socket's fields into a trace record before its \
             program runs, outside the run time counted here; observer's BTF tracepoint reads \
             them inside its program (the CPU-per-transaction table counts both).\n\n",
            super::peer::PEER_SCRIPT
        ));
        table(
            s,
            "load | streams or connections | observer / peer (median, min-max) | \
             observer's programs, ns per segment | peer, ns per run | by program, ns per \
             segment (median) | floors, ns per segment (median, min-max) | floors, ns per run \
             (median)",
            self.peer.iter().map(|c| {
                vec![
                    if c.load == "rr" {
                        "request/response"
                    } else {
                        "bulk"
                    }
                    .to_string(),
                    c.flows.to_string(),
                    spread(&c.ratio, 2),
                    spread(&c.observer_ns_per_segment, 0),
                    spread(&c.peer_ns_per_run, 0),
                    by_program(&c.programs),
                    if c.floor_ns_per_run.is_empty() {
                        "-".to_string()
                    } else {
                        spread(&c.floors_ns_per_segment, 0)
                    },
                    floors(&c.floor_ns_per_run),
                ]
            }),
        );
    }

    /// The request/response table, then each count's per-program table.
    fn rr_tables(&self, s: &mut String) {
        if self.rr.is_empty() {
            return;
        }
        s.push_str(&format!(
            "\n## Request/response ({} bytes each way, one transaction at a time per connection, \
             loopback in a namespace)\n\n",
            super::rr::MESSAGE
        ));
        table(
            s,
            "connections | with/without (median, min-max) | \
             A/A: without/without (median, min-max) | without (transactions/s) | \
             with (transactions/s) | segments per transaction | \
             programs' ns per segment (= ms of CPU per million segments)",
            self.rr.iter().map(|r| {
                vec![
                    r.connections.to_string(),
                    spread(&r.ratio, 3),
                    spread(&r.aa_ratio, 3),
                    format!("{:.0}", r.without_tps.median),
                    format!("{:.0}", r.with_tps.median),
                    format!("{:.2}", r.segments_per_transaction),
                    format!("{:.0}", r.programs_ns_per_segment),
                ]
            }),
        );
        if let Some(f) = &self.fixed_load {
            s.push_str(&format!(
                "\n### CPU per transaction at a fixed offered load ({} paced connections, \
                 {:.0} transactions/s: {:.0}% of an unpaced run without observer; the whole \
                 machine's busy time, the agent's included).{}\n\n",
                f.connections,
                f.offered_per_s,
                super::fixed_load::LOAD_SHARE * 100.0,
                if f.peer_ratio.n > 0 {
                    " A fourth side attaches the one-map bpftrace counter instead of \
                     observer: here its tracepoint's copy of the socket counts, which the \
                     programs' run time above leaves out."
                } else {
                    ""
                }
            ));
            table(
                s,
                "with/without (median, min-max) | A/A: without/without (median, min-max) | \
                 the bpftrace counter attached/without (median, min-max) | \
                 without (µs of CPU per transaction) | with (µs) | the counter (µs) | \
                 made/offered with observer | CPUs busy without observer",
                [vec![
                    spread(&f.ratio, 3),
                    spread(&f.aa_ratio, 3),
                    if f.peer_ratio.n > 0 {
                        spread(&f.peer_ratio, 3)
                    } else {
                        "-".into()
                    },
                    format!("{:.1}", f.without_us.median),
                    format!("{:.1}", f.with_us.median),
                    if f.peer_us.n > 0 {
                        format!("{:.1}", f.peer_us.median)
                    } else {
                        "-".into()
                    },
                    format!("{:.3}", f.achieved.median),
                    format!("{:.0}%", f.busy_without.median * 100.0),
                ]],
            );
            s.push_str(&format!("\n{}\n", super::fixed_load::reading(f)));
        }
        for r in self.rr.iter().filter(|r| !r.programs.is_empty()) {
            s.push_str(&format!(
                "\n### Every observer program during the {}-connection with-rounds\n\n",
                r.connections
            ));
            programs_table(s, &r.programs);
        }
    }

    /// The throughput table, then each run's per-program table.
    fn throughput_tables(&self, s: &mut String) {
        s.push_str("\n## Throughput (loopback bulk TCP in a namespace, iperf3)\n\n");
        table(
            s,
            "streams | with/without (median, min-max) | \
             A/A: without/without (median, min-max) | without (Gbit/s) | with (Gbit/s) | \
             probe ns/hit | empty program ns/hit | hits/s",
            self.throughput.iter().map(|t| {
                vec![
                    t.streams.to_string(),
                    spread(&t.ratio, 3),
                    spread(&t.aa_ratio, 3),
                    format!("{:.2}", t.without_bps.median / 1e9),
                    format!("{:.2}", t.with_bps.median / 1e9),
                    format!("{:.0}", t.probe_ns_per_hit),
                    format!("{:.0}", t.floor_ns_per_hit),
                    format!("{:.0}", t.probe_hits_per_s),
                ]
            }),
        );
        for t in self.throughput.iter().filter(|t| !t.programs.is_empty()) {
            s.push_str(&format!(
                "\n### Every observer program during the {}-stream with-rounds\n\n",
                t.streams
            ));
            programs_table(s, &t.programs);
        }
    }

    /// The churn table and the rate of the first loss.
    fn churn_table(&self, s: &mut String) {
        s.push_str("\n## Connection churn (flows: both ends of each connection, plus the client end of a failed connect)\n\n");
        table(
            s,
            "asked/s | made/s | connections | failed connects | flows | reported closed | \
             reported/flows | ring drops | ns/run",
            self.churn.iter().map(|c| {
                vec![
                    c.target_per_s.to_string(),
                    format!("{:.0}", c.made_per_s),
                    c.made.to_string(),
                    c.failed_connects.to_string(),
                    c.flows.to_string(),
                    c.reported_closed.to_string(),
                    format!("{:.4}", c.reported_ratio),
                    c.ringbuf_drops.to_string(),
                    format!("{:.0}", c.probe_ns_per_hit),
                ]
            }),
        );
        if let Some(last) = self.churn.last().filter(|c| !c.programs.is_empty()) {
            s.push_str(&format!(
                "\n### Every observer program during the {} connections/s step\n\n",
                last.target_per_s
            ));
            programs_table(s, &last.programs);
        }
        if let Some(top) = self.churn.iter().map(|c| c.made_per_s).reduce(f64::max) {
            if self.churn_first_loss_per_s > 0.0 {
                s.push_str(&format!(
                    "\nFirst loss (a flow not reported, or a ring-buffer drop) at {:.0} \
                     connections/s.\n",
                    self.churn_first_loss_per_s
                ));
            } else {
                s.push_str(&format!(
                    "\nNo loss at any rate up to {top:.0} connections/s, the most this generator \
                     made here: the rate of the first loss lies above it.\n"
                ));
            }
        }
    }
}

/// The empty programs' ns per run of their own, by hook: `tcp_probe 88,
/// sock_recv_length 80`; `-` when not measured (an older results file).
pub(super) fn floors(per_run: &std::collections::BTreeMap<String, f64>) -> String {
    floors_of(per_run, super::floor::FLOORS.iter())
}

/// [`floors`] of the hooks where observer ran a program: `programs` holds
/// observer's programs' ns per segment by the name the kernel keeps
/// ([`super::floor::hooks_observer_ran`]).
pub(super) fn counted_floors(
    per_run: &std::collections::BTreeMap<String, f64>,
    programs: &std::collections::BTreeMap<String, f64>,
) -> String {
    floors_of(per_run, super::floor::hooks_observer_ran(programs))
}

/// The floors of `per_run` on `hooks` (entries of
/// [`super::floor::FLOORS`]), as "hook ns, ...".
fn floors_of<'a>(
    per_run: &std::collections::BTreeMap<String, f64>,
    hooks: impl Iterator<Item = &'a (&'a str, &'a str, &'a str)>,
) -> String {
    if per_run.is_empty() {
        return "-".to_string();
    }
    hooks
        .filter_map(|(program, hook, _)| {
            per_run
                .get(&super::floor::kept(program))
                .map(|ns| format!("{hook} {ns:.0}"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A peer comparison's programs, costliest first, each as its name less
/// the common `observer_` prefix and its ns per segment ("tcp_pr 310,
/// recv_l 190"); `-` when not kept (an older results file).
pub(super) fn by_program(programs: &std::collections::BTreeMap<String, f64>) -> String {
    let mut v: Vec<(&String, &f64)> = programs.iter().filter(|(_, ns)| **ns >= 0.5).collect();
    if v.is_empty() {
        return "-".to_string();
    }
    v.sort_by(|a, b| b.1.total_cmp(a.1));
    v.iter()
        .map(|(name, ns)| format!("{} {ns:.0}", name.trim_start_matches("observer_")))
        .collect::<Vec<_>>()
        .join(", ")
}
