// SPDX-License-Identifier: GPL-2.0

//! What the machine spends, for the benchmark's memory and CPU rows:
//! [`ram_in_use`] (pages not free) and [`cpu_idle_ns`] (idle time of the
//! online CPUs, as the scheduler tick accounts it). Both are whole-machine
//! figures: a caller learns what an operation cost from the difference of
//! two readings around it, on an otherwise quiet guest.
//!
//! C headers: [`include/linux/kernel_stat.h`](srctree/include/linux/kernel_stat.h),
//! [`include/linux/mm.h`](srctree/include/linux/mm.h) (`si_meminfo`)

use crate::kshim::bindings;

/// The RAM in use, in bytes: total pages minus free pages. Pages held on
/// the per-CPU free lists count as in use, so a difference moves by up to
/// a batch of pages (hundreds of KiB) besides what the caller allocated.
/// Any context.
pub fn ram_in_use() -> u64 {
    // SAFETY: `si_meminfo` fills a `struct sysinfo` on the C stack from
    // global counters; no lock is held, no preconditions.
    unsafe { bindings::rdma_rs_ram_in_use() }
}

/// Idle and I/O-wait time of the online CPUs, summed, in nanoseconds, as
/// accounted so far. The bench kernel accounts by tick (`HZ`), so a
/// difference is exact to a few ticks over runs of a second or more.
/// Any context.
pub fn cpu_idle_ns() -> u64 {
    // SAFETY: reads the per-CPU `kernel_cpustat` counters of online CPUs;
    // torn reads of a 64-bit counter cannot happen on 64-bit architectures,
    // and a stale value only makes the figure a tick older.
    unsafe { bindings::rdma_rs_cpu_idle_ns() }
}
