// SPDX-License-Identifier: GPL-2.0

//! A mapped device's IO ([`DevIo`], the [`BlkOps`] of its disk): each
//! request of the disk becomes one RNBD IO on the session; its completion
//! ends the request. A read's or write's data goes between the request's
//! own pages and the wire without a copy (RTRS maps the pages into the
//! request's memory region) when the pages make one region (every piece
//! but the first starts its page, every piece but the last ends it, no
//! more pieces than RTRS takes); otherwise it is copied through a buffer
//! of the request's tag. The `copies` file counts both.
//!
//! A request that cannot go now waits in `waiting`, in order: when no
//! permit is free (the session's work sends it, waiting for one), and
//! while the session has no path (RTRS completes the requests in flight
//! with `ECONNABORTED` then; they wait too, and go again once the link is
//! back and the device is open again on the server). An unmap ends the
//! waiting requests with `EIO` and refuses new ones.
//!
//! Completions come in softirq: `slots` and `waiting` are IRQ-safe
//! spinlocks, each a leaf; none is held across a request, a copy or the
//! end of a request, and no buffer is let go under them.

use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, AtomicU8, Ordering};

use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::kshim::blk::{BlkOps, BlkRequest, RqOp};
use rdma::kshim::errno::{econnaborted, enotconn, eopnotsupp, etimedout};
use rdma::kshim::mem::Buffer;
use rdma::kshim::ratelimit::log_allowed;
use rdma::kshim::sync::SpinLockIrq;
use rdma::kshim::vec;
use rdma::verbs::mr::{BufSlice, PageSlice};
use rtrs::clt::{ConType, Dir, IoDone};
use rtrs::proto::rnbd::{AccessMode, Io, IO_LEN};
use rtrs::proto::rnbd_clt::io_rw;
use rtrs::proto::rnbd_srv::BlockKind;

use super::session::{server_err, CltSess};

/// A mapping's state, as its `state` file shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum DevState {
    /// Being mapped.
    Init = 0,
    /// Open on the server: IO flows.
    Open = 1,
    /// The session lost its last path: IO waits.
    Closed = 2,
    /// Being unmapped: IO fails.
    Unmapped = 3,
}

impl DevState {
    fn of(v: u8) -> DevState {
        match v {
            0 => DevState::Init,
            1 => DevState::Open,
            2 => DevState::Closed,
            _ => DevState::Unmapped,
        }
    }

    /// The `state` file's text (the kernel client's).
    pub(crate) fn text(self) -> &'static str {
        match self {
            DevState::Init => "init",
            DevState::Open => "open",
            DevState::Closed => "closed",
            DevState::Unmapped => "unmapped",
        }
    }
}

/// `EALREADY` (asm-generic/errno.h), which the kernel crate does not name.
const EALREADY_ERRNO: i32 = 114;

/// A request of the disk in flight on the session.
struct Slot {
    rq: Option<BlkRequest>,
    kind: BlockKind,
    len: u32,
    /// The data went without a copy (nothing to copy back).
    zero_copy: bool,
    /// The tag's buffer, kept for its next request.
    buf: Option<Arc<Buffer>>,
    /// Room for the pieces of a request's pages (lent out while one is
    /// sent).
    pages: KVec<PageSlice>,
}

/// What the disk's requests need: the session, the server's id of the
/// device, the requests in flight and those waiting.
#[pin_data]
pub(crate) struct DevIo {
    pub(crate) sess: Arc<CltSess>,
    /// The device's index in the session (high half of its IO tags).
    idx: AtomicU32,
    /// The server's id of the device (new after a reopen).
    id: AtomicU32,
    /// The name the server knows it by.
    pub(crate) path: KVec<u8>,
    pub(crate) mode: AccessMode,
    /// Size in sectors the server announced last.
    pub(crate) nsectors: AtomicU64,
    /// Bytes a tag's buffer holds (the largest request).
    max_io: usize,
    state: AtomicU8,
    /// Attempts to open the device again so far (`remap_device` waits for
    /// the next), and the errno of the last one that failed.
    reopens: AtomicU32,
    reopen_err: AtomicI32,
    /// Reads and writes sent from their own pages, and through the
    /// tag's buffer (`copies`).
    pub(crate) zero_copy: AtomicU64,
    pub(crate) bounced: AtomicU64,
    #[pin]
    slots: SpinLockIrq<KVec<Slot>>,
    /// Requests to send when a permit or the link is back; room for the
    /// whole queue is reserved, so parking never allocates.
    #[pin]
    waiting: SpinLockIrq<KVec<BlkRequest>>,
}

