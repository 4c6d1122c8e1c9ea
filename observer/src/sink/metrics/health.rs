//! What `GET /healthz` answers: whether the agent is doing its job, for a
//! liveness or readiness probe. Healthy means the kernel programs are
//! attached (at least the two hooks every figure needs) and the poll loop
//! has read the maps recently; a stalled loop or a failed attach answers
//! 503 with the reason. The programs are counted at each poll (the links
//! the process holds, [`crate::kernel::load::links`]): one gone since start
//! (unloaded, its link closed) is unhealthy too.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};
use std::time::Duration;

use crate::model::clock::monotonic_ns;

/// The hooks every figure needs (the hook table's required ones,
/// `tcp_probe` and `inet_sock_set_state`): fewer attached is unhealthy.
pub const REQUIRED_PROGRAMS: u64 = crate::kernel::load::hooks::REQUIRED_HOOKS as u64;

/// Health shared between the poll loop (writer) and the endpoint (reader).
#[derive(Clone, Debug)]
pub struct Health {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Programs attached (count), as the loader attached them.
    attached: u64,
    /// The tracepoints of the required hooks
    /// ([`crate::kernel::load::hooks::required`]) with no program among
    /// them, in attach order.
    missing: Vec<&'static str>,
    /// Programs attached as of the last poll's count.
    attached_now: AtomicU64,
    /// When the maps were last read (ns, CLOCK_MONOTONIC); at start, when
    /// the programs were attached.
    last_poll_ns: AtomicU64,
    /// How long without a poll is a stall (ns).
    stall_ns: u64,
}

impl Health {
    /// Health for an agent polling every `interval` with the programs
    /// `attached` (their tracepoints and iterators, as
    /// [`crate::kernel::probes::Probes::attached`] lists them); a poll is
    /// overdue after three intervals (at least 5 s, so a busy node's slow
    /// poll is not a restart).
    pub fn new(attached: &[&str], interval: Duration) -> Health {
        let stall = (interval * 3).max(Duration::from_secs(5));
        let missing = crate::kernel::load::hooks::required()
            .map(|h| h.tracepoint)
            .filter(|tp| !attached.contains(tp))
            .collect();
        let attached = attached.len() as u64;
        Health {
            inner: Arc::new(Inner {
                attached,
                missing,
                attached_now: AtomicU64::new(attached),
                last_poll_ns: AtomicU64::new(monotonic_ns()),
                stall_ns: u64::try_from(stall.as_nanos()).unwrap_or(u64::MAX),
            }),
        }
    }

    /// Records how many programs are attached now ([`crate::kernel::load::links::attached`]).
    pub fn attached_now(&self, n: usize) {
        self.inner.attached_now.store(n as u64, Ordering::Relaxed);
    }

    /// Records a completed poll.
    pub fn polled(&self) {
        self.inner
            .last_poll_ns
            .store(monotonic_ns(), Ordering::Relaxed);
    }

    /// The answer at monotonic time `now_ns`: `Ok(text)` when healthy,
    /// `Err(reason)` when not; one line each.
    pub fn check(&self, now_ns: u64) -> Result<String, String> {
        let attached = self.inner.attached;
        let since = now_ns.saturating_sub(self.inner.last_poll_ns.load(Ordering::Relaxed));
        let secs = since as f64 / 1e9;
        if attached < REQUIRED_PROGRAMS {
            let missing = &self.inner.missing;
            let none_on = if missing.is_empty() {
                String::new()
            } else {
                format!(" (none on {})", missing.join(", "))
            };
            return Err(format!(
                "unhealthy: {attached} programs attached, {REQUIRED_PROGRAMS} needed{none_on}\n"
            ));
        }
        let now = self.inner.attached_now.load(Ordering::Relaxed);
        if now < attached {
            return Err(format!(
                "unhealthy: {now} of the {attached} programs attached at start are attached \
                 (a program was detached or unloaded); restart the agent\n"
            ));
        }
        if since > self.inner.stall_ns {
            return Err(format!(
                "unhealthy: the kernel maps were last read {secs:.1} s ago (stalled past {:.1} s)\n",
                self.inner.stall_ns as f64 / 1e9
            ));
        }
        Ok(format!(
            "ok: {attached} programs attached, maps read {secs:.1} s ago\n"
        ))
    }

    /// [`Health::check`] now.
    pub fn check_now(&self) -> Result<String, String> {
        self.check(monotonic_ns())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Five programs, as a load on a recent kernel attaches them.
    const FIVE: [&str; 5] = [
        "tcp_destroy_sock",
        "inet_sock_set_state",
        "tcp_probe",
        "sock_recv_length",
        "iter:bpf_sk_storage_map",
    ];

    #[test]
    fn healthy_stalled_and_unattached() {
        let h = Health::new(&FIVE, Duration::from_secs(1));
        let t0 = h.inner.last_poll_ns.load(Ordering::Relaxed);
        let ok = h.check(t0 + 400_000_000).unwrap();
        assert_eq!(ok, "ok: 5 programs attached, maps read 0.4 s ago\n");
        // 1 s interval: stalled after 5 s (the floor), not after 3 s.
        assert!(h.check(t0 + 4_900_000_000).is_ok());
        let stalled = h.check(t0 + 6_000_000_000).unwrap_err();
        assert!(stalled.contains("last read 6.0 s ago"), "{stalled}");
        assert!(stalled.contains("past 5.0 s"), "{stalled}");
        // 10 s interval: 30 s of grace.
        let slow = Health::new(&FIVE, Duration::from_secs(10));
        let t1 = slow.inner.last_poll_ns.load(Ordering::Relaxed);
        assert!(slow.check(t1 + 29_000_000_000).is_ok());
        assert!(slow.check(t1 + 31_000_000_000).is_err());
        // A program gone since start.
        h.attached_now(4);
        let gone = h.check(t0 + 400_000_000).unwrap_err();
        assert!(gone.starts_with("unhealthy: 4 of the 5 programs"), "{gone}");
        h.attached_now(5);
        assert!(h.check(t0 + 400_000_000).is_ok());
        let one = Health::new(&["tcp_probe"], Duration::from_secs(1));
        let t2 = one.inner.last_poll_ns.load(Ordering::Relaxed);
        assert!(
            one.check(t2)
                .unwrap_err()
                .contains("1 programs attached, 2 needed")
        );
        assert_eq!(
            one.check(t2).unwrap_err(),
            "unhealthy: 1 programs attached, 2 needed (none on inet_sock_set_state)\n"
        );
    }
}
