// SPDX-License-Identifier: GPL-2.0

//! An open `/dev/infiniband/rdma_cm` ([`UcmaFile`], an event channel of
//! librdmacm's): the ids user space made through it, by handle, and the
//! queue of their events, which `GET_EVENT` takes one at a time (blocking,
//! or `EAGAIN` for a non-blocking file) and `poll` reports.
//!
//! A connection request's new id is in the queue with its event and joins
//! the file's ids only when user space reads that event, as in C: before,
//! no command reaches it, and if the event is dropped (the listener
//! destroyed, the file closed) the id goes and the peer gets a reject.
//!
//! At most [`QUEUE_MAX`] events wait; beyond, new ones are dropped and
//! counted (a process that never reads cannot make the kernel hold memory
//! without bound), and a listener's requests beyond its backlog are
//! rejected.
//!
//! Lock: `UcmaFile::st` is taken by commands (never across a call into the
//! rdma_cm) and by the event handler; no lock is held while an id is
//! destroyed, since that waits for the handler.

use kernel::error::code::{EAGAIN, EINTR, ENOENT};
use kernel::prelude::*;
use kernel::rbtree::{RBTree, RBTreeNode};
use kernel::sync::{new_condvar, new_mutex, Arc, CondVar, Mutex};
use kernel::uaccess::UserSlice;

use rdma::kshim::global::Global;
use rdma::kshim::poll::{PollQueue, PollTable, POLLIN, POLLRDNORM};
use rdma::kshim::vec::remove;
use rdma::spec::uverbs::ucma::EventResp;
use rdma::spec::uverbs::Wire;

use crate::ctx::{Ctx, Mc};

/// The operations of `/dev/infiniband/rdma_cm` (served by the crate's
/// root), which tell its files from any other (`MIGRATE_ID` names one by
/// descriptor).
pub(crate) struct UcmaOps;

/// The module's operations, while it is loaded.
pub(crate) static OPS: Global<UcmaOps> = Global::new();

/// Events queued at most per file.
pub(crate) const QUEUE_MAX: usize = 4096;

/// The error for handle `h`, not one of a file's.
fn not_ours(h: u32) -> Error {
    if crate::ctx::routes::handle_live(h) {
        EINVAL
    } else {
        ENOENT
    }
}

/// A queued event.
pub(crate) struct UEvent {
    /// What user space reads.
    pub(crate) resp: EventResp,
    /// The id whose count reading it adds to (a request's: its listener).
    pub(crate) ctx: Arc<Ctx>,
    /// A connection request's new id.
    pub(crate) child: Option<Arc<Ctx>>,
    /// A multicast join's event: the join, whose count reading it adds
    /// to as well.
    pub(crate) mc: Option<Arc<Mc>>,
}

struct FileState {
    ctxs: RBTree<u32, Arc<Ctx>>,
    events: KVec<UEvent>,
    /// Released: nothing is queued any more.
    closed: bool,
    dropped: u64,
}

/// An open rdma_cm file.
#[pin_data]
pub(crate) struct UcmaFile {
    #[pin]
    st: Mutex<FileState>,
    #[pin]
    changed: CondVar,
    #[pin]
    pollq: PollQueue,
}

impl UcmaFile {
    pub(crate) fn new() -> Result<Arc<UcmaFile>> {
        Arc::pin_init(
            pin_init!(UcmaFile {
                st <- new_mutex!(FileState {
                    ctxs: RBTree::new(),
                    events: KVec::new(),
                    closed: false,
                    dropped: 0,
                }, "UcmaFile::st"),
                changed <- new_condvar!("UcmaFile::changed"),
                pollq <- PollQueue::new(),
            }),
            GFP_KERNEL,
        )
    }

    /// Adds `ctx` to the file's ids.
    pub(crate) fn insert(&self, ctx: &Arc<Ctx>) -> Result {
        let node = RBTreeNode::new(ctx.handle, ctx.clone(), GFP_KERNEL)?;
        let mut st = self.st.lock();
        if st.closed {
            return Err(EINVAL);
        }
        drop(st.ctxs.insert(node));
        Ok(())
    }

    /// The id of handle `h`: `EINVAL` if it is another file's, `ENOENT`
    /// if no id has it (stale or made up), as the C ucma answers.
    pub(crate) fn get(&self, h: u32) -> Result<Arc<Ctx>> {
        let found = self.st.lock().ctxs.get(&h).cloned();
        found.ok_or_else(|| not_ours(h))
    }

    /// Takes the id of handle `h` out of the file (errors as [`Self::get`]).
    pub(crate) fn take(&self, h: u32) -> Result<Arc<Ctx>> {
        let found = self.st.lock().ctxs.remove(&h);
        found.ok_or_else(|| not_ours(h))
    }

