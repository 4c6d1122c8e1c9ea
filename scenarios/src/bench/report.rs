//! The benchmark's results: machine-readable JSON and the table in
//! `docs/benchmarks.md`, each figure against its target.

use serde::Serialize;

use super::{Stat, agent::Scale, breakdown::StageCost, churn::ChurnStep, throughput::Overhead};

/// Targets (issue "Overhead and scale benchmarks").
pub const TARGET_THROUGHPUT_RATIO: f64 = 0.98;
/// Mean kernel ns per hit of the per-packet program.
pub const TARGET_PROBE_NS: f64 = 100.0;
/// Agent CPU at 10k flows, % of one core.
pub const TARGET_CPU_PCT_10K: f64 = 1.0;
/// Poll of 100k flows, ms.
pub const TARGET_POLL_MS_100K: f64 = 100.0;

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
    /// Flows reported / flows made at 10k connections/s.
    pub churn_reported_ratio: f64,
    /// Ring-buffer drops during the 10k connections/s step.
    pub churn_drops_10k: u64,
    /// Lowest churn rate (connections/s) with a lost flow or a drop; 0 if none.
    pub churn_first_loss_per_s: f64,
    /// `ss -tin` wall time (ms) at 100k flows.
    pub ss_poll_ms_100k_flows: f64,
    /// Details.
    pub throughput: Vec<Overhead>,
    /// Details.
    pub scale: Vec<Scale>,
    /// Details.
    pub churn: Vec<ChurnStep>,
    /// The per-packet program's cost, stage by stage (one stream).
    pub stages: Vec<StageCost>,
}

/// How a row of the targets table came out, against its target.
#[derive(Clone, Copy)]
enum Judgement {
    /// The part that measures it did not run (`--only`, or `--quick` for
    /// the 100k-flow step).
    NotRun(&'static str),
    /// Measured, with no target of its own.
    NoTarget,
    /// Measured against its target.
    Measured(bool),
}

impl Judgement {
    /// `Measured(ok)` where `ran`, else `NotRun(why)`.
    fn of(ran: bool, why: &'static str, ok: bool) -> Judgement {
        if ran {
            Judgement::Measured(ok)
        } else {
            Judgement::NotRun(why)
        }
    }

    /// `NoTarget` where `ran`, else `NotRun`.
    fn untargeted(ran: bool) -> Judgement {
        if ran {
            Judgement::NoTarget
        } else {
            Judgement::NotRun(NOT_RUN)
        }
    }

    fn text(self) -> &'static str {
        match self {
            Judgement::NotRun(why) => why,
            Judgement::NoTarget => "",
            Judgement::Measured(true) => "met",
            Judgement::Measured(false) => "MISSED",
        }
    }
}

/// What the table says of a part that did not run.
const NOT_RUN: &str = "not run";

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

/// `median (min-max)` with `digits` decimals.
fn spread(x: &Stat, digits: usize) -> String {
    format!(
        "{:.digits$} ({:.digits$}-{:.digits$})",
        x.median, x.min, x.max
    )
}

