// SPDX-License-Identifier: GPL-2.0

//! Revocable access to a provider's part of an object.
//!
//! Every verbs object may outlive its device's registration (a ULP that
//! leaked a handle still holds it), but the provider's code must not: when a
//! device is unregistered the core tears leaked objects down, and from then
//! on every verb on them fails with `ENODEV`. [`Revocable`] is the primitive:
//! readers enter from any context (hard IRQ included) with two atomic
//! operations and no lock; [`Revocable::revoke`] closes the gate, waits in
//! process context until the readers inside have left, and hands the value
//! back, so it can be dropped with no reader left.
//!
//! The 6.12 kernel crate has no `Revocable`; later kernels' version relies
//! on RCU, which would forbid sleeping verbs from holding access. Here a
//! reader may sleep if its context allows it; `revoke` simply waits longer.

use core::cell::UnsafeCell;
use core::ops::Deref;
use core::sync::atomic::{AtomicUsize, Ordering};

use kernel::prelude::*;
use kernel::sync::{new_condvar, CondVar};

use crate::kshim::sync::SpinLockIrq;

/// Set in `count` once the gate is closed; the other bits count readers.
const CLOSED: usize = 1 << (usize::BITS - 1);

/// A value that readers use concurrently until it is revoked.
///
/// # Invariants
///
/// - `value` is `Some` until the first `revoke` takes it, which happens
///   only once the gate is closed (`CLOSED` set) and no reader is inside.
/// - The low bits of `count` are the readers inside, each holding a
///   [`RevocableGuard`]; a reader only enters while `CLOSED` is clear.
#[pin_data]
pub struct Revocable<T> {
    /// [`CLOSED`] plus the number of readers inside.
    count: AtomicUsize,
    value: UnsafeCell<Option<T>>,
    /// Taken by the last reader to leave a closed gate and by `revoke`.
    #[pin]
    lock: SpinLockIrq<()>,
    #[pin]
    drained: CondVar,
}

// SAFETY: readers get `&T` from several threads at once (`T: Sync`), and
// `revoke` moves the `T` out on another thread than the one that stored it
// (`T: Send`); the gate protocol keeps those two from overlapping.
unsafe impl<T: Send + Sync> Sync for Revocable<T> {}
// SAFETY: as above: moving the container moves a `T`.
unsafe impl<T: Send> Send for Revocable<T> {}

impl<T> Revocable<T> {
    /// A gate, open, around `value`.
    pub fn new(value: T) -> impl PinInit<Self> {
        pin_init!(Revocable {
            count: AtomicUsize::new(0),
            value: UnsafeCell::new(Some(value)),
            lock <- gate_lock(),
            drained <- gate_drained(),
        })
    }

    /// Enters the gate: `None` once it is closed. Any context.
    pub fn access(&self) -> Option<RevocableGuard<'_, T>> {
        let before = self.count.fetch_add(1, Ordering::Acquire);
        if before & CLOSED != 0 {
            self.leave();
            return None;
        }
        // INVARIANT: entered while open; counted as a reader until dropped.
        Some(RevocableGuard { gate: self })
    }

    fn leave(&self) {
        let before = self.count.fetch_sub(1, Ordering::Release);
        if before == CLOSED | 1 {
            // The last reader of a closed gate: `revoke` may be waiting. It
            // checks the count under `lock`, so taking it here orders this
            // wake-up after its check.
            let _guard = self.lock.lock();
            self.drained.notify_all();
        }
    }

    /// Closes the gate, waits until no reader is inside and returns the
    /// value (`None` if another caller revoked it first). Process context.
    pub fn revoke(&self) -> Option<T> {
        crate::kshim::verb::might_sleep();
        let before = self.count.fetch_or(CLOSED, Ordering::AcqRel);
        if before & CLOSED != 0 {
            // Someone else revoked it; wait for them to be done too.
            self.wait_drained();
            return None;
        }
        self.wait_drained();
        // SAFETY: the gate is closed and no reader is inside (the count is
        // exactly `CLOSED`), so nothing else refers to the value; only the
        // first revoker gets here.
        unsafe { (*self.value.get()).take() }
    }

    fn wait_drained(&self) {
        let mut guard = self.lock.lock();
        while self.count.load(Ordering::Acquire) != CLOSED {
            self.drained.wait(&mut guard);
        }
    }
}

/// The lock of every gate, from one non-generic function: its lock class
/// key and name are this crate's whichever crate instantiates the gate's
/// generic code (a key defined in generic code with a name from another
/// crate would name one class twice, which lockdep refuses).
#[inline(never)]
fn gate_lock() -> impl PinInit<SpinLockIrq<()>> {
    crate::new_spinlock_irq!((), "Revocable::lock")
}

/// The condition variable of every gate (see [`gate_lock`]).
#[inline(never)]
fn gate_drained() -> impl PinInit<CondVar> {
    new_condvar!("Revocable::drained")
}

/// Access to a [`Revocable`]'s value; `revoke` waits for it to drop.
///
/// # Invariants
///
/// The guard counts as a reader inside `gate`, which was open when it
/// entered, so the value is present until the guard drops.
pub struct RevocableGuard<'a, T> {
    gate: &'a Revocable<T>,
}

impl<T> Deref for RevocableGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the guard holds the gate open, so `revoke` has not taken
        // the value and cannot until the guard drops; a value is present
        // while the gate is open (it is only taken after closing).
        match unsafe { &*self.gate.value.get() } {
            Some(v) => v,
            None => unreachable!(),
        }
    }
}

impl<T> Drop for RevocableGuard<'_, T> {
    fn drop(&mut self) {
        self.gate.leave();
    }
}
