//! What a load leaves out on this kernel, said once when the programs
//! attach: at `warn` where a figure is lost (something the operator may
//! want another kernel for), at `info` where every figure stays exact and
//! only the cost per packet rises (the expected path on that kernel, which
//! nobody can act on).

/// One thing this kernel or this set of programs leaves out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Degraded {
    /// A figure reads as 0, lags or is never filled (a `tcp_sock` member
    /// or an optional hook the kernel lacks): one line, what and why.
    Figure(String),
    /// Every figure stays exact, at a higher cost per packet (a fallback
    /// the kernel forces: helper reads, the TCP iterator's one namespace,
    /// no poll-time read): one line, what and why.
    Cost(String),
}

impl Degraded {
    /// The level it is said at: `Warn` for a lost figure, `Info` for a cost.
    pub fn level(&self) -> log::Level {
        match self {
            Degraded::Figure(_) => log::Level::Warn,
            Degraded::Cost(_) => log::Level::Info,
        }
    }
}

impl std::fmt::Display for Degraded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Degraded::Figure(line) | Degraded::Cost(line) => f.write_str(line),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_figure_warns_and_a_cost_informs() {
        let lost = Degraded::Figure("kernel has no x: the figure it feeds reads as 0".into());
        let cost = Degraded::Cost("reading with bpf_probe_read_kernel".into());
        assert_eq!(lost.level(), log::Level::Warn);
        assert_eq!(cost.level(), log::Level::Info);
        assert_eq!(cost.to_string(), "reading with bpf_probe_read_kernel");
    }
}
