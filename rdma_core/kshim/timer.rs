// SPDX-License-Identifier: GPL-2.0

//! Timers (`struct timer_list`) whose callback gets its owner as an `Arc`.
//!
//! C header: [`include/linux/timer.h`](srctree/include/linux/timer.h)
//!
//! A [`Timer<T>`] is a field of a `T` that lives in an [`Arc`]. Arming it
//! ([`Timer::arm_us`]) hands the timer one reference to the owner, which
//! the callback ([`TimerItem::fired`]) receives; a shut-down timer
//! ([`Timer::shutdown`]) drops the reference it held. So the owner cannot
//! go away while its timer is pending, and no owner has to remember to stop
//! its timer before its last reference drops: the same rule the kernel
//! crate's `Work` follows for queued work.
//!
//! The owner says where its timer is through a safe method
//! ([`TimerItem::timer`]); the timer records its distance from the owner's
//! start when armed, checked to lie inside the owner, and the callback finds
//! the owner from it.

use core::marker::PhantomData;
use core::mem::size_of;
use core::ptr;

use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::types::Opaque;

use crate::kshim::bindings;
use crate::kshim::sync::SpinLockIrq;

/// An owner of a [`Timer`]: a `T` kept in an [`Arc`].
pub trait TimerItem: Send + Sync + Sized + 'static {
    /// The owner's timer: a field of `self`.
    fn timer(&self) -> &Timer<Self>;

    /// The timer fired (softirq context): `this` is the reference the
    /// timer held since it was armed.
    fn fired(this: Arc<Self>);
}

struct State {
    /// Shut down: arming does nothing.
    dead: bool,
    /// Byte offset of the timer inside its owner, recorded when armed.
    offset: usize,
}

/// A one-shot timer that holds a reference to its owner while pending.
///
/// # Invariants
///
/// - `raw` was set up by `timer_setup` with [`fired_trampoline::<T>`].
/// - While `raw` is pending it owns exactly one reference to the `Arc<T>`
///   this timer is a field of, leaked with `Arc::into_raw`, and
///   `state.offset` is the offset of this timer inside that `T`.
/// - Once `state.dead` is set the timer is never armed again.
#[pin_data]
#[repr(C)]
pub struct Timer<T: TimerItem> {
    /// First, so a pointer to it is a pointer to the `Timer` (`repr(C)`).
    #[pin]
    raw: Opaque<bindings::timer_list>,
    /// Orders arming against shutdown (a leaf lock).
    #[pin]
    state: SpinLockIrq<State>,
    _owner: PhantomData<fn(Arc<T>)>,
}

// SAFETY: the C timer is only touched through the timer API, which does its
// own locking and may be called from any context; the rest is a lock.
unsafe impl<T: TimerItem> Send for Timer<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: TimerItem> Sync for Timer<T> {}

impl<T: TimerItem> Timer<T> {
    /// A timer, not armed.
    pub fn new() -> impl PinInit<Self> {
        pin_init!(Timer {
            // SAFETY: `rdma_rs_timer_setup` initialises the whole timer;
            // the trampoline matches the owner type (type invariant).
            raw <- Opaque::ffi_init(|p| unsafe {
                bindings::rdma_rs_timer_setup(p, Some(fired_trampoline::<T>))
            }),
            state <- crate::new_spinlock_irq!(State { dead: false, offset: 0 }, "Timer::state"),
            _owner: PhantomData,
        })
    }

    /// Arms `this`'s timer to fire in `usecs` microseconds (at least one
    /// jiffy), or moves a pending one to then. Any context. Does nothing
    /// once the timer is shut down.
    pub fn arm_us(this: &Arc<T>, usecs: u32) {
        let timer = this.timer();
        let owner = ptr::from_ref::<T>(this) as usize;
        let at = ptr::from_ref(timer) as usize;
        // A timer that is not a field of `this` is refused: the callback
        // finds its owner by this offset.
        let offset = at.wrapping_sub(owner);
        if at < owner || offset + size_of::<Self>() > size_of::<T>() {
            pr_err!("rdma: a timer outside its owner was armed\n");
            return;
        }
        let mut st = timer.state.lock();
        if st.dead {
            return;
        }
        st.offset = offset;
        // SAFETY: `raw` was set up in `new` and not shut down (`dead` is
        // false and only changes under this lock).
        let was_pending = unsafe { bindings::rdma_rs_timer_arm_us(timer.raw.get(), usecs) } != 0;
        if !was_pending {
            // INVARIANT: the timer went from idle to pending, so it takes a
            // reference of its own, given back by the callback or by
            // `shutdown`.
            let _ = Arc::into_raw(this.clone());
        }
    }

    /// Stops the timer for good, waiting for a running callback; drops
    /// the reference a pending timer held. Process context.
    pub fn shutdown(&self) {
        let offset = {
            let mut st = self.state.lock();
            st.dead = true;
            st.offset
        };
        // SAFETY: `raw` was set up in `new`; nothing arms it from now on.
        let was_pending = unsafe { bindings::rdma_rs_timer_shutdown(self.raw.get()) } != 0;
        if was_pending {
            // SAFETY: a pending timer owned one reference to the `Arc<T>`
            // it is `offset` bytes into (type invariant), now given back.
            drop(unsafe { owner_from::<T>(ptr::from_ref(self).cast(), offset) });
        }
    }
}

/// The owner's `Arc`, from its timer's address and offset.
///
/// # Safety
///
/// `at` must be the address of a [`Timer<T>`] `offset` bytes into a `T`
/// inside an `Arc`, and the caller must own one reference to it that was
/// leaked with `Arc::into_raw`.
unsafe fn owner_from<T: TimerItem>(at: *const u8, offset: usize) -> Arc<T> {
    let owner = at.wrapping_sub(offset).cast::<T>();
    // SAFETY: `owner` is the pointer `Arc::into_raw` returned for the
    // reference the caller owns.
    unsafe { Arc::from_raw(owner) }
}

/// The C callback of every [`Timer<T>`] (softirq context).
///
/// # Safety
///
/// `t` must be the `raw` field of a [`Timer<T>`] that just fired.
unsafe extern "C" fn fired_trampoline<T: TimerItem>(t: *mut bindings::timer_list) {
    // `raw` is the first field of the `repr(C)` `Timer`.
    let timer = t.cast::<Timer<T>>();
    // SAFETY: the timer is alive: it was pending, so it holds a reference to
    // its owner (type invariant), which contains it. Its state lock is
    // initialised.
    let offset = unsafe { &*timer }.state.lock().offset;
    // SAFETY: the timer was pending: it owned one reference to the owner it
    // is `offset` bytes into (type invariant); that reference passes to the
    // callback.
    let owner = unsafe { owner_from::<T>(timer.cast(), offset) };
    T::fired(owner);
}
