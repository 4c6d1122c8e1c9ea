//! What a load leaves out on this kernel, said once when the programs
//! attach: at `warn` where a figure is lost (something the operator may
//! want another kernel for), at `info` where every figure stays exact and
//! only the cost per packet rises (the expected path on that kernel, which
//! nobody can act on).
//!
//! Each reason is one variant with the data its line needs; the lines
//! themselves are written once, in [`Degraded`]'s `Display` (the
//! integration tests and `docs/kernels.md` quote them).

use crate::kernel::load::hooks::{Hook, Need};

/// One thing this kernel or this set of programs leaves out, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Degraded {
    /// An optional member the kernel's BTF lacks (a figure reads as 0).
    Member {
        /// `struct.path` as [`crate::kernel::load::offsets::Resolved::missing`]
        /// lists it (`tcp_sock.rcv_ooopack`).
        member: String,
    },
    /// An optional hook with no program on it (a figure lags or is never
    /// filled): made by [`Degraded::hook_missing`], never for a
    /// [`Need::Required`] hook.
    Hook {
        /// The hook from the table ([`crate::kernel::load::hooks`]).
        hook: &'static Hook,
        /// Why it has no program.
        absence: Absence,
        /// Whether its fallback ([`Hook::fallback`]) is attached instead.
        covered: bool,
    },
    /// The owner walk ([`crate::kernel::load::hooks::OWNERS`]) was refused
    /// (a figure is filled late: accepted flows' owners).
    NoOwnerWalk {
        /// What the kernel said, on one line.
        error: String,
    },
    /// The poll-time read runs on the TCP iterator
    /// ([`crate::kernel::load::hooks::POLL_TCP`]), which reaches only the
    /// agent's network namespace (a cost: other namespaces are sampled in
    /// the hot path).
    PollOneNetns {
        /// Why the storage iterator was refused, on one line.
        refused: String,
    },
    /// The poll-time read was asked for and refused (a cost: idle flows
    /// are sampled in the hot path).
    NoPollRead {
        /// Why, on one line.
        refused: String,
    },
    /// Direct BTF-checked socket reads were refused; the programs read
    /// with `bpf_probe_read_kernel` (a cost).
    HelperReads {
        /// Why, on one line.
        refused: String,
    },
    /// An adopted pinned set reads with `bpf_probe_read_kernel` (a cost).
    PinnedHelperReads,
}

/// Why an optional hook has no program on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Absence {
    /// The kernel has no such tracepoint (no `btf_trace_<name>` in its BTF).
    NoTracepoint,
    /// The kernel refused the program or its link: what it said.
    Refused(String),
    /// An adopted pinned set has no link for it.
    NotPinned,
}

impl Degraded {
    /// What is lost without the optional `hook`: `absence` says why it is
    /// missing, `covered` whether its fallback is attached. None for a
    /// required hook, whose absence fails the load.
    pub fn hook_missing(hook: &'static Hook, absence: Absence, covered: bool) -> Option<Degraded> {
        (hook.need != Need::Required).then_some(Degraded::Hook {
            hook,
            absence,
            covered,
        })
    }

    /// Whether a figure is lost (else every figure stays exact, at a
    /// higher cost per packet).
    pub fn loses_figure(&self) -> bool {
        match self {
            Degraded::Member { .. } | Degraded::Hook { .. } | Degraded::NoOwnerWalk { .. } => true,
            Degraded::PollOneNetns { .. }
            | Degraded::NoPollRead { .. }
            | Degraded::HelperReads { .. }
            | Degraded::PinnedHelperReads => false,
        }
    }

    /// The level it is said at: `Warn` for a lost figure, `Info` for a cost.
    pub fn level(&self) -> log::Level {
        if self.loses_figure() {
            log::Level::Warn
        } else {
            log::Level::Info
        }
    }
}

