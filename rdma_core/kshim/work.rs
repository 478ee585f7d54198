// SPDX-License-Identifier: GPL-2.0

//! What the 6.12 kernel crate's workqueue module lacks: waiting for a
//! work item (`flush_work`).
//!
//! C header: [`include/linux/workqueue.h`](srctree/include/linux/workqueue.h)

use core::ptr;

use kernel::workqueue::Work;

use crate::kshim::bindings;

/// Waits until `work` is neither queued nor running (`flush_work`), and
/// returns whether it had to wait. Process context; may sleep.
pub fn flush<T: ?Sized, const ID: u64>(work: &Work<T, ID>) -> bool {
    // SAFETY: `work` is a live, initialised `Work` (a reference to one), so
    // `raw_get` gets its `work_struct`; `flush_work` takes any initialised
    // work item, and both bindings name the same C `struct work_struct`.
    unsafe { bindings::flush_work(Work::raw_get(ptr::from_ref(work)).cast()) }
}