impl DevIo {
    /// The IO of device `id` (as the server's OPEN answered) on `sess`,
    /// for a disk of `depth` tags and requests of at most `max_io` bytes.
    pub(crate) fn new(
        sess: Arc<CltSess>,
        id: u32,
        path: &[u8],
        mode: AccessMode,
        nsectors: u64,
        depth: u32,
        max_io: usize,
    ) -> Result<Arc<DevIo>> {
        let mut p = KVec::with_capacity(path.len(), GFP_KERNEL)?;
        p.extend_from_slice(path, GFP_KERNEL)?;
        let mut slots = KVec::with_capacity(depth as usize, GFP_KERNEL)?;
        // A request's pieces: one per page, one more when it does not
        // start a page; never more than RTRS takes.
        let room = (max_io / rdma::kshim::pages::page_size() + 1)
            .min(sess.rtrs.query().map_or(0, |a| a.max_segments as usize));
        for _ in 0..depth {
            slots.push(
                Slot {
                    rq: None,
                    kind: BlockKind::Read,
                    len: 0,
                    zero_copy: false,
                    buf: None,
                    pages: KVec::with_capacity(room, GFP_KERNEL)?,
                },
                GFP_KERNEL,
            )?;
        }
        let waiting = KVec::with_capacity(depth as usize, GFP_KERNEL)?;
        Arc::pin_init(
            pin_init!(DevIo {
                sess,
                idx: AtomicU32::new(0),
                id: AtomicU32::new(id),
                path: p,
                mode,
                nsectors: AtomicU64::new(nsectors),
                max_io,
                state: AtomicU8::new(DevState::Init as u8),
                reopens: AtomicU32::new(0),
                reopen_err: AtomicI32::new(0),
                zero_copy: AtomicU64::new(0),
                bounced: AtomicU64::new(0),
                slots <- rdma::new_spinlock_irq!(slots, "rnbd_client::DevIo::slots"),
                waiting <- rdma::new_spinlock_irq!(waiting, "rnbd_client::DevIo::waiting"),
            }),
            GFP_KERNEL,
        )
    }

    /// The state.
    pub(crate) fn state(&self) -> DevState {
        DevState::of(self.state.load(Ordering::Acquire))
    }

    fn set_state(&self, s: DevState) {
        self.state.store(s as u8, Ordering::Release);
    }

    /// Its index in the session is `idx`; IO may flow.
    pub(crate) fn opened(&self, idx: u32) {
        self.idx.store(idx, Ordering::Release);
        self.set_state(DevState::Open);
    }

    /// The index in the session.
    pub(crate) fn idx(&self) -> u32 {
        self.idx.load(Ordering::Acquire)
    }

    /// The server's id.
    pub(crate) fn id(&self) -> u32 {
        self.id.load(Ordering::Acquire)
    }

