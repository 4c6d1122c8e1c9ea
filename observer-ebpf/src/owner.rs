//! The owner walk: an `iter/task_file` program that user space runs at a
//! poll when flows without an owner have appeared. It visits every open
//! file of every process (kernel/bpf/task_iter.c, threads that share their
//! leader's file table skipped), and where a file is a socket whose flow
//! has no owner yet, records the process that holds it: its tgid, comm
//! and cgroup v2 id, as [`crate::flow`] records the caller of
//! `connect()`. Flows accepted by a listener learn their owner this way
//! even when their owner never reads.

use aya_ebpf::helpers::generated::bpf_sock_from_file;
use observer_common::Counter;

use crate::{
    maps::{FLOWS, count},
    read::{at, off},
};

/// The context of an `iter/task_file` program, `struct
/// bpf_iter__task_file` (kernel/bpf/task_iter.c): pointer-sized members
/// the verifier checks by offset, `fd` 8-aligned. `task` and `file` are
/// null on the last call of a walk.
#[repr(C)]
pub struct TaskFileContext {
    /// `struct bpf_iter_meta *`.
    pub meta: *const u8,
    /// `struct task_struct *`.
    pub task: *const u8,
    /// The file's descriptor in that task.
    pub fd: u32,
    _pad: u32,
    /// `struct file *`.
    pub file: *const u8,
}

/// One file of the walk: gives its socket's flow an owner if it has none.
///
/// # Safety
/// `ctx` must be the iterator's context.
#[inline(always)]
pub unsafe fn visit(ctx: *const TaskFileContext) {
    // SAFETY: the verifier checks these context loads by offset.
    let (task, file) = unsafe { ((*ctx).task, (*ctx).file) };
    if task.is_null() || file.is_null() {
        return;
    }
    // SAFETY: `file` is the BTF-typed file the iterator handed over; the
    // helper returns null for a file that is not a socket.
    let socket = unsafe { bpf_sock_from_file(file as *mut _) };
    if socket.is_null() {
        return;
    }
    let sk: u64 = at(socket as *const u8, off!(socket_sk));
    if sk == 0 {
        return;
    }
    // Every flow's socket has its cookie set: the hook that made the
    // entry asked for it (`sock::key_of`). A socket with none is no flow.
    let key: u64 = at(sk as *const u8, off!(sk_cookie));
    if key == 0 {
        return;
    }
    let Some(s) = FLOWS.get_ptr_mut(key) else {
        return;
    };
    // SAFETY: a value of the flow map, for this socket.
    unsafe {
        if (*s).pid != 0 || (*s).closed_ns != 0 {
            return;
        }
        (*s).pid = at(task, off!(task_tgid));
        (*s).comm = at(task, off!(task_comm));
        let css: u64 = at(task, off!(task_cgroups));
        let cgroup: u64 = if css == 0 {
            0
        } else {
            at(css as *const u8, off!(css_dfl_cgrp))
        };
        let kn: u64 = if cgroup == 0 {
            0
        } else {
            at(cgroup as *const u8, off!(cgroup_kn))
        };
        (*s).cgroup_id = if kn == 0 {
            0
        } else {
            at(kn as *const u8, off!(kernfs_id))
        };
        crate::journal::note(s);
    }
    count(Counter::OwnerUpdates);
}
