// SPDX-License-Identifier: GPL-2.0

//! Execution contexts for tests of the locking rules.
//!
//! The contract of the core (Documentation/infiniband/core_locking.rst)
//! says which calls work from any context. These helpers run a closure in
//! such contexts, so selftest modules can prove it under
//! `CONFIG_DEBUG_ATOMIC_SLEEP` and lockdep without raw FFI of their own.

use kernel::types::Opaque;

use crate::kshim::bindings;

/// Whether the caller runs in process (task) context.
pub fn in_task() -> bool {
    // SAFETY: `in_task` only reads the preemption count.
    unsafe { bindings::rdma_rs_in_task() }
}

/// Runs `f` with local interrupts disabled.
pub fn with_irqs_disabled(f: &mut dyn FnMut()) {
    // SAFETY: paired with the restore below, on the same CPU (interrupts
    // off means no migration).
    let flags = unsafe { bindings::rdma_rs_local_irq_save() };
    f();
    // SAFETY: restores the flags saved above.
    unsafe { bindings::rdma_rs_local_irq_restore(flags) };
}

/// Runs `f` with bottom halves disabled, which is softirq context as far as
/// `in_softirq()` and the atomic-sleep checks are concerned.
pub fn with_bh_disabled(f: &mut dyn FnMut()) {
    // SAFETY: paired with the enable below.
    unsafe { bindings::rdma_rs_local_bh_disable() };
    f();
    // SAFETY: pairs with the disable above.
    unsafe { bindings::rdma_rs_local_bh_enable() };
}

#[repr(C)]
struct HardIrqCall<'a> {
    work: Opaque<bindings::irq_work>,
    f: &'a mut dyn FnMut(),
}

/// Runs the closure of the `HardIrqCall` around `work`.
///
/// # Safety
///
/// `work` must be the `work` field of a live `HardIrqCall` whose closure no
/// one else uses during the call.
unsafe extern "C" fn hardirq_trampoline(work: *mut bindings::irq_work) {
    // SAFETY: `work` is the first field of a `#[repr(C)]` `HardIrqCall`
    // that `in_hardirq` keeps alive until `irq_work_sync` returns, and no
    // one else touches `f` meanwhile.
    let call = unsafe { &mut *work.cast::<HardIrqCall<'_>>() };
    (call.f)();
}

/// Runs `f` in hard interrupt context (through `irq_work`, a self-IPI on
/// x86) and returns once it has run. Process context only.
pub fn in_hardirq(f: &mut dyn FnMut()) {
    crate::kshim::verb::might_sleep();
    let call = HardIrqCall {
        work: Opaque::uninit(),
        f,
    };
    let work = call.work.get();
    // SAFETY: `work` points at storage for an irq_work inside `call`, which
    // lives and stays in place until the end of this function.
    unsafe { bindings::rdma_rs_init_irq_work(work, Some(hardirq_trampoline)) };
    // SAFETY: `work` was initialised above; `irq_work_sync` waits until the
    // callback has finished, before `call` goes out of scope.
    unsafe {
        bindings::irq_work_queue(work);
        bindings::irq_work_sync(work);
    }
}