    /// The session lost its last path: IO waits.
    pub(crate) fn link_down(&self) {
        let _ = self.state.compare_exchange(
            DevState::Open as u8,
            DevState::Closed as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }

    /// Opens the device on the server again if it is closed (after the
    /// link came back, or on `remap_device`); one that is open (its
    /// reopen succeeded on an earlier pass) or being unmapped is left as
    /// it is.
    pub(crate) fn reopen(&self, sess: &Arc<CltSess>) -> Result {
        let r = self.try_reopen(sess);
        // Counted after what the attempt set (a waiter in `remap` reads
        // the state once it sees the count move).
        self.reopens.fetch_add(1, Ordering::AcqRel);
        r
    }

    fn try_reopen(&self, sess: &Arc<CltSess>) -> Result {
        if self.state() != DevState::Closed {
            return Ok(());
        }
        match sess.open(&self.path, self.mode) {
            Ok(rsp) => {
                self.id.store(rsp.device_id, Ordering::Release);
                let old = self.nsectors.swap(rsp.nsectors, Ordering::AcqRel);
                if old != rsp.nsectors {
                    pr_warn!(
                        "rnbd_client: {}: the server's device has {} sectors now, {} before; the disk keeps its size\n",
                        self.path_str(),
                        rsp.nsectors,
                        old
                    );
                }
                let _ = self.state.compare_exchange(
                    DevState::Closed as u8,
                    DevState::Open as u8,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                );
                pr_info!(
                    "rnbd_client: {}@{}: open again (id {})\n",
                    self.path_str(),
                    sess.name_str(),
                    rsp.device_id
                );
                Ok(())
            }
            Err(e) => {
                self.reopen_err.store(e.to_errno(), Ordering::Release);
                pr_warn!(
                    "rnbd_client: {}@{}: reopen failed ({})\n",
                    self.path_str(),
                    sess.name_str(),
                    e.to_errno()
                );
                Err(e)
            }
        }
    }

    /// The device's name on the server, for the log.
    pub(crate) fn path_str(&self) -> &str {
        core::str::from_utf8(&self.path).unwrap_or("?")
    }

    /// `remap_device`: a closed device opened again now, as the kernel's
    /// client does on request. The session's service work makes the
    /// attempt (so that it never races the attempts it makes after a
    /// reconnect); this waits for its outcome, at most 10 s. `EALREADY`
    /// if the device is open, `ENOTCONN` while the session has no path,
    /// `ENODEV` once it is being unmapped, `EBUSY` while being mapped.
    pub(crate) fn remap(&self) -> Result {
        match self.state() {
            DevState::Open => return Err(Error::from_errno(-EALREADY_ERRNO)),
            DevState::Unmapped => return Err(ENODEV),
            DevState::Init => return Err(EBUSY),
            DevState::Closed if !self.sess.is_up() => return Err(enotconn()),
            DevState::Closed => {}
        }
        pr_info!(
            "rnbd_client: {}@{}: remapping\n",
            self.path_str(),
            self.sess.name_str()
        );
        let before = self.reopens.load(Ordering::Acquire);
        self.sess.reopen_all();
        for _ in 0..500 {
            if self.reopens.load(Ordering::Acquire) != before {
                return match self.state() {
                    DevState::Open => Ok(()),
                    DevState::Unmapped => Err(ENODEV),
                    _ => Err(Error::from_errno(
                        self.reopen_err.load(Ordering::Acquire).min(-1),
                    )),
                };
            }
            rdma::kshim::time::msleep(20);
        }
        Err(etimedout())
    }

    /// Being unmapped: IO fails from now on, waiting IO included.
    pub(crate) fn unmapping(&self) {
        // Set before the list is taken: a `park` that takes the lock
        // after this one sees it (it looks under the lock).
        self.set_state(DevState::Unmapped);
        let waiting = core::mem::take(&mut *self.waiting.lock());
        for rq in waiting {
            rq.end(Err(EIO));
        }
    }

    /// Parks `rq` until a permit or the link is back. The service work
    /// looks once the device is open (at once if it is).
    fn park(&self, rq: BlkRequest) {
        if self.wait(rq) && self.state() == DevState::Open {
            self.sess.kick();
        }
    }

    /// Puts `rq` in `waiting` (true), or ends it with `EIO` if the
    /// device is being unmapped (false).
    fn wait(&self, rq: BlkRequest) -> bool {
        let mut w = self.waiting.lock();
        // Looked at under the lock: a request parked after `unmapping`
        // took the list would wait forever, and the disk's removal with
        // it.
        if self.state() == DevState::Unmapped {
            drop(w);
            rq.end(Err(EIO));
            return false;
        }
        // Room for the whole queue is reserved: no allocation here (were
        // it to fail, the request's drop would end it: EIO).
        let _ = w.push(rq, GFP_ATOMIC);
        true
    }

    /// The buffer of `tag`, for `len` bytes.
    fn buffer(&self, tag: u32) -> Result<Arc<Buffer>> {
        let mut g = self.slots.lock();
        let slot = g.get_mut(tag as usize).ok_or(EINVAL)?;
        if let Some(b) = &slot.buf {
            return Ok(b.clone());
        }
        drop(g);
        let b = Buffer::new(self.max_io)?;
        let mut g = self.slots.lock();
        let slot = g.get_mut(tag as usize).ok_or(EINVAL)?;
        match &slot.buf {
            // One tag is one request at a time: never set meanwhile (were
            // it, `b` would be let go after the lock).
            Some(old) => {
                let old = old.clone();
                drop(g);
                drop(b);
                Ok(old)
            }
            None => {
                slot.buf = Some(b.clone());
                Ok(b)
            }
        }
    }

    /// The pieces of `rq`'s pages in the room of `tag`, if they make one
    /// region RTRS can map (`None`: the data goes through the tag's
    /// buffer).
    fn own_pages(&self, rq: &BlkRequest, tag: u32) -> Option<KVec<PageSlice>> {
        let mut pg = {
            let mut g = self.slots.lock();
            core::mem::take(&mut g.get_mut(tag as usize)?.pages)
        };
        if rq.pages(&mut pg).is_ok() && !pg.is_empty() && rtrs::clt::pages_fit(&pg) {
            return Some(pg);
        }
        self.give_pages(tag, pg);
        None
    }

    /// Lets the pieces go (outside the lock) and gives their room back
    /// to `tag`.
    fn give_pages(&self, tag: u32, mut pg: KVec<PageSlice>) {
        vec::clear(&mut pg);
        let mut g = self.slots.lock();
        if let Some(slot) = g.get_mut(tag as usize) {
            if slot.pages.capacity() < pg.capacity() {
                core::mem::swap(&mut slot.pages, &mut pg);
            }
        }
        drop(g);
        drop(pg);
    }

    /// Sends `rq` (of `kind`) on the session; with `wait`, waits for a
    /// permit. Returns the request if it must wait (no permit, no path).
    fn send(&self, rq: BlkRequest, kind: BlockKind, wait: bool) -> Option<BlkRequest> {
        let permit = match self.sess.rtrs.permit(ConType::Io, wait) {
            Ok(p) => p,
            Err(e) if e == EBUSY || e == ERESTARTSYS || e == enotconn() => return Some(rq),
            Err(e) => {
                rq.end(Err(e));
                return None;
            }
        };
        let tag = rq.tag();
        let bytes = rq.bytes();
        let flush = kind == BlockKind::Flush;
        let len = if kind.has_data() { bytes } else { 0 };
        if len as usize > self.max_io {
            rq.end(Err(EIO));
            return None;
        }
        // The request's own pages, if they make one region; the tag's
        // buffer otherwise.
        let pages = if len > 0 && matches!(kind, BlockKind::Read | BlockKind::Write) {
            self.own_pages(&rq, tag)
        } else {
            None
        };
        let buf = if len > 0 && pages.is_none() {
            match self.buffer(tag) {
                Ok(b) => Some(b),
                Err(e) => {
                    rq.end(Err(e));
                    return None;
                }
            }
        } else {
            None
        };
        if let (BlockKind::Write, Some(b)) = (kind, &buf) {
            if let Err(e) = rq.copy_out(b, 0, len) {
                rq.end(Err(e));
                return None;
            }
        }
        let io = Io {
            device_id: self.id(),
            sector: if flush { 0 } else { rq.sector() },
            rw: io_rw(kind, rq.sync(), rq.fua()),
            bi_size: if flush { 0 } else { bytes },
            prio: 0,
        };
        let mut m = [0u8; IO_LEN];
        let n = match io.write(&mut m) {
            Ok(n) => n,
            Err(_) => {
                rq.end(Err(EINVAL));
                return None;
            }
        };
        let dir = if kind == BlockKind::Read {
            Dir::Read
        } else {
            Dir::Write
        };
        {
            let mut g = self.slots.lock();
            let Some(slot) = g.get_mut(tag as usize) else {
                drop(g);
                rq.end(Err(EINVAL));
                return None;
            };
            // Placed before the request: its completion may come first.
            slot.rq = Some(rq);
            slot.kind = kind;
            slot.len = len;
            slot.zero_copy = pages.is_some();
        }
        let done: Arc<dyn IoDone> = self.sess.clone();
        let wire_tag = (u64::from(self.idx()) << 32) | u64::from(tag);
        let sent = match (&buf, &pages) {
            (_, Some(pg)) => {
                self.zero_copy.fetch_add(1, Ordering::Relaxed);
                self.sess
                    .rtrs
                    .request_pages(dir, permit, &m[..n], pg, done, wire_tag)
            }
            (Some(b), None) => {
                self.bounced.fetch_add(1, Ordering::Relaxed);
                self.sess.rtrs.request(
                    dir,
                    permit,
                    &m[..n],
                    &[BufSlice {
                        buf: b,
                        offset: 0,
                        len: len as usize,
                    }],
                    done,
                    wire_tag,
                )
            }
            (None, None) => self
                .sess
                .rtrs
                .request(dir, permit, &m[..n], &[], done, wire_tag),
        };
        // The request holds its own references now: the pieces' go, and
        // their room back to the tag.
        if let Some(pg) = pages {
            self.give_pages(tag, pg);
        }
        match sent {
            Ok(()) => None,
            Err(e) => {
                // Not sent: its completion never comes.
                let rq = self.slots.lock().get_mut(tag as usize)?.rq.take()?;
                if e == econnaborted() || e == enotconn() {
                    Some(rq)
                } else {
                    rq.end(Err(e));
                    None
                }
            }
        }
    }

    /// The requests that waited, sent while the device is open (by the
    /// session's work, which may wait for permits).
    pub(crate) fn send_waiting(&self, _sess: &Arc<CltSess>) {
        while self.state() == DevState::Open {
            let Some(rq) = vec::remove(&mut self.waiting.lock(), 0) else {
                return;
            };
            let Some(kind) = kind_of(rq.op()) else {
                rq.end(Err(eopnotsupp()));
                continue;
            };
            if let Some(rq) = self.send(rq, kind, true) {
                // No path: it waits for the link (no kick: the link's
                // return does it).
                self.wait(rq);
                return;
            }
        }
    }

    /// Request `tag` completed with `errno`.
    pub(crate) fn complete(&self, tag: u32, errno: i32) {
        let (rq, kind, len, zero_copy, buf) = {
            let mut g = self.slots.lock();
            let Some(slot) = g.get_mut(tag as usize) else {
                return;
            };
            let Some(rq) = slot.rq.take() else {
                return;
            };
            (rq, slot.kind, slot.len, slot.zero_copy, slot.buf.clone())
        };
        if errno == econnaborted().to_errno() && self.state() != DevState::Unmapped {
            // No path left: it goes again once the link is back.
            self.park(rq);
            return;
        }
        let r = if errno != 0 {
            if log_allowed() {
                pr_warn!(
                    "rnbd_client: {}: IO failed on the server ({})\n",
                    self.path_str(),
                    errno
                );
            }
            Err(server_err(errno))
        } else {
            match (kind, &buf) {
                (BlockKind::Read, Some(b)) if !zero_copy => rq.copy_in(b, 0, len),
                _ => Ok(()),
            }
        };
        rq.end(r);
    }
}

/// The RNBD operation of a block request, if it has one.
fn kind_of(op: RqOp) -> Option<BlockKind> {
    Some(match op {
        RqOp::Read => BlockKind::Read,
        RqOp::Write => BlockKind::Write,
        RqOp::Flush => BlockKind::Flush,
        RqOp::Discard => BlockKind::Discard,
        RqOp::SecureErase => BlockKind::SecureErase,
        RqOp::WriteZeroes => BlockKind::WriteZeroes,
        RqOp::Other => return None,
    })
}

impl BlkOps for DevIo {
    fn queue_rq(&self, rq: BlkRequest) {
        let Some(kind) = kind_of(rq.op()) else {
            rq.end(Err(eopnotsupp()));
            return;
        };
        match self.state() {
            DevState::Unmapped => rq.end(Err(EIO)),
            DevState::Open => {
                if let Some(rq) = self.send(rq, kind, false) {
                    self.park(rq);
                }
            }
            DevState::Init | DevState::Closed => self.park(rq),
        }
    }
}