impl Results {
    /// The markdown page.
    pub fn markdown(&self) -> String {
        let mut s = self.preamble();
        table(
            &mut s,
            "measure | result | target | ",
            self.target_rows()
                .into_iter()
                .map(|(name, value, target, judged)| {
                    let value = match judged {
                        Judgement::NotRun(_) => "-".to_string(),
                        _ => value,
                    };
                    vec![name.to_string(), value, target, judged.text().to_string()]
                }),
        );
        self.throughput_tables(&mut s);
        if !self.stages.is_empty() {
            s.push_str("\n## Where the per-packet time goes (one stream; the program cut short after each stage)\n\n");
            table(
                &mut s,
                "what runs | ns per hit | adds",
                self.stages.iter().map(|st| {
                    vec![
                        st.stage.to_string(),
                        format!("{:.0}", st.ns_per_hit),
                        format!("{:+.0}", st.adds_ns),
                    ]
                }),
            );
        }
        s.push_str("\n## Agent at scale (open loopback flows, 1% send a byte each second; 1 s interval)\n\n");
        table(
            &mut s,
            "flows | agent CPU % | CPU ms/poll | poll ms | RSS MiB | \
             `ss -tin` ms (median, min-max) | `ss` CPU ms",
            self.scale.iter().map(|a| {
                vec![
                    a.flows.to_string(),
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
        s.push_str("the two sides alternated over rounds; medians with min and max.\n\n");
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

    /// The targets table's rows: measure, result, target, judgement.
    fn target_rows(&self) -> Vec<(&'static str, String, String, Judgement)> {
        let ran = |part: &str| self.parts.iter().any(|p| p == part);
        let (tp, agent, churn) = (ran("throughput"), ran("agent"), ran("churn"));
        let big = agent && self.scale.iter().any(|a| a.flows >= 100_000);
        let big_why = if agent && self.quick {
            "not run (--quick)"
        } else {
            NOT_RUN
        };
        vec![
            (
                "throughput with/without, 1 stream",
                format!("{:.3}", self.throughput_ratio),
                format!(">= {TARGET_THROUGHPUT_RATIO}"),
                Judgement::of(
                    tp,
                    NOT_RUN,
                    self.throughput_ratio >= TARGET_THROUGHPUT_RATIO,
                ),
            ),
            (
                "throughput with/without, 4 streams",
                format!("{:.3}", self.throughput_ratio_p4),
                format!(">= {TARGET_THROUGHPUT_RATIO}"),
                Judgement::of(
                    tp,
                    NOT_RUN,
                    self.throughput_ratio_p4 >= TARGET_THROUGHPUT_RATIO,
                ),
            ),
            (
                "kernel ns per packet (bulk)",
                format!("{:.0}", self.probe_ns_per_hit),
                format!("<= {TARGET_PROBE_NS}"),
                Judgement::of(tp, NOT_RUN, self.probe_ns_per_hit <= TARGET_PROBE_NS),
            ),
            (
                "kernel ns per hit of an empty program on the same hook (the floor here)",
                format!("{:.0}", self.floor_ns_per_hit),
                "-".into(),
                Judgement::untargeted(tp),
            ),
            (
                "kernel ns per program run (churn)",
                format!("{:.0}", self.probe_ns_per_hit_churn),
                "-".into(),
                Judgement::untargeted(churn),
            ),
            (
                "agent CPU at 10k flows, 1 s interval",
                format!("{:.2}% of a core", self.agent_cpu_pct_10k_flows),
                format!("<= {TARGET_CPU_PCT_10K}%"),
                Judgement::of(
                    agent,
                    NOT_RUN,
                    self.agent_cpu_pct_10k_flows <= TARGET_CPU_PCT_10K,
                ),
            ),
            (
                "poll of 100k flows",
                format!("{:.1} ms", self.poll_ms_100k_flows),
                format!("<= {TARGET_POLL_MS_100K} ms"),
                Judgement::of(
                    big,
                    big_why,
                    self.poll_ms_100k_flows > 0.0 && self.poll_ms_100k_flows <= TARGET_POLL_MS_100K,
                ),
            ),
            (
                "agent RSS at 100k flows",
                format!("{:.0} MiB", self.rss_mib_100k_flows),
                "bounded, stated".into(),
                Judgement::of(big, big_why, self.rss_mib_100k_flows > 0.0),
            ),
            (
                "flows reported / made at 10k conn/s",
                format!("{:.4}", self.churn_reported_ratio),
                "1.0, no drops".into(),
                Judgement::of(
                    churn,
                    NOT_RUN,
                    (self.churn_reported_ratio - 1.0).abs() < 1e-9 && self.churn_drops_10k == 0,
                ),
            ),
            (
                "`ss -tin` at 100k flows",
                format!("{:.1} ms", self.ss_poll_ms_100k_flows),
                format!("slower than observer's {:.1} ms", self.poll_ms_100k_flows),
                Judgement::of(
                    big,
                    big_why,
                    self.ss_poll_ms_100k_flows > self.poll_ms_100k_flows,
                ),
            ),
        ]
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
            table(
                s,
                "program | ns per run | runs/s | % of one CPU",
                t.programs.iter().map(|p| {
                    vec![
                        p.name.to_string(),
                        format!("{:.0}", p.ns_per_hit),
                        format!("{:.0}", p.hits_per_s),
                        format!("{:.2}", p.cpu_pct),
                    ]
                }),
            );
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

    /// Says, for each target this run missed, by how much and what the
    /// run's own figures show about why.
    fn notes(&self) -> String {
        let mut n = Vec::new();
        let tp = self.parts.iter().any(|p| p == "throughput");
        if tp && self.probe_ns_per_hit > TARGET_PROBE_NS {
            n.push(self.probe_note());
        }
        for (streams, ratio) in [(1, self.throughput_ratio), (4, self.throughput_ratio_p4)] {
            if !tp || ratio >= TARGET_THROUGHPUT_RATIO {
                continue;
            }
            n.push(self.throughput_note(streams, ratio));
        }
        if n.is_empty() {
            return String::new();
        }
        format!("\n## Targets missed in this run\n\n{}\n", n.join("\n"))
    }

    /// The missed kernel cost per packet: the floor, each stage's share.
    fn probe_note(&self) -> String {
        let own = (self.probe_ns_per_hit - self.floor_ns_per_hit).max(0.0);
        let stage = |i: usize| self.stages.get(i).map_or(0.0, |s| s.adds_ns);
        let held = self.floor_ns_per_hit + stage(1) + stage(2);
        format!(
            "- **Kernel cost per packet: missed by {:.0} ns** ({:.0} ns against {TARGET_PROBE_NS:.0}). \
             An empty program on the same hook costs {:.0} ns per hit here (the BPF trampoline \
             and the run-time accounting that `kernel.bpf_stats_enabled` itself adds), which \
             leaves {:.0} ns for observer's own work under the target; it takes about {own:.0} ns. \
             The stage table above: the self-counter and the cast to `tcp_sock` add {:.0} ns \
             and the sample gate (the cookie, the segment's flags and ACK, a per-CPU slot) \
             {:.0} ns, so a segment the gate holds back costs about {held:.0} ns in all. The \
             segments it lets through (at most one per flow, CPU and jiffy, plus every \
             segment that ends a burst) add the flow-map lookup and the refresh of about 35 \
             `tcp_sock` fields, {:.0} ns averaged over all hits. {}",
            self.probe_ns_per_hit - TARGET_PROBE_NS,
            self.probe_ns_per_hit,
            self.floor_ns_per_hit,
            (TARGET_PROBE_NS - self.floor_ns_per_hit).max(0.0),
            stage(1),
            stage(2),
            stage(3) + stage(4) + stage(5),
            if held > TARGET_PROBE_NS {
                "Even a held-back segment costs more than the target here: the floor and \
                 the cast leave too little for any per-flow state. Going lower would mean \
                 not running on every segment, which `tcp_probe` (the per-segment hook \
                 that needs neither kprobes nor trampolines) does not allow."
            } else {
                "A held-back segment fits the target; the average misses it by the samples \
                 the gate lets through."
            },
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

#[cfg(test)]
mod tests {
    use super::*;

    fn row<'a>(page: &'a str, name: &str) -> &'a str {
        page.lines()
            .find(|l| l.starts_with(&format!("| {name} |")))
            .unwrap_or_else(|| panic!("no row {name} in\n{page}"))
    }

    fn agent_only(quick: bool, sizes: &[usize]) -> Results {
        Results {
            parts: vec!["agent".into()],
            quick,
            agent_cpu_pct_10k_flows: 0.3,
            scale: sizes
                .iter()
                .map(|&flows| Scale {
                    flows,
                    ..Scale::default()
                })
                .collect(),
            ..Results::default()
        }
    }

    /// The committed page is what `--render docs/benchmarks.json` writes:
    /// the renderer's output, byte for byte, for a real run's figures.
    #[test]
    fn committed_page_renders_from_committed_json() {
        let r: Results = serde_json::from_str(include_str!("../../../docs/benchmarks.json"))
            .expect("docs/benchmarks.json parses");
        assert_eq!(r.markdown(), include_str!("../../../docs/benchmarks.md"));
    }

    #[test]
    fn quick_run_says_the_100k_step_did_not_run() {
        let page = agent_only(true, &[1_000, 10_000]).markdown();
        for name in ["poll of 100k flows", "agent RSS at 100k flows"] {
            let r = row(&page, name);
            assert!(r.ends_with("| not run (--quick) |"), "{r}");
            assert!(r.contains("| - |"), "{r}");
        }
        assert!(row(&page, "agent CPU at 10k flows, 1 s interval").ends_with("| met |"));
        assert!(!page.contains("MISSED"), "{page}");
        assert!(page.contains("- run: `--quick`"));
    }

    #[test]
    fn full_run_judges_the_100k_step_and_rows_without_target_stay_blank() {
        let mut r = agent_only(false, &[1_000, 10_000, 100_000]);
        r.poll_ms_100k_flows = 150.0;
        r.rss_mib_100k_flows = 54.0;
        r.parts.push("throughput".into());
        r.floor_ns_per_hit = 70.0;
        let page = r.markdown();
        assert!(row(&page, "poll of 100k flows").ends_with("| MISSED |"));
        assert!(row(&page, "agent RSS at 100k flows").ends_with("| met |"));
        let floor = row(
            &page,
            "kernel ns per hit of an empty program on the same hook (the floor here)",
        );
        assert!(floor.ends_with("| - |  |"), "{floor}");
        assert!(row(&page, "kernel ns per program run (churn)").ends_with("| not run |"));
        assert!(!page.contains("First loss") && !page.contains("No loss"));
    }

    #[test]
    fn churn_states_the_first_loss_rate_or_that_there_was_none() {
        let step = |made_per_s: f64| ChurnStep {
            made_per_s,
            ..ChurnStep::default()
        };
        let mut r = Results {
            parts: vec!["churn".into()],
            churn: vec![step(1000.0), step(9998.0)],
            ..Results::default()
        };
        assert!(
            r.markdown()
                .contains("No loss at any rate up to 9998 connections/s")
        );
        r.churn_first_loss_per_s = 9998.0;
        assert!(
            r.markdown()
                .contains("First loss (a flow not reported, or a ring-buffer drop) at 9998")
        );
    }
}
