//! The flows waiting for their workload, listed by cgroup id, so that a
//! poll asks [`crate::track::cgroups`] once per cgroup, not once per flow
//! (on a host without a cgroup2 hierarchy no flow ever resolves, and
//! asking for each of 100k flows at every poll cost a tenth of the poll).
//!
//! Pure bookkeeping over cookies: whether a flow still waits is asked of
//! the caller, which holds the flows.

use std::collections::HashMap;
use std::sync::Arc;

use crate::model::workload::Workload;

/// How often (in calls of [`Unresolved::resolve`]) the lists of cgroups
/// that do not resolve lose their gone and moved flows.
pub const PRUNE_EVERY: u64 = 64;

/// The flows of one cgroup waiting for its workload. A flow listed more
/// than once, gone or resolved is pruned when the list doubles.
#[derive(Debug, Default)]
struct Pending {
    cookies: Vec<u64>,
    /// The length after the last prune.
    pruned: usize,
}

impl Pending {
    /// Keeps each flow still waiting (`waits(cookie)`), once.
    fn prune(&mut self, waits: impl Fn(u64) -> bool) {
        self.cookies.sort_unstable();
        self.cookies.dedup();
        self.cookies.retain(|&c| waits(c));
        self.pruned = self.cookies.len();
    }
}

/// A cgroup whose workload resolved, and the flows that were listed for
/// it ([`Unresolved::resolve`]).
#[derive(Debug)]
pub struct ResolvedCgroup {
    /// The cgroup's id (its cgroup2 directory's inode number).
    pub cgroup_id: u64,
    /// Its workload, as [`crate::track::cgroups`] found it.
    pub workload: Arc<Workload>,
    /// The socket cookies of the flows listed for it: some may no longer
    /// wait (gone, or moved to another cgroup), which the caller checks.
    pub cookies: Vec<u64>,
}

/// The waiting flows, by cgroup id.
#[derive(Debug, Default)]
pub struct Unresolved {
    by_cgroup: HashMap<u64, Pending>,
    /// Calls of [`Unresolved::resolve`], which prunes every
    /// [`PRUNE_EVERY`]th.
    resolves: u64,
}

impl Unresolved {
    /// Lists flow `cookie` as waiting for the workload of `cgroup_id`;
    /// `waits(cookie, cgroup_id)` says whether a listed flow still does.
    pub fn wait_for_workload(
        &mut self,
        cgroup_id: u64,
        cookie: u64,
        waits: impl Fn(u64, u64) -> bool,
    ) {
        let p = self.by_cgroup.entry(cgroup_id).or_default();
        p.cookies.push(cookie);
        if p.cookies.len() > 2 * p.pruned.max(64) {
            p.prune(|c| waits(c, cgroup_id));
        }
    }

    /// Asks `resolve` for each listed cgroup's workload once. Returns the
    /// cgroups that resolved, with their workload and the flows listed for
    /// them (the caller gives it to those still waiting); those that did
    /// not stay listed.
    pub fn resolve(
        &mut self,
        mut resolve: impl FnMut(u64) -> Option<Arc<Workload>>,
        waits: impl Fn(u64, u64) -> bool,
    ) -> Vec<ResolvedCgroup> {
        self.resolves += 1;
        let prune = self.resolves.is_multiple_of(PRUNE_EVERY);
        let mut done = Vec::new();
        self.by_cgroup.retain(|&cgroup_id, pending| {
            let Some(workload) = resolve(cgroup_id) else {
                if prune {
                    pending.prune(|c| waits(c, cgroup_id));
                }
                return !pending.cookies.is_empty();
            };
            done.push(ResolvedCgroup {
                cgroup_id,
                workload,
                cookies: std::mem::take(&mut pending.cookies),
            });
            false
        });
        done
    }

    /// Whether no flow is listed.
    pub fn is_empty(&self) -> bool {
        self.by_cgroup.is_empty()
    }
}
