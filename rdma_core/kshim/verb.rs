// SPDX-License-Identifier: GPL-2.0

//! Knowing whether we are inside the call chain of a verb.
//!
//! The core must never let a provider call a consumer's completion handler
//! from within a verb the consumer called (the consumer may hold locks its
//! handler takes). The non-sleeping verbs mark their call chain: [`Verb`]
//! bumps a per-CPU depth for the current context level (task, softirq, hard
//! IRQ, NMI) with preemption disabled, so on this CPU and at this level
//! nothing else runs until the verb returns. A completion signalled while
//! the depth is non-zero comes from the verb's own call chain: the core
//! defers the handler and reports the provider (rate-limited), without a
//! WARN, so the selftest that provokes it on purpose stays splat-free.

use kernel::prelude::*;
use kernel::str::CStr;

use crate::kshim::bindings;

/// Marks the call chain of a non-sleeping verb while alive.
pub(crate) struct Verb(());

impl Verb {
    /// Enters a verb: disables preemption until the guard drops.
    pub(crate) fn enter() -> Verb {
        // SAFETY: balanced by `rdma_rs_verb_exit` in `drop`, on the same
        // CPU since preemption stays disabled in between.
        unsafe { bindings::rdma_rs_verb_enter() };
        Verb(())
    }
}

impl Drop for Verb {
    fn drop(&mut self) {
        // SAFETY: pairs with `rdma_rs_verb_enter` in `enter`.
        unsafe { bindings::rdma_rs_verb_exit() };
    }
}

/// Whether the current context is inside a verb's call chain.
pub(crate) fn in_verb() -> bool {
    // SAFETY: reads a per-CPU counter with preemption disabled around it.
    unsafe { bindings::rdma_rs_in_verb() }
}

/// Reports a provider that completed inline (rate-limited).
pub(crate) fn report_inline(dev: &CStr, cq: u32) {
    // SAFETY: `__ratelimit` state is static in the helper.
    if unsafe { bindings::rdma_rs_ratelimit_inline() } {
        pr_warn!(
            "{:?}: provider signalled CQ {} from a verb's call chain; handler deferred\n",
            dev,
            cq
        );
    }
}

/// Annotates a function that may sleep (`might_sleep()`): with
/// `CONFIG_DEBUG_ATOMIC_SLEEP` a call from atomic context is reported.
pub fn might_sleep() {
    // SAFETY: `might_sleep` has no preconditions; it only checks the context.
    unsafe { bindings::rdma_rs_might_sleep() };
}
