//! Where observer's programs go, in one table: which program goes on which
//! tracepoint, whether the load fails without it or goes on with a figure
//! lost, what stands in for it, and the order they attach in; and the
//! iterators the agent runs at a poll (the poll-time read's two, the
//! owner walk). Loading ([`crate::kernel::probes`]), adopting a pinned set
//! ([`crate::kernel::load::adopt`]), `/healthz` and the degraded list all
//! read it.

/// What a hook's absence costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// The load fails without it.
    Required,
    /// `tcp_destroy_sock`: a close the kernel skips reporting (nested in
    /// another) leaves its flow open.
    Closes,
    /// The read hook (`sock_recv_length`, Linux 6.3), where it is
    /// attached ([`When::WithoutWalks`]): flows accepted by a listener
    /// show no pid or comm until the owner walk finds them.
    Owner,
    /// `tcp_retransmit_skb`: a sender whose segments all vanish, where no
    /// walk reaches it, shows the figures of its last ACK.
    Stalls,
}

/// When a hook is attached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    /// At every load.
    Always,
    /// Only where the poll-time read and the owner walk do not both run
    /// (`--poll-read off`, a kernel without them, `--pin`): between them
    /// they give what a program on every read gives (an accepted flow's
    /// owner; the figures of a flow whose reader caught up, and when it
    /// did, from the socket's last event), at a poll instead of a read.
    WithoutWalks,
}

/// One program on one BTF tracepoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hook {
    /// The program's name in the eBPF object (`observer-ebpf/src/main.rs`).
    pub program: &'static str,
    /// The BTF tracepoint (`btf_trace_<name>` in the kernel's BTF).
    pub tracepoint: &'static str,
    /// What its absence costs.
    pub need: Need,
    /// When it is attached.
    pub when: When,
    /// What is attached where this one cannot be: without
    /// `sock_recv_length`, `tcp_rcv_space_adjust` (Linux 4.16) refreshes
    /// a flow's figures after reads, so an idle flow's figures do not lag
    /// its last received segment.
    pub fallback: Option<&'static Hook>,
}

/// `tcp_destroy_sock` (Linux 4.16): a backstop for CLOSE events the
/// kernel skips (`flow::on_destroy` in observer-ebpf).
pub const DESTROY: Hook = Hook {
    program: "observer_destroy",
    tracepoint: "tcp_destroy_sock",
    need: Need::Closes,
    when: When::Always,
    fallback: None,
};

/// `inet_sock_set_state`: flows made and closed.
pub const SET_STATE: Hook = Hook {
    program: "observer_set_state",
    tracepoint: "inet_sock_set_state",
    need: Need::Required,
    when: When::Always,
    fallback: None,
};

/// `tcp_probe`: every segment received.
pub const TCP_PROBE: Hook = Hook {
    program: "observer_tcp_probe",
    tracepoint: "tcp_probe",
    need: Need::Required,
    when: When::Always,
    fallback: None,
};

/// `tcp_rcv_space_adjust`: reads, where `sock_recv_length` is missing.
pub const RCV_SPACE: Hook = Hook {
    program: "observer_rcv_space",
    tracepoint: "tcp_rcv_space_adjust",
    need: Need::Owner,
    when: When::WithoutWalks,
    fallback: None,
};

/// `tcp_retransmit_skb` (Linux 4.15): a segment sent again. Only the
/// resends of a retransmission timeout are sampled (`flow::on_retransmit`
/// in observer-ebpf): a sender that gets no ACK at all (an outage, a PMTU
/// black hole) has no other hook, and the walk reaches only the agent's
/// network namespace where the kernel refuses the storage iterator. The
/// tracepoint fires before the kernel counts the resend
/// (`__tcp_retransmit_skb()`, net/ipv4/tcp_output.c), so a sample there
/// shows `total_retrans` one short until the next.
pub const RETRANSMIT: Hook = Hook {
    program: "observer_retransmit",
    tracepoint: "tcp_retransmit_skb",
    need: Need::Stalls,
    when: When::Always,
    fallback: None,
};

/// `sock_recv_length` (Linux 6.3): the owner of a read, and a refresh
/// after it. Sends have no hook (a sender is sampled as its ACKs arrive):
/// every program on a path costs at least the empty-program floor there.
pub const RECV_LENGTH: Hook = Hook {
    program: "observer_recv_length",
    tracepoint: "sock_recv_length",
    need: Need::Owner,
    when: When::WithoutWalks,
    fallback: Some(&RCV_SPACE),
};

/// The hooks in attach order. Those that end flows first: a flow the
/// others create while the set attaches then has its close seen
/// (attached the other way round, the flows of a busy host that closed
/// in between stayed in the map, open for good). Fallbacks attach in
/// their hook's place.
pub const ATTACH_ORDER: [&Hook; 5] = [&DESTROY, &SET_STATE, &TCP_PROBE, &RETRANSMIT, &RECV_LENGTH];

