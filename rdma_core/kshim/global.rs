// SPDX-License-Identifier: GPL-2.0

//! Module-wide singletons: a `static` that holds an `Arc` set at module
//! init and taken back at exit.
//!
//! The 6.12 kernel crate has no statically initialised lock, so every
//! [`Global`] is guarded by one C spinlock (`rdma_rs_globals_lock` in
//! `helpers.c`), held only to swap or clone the `Arc`: a caller never
//! holds it while it uses the value, and the value cannot go away under a
//! caller, who holds a reference of its own.

use core::cell::UnsafeCell;

use kernel::sync::Arc;

use crate::kshim::bindings;

/// A slot for one module-wide `Arc<T>`.
///
/// # Invariants
///
/// `slot` is only read or written with `rdma_rs_globals_lock` held.
pub struct Global<T> {
    slot: UnsafeCell<Option<Arc<T>>>,
}

// SAFETY: the `Arc` inside is only touched under the globals lock (type
// invariant); `Arc<T>` may be sent and shared between threads when `T` is
// `Send + Sync`.
unsafe impl<T: Send + Sync> Sync for Global<T> {}

/// Holds the globals lock (IRQs off) while alive.
struct Locked(kernel::ffi::c_ulong);

impl Locked {
    fn take() -> Locked {
        // SAFETY: a plain spinlock acquisition, balanced in `drop`.
        Locked(unsafe { bindings::rdma_rs_globals_lock() })
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        // SAFETY: the lock is held (by `take`), with these saved flags.
        unsafe { bindings::rdma_rs_globals_unlock(self.0) };
    }
}

impl<T: Send + Sync> Global<T> {
    /// An empty slot, for a `static`.
    pub const fn new() -> Self {
        Global {
            slot: UnsafeCell::new(None),
        }
    }

    /// Puts `value` in the slot and returns what was there. Any context
    /// (the old value is returned, not dropped, under the lock).
    pub fn replace(&self, value: Option<Arc<T>>) -> Option<Arc<T>> {
        let _l = Locked::take();
        // SAFETY: the globals lock is held (type invariant); the `&mut`
        // does not outlive it.
        core::mem::replace(unsafe { &mut *self.slot.get() }, value)
    }

    /// A reference to the value, if one is set. Any context.
    pub fn get(&self) -> Option<Arc<T>> {
        let _l = Locked::take();
        // SAFETY: the globals lock is held (type invariant); the shared
        // reference does not outlive it.
        unsafe { &*self.slot.get() }.clone()
    }
}

impl<T: Send + Sync> Default for Global<T> {
    fn default() -> Self {
        Self::new()
    }
}