impl std::fmt::Display for Degraded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Degraded::Member { member } => {
                write!(f, "kernel has no {member}: the figure it feeds reads as 0")
            }
            Degraded::Hook {
                hook,
                absence,
                covered,
            } => {
                let tp = hook.tracepoint;
                match absence {
                    Absence::NoTracepoint => write!(f, "kernel has no tracepoint {tp}")?,
                    Absence::Refused(error) => f.write_str(error)?,
                    Absence::NotPinned => write!(f, "{tp}: no program on it in the pinned set")?,
                }
                match hook.need {
                    // Never made (see [`Degraded::hook_missing`]).
                    Need::Required => f.write_str(": the load fails without it"),
                    Need::Closes => f.write_str(
                        ": a close the kernel skips reporting (nested in another) leaves its \
                         flow open",
                    ),
                    Need::Stalls => f.write_str(
                        ": a sender that gets no ACK at all (an outage, a PMTU black hole) \
                         shows its last ACK's figures until one comes, where the poll-time \
                         read does not reach it",
                    ),
                    Need::Owner => write!(
                        f,
                        ": flows accepted by a listener show no pid or comm until the owner \
                         walk finds them at a poll{} (tracepoint {tp} arrived in Linux 6.3)",
                        if hook.fallback.is_some() && !covered {
                            ", and idle flows' figures lag their last received segment"
                        } else {
                            ""
                        },
                    ),
                }
            }
            Degraded::NoOwnerWalk { error } => write!(
                f,
                "no owner walk ({error}): flows accepted by a listener show no pid or comm \
                 until they read (Linux 5.11 or later has it)"
            ),
            // What changes comes first and the kernel's refusal last: a
            // line that opened on "cannot attach ... Operation not
            // permitted" read as a failure to act on, when it is a cost.
            Degraded::PollOneNetns { refused } => write!(
                f,
                "flows of network namespaces other than this agent's are sampled at every \
                 segment that ends a burst instead of read at each poll: that costs more per \
                 packet, and an idle one shows its last segment's unread data until its next \
                 segment; every other figure is as exact, and nothing needs doing (the kernel \
                 refused the poll-time read over every namespace, as sandboxed kernels do, so \
                 it reads this namespace's sockets: {refused})"
            ),
            Degraded::NoPollRead { refused } => write!(
                f,
                "no poll-time read ({refused}): idle flows are exact only because every \
                 segment that ends a burst and every read that drains the socket is sampled, \
                 which costs more per packet (Linux 5.11 or later has it)"
            ),
            Degraded::HelperReads { refused } => write!(
                f,
                "direct socket reads rejected ({refused}); reading with \
                 bpf_probe_read_kernel, which costs more per packet"
            ),
            Degraded::PinnedHelperReads => f.write_str(
                "the pinned programs read socket fields with bpf_probe_read_kernel, which \
                 costs more per packet",
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::load::hooks::{DESTROY, RECV_LENGTH, TCP_PROBE};

    #[test]
    fn a_lost_figure_warns_and_a_cost_informs() {
        let lost = Degraded::Member { member: "x".into() };
        let cost = Degraded::PinnedHelperReads;
        assert_eq!(lost.level(), log::Level::Warn);
        assert_eq!(cost.level(), log::Level::Info);
        assert_eq!(
            lost.to_string(),
            "kernel has no x: the figure it feeds reads as 0"
        );
        assert_eq!(
            cost.to_string(),
            "the pinned programs read socket fields with bpf_probe_read_kernel, which costs \
             more per packet"
        );
        let owner = Degraded::NoOwnerWalk { error: "e".into() };
        assert_eq!(owner.level(), log::Level::Warn);
        for cost in [
            Degraded::PollOneNetns {
                refused: "e".into(),
            },
            Degraded::NoPollRead {
                refused: "e".into(),
            },
            Degraded::HelperReads {
                refused: "e".into(),
            },
        ] {
            assert_eq!(cost.level(), log::Level::Info, "{cost}");
        }
    }

    #[test]
    fn a_poll_read_of_one_namespace_says_the_cost_before_the_refusal() {
        let line = Degraded::PollOneNetns {
            refused: "cannot attach to iter:bpf_sk_storage_map: Operation not permitted".into(),
        }
        .to_string();
        assert!(
            line.starts_with("flows of network namespaces other than this agent's are sampled"),
            "{line}"
        );
        assert!(line.contains("nothing needs doing"), "{line}");
        assert!(
            line.ends_with(
                "sockets: cannot attach to iter:bpf_sk_storage_map: Operation not permitted)"
            ),
            "{line}"
        );
    }

    #[test]
    fn a_missing_hook_says_what_is_lost_and_a_required_one_fails_the_load() {
        assert_eq!(
            Degraded::hook_missing(&TCP_PROBE, Absence::Refused("x".into()), false),
            None
        );
        let recv = Degraded::hook_missing(&RECV_LENGTH, Absence::NoTracepoint, false)
            .map(|d| d.to_string());
        assert_eq!(
            recv.as_deref(),
            Some(
                "kernel has no tracepoint sock_recv_length: flows accepted by a listener show \
                 no pid or comm until the owner walk finds them at a poll, and idle flows' \
                 figures lag their last received segment (tracepoint sock_recv_length arrived \
                 in Linux 6.3)"
            )
        );
        let covered = Degraded::hook_missing(&RECV_LENGTH, Absence::Refused("no".into()), true)
            .map(|d| d.to_string());
        assert!(covered.is_some_and(|l| l.starts_with("no: ") && !l.contains("lag")));
        let destroy = Degraded::hook_missing(&DESTROY, Absence::NotPinned, false);
        assert!(
            destroy
                .as_ref()
                .is_some_and(|d| d.level() == log::Level::Warn)
        );
        assert_eq!(
            destroy.map(|d| d.to_string()).as_deref(),
            Some(
                "tcp_destroy_sock: no program on it in the pinned set: a close the kernel \
                 skips reporting (nested in another) leaves its flow open"
            )
        );
    }
}