/// An iterator program: not attached to a tracepoint, but linked once and
/// run by the agent at a poll (`BPF_ITER_CREATE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IterHook {
    /// Its name in the attached list and in a pinned set's link file
    /// (`iter:<target>`).
    pub name: &'static str,
    /// The program's name in the eBPF object.
    pub program: &'static str,
    /// The map it walks, handed to the link (`bpf_iter_link_info.map`):
    /// the socket storage the hooks mark flows in for
    /// `bpf_sk_storage_map`; none for the iterators over kernel objects.
    pub map: Option<&'static str>,
    /// What `POLL_SCOPE` slot 0 holds while it walks
    /// ([`observer_common::poll_scope`]): which flows the hooks leave to
    /// it. `NONE` for the owner walk, which the hooks do not hear of.
    pub reach: u64,
}

impl IterHook {
    /// The iterator target the kernel knows it by (`tcp`, `task_file`).
    pub fn target(&self) -> &'static str {
        self.name.trim_start_matches("iter:")
    }
}

/// The poll-time read over socket-local storage: every marked flow, in
/// every network namespace (Linux 5.11).
pub const POLL_STORAGE: IterHook = IterHook {
    name: "iter:bpf_sk_storage_map",
    program: observer_common::PROG_POLL,
    map: Some(observer_common::MAP_ACTIVE),
    reach: observer_common::poll_scope::ALL,
};

/// The poll-time read over the TCP sockets of the agent's own network
/// namespace, where the kernel refuses the storage iterator.
pub const POLL_TCP: IterHook = IterHook {
    name: "iter:tcp",
    program: observer_common::PROG_POLL_TCP,
    map: None,
    reach: observer_common::poll_scope::ONE_NETNS,
};

/// The poll-time read's iterators, the one tried first first.
pub const POLL_ITERS: [&IterHook; 2] = [&POLL_STORAGE, &POLL_TCP];

/// The owner walk over every process's open files (Linux 5.11,
/// `bpf_sock_from_file`).
pub const OWNERS: IterHook = IterHook {
    name: "iter:task_file",
    program: observer_common::PROG_OWNERS,
    map: None,
    reach: observer_common::poll_scope::NONE,
};

/// A hook as attached: which one, and aya's id of its link in the loaded
/// program.
#[derive(Debug)]
pub struct AttachedHook {
    /// The hook (a fallback where it stands in).
    pub hook: &'static Hook,
    /// Its link, as aya keeps it until it is pinned or dropped.
    pub link: aya::programs::tp_btf::BtfTracePointLinkId,
}

/// How many hooks the load fails without ([`Need::Required`]): fewer
/// attached is unhealthy (`/healthz`), and a pinned set without their
/// links is replaced, not adopted.
pub const REQUIRED_HOOKS: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < ATTACH_ORDER.len() {
        if matches!(ATTACH_ORDER[i].need, Need::Required) {
            n += 1;
        }
        i += 1;
    }
    n
};

/// The hooks the load fails without, in attach order.
pub fn required() -> impl Iterator<Item = &'static Hook> {
    ATTACH_ORDER
        .iter()
        .copied()
        .filter(|h| h.need == Need::Required)
}

/// Every tracepoint a program may be attached to, fallbacks in their
/// hook's place: the links a pinned set may hold, in attach order.
pub fn tracepoints() -> impl Iterator<Item = &'static str> {
    ATTACH_ORDER
        .iter()
        .flat_map(|h| std::iter::once(h.tracepoint).chain(h.fallback.map(|f| f.tracepoint)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hooks_that_end_flows_attach_first_and_fallbacks_in_place() {
        let order: Vec<&str> = tracepoints().collect();
        assert_eq!(
            order,
            [
                "tcp_destroy_sock",
                "inet_sock_set_state",
                "tcp_probe",
                "tcp_retransmit_skb",
                "sock_recv_length",
                "tcp_rcv_space_adjust",
            ]
        );
    }

    #[test]
    fn only_the_read_hooks_wait_for_the_walks() {
        let waiting: Vec<&str> = ATTACH_ORDER
            .iter()
            .flat_map(|h| std::iter::once(*h).chain(h.fallback))
            .filter(|h| h.when == When::WithoutWalks)
            .map(|h| h.tracepoint)
            .collect();
        assert_eq!(waiting, ["sock_recv_length", "tcp_rcv_space_adjust"]);
    }

    #[test]
    fn the_required_hooks_are_the_probe_and_the_state_changes() {
        let names: Vec<&str> = required().map(|h| h.tracepoint).collect();
        assert_eq!(names, ["inet_sock_set_state", "tcp_probe"]);
        assert_eq!(REQUIRED_HOOKS, 2);
    }
}
