// SPDX-License-Identifier: GPL-2.0

//! Sleeping, yielding the CPU and reading the clock: [`msleep`],
//! [`usleep`], [`cond_resched`] and [`yield_now`] for process context,
//! and [`now_ms`], the monotonic milliseconds the management layers'
//! (MAD, CM) deadlines are counted in.

use crate::kshim::bindings;

/// Sleeps for at least `ms` milliseconds. Process context only.
pub fn msleep(ms: u32) {
    // SAFETY: `msleep` has no preconditions besides process context, which
    // its own `might_sleep` checks.
    unsafe { bindings::rdma_rs_msleep(ms) }
}

/// Sleeps for `min_us` to `max_us` microseconds on a high-resolution
/// timer (`usleep_range`): a pause shorter than a tick, for a loop that
/// waits without spinning. Process context only.
pub fn usleep(min_us: u32, max_us: u32) {
    // SAFETY: `usleep_range` has no preconditions besides process context,
    // which its own `might_sleep` checks.
    unsafe { bindings::rdma_rs_usleep(min_us as usize, max_us.max(min_us) as usize) }
}

/// Gives the CPU to another task if one is due (`cond_resched`), so that
/// a busy-polling loop in process context does not starve the rest.
/// Process context only.
pub fn cond_resched() {
    // SAFETY: `cond_resched` may sleep; process context is the caller's
    // contract, checked by `might_sleep` inside under DEBUG_ATOMIC_SLEEP.
    unsafe { bindings::rdma_rs_cond_resched() }
}

/// Lets every other runnable task of this CPU run first (`yield`), even
/// if none is due: for a loop that waits for work another task does on
/// the same CPU and found none done yet (a benchmark's completion poll),
/// where [`cond_resched`] would spin on until the scheduler's tick.
/// Process context only.
pub fn yield_now() {
    // SAFETY: `yield` may sleep; process context is the caller's
    // contract, checked by the helper's `might_sleep`.
    unsafe { bindings::rdma_rs_yield() }
}

/// Milliseconds of the monotonic clock (`ktime_get`). Any context.
pub fn now_ms() -> u64 {
    kernel::time::Ktime::ktime_get().to_ms().max(0) as u64
}
