// SPDX-License-Identifier: GPL-2.0

//! CPUs: how many there may be, and which one runs the caller, for
//! transports that keep one connection per CPU (RTRS).
//!
//! C header: [`include/linux/cpumask.h`](srctree/include/linux/cpumask.h)

use crate::kshim::bindings;

/// The number of possible CPU ids (`nr_cpu_ids`): every CPU id is below
/// it. At least 1. Any context.
pub fn count() -> u32 {
    // SAFETY: reads a variable set once at boot; no preconditions.
    let n = unsafe { bindings::rdma_rs_nr_cpu_ids() };
    n.max(1)
}

/// The id of the CPU running the caller (`raw_smp_processor_id`): a hint
/// only, since the caller may move at once. Below [`count`]. Any context.
pub fn current() -> u32 {
    // SAFETY: reading the current CPU's id has no preconditions; the raw
    // variant does not require preemption to be disabled.
    unsafe { bindings::rdma_rs_cpu_id() }
}