    /// Queues `ev`; `false` (nothing queued) if the file is closed or
    /// full.
    pub(crate) fn push(&self, ev: UEvent) -> bool {
        {
            let mut st = self.st.lock();
            if st.closed {
                return false;
            }
            if st.events.len() >= QUEUE_MAX || st.events.push(ev, GFP_KERNEL).is_err() {
                st.dropped += 1;
                if st.dropped == 1 {
                    if rdma::kshim::ratelimit::log_allowed() {
                        pr_warn!("rdma_cm file: events not read, dropping new ones\n");
                    }
                }
                return false;
            }
        }
        self.changed.notify_all();
        self.pollq.wake(POLLIN | POLLRDNORM);
        true
    }

    /// Takes the unread events of `ctx` off the queue (it is being
    /// destroyed); returns the new ids of its unread requests, for the
    /// caller to destroy with no lock held.
    pub(crate) fn forget(&self, ctx: &Arc<Ctx>) -> KVec<Arc<Ctx>> {
        let mut orphans = KVec::new();
        let mut st = self.st.lock();
        let mut i = 0;
        while i < st.events.len() {
            if !Arc::ptr_eq(&st.events[i].ctx, ctx) {
                i += 1;
                continue;
            }
            if let Some(child) = remove(&mut st.events, i).and_then(|ev| ev.child) {
                if orphans.push(child, GFP_KERNEL).is_err() {
                    if rdma::kshim::ratelimit::log_allowed() {
                        pr_warn!("rdma_cm file: no memory to end a request\n");
                    }
                }
            }
        }
        orphans
    }

    /// Drops the unread events of join `mc` (it is left).
    pub(crate) fn forget_mc(&self, mc: &Arc<Mc>) {
        let mut st = self.st.lock();
        let mut i = 0;
        while i < st.events.len() {
            if st.events[i].mc.as_ref().is_some_and(|m| Arc::ptr_eq(m, mc)) {
                drop(remove(&mut st.events, i));
            } else {
                i += 1;
            }
        }
    }

    /// Takes `ctx`'s unread events off the queue, in order (`MIGRATE_ID`
    /// moves them to another file).
    pub(crate) fn take_events(&self, ctx: &Arc<Ctx>) -> Result<KVec<UEvent>> {
        let mut st = self.st.lock();
        let n = st
            .events
            .iter()
            .filter(|e| Arc::ptr_eq(&e.ctx, ctx))
            .count();
        let mut moving = KVec::with_capacity(n, GFP_KERNEL)?;
        let mut i = 0;
        while i < st.events.len() {
            if !Arc::ptr_eq(&st.events[i].ctx, ctx) {
                i += 1;
                continue;
            }
            if let Some(ev) = remove(&mut st.events, i) {
                // Within the capacity: no allocation, no failure.
                let _ = moving.push(ev, GFP_KERNEL);
            }
        }
        Ok(moving)
    }

    /// `GET_EVENT`: the oldest event written to `out` (`len` bytes, at
    /// least up to the event's reserved word), counted as read, and a
    /// request's new id made one of the file's. Waits for one unless
    /// `nonblock`.
    pub(crate) fn get_event(&self, out: u64, len: usize, nonblock: bool) -> Result {
        let mut st = self.st.lock();
        while st.events.is_empty() {
            if nonblock {
                return Err(EAGAIN);
            }
            if self.changed.wait_interruptible(&mut st) {
                return Err(EINTR);
            }
        }
        let mut bytes = [0u8; EventResp::SIZE];
        st.events[0].resp.write_to(&mut bytes);
        let n = len.min(EventResp::SIZE);
        // The copy comes first: a fault leaves the event queued, as in C.
        UserSlice::new(out as usize, n)
            .writer()
            .write_slice(&bytes[..n])?;
        let Some(ev) = remove(&mut st.events, 0) else {
            return Err(EAGAIN);
        };
        ev.ctx.count_read();
        if let Some(mc) = ev.mc.as_ref() {
            mc.count_read();
        }
        if let Some(child) = ev.child {
            ev.ctx
                .pending
                .fetch_sub(1, core::sync::atomic::Ordering::Relaxed);
            let node = RBTreeNode::new(child.handle, child, GFP_KERNEL)?;
            drop(st.ctxs.insert(node));
        }
        Ok(())
    }

    /// The file is released: everything it holds, for the caller to
    /// destroy with no lock held (its ids, and the new ids of requests
    /// never read).
    pub(crate) fn close(&self) -> KVec<Arc<Ctx>> {
        let mut all = KVec::new();
        let mut st = self.st.lock();
        st.closed = true;
        let ctxs = core::mem::take(&mut st.ctxs);
        for (_, c) in ctxs.iter() {
            let _ = all.push(c.clone(), GFP_KERNEL);
        }
        drop(ctxs);
        for ev in core::mem::take(&mut st.events) {
            if let Some(c) = ev.child {
                let _ = all.push(c, GFP_KERNEL);
            }
        }
        all
    }

    /// `poll`: readable while an event waits.
    pub(crate) fn poll<'a>(&'a self, table: &PollTable<'a>) -> u32 {
        table.wait(&self.pollq);
        if self.st.lock().events.is_empty() {
            0
        } else {
            POLLIN | POLLRDNORM
        }
    }
}
