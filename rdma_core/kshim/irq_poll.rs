// SPDX-License-Identifier: GPL-2.0

//! Interrupt polling (`struct irq_poll`): a softirq that calls its owner's
//! poll with a budget until the owner says it is done.
//!
//! C header: [`include/linux/irq_poll.h`](srctree/include/linux/irq_poll.h)
//!
//! An [`IrqPoll<T>`] is a field of a `T` kept in an [`Arc`]. While it is
//! scheduled it holds one reference to its owner, so the owner outlives
//! every poll; [`IrqPoll::disable`] stops it for good and gives the
//! reference back. The poll ([`IrqPollItem::poll`]) runs in softirq
//! context, one at a time; when it handles less than its budget the poll
//! is complete, and [`IrqPollItem::completed`] runs, where the owner
//! checks for work that came in meanwhile and schedules again.

use core::marker::PhantomData;

use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::types::Opaque;

use crate::kshim::bindings;
use crate::kshim::sync::SpinLockIrq;

/// An owner of an [`IrqPoll`]: a `T` kept in an [`Arc`].
pub trait IrqPollItem: Send + Sync + Sized + 'static {
    /// Handles up to `budget` items (softirq context); returns how many.
    fn poll(this: &Arc<Self>, budget: usize) -> usize;

    /// The poll handled less than its budget and is complete (softirq
    /// context, right after [`IrqPollItem::poll`]).
    fn completed(this: &Arc<Self>);
}

struct State<T> {
    /// The owner's reference, held while scheduled.
    held: Option<Arc<T>>,
    /// Disabled: never scheduled again.
    dead: bool,
}

/// A softirq poll of its owner.
///
/// # Invariants
///
/// - `raw` was set up by `irq_poll_init` with [`poll_trampoline::<T>`].
/// - `state.held` is `Some` exactly while `raw` is scheduled or running,
///   except after `irq_poll_disable` (where `disable` takes it back).
/// - Once `state.dead` is set, `raw` is never scheduled again.
#[pin_data]
#[repr(C)]
pub struct IrqPoll<T: IrqPollItem> {
    /// First, so a pointer to it is a pointer to the `IrqPoll` (`repr(C)`).
    #[pin]
    raw: Opaque<bindings::irq_poll>,
    /// Orders scheduling, completion and disabling (a leaf lock).
    #[pin]
    state: SpinLockIrq<State<T>>,
    _owner: PhantomData<Arc<T>>,
}

// SAFETY: the C struct is only touched through the irq_poll API, which does
// its own synchronisation; the rest is a lock over `Send` data.
unsafe impl<T: IrqPollItem> Send for IrqPoll<T> {}
// SAFETY: as for `Send`.
unsafe impl<T: IrqPollItem> Sync for IrqPoll<T> {}

impl<T: IrqPollItem> IrqPoll<T> {
    /// A poll with `weight`, the budget of each call, not scheduled.
    pub fn new(weight: u32) -> impl PinInit<Self> {
        let weight = weight.clamp(1, i32::MAX as u32) as i32;
        pin_init!(IrqPoll {
            // SAFETY: `irq_poll_init` initialises the whole struct; the
            // trampoline matches the owner type (type invariant).
            raw <- Opaque::ffi_init(|p| unsafe {
                bindings::irq_poll_init(p, weight, Some(poll_trampoline::<T>))
            }),
            state <- crate::new_spinlock_irq!(State { held: None, dead: false }, "IrqPoll::state"),
            _owner: PhantomData,
        })
    }

    /// Schedules `this`'s poll (`irq_poll_sched`) unless it is scheduled
    /// or disabled. Any context. `poll` must return `this`'s own poll.
    pub fn sched(&self, this: &Arc<T>) {
        let mut st = self.state.lock();
        if st.dead || st.held.is_some() {
            return;
        }
        // INVARIANT: scheduled from here on, with the owner's reference.
        st.held = Some(this.clone());
        // SAFETY: `raw` was set up in `new` and is not disabled (`dead` is
        // false and only changes under this lock).
        unsafe { bindings::irq_poll_sched(self.raw.get()) };
    }

    /// Stops the poll for good (`irq_poll_disable`), waiting for a running
    /// one; gives back the owner's reference. Process context.
    pub fn disable(&self) {
        self.state.lock().dead = true;
        // SAFETY: `raw` was set up in `new`; `dead` is set, so nothing
        // schedules it again.
        unsafe { bindings::irq_poll_disable(self.raw.get()) };
        let held = self.state.lock().held.take();
        drop(held);
    }
}

/// The C callback of every [`IrqPoll<T>`] (softirq context).
///
/// # Safety
///
/// `iop` must be the `raw` field of a scheduled [`IrqPoll<T>`].
unsafe extern "C" fn poll_trampoline<T: IrqPollItem>(
    iop: *mut bindings::irq_poll,
    budget: kernel::ffi::c_int,
) -> kernel::ffi::c_int {
    // SAFETY: `raw` is the first field of the `repr(C)` `IrqPoll`, which is
    // alive: it is scheduled, so it holds a reference to the owner that
    // contains it (type invariant).
    let ip = unsafe { &*iop.cast::<IrqPoll<T>>() };
    let Some(owner) = ip.state.lock().held.clone() else {
        return 0;
    };
    let budget = budget.max(1) as usize;
    let n = T::poll(&owner, budget).min(budget);
    if n < budget {
        let held = {
            let mut st = ip.state.lock();
            // SAFETY: called from the poll callback, the one place a poll
            // is completed.
            unsafe { bindings::irq_poll_complete(iop) };
            // INVARIANT: no longer scheduled.
            st.held.take()
        };
        drop(held);
        T::completed(&owner);
    }
    n as kernel::ffi::c_int
}
