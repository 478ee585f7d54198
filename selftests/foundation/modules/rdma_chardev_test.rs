// SPDX-License-Identifier: GPL-2.0

//! Selftest: `read`, `write` and `poll` of `rdma::kshim::chardev`
//! (`chardev.sh`, with the user program `chardev_user`).
//!
//! `/dev/rdma_chardev_test` is a queue of records per open file, the shape
//! of an event file: a `write` of 1 to [`REC`] bytes queues one record (at
//! most [`DEPTH`]; beyond, `EAGAIN` when non-blocking, else the writer
//! waits for room); a `read` takes the oldest whole record, and refuses a
//! buffer shorter than it with `EINVAL`; an empty queue gives `EAGAIN`
//! when non-blocking, else the reader waits, interruptibly. `poll` says
//! readable while a record is queued and writable while there is room.
//! The ioctl [`IOC_STATS`] reports what the file saw, for the user program
//! to check against what it did.

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::error::code::{EAGAIN, EFAULT, EINTR, EINVAL, ENOTTY};
use kernel::prelude::*;
use kernel::sync::{new_condvar, new_mutex, Arc, CondVar, Mutex};
use kernel::uaccess::{UserSliceReader, UserSliceWriter};

use rdma::kshim::chardev::{CharDevOps, IoctlArg, MiscDev};
use rdma::kshim::poll::{PollQueue, PollTable, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};

module! {
    type: ChardevTest,
    name: "rdma_chardev_test",
    author: "rdma-rs",
    description: "Selftest: read, write and poll of rdma::kshim::chardev",
    license: "GPL",
}

/// Records a file holds at most.
const DEPTH: usize = 4;
/// The longest record, in bytes.
const REC: usize = 64;
/// `_IOR('c', 1, struct { u64 writes, reads, polls, releases_before; })`.
const IOC_STATS: u32 = 0x8020_6301;

/// The release count, across files (the user program checks that a file
/// polled through epoll and then closed was released).
static RELEASES: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

struct Queue {
    recs: KVec<KVec<u8>>,
    writes: u64,
    reads: u64,
    polls: u64,
}

#[pin_data]
struct FileCtx {
    #[pin]
    q: Mutex<Queue>,
    /// Readers and writers that sleep.
    #[pin]
    changed: CondVar,
    /// Pollers.
    #[pin]
    pollq: PollQueue,
}

impl FileCtx {
    /// Waits until `ready` holds for the queue (or fails with `EAGAIN` if
    /// `nonblock`, `EINTR` on a signal), then runs `f` on it.
    fn when<R>(
        &self,
        nonblock: bool,
        ready: impl Fn(&Queue) -> bool,
        f: impl FnOnce(&mut Queue) -> Result<R>,
    ) -> Result<R> {
        let mut q = self.q.lock();
        while !ready(&q) {
            if nonblock {
                return Err(EAGAIN);
            }
            if self.changed.wait_interruptible(&mut q) {
                return Err(EINTR);
            }
        }
        f(&mut q)
    }

    fn changed(&self, mask: u32) {
        self.changed.notify_all();
        self.pollq.wake(mask);
    }
}

struct Dev;

impl CharDevOps for Dev {
    type File = Pin<KBox<FileCtx>>;

    fn open(&self) -> Result<Self::File> {
        KBox::pin_init(
            pin_init!(FileCtx {
                q <- new_mutex!(Queue { recs: KVec::new(), writes: 0, reads: 0, polls: 0 }),
                changed <- new_condvar!(),
                pollq <- PollQueue::new(),
            }),
            GFP_KERNEL,
        )
    }

    fn write(&self, file: &Self::File, mut data: UserSliceReader, nonblock: bool) -> Result<usize> {
        let n = data.len();
        if n == 0 || n > REC {
            return Err(EINVAL);
        }
        let mut rec = KVec::from_elem(0u8, n, GFP_KERNEL)?;
        data.read_slice(&mut rec)?;
        file.when(
            nonblock,
            |q| q.recs.len() < DEPTH,
            |q| {
                q.recs.push(rec, GFP_KERNEL)?;
                q.writes += 1;
                Ok(())
            },
        )?;
        file.changed(POLLIN | POLLRDNORM);
        Ok(n)
    }

    fn read(&self, file: &Self::File, mut out: UserSliceWriter, nonblock: bool) -> Result<usize> {
        let room = out.len();
        let n = file.when(
            nonblock,
            |q| !q.recs.is_empty(),
            |q| {
                let len = q.recs[0].len();
                if room < len {
                    return Err(EINVAL);
                }
                // Copied out under the lock, so a failed copy leaves the
                // record queued (and the reader may try again).
                out.write_slice(&q.recs[0]).map_err(|_| EFAULT)?;
                rdma::kshim::vec::remove(&mut q.recs, 0);
                q.reads += 1;
                Ok(len)
            },
        )?;
        file.changed(POLLOUT | POLLWRNORM);
        Ok(n)
    }

    fn poll<'a>(&'a self, file: &'a Self::File, table: &PollTable<'a>) -> u32 {
        table.wait(&file.pollq);
        let mut q = file.q.lock();
        q.polls += 1;
        let mut mask = 0;
        if !q.recs.is_empty() {
            mask |= POLLIN | POLLRDNORM;
        }
        if q.recs.len() < DEPTH {
            mask |= POLLOUT | POLLWRNORM;
        }
        mask
    }

    fn ioctl(&self, file: &Self::File, cmd: u32, arg: usize) -> Result<isize> {
        if cmd != IOC_STATS {
            return Err(ENOTTY);
        }
        let mut io = IoctlArg::<32>::zeroed(arg);
        {
            let q = file.q.lock();
            io.set_u64(0, q.writes);
            io.set_u64(8, q.reads);
            io.set_u64(16, q.polls);
        }
        io.set_u64(24, RELEASES.load(core::sync::atomic::Ordering::Relaxed));
        io.write_back()?;
        Ok(0)
    }

    fn release(&self, file: Self::File) {
        RELEASES.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        drop(file);
    }
}

struct ChardevTest {
    _dev: Pin<KBox<MiscDev<Dev>>>,
}

impl kernel::Module for ChardevTest {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let dev = MiscDev::register(
            c_str!("rdma_chardev_test"),
            Arc::new(Dev, GFP_KERNEL)?,
            module,
        )?;
        pr_info!("rdma_chardev_test: ready\n");
        Ok(ChardevTest { _dev: dev })
    }
}
