// SPDX-License-Identifier: GPL-2.0

//! Sleeping and reading the clock: [`msleep`] for process context, and
//! [`now_ms`], the monotonic milliseconds the management layers' (MAD, CM)
//! deadlines are counted in.

use crate::kshim::bindings;

/// Sleeps for at least `ms` milliseconds. Process context only.
pub fn msleep(ms: u32) {
    // SAFETY: `msleep` has no preconditions besides process context, which
    // its own `might_sleep` checks.
    unsafe { bindings::rdma_rs_msleep(ms) }
}

/// Milliseconds of the monotonic clock (`ktime_get`). Any context.
pub fn now_ms() -> u64 {
    kernel::time::Ktime::ktime_get().to_ms().max(0) as u64
}
