// SPDX-License-Identifier: GPL-2.0

//! A thread held by its `struct pid`: who made a uverbs context, for
//! `rdma res`, which shows it by number in the requester's PID namespace
//! (`task_pid_vnr`, as the C restrack does).

use core::ptr::NonNull;

use crate::kshim::bindings;

/// A held `struct pid` (`get_task_pid`); the reference goes with it.
///
/// # Invariants
///
/// `0` points at a `struct pid` this value holds a reference to.
pub struct Pid(NonNull<bindings::pid>);

// SAFETY: a `struct pid` is reference-counted with atomics and read under
// RCU; holding or dropping a reference works from any thread.
unsafe impl Send for Pid {}
// SAFETY: `&Pid` only reads the number, under RCU (`nr`).
unsafe impl Sync for Pid {}

impl Pid {
    /// The calling thread. Process context.
    pub fn current() -> Option<Pid> {
        // SAFETY: `current` is the calling task, alive while it calls; the
        // glue returns a held reference (or NULL).
        let p = unsafe { bindings::rdma_rs_pid_current() };
        NonNull::new(p).map(Pid)
    }

    /// The thread's number in the caller's PID namespace; `None` once it
    /// has exited or that namespace does not see it.
    pub fn nr(&self) -> Option<u32> {
        // SAFETY: by the type invariant `self.0` is a held `struct pid`.
        let nr = unsafe { bindings::rdma_rs_pid_vnr(self.0.as_ptr()) };
        (nr != 0).then_some(nr)
    }
}

impl Drop for Pid {
    fn drop(&mut self) {
        // SAFETY: by the type invariant this value holds the reference it
        // gives back, once.
        unsafe { bindings::rdma_rs_pid_put(self.0.as_ptr()) };
    }
}
