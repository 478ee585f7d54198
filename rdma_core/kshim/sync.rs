// SPDX-License-Identifier: GPL-2.0

//! Synchronisation primitives the 6.12 kernel crate lacks.
//!
//! [`SpinLockIrq`] is a spinlock taken with `spin_lock_irqsave`: data that
//! hard-interrupt context touches (the async event queue, completion paths)
//! must be guarded by one, or lockdep reports an inconsistent lock state.
//! It plugs into the kernel crate's generic [`Lock`], so it works with
//! [`kernel::sync::CondVar`] and guards like any other lock.

use kernel::bindings as kb;
use kernel::sync::lock::{Backend, Lock};

use crate::kshim::bindings;

/// A spinlock that disables local interrupts while held.
///
/// Create one with [`new_spinlock_irq!`](crate::new_spinlock_irq).
pub type SpinLockIrq<T> = Lock<T, SpinLockIrqBackend>;

/// Creates a [`SpinLockIrq`] initialiser with a lockdep class per call site.
#[macro_export]
macro_rules! new_spinlock_irq {
    ($inner:expr $(, $name:literal)? $(,)?) => {
        $crate::kshim::sync::SpinLockIrq::new(
            $inner,
            ::kernel::optional_name!($($name)?),
            ::kernel::static_lock_class!(),
        )
    };
}

/// The [`Backend`] of [`SpinLockIrq`]: `spinlock_t` with saved IRQ flags.
pub struct SpinLockIrqBackend;

// SAFETY: `spin_lock_irqsave` gives exclusive access until the matching
// `spin_unlock_irqrestore`, which is given the flags it saved; `init` is the
// kernel crate's own spinlock initialiser, so the lock is set up the same way
// as its `SpinLock`.
unsafe impl Backend for SpinLockIrqBackend {
    type State = kb::spinlock_t;
    type GuardState = kernel::ffi::c_ulong;

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const kernel::ffi::c_char,
        key: *mut kb::lock_class_key,
    ) {
        // SAFETY: the caller passes a valid pointer to an uninitialised lock
        // and a name and key that live forever.
        unsafe { kb::__spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: the caller passes an initialised lock; both bindings name
        // the same C `spinlock_t`.
        unsafe { bindings::rdma_rs_spin_lock_irqsave(ptr.cast()) }
    }

    unsafe fn unlock(ptr: *mut Self::State, guard_state: &Self::GuardState) {
        // SAFETY: the caller holds the lock, taken by `lock` above, which
        // returned `guard_state`.
        unsafe { bindings::rdma_rs_spin_unlock_irqrestore(ptr.cast(), *guard_state) }
    }
}

/// A value that the first of any number of concurrent callers takes, once:
/// the "released" flag of a verbs object together with what its release
/// gives back.
///
/// # Invariants
///
/// `value` is only touched by the one caller that flipped `taken` from
/// false to true (or by `drop`, which has `&mut self`).
pub struct TakeOnce<T> {
    taken: core::sync::atomic::AtomicBool,
    value: core::cell::UnsafeCell<Option<T>>,
}

// SAFETY: the value moves to whichever thread takes it (`T: Send`), and no
// shared reference to it is ever handed out, so sharing the cell between
// threads needs no more than that.
unsafe impl<T: Send> Sync for TakeOnce<T> {}
// SAFETY: as above: moving the container moves a `T`.
unsafe impl<T: Send> Send for TakeOnce<T> {}

impl<T> TakeOnce<T> {
    /// Holds `value` until taken.
    pub const fn new(value: T) -> Self {
        TakeOnce {
            taken: core::sync::atomic::AtomicBool::new(false),
            value: core::cell::UnsafeCell::new(Some(value)),
        }
    }

    /// The value for the first caller; `None` for every later one. Any
    /// context.
    pub fn take(&self) -> Option<T> {
        if self.taken.swap(true, core::sync::atomic::Ordering::AcqRel) {
            return None;
        }
        // SAFETY: this caller flipped `taken` (above), so it is the only
        // one to touch `value` (type invariant), now and ever.
        unsafe { (*self.value.get()).take() }
    }

    /// Whether the value was taken.
    pub fn is_taken(&self) -> bool {
        self.taken.load(core::sync::atomic::Ordering::Acquire)
    }
}
