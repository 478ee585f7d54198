// SPDX-License-Identifier: GPL-2.0

//! The event files of a context: the asynchronous event file, the
//! descriptor `GET_CONTEXT` returns, from which user space reads 16-byte
//! `ib_uverbs_async_event_desc` records (`ibv_get_async_event`), and the
//! completion channels (`CREATE_COMP_CHANNEL`), which give 8-byte
//! `ib_uverbs_comp_event_desc` records (`ibv_get_cq_event`).
//!
//! A read takes the oldest whole record (a buffer shorter than one:
//! `EINVAL`); with none queued it waits, interruptibly, or fails with
//! `EAGAIN` if the file is non-blocking. `poll` says readable while a
//! record is queued. Once the context is gone (its uverbs file released or
//! its device removed) the file is closed: readers get what is queued,
//! then `EIO`, and poll says `POLLIN | POLLERR` so that waiters wake.
//!
//! At most [`QUEUE_MAX`] records wait, in room allocated with the queue
//! (events are queued from completion context, which cannot allocate);
//! beyond, new ones are counted and dropped (a process that never reads
//! its events cannot make the kernel hold memory without bound).
//!
//! A record about an object carries the object's [`EventCount`]: reading
//! the record counts it there, and destroying the object takes its unread
//! records off the queue ([`EventQueue::forget`]). `DESTROY_CQ` and
//! `DESTROY_QP` return those counts, and libibverbs waits until user space
//! has acknowledged as many events before it frees the object.
//!
//! Lock: the queue's lock is an IRQ-safe spinlock, the innermost lock of
//! this module (taken under a CQ's dispatch, in completion context).

use core::sync::atomic::{AtomicU32, Ordering};
use kernel::c_str;
use kernel::error::code::{EAGAIN, EINTR, EIO};
use kernel::prelude::*;

use kernel::sync::{new_condvar, Arc, CondVar};
use kernel::uaccess::UserSliceWriter;

use rdma::kshim::chardev::{AnonFile, CharDevOps};
use rdma::kshim::poll::{PollQueue, PollTable, POLLERR, POLLIN, POLLRDNORM};
use rdma::kshim::sync::SpinLockIrq;
use rdma::spec::uverbs::event::{AsyncEventDesc, CompEventDesc};
use rdma::spec::uverbs::{Wire, WireStruct};

/// Records queued at most.
const QUEUE_MAX: usize = 256;

/// The longest record (an asynchronous event's).
const REC: usize = 16;

/// The events user space has read about one object.
pub(crate) struct EventCount(AtomicU32);

impl EventCount {
    pub(crate) fn new() -> Result<Arc<Self>> {
        Ok(Arc::new(EventCount(AtomicU32::new(0)), GFP_KERNEL)?)
    }

