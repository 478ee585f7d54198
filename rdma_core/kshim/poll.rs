// SPDX-License-Identifier: GPL-2.0

//! Poll queues: what a character device's `poll` waits on, and what its
//! producers wake.
//!
//! C header: [`include/linux/poll.h`](srctree/include/linux/poll.h)
//!
//! A [`PollQueue`] is a wait queue head. A file's
//! [`CharDevOps::poll`](crate::kshim::chardev::CharDevOps::poll) registers
//! the caller on it through the [`PollTable`] it is given, then says which
//! events are ready; whoever makes an event ready calls [`PollQueue::wake`].
//!
//! `poll(2)` and `select(2)` take their entries off the queue before they
//! return, but `epoll` keeps its entry until the file is released (or
//! removed from the epoll set). A queue must therefore outlive every file
//! that registered on it. [`PollTable::wait`] enforces that with a
//! lifetime: the queue must be borrowed for as long as the `poll` call's
//! own borrows of the device and the file, so it can only be a queue owned
//! by one of them (or a static one), never a local or one behind a lock
//! guard.

use kernel::prelude::*;
use kernel::types::Opaque;

use crate::kshim::bindings;

/// Readable (`EPOLLIN`).
pub const POLLIN: u32 = 0x0001;
/// An exceptional condition (`EPOLLPRI`).
pub const POLLPRI: u32 = 0x0002;
/// Writable (`EPOLLOUT`).
pub const POLLOUT: u32 = 0x0004;
/// An error (`EPOLLERR`).
pub const POLLERR: u32 = 0x0008;
/// Hung up (`EPOLLHUP`).
pub const POLLHUP: u32 = 0x0010;
/// Normal data readable (`EPOLLRDNORM`).
pub const POLLRDNORM: u32 = 0x0040;
/// Normal data writable (`EPOLLWRNORM`).
pub const POLLWRNORM: u32 = 0x0100;

/// A wait queue that `poll` callers sleep on.
///
/// # Invariants
///
/// `raw` was initialised by `rdma_rs_pollq_init` and is pinned.
#[pin_data]
pub struct PollQueue {
    #[pin]
    raw: Opaque<bindings::wait_queue_head>,
}

// SAFETY: a wait queue head has its own spinlock; every operation on it
// (registration, wake-up) takes that lock, from any thread.
unsafe impl Send for PollQueue {}
// SAFETY: as for `Send`.
unsafe impl Sync for PollQueue {}

impl PollQueue {
    /// An empty queue.
    pub fn new() -> impl PinInit<Self> {
        pin_init!(PollQueue {
            // SAFETY: `init_raw` initialises the whole head in place, and
            // the head is pinned from then on.
            raw <- Opaque::ffi_init(|p| unsafe { init_raw(p) }),
        })
    }

    /// Wakes every `poll` sleeper waiting for one of `mask`'s events
    /// ([`POLLIN`] and the rest). Any context.
    #[inline(never)]
    pub fn wake(&self, mask: u32) {
        // SAFETY: the head is initialised and pinned (type invariant); a
        // wake-up takes its lock, callable in any context.
        unsafe { bindings::rdma_rs_pollq_wake(self.raw.get(), mask) }
    }
}

/// `rdma_rs_pollq_init`, from this crate's object (a consumer's instance of
/// the initialiser cannot reach the C glue, which is not exported).
///
/// # Safety
///
/// `p` must point at memory for a wait queue head that stays where it is.
#[inline(never)]
unsafe fn init_raw(p: *mut bindings::wait_queue_head) {
    // SAFETY: the caller's guarantee.
    unsafe { bindings::rdma_rs_pollq_init(p) }
}

/// The `poll` call in progress on a file: where to register the caller.
///
/// `'a` is the call's borrow of the device's operations and of the open
/// file; only queues that live that long (owned by them) can be waited on.
///
/// # Invariants
///
/// `file` and `table` are the arguments of the `poll` file operation in
/// progress on this thread, valid for the `PollTable`'s life, which does
/// not leave that call (it is handed out by reference only). Every file
/// registered through it is released only after the open file that owns
/// the `'a` borrows is released.
pub struct PollTable<'a> {
    file: *mut bindings::file,
    table: *mut bindings::poll_table_struct,
    _borrow: core::marker::PhantomData<&'a ()>,
}

impl<'a> PollTable<'a> {
    /// # Safety
    ///
    /// `file` and `table` must be the arguments of the `poll` call in
    /// progress, and `'a` no longer than the life of the open file whose
    /// operations the call borrows for `'a`.
    pub(crate) unsafe fn new(
        file: *mut bindings::file,
        table: *mut bindings::poll_table_struct,
    ) -> Self {
        // INVARIANT: the caller's guarantees.
        PollTable {
            file,
            table,
            _borrow: core::marker::PhantomData,
        }
    }

    /// Registers the caller on `queue`: a later [`PollQueue::wake`] of it
    /// makes the kernel ask the file again.
    #[inline(never)]
    pub fn wait(&self, queue: &'a PollQueue) {
        // The head is borrowed for `'a`, so it lives at least as long as
        // the open file (owned by the file or by the device's operations,
        // which the file keeps alive); every entry a poller leaves on it is
        // removed by the poller or at the file's release, before that.
        // SAFETY: `file` and `table` are the current poll call's (type
        // invariant; `poll_wait` allows a NULL table), and the head is
        // initialised, pinned and outlives every entry (above).
        unsafe { bindings::rdma_rs_poll_wait(self.file, queue.raw.get(), self.table) }
    }
}
