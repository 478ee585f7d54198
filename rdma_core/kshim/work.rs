// SPDX-License-Identifier: GPL-2.0

//! What the 6.12 kernel crate's workqueue module lacks: waiting for a
//! work item (`flush_work`), and a workqueue of one's own ([`OwnedQueue`]).
//!
//! C header: [`include/linux/workqueue.h`](srctree/include/linux/workqueue.h)

use core::ops::Deref;
use core::ptr::{self, NonNull};

use kernel::error::code::ENOMEM;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::workqueue::{Queue, Work};

use crate::kshim::bindings;

/// Waits until `work` is neither queued nor running (`flush_work`), and
/// returns whether it had to wait. Process context; may sleep.
pub fn flush<T: ?Sized, const ID: u64>(work: &Work<T, ID>) -> bool {
    // SAFETY: `work` is a live, initialised `Work` (a reference to one), so
    // `raw_get` gets its `work_struct`; `flush_work` takes any initialised
    // work item, and both bindings name the same C `struct work_struct`.
    unsafe { bindings::flush_work(Work::raw_get(ptr::from_ref(work)).cast()) }
}

/// A workqueue of one's own (`alloc_workqueue`, unbound): work queued on it
/// can be waited for as a whole ([`OwnedQueue::drain`]), so a module knows
/// none of its work is left before it goes. Destroyed (after draining)
/// when dropped.
///
/// # Invariants
///
/// `wq` came from a successful `alloc_workqueue` and is destroyed only in
/// `drop`.
pub struct OwnedQueue {
    wq: NonNull<bindings::workqueue_struct>,
}

// SAFETY: a workqueue may be used and destroyed from any thread; the C
// functions do their own locking.
unsafe impl Send for OwnedQueue {}
// SAFETY: as above: queueing and draining are thread safe.
unsafe impl Sync for OwnedQueue {}

impl OwnedQueue {
    /// A new unbound workqueue named `name`. Process context.
    pub fn new(name: &'static CStr) -> Result<OwnedQueue> {
        // SAFETY: `name` is NUL-terminated and static (the queue keeps a
        // copy of the formatted name anyway).
        let wq = unsafe { bindings::rdma_rs_wq_alloc(name.as_char_ptr()) };
        // INVARIANT: a fresh workqueue, or the error.
        NonNull::new(wq).map(|wq| OwnedQueue { wq }).ok_or(ENOMEM)
    }

    /// Waits until the queue is empty, work queued meanwhile by its own
    /// work included (`drain_workqueue`). Work must not be queued on it
    /// from elsewhere while it drains. Process context.
    pub fn drain(&self) {
        // SAFETY: the queue is live (type invariant).
        unsafe { bindings::rdma_rs_wq_drain(self.wq.as_ptr()) }
    }
}

impl Deref for OwnedQueue {
    type Target = Queue;

    fn deref(&self) -> &Queue {
        // SAFETY: the queue is live as long as `self` (type invariant), and
        // both bindings name the same C `struct workqueue_struct`.
        unsafe { Queue::from_raw(self.wq.as_ptr().cast()) }
    }
}

impl Drop for OwnedQueue {
    fn drop(&mut self) {
        // SAFETY: the queue is live and not used after this (type
        // invariant); `destroy_workqueue` drains it first.
        unsafe { bindings::rdma_rs_wq_destroy(self.wq.as_ptr()) }
    }
}