    /// How many were read.
    pub(crate) fn get(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A queued record and the count of the object it is about.
struct Rec {
    bytes: [u8; REC],
    count: Option<Arc<EventCount>>,
}

struct Queue {
    /// Allocated for [`QUEUE_MAX`] records with the queue.
    recs: KVec<Rec>,
    closed: bool,
    /// The file was released: nobody reads the queue any more.
    released: bool,
    dropped: u64,
}

/// The queue behind one event file.
#[pin_data]
pub(crate) struct EventQueue {
    /// The length of this file's records: 16 or 8.
    rec_len: usize,
    #[pin]
    q: SpinLockIrq<Queue>,
    #[pin]
    changed: CondVar,
    #[pin]
    pollq: PollQueue,
}

impl EventQueue {
    /// The queue of an asynchronous event file.
    pub(crate) fn new_async() -> Result<Arc<Self>> {
        Self::new(AsyncEventDesc::SIZE)
    }

    /// The queue of a completion channel.
    pub(crate) fn new_comp() -> Result<Arc<Self>> {
        Self::new(CompEventDesc::SIZE)
    }

    fn new(rec_len: usize) -> Result<Arc<Self>> {
        let recs = KVec::with_capacity(QUEUE_MAX, GFP_KERNEL)?;
        Arc::pin_init(
            pin_init!(EventQueue {
                rec_len,
                q <- rdma::new_spinlock_irq!(Queue {
                    recs,
                    closed: false,
                    released: false,
                    dropped: 0,
                }, "EventQueue::q"),
                changed <- new_condvar!(),
                pollq <- PollQueue::new(),
            }),
            GFP_KERNEL,
        )
    }

    /// Queues an asynchronous event about `element` (a port number or an
    /// object's user handle), counted in `count` when read. Any context.
    pub(crate) fn push(&self, element: u64, event_type: u32, count: Option<&Arc<EventCount>>) {
        let desc = AsyncEventDesc {
            element,
            event_type,
            reserved: 0,
        };
        let mut rec = [0u8; REC];
        if desc.encode(&mut rec).is_ok() {
            self.queue(rec, count);
        }
    }

    /// Queues a completion event of the CQ whose user handle is
    /// `cq_handle`, counted in `count` when read. Any context.
    pub(crate) fn push_comp(&self, cq_handle: u64, count: &Arc<EventCount>) {
        let desc = CompEventDesc { cq_handle };
        let mut rec = [0u8; REC];
        if desc.encode(&mut rec).is_ok() {
            self.queue(rec, Some(count));
        }
    }

    fn queue(&self, bytes: [u8; REC], count: Option<&Arc<EventCount>>) {
        {
            let mut q = self.q.lock();
            if q.closed {
                return;
            }
            let rec = Rec {
                bytes,
                count: count.cloned(),
            };
            // Within the capacity allocated with the queue, `push` does not
            // allocate (the flags are for form's sake).
            if q.recs.len() >= QUEUE_MAX || q.recs.push(rec, GFP_ATOMIC).is_err() {
                q.dropped += 1;
                return;
            }
        }
        self.changed.notify_all();
        self.pollq.wake(POLLIN | POLLRDNORM);
    }

    /// Takes the unread records counted in `count` off the queue (their
    /// object is being destroyed).
    pub(crate) fn forget(&self, count: &Arc<EventCount>) {
        let mut q = self.q.lock();
        rdma::kshim::vec::retain(&mut q.recs, |r| {
            !r.count.as_ref().is_some_and(|c| Arc::ptr_eq(c, count))
        });
    }

    /// Whether the file was released (the queue can be forgotten).
    pub(crate) fn is_released(&self) -> bool {
        self.q.lock().released
    }

    /// The context is gone: wake every reader and poller.
    pub(crate) fn close(&self) {
        self.q.lock().closed = true;
        self.changed.notify_all();
        self.pollq.wake(POLLIN | POLLRDNORM | POLLERR);
    }

    /// A reserved descriptor of a new event file on this queue.
    pub(crate) fn new_file(self: &Arc<Self>, module: &'static ThisModule) -> Result<AnonFile> {
        let ops = Arc::new(EventFileOps, GFP_KERNEL)?;
        AnonFile::new(
            c_str!("[infinibandevent]"),
            ops,
            self.clone(),
            false,
            module,
        )
    }
}

/// The operations of event files.
struct EventFileOps;

impl CharDevOps for EventFileOps {
    type File = Arc<EventQueue>;

    fn open(&self) -> Result<Arc<EventQueue>> {
        // Event files have no node: nothing opens them.
        Err(ENODEV)
    }

    fn ioctl(&self, _q: &Arc<EventQueue>, _cmd: u32, _arg: usize) -> Result<isize> {
        Err(ENOTTY)
    }

    fn read(
        &self,
        ev: &Arc<EventQueue>,
        mut out: UserSliceWriter,
        nonblock: bool,
    ) -> Result<usize> {
        let len = ev.rec_len;
        if out.len() < len {
            return Err(EINVAL);
        }
        let rec = {
            let mut q = ev.q.lock();
            loop {
                if let Some(rec) = rdma::kshim::vec::remove(&mut q.recs, 0) {
                    // Counted as read now: a failed copy loses the record
                    // as it does in C.
                    if let Some(c) = &rec.count {
                        c.0.fetch_add(1, Ordering::Relaxed);
                    }
                    break rec.bytes;
                }
                if q.closed {
                    return Err(EIO);
                }
                if nonblock {
                    return Err(EAGAIN);
                }
                if ev.changed.wait_interruptible(&mut q) {
                    return Err(EINTR);
                }
            }
        };
        out.write_slice(&rec[..len])?;
        Ok(len)
    }

    fn release(&self, ev: Arc<EventQueue>) {
        ev.q.lock().released = true;
    }

    fn poll<'a>(&'a self, ev: &'a Arc<EventQueue>, table: &PollTable<'a>) -> u32 {
        table.wait(&ev.pollq);
        let q = ev.q.lock();
        let mut mask = 0;
        if !q.recs.is_empty() {
            mask |= POLLIN | POLLRDNORM;
        }
        if q.closed {
            mask |= POLLIN | POLLRDNORM | POLLERR;
        }
        mask
    }
}
