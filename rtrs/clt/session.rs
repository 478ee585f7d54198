// SPDX-License-Identifier: GPL-2.0

//! A client session: its paths, its permits (one per server chunk), the
//! requests in flight, the choice of a path for each request (the
//! multipath policy), failover, and the keeper that sends heartbeats and
//! reconnects failed paths.
//!
//! A request is one permit's: the permit's number is the chunk it is
//! written into on whichever path carries it, and the message ID of its
//! response. Its user message is written once, into the header area of
//! the path that carries it; its data slices are kept (in room reserved
//! when the session learnt its queue depth: a request allocates nothing)
//! until it completes, so that a request in flight on a path that fails
//! is posted again, whole, on another, its user message taken from the
//! failed path's header area (or completed with `-econnaborted()` when
//! no path is left). Each request completes exactly once.
//!
//! Responses are handled in softirq, where the ULP's [`IoDone`] is
//! called: `reqs` and `permits` are IRQ-safe spinlocks, and no buffer
//! reference, permit or handler is let go under them.
//!
//! Locks, in order: `SessInner::paths` (a mutex), then `reqs`, then a
//! path's `st` (a request is placed on a path only while it is connected,
//! checked under `reqs`); `permits` is a leaf. No lock is held across a
//! post, a connect, a wait or a call into the ULP.
//!
//! The session is what its paths know as their `PathOwner` and its sysfs
//! files as their `SessCtl` (both traits implemented here).

use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicUsize, Ordering};

use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::{new_condvar, new_mutex, Arc, CondVar, Mutex};
use kernel::workqueue::{impl_has_work, new_work, Queue, Work, WorkItem};

use rdma::kshim::class::SysDir;
use rdma::kshim::mem::{Buffer, Sge};
use rdma::kshim::route::NetNs;
use rdma::kshim::sync::SpinLockIrq;
use rdma::kshim::work::OwnedQueue;
use rdma::spec::opcodes::{Access, SendFlags};
use rdma::verbs::mr::{BufSlice, PageSlice};
use rdma::verbs::wr::{SendOp, SendWr};

use crate::clt::con::wr;
use crate::clt::path::{ClPath, PathAddr, PathOwner, Phase, SYSFS_WAIT_SECS};
use crate::clt::res::{Res, HDR_ROOM};
use crate::clt::sysfs::SessCtl;
use crate::dir::Dir;
use crate::proto::conn::Uuid;
use crate::proto::consts::RTRS_MSG_NEED_INVAL_F;
use crate::proto::mpath::{choose, PathView, PermitMap, Policy};
use crate::proto::msg::{RdmaMsg, RdmaRead, RdmaWrite, SgDesc};
use crate::ticker::Ticker;
use rdma::kshim::errno::{econnaborted, enotconn, eproto};

/// Room for the RTRS message after the user message (a read's header and
/// one descriptor).
const MSG_ROOM: usize = crate::proto::msg::RDMA_READ_HDR_LEN + crate::proto::msg::SG_DESC_LEN;

/// Which connection a permit's requests use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConType {
    /// The service connection (cid 0): session messages of the ULP.
    Admin,
    /// A connection of the current CPU.
    Io,
}

/// The session's parameters.
pub struct Config<'a> {
    /// The session's name (INFO_REQ; the server's RNBD names its session
    /// by it).
    pub name: &'a [u8],
    /// The paths, at most [`MAX_PATHS`].
    pub paths: &'a [PathAddr],
    /// How a request's path is chosen.
    pub policy: Policy,
    /// Reconnect attempts per failure (-1: forever, 0: never).
    pub max_reconnect_attempts: i32,
    /// Milliseconds before a failed path's first reconnect attempt.
    pub reconnect_delay_ms: u32,
    /// The most data slices of a request.
    pub max_segments: u32,
    /// Connections per path, the service connection included (0: one per
    /// possible CPU, plus one, as the kernel's client).
    pub cons_per_path: u16,
}

/// The most paths of a session.
pub const MAX_PATHS: usize = 8;

impl Config<'_> {
    /// The kernel client's defaults for `name` over `paths`.
    pub fn new<'a>(name: &'a [u8], paths: &'a [PathAddr]) -> Config<'a> {
        Config {
            name,
            paths,
            policy: Policy::MinInflight,
            max_reconnect_attempts: -1,
            reconnect_delay_ms: 5000,
            max_segments: 32,
            cons_per_path: 0,
        }
    }
}

/// What the ULP learns of a session.
#[derive(Clone, Copy, Debug)]
pub struct Attrs {
    /// Permits (requests in flight).
    pub queue_depth: u32,
    /// The largest data of a request.
    pub max_io_size: u32,
    /// The most data slices of a request.
    pub max_segments: u32,
}

/// The completion of a request: `errno` is 0 or negative.
pub trait IoDone: Send + Sync {
    /// Request `tag` is done: in softirq (a response from the server) or
    /// process context (a failover, the session's close). Must not sleep.
    /// The ULP keeps its handler alive until the session is closed (the
    /// session's last reference to it must not be the one let go here).
    fn done(&self, tag: u64, errno: i32);
}

/// A session's links, as the ULP hears of them.
pub trait LinkOps: Send + Sync {
    /// `true`: a path is connected again after none was; `false`: the
    /// last connected path failed.
    fn link_ev(&self, up: bool);
}

/// A permit: the right to one request in flight. Given back when dropped
/// (after its request's completion, when it was used).
pub struct Permit {
    sess: Arc<SessInner>,
    id: u32,
    con: ConType,
}

impl Permit {
    /// Its number (the chunk its request goes to).
    pub fn id(&self) -> u32 {
        self.id
    }
}

impl Drop for Permit {
    /// Any context; never sleeps.
    fn drop(&mut self) {
        let _ = self.sess.permits.lock().as_mut().map(|m| m.put(self.id));
        self.sess.permit_cv.notify_all();
    }
}

/// Where a request is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Free,
    /// Posted on `path`; no response yet.
    Posted,
    /// Answered with `errno`: it ends once its data is released, if that
    /// must be waited for (a read's MR invalidated by a `LOCAL_INV`, a
    /// write's RDMA WRITE completed), else at once.
    Inval(i32),
}

struct Slot {
    stage: Stage,
    dir: Dir,
    con: ConType,
    /// Bytes of the user message, at the start of the permit's header
    /// area of the path that carries the request.
    usr_len: u16,
    /// The data slices (buffer, offset, length), or the pieces of pages;
    /// room for the session's `max_segments` of each reserved once.
    data: KVec<(Arc<Buffer>, usize, usize)>,
    pages: KVec<PageSlice>,
    data_len: u32,
    done: Option<Arc<dyn IoDone>>,
    tag: u64,
    /// Held until the request completes.
    permit: Option<Permit>,
    path: Option<Arc<ClPath>>,
    /// The key its data MR was registered under (0: no data MR).
    mr_key: u32,
    /// A write whose data is mapped for local reads: its RDMA WRITE has
    /// not completed yet.
    write_out: bool,
}

/// What a finished request lets go, outside the lock.
struct Released {
    done: Option<Arc<dyn IoDone>>,
    tag: u64,
    permit: Option<Permit>,
    path: Option<Arc<ClPath>>,
    data: KVec<(Arc<Buffer>, usize, usize)>,
    pages: KVec<PageSlice>,
}

impl Slot {
    /// A free slot with room for `max_segments` data slices.
    fn new(max_segments: u32) -> Result<Slot> {
        Ok(Slot {
            stage: Stage::Free,
            dir: Dir::Read,
            con: ConType::Io,
            usr_len: 0,
            data: KVec::with_capacity(max_segments as usize, GFP_KERNEL)?,
            pages: KVec::with_capacity(max_segments as usize, GFP_KERNEL)?,
            data_len: 0,
            done: None,
            tag: 0,
            permit: None,
            path: None,
            mr_key: 0,
            write_out: false,
        })
    }

    /// Frees the slot (under `reqs`): what it held, to be let go outside
    /// the lock (its data room comes back with [`SessInner::give_room`]).
    fn release(&mut self) -> Released {
        self.stage = Stage::Free;
        self.mr_key = 0;
        self.write_out = false;
        Released {
            done: self.done.take(),
            tag: self.tag,
            permit: self.permit.take(),
            path: self.path.take(),
            data: core::mem::take(&mut self.data),
            pages: core::mem::take(&mut self.pages),
        }
    }
}

/// A request's data, as the ULP gives it.
#[derive(Clone, Copy)]
enum Data<'a> {
    /// Slices of buffers ([`Session::request`]).
    Bufs(&'a [BufSlice<'a>]),
    /// Pieces of pages ([`Session::request_pages`]: a block request's own
    /// pages, no copy).
    Pages(&'a [PageSlice]),
}

impl Data<'_> {
    /// How many slices or pieces.
    fn count(&self) -> usize {
        match self {
            Data::Bufs(d) => d.len(),
            Data::Pages(p) => p.len(),
        }
    }

    /// How many bytes.
    fn bytes(&self) -> u64 {
        match self {
            Data::Bufs(d) => d.iter().map(|x| x.len as u64).sum(),
            Data::Pages(p) => p.iter().map(|x| x.len as u64).sum(),
        }
    }
}

/// Whether pieces of pages make one region for a fast registration
/// (`proto::pieces`): every piece inside its page, every piece but the
/// first starting its page, every piece but the last ending it.
pub fn pages_fit(pages: &[PageSlice]) -> bool {
    crate::proto::pieces::pieces_fit(
        pages.iter().map(|x| (x.offset, x.len)),
        rdma::kshim::pages::page_size(),
    )
}

/// Where a request's user message comes from when it is posted.
#[derive(Clone, Copy)]
enum Usr<'a> {
    /// The ULP's bytes (the first post).
    Bytes(&'a [u8]),
    /// The header area of the path it was on (a failover).
    From(&'a Res),
}

/// The session's state.
#[pin_data]
pub struct SessInner {
    name: KVec<u8>,
    uuid: Uuid,
    ns: NetNs,
    wq: Arc<OwnedQueue>,
    cons_per_path: u16,
    max_segments: u32,
    reconnect_delay_ms: AtomicU32,
    max_reconnect_attempts: AtomicI32,
    policy: AtomicU32,
    rr: AtomicUsize,
    closing: AtomicBool,
    link: Option<Arc<dyn LinkOps>>,
    /// Set by the first path to connect.
    #[pin]
    attrs: Mutex<Option<Attrs>>,
    #[pin]
    paths: Mutex<KVec<Arc<ClPath>>>,
    #[pin]
    permits: SpinLockIrq<Option<PermitMap>>,
    #[pin]
    permit_cv: CondVar,
    #[pin]
    reqs: SpinLockIrq<KVec<Slot>>,
    /// The keeper's pace and stop flag.
    #[pin]
    keeper: Ticker,
    /// Whether a path was connected when last looked at (link events).
    any_up: AtomicBool,
    /// The keeper, on the session's work queue.
    #[pin]
    keeper_work: Work<SessInner>,
    /// The server's port (of the first path; `add_path` uses it).
    port: u16,
    /// Its sysfs directories: its own, then `paths`.
    #[pin]
    dirs: Mutex<KVec<SysDir>>,
}

impl_has_work! {
    impl HasWork<Self> for SessInner { self.keeper_work }
}

impl WorkItem for SessInner {
    type Pointer = Arc<SessInner>;

    fn run(this: Arc<SessInner>) {
        this.keep();
    }
}

/// A session, closed when dropped.
pub struct Session {
    inner: Arc<SessInner>,
}

impl Session {
    /// Opens a session in namespace `ns`: connects every path in turn and
    /// returns once all were tried and at least one is connected (the
    /// others reconnect in the background); fails with the last path's
    /// error otherwise. Process context; blocks.
    pub fn open(ns: NetNs, cfg: &Config<'_>, link: Option<Arc<dyn LinkOps>>) -> Result<Session> {
        if cfg.paths.is_empty() || cfg.paths.len() > MAX_PATHS {
            return Err(EINVAL);
        }
        crate::proto::msg::InfoReq::check_name(cfg.name).map_err(|_| EINVAL)?;
        crate::proto::mpath::check_max_attempts(cfg.max_reconnect_attempts).map_err(|_| EINVAL)?;
        if cfg.max_segments == 0 {
            return Err(EINVAL);
        }
        let cons = match cfg.cons_per_path {
            0 => u16::try_from(rdma::kshim::cpu::count() + 1).unwrap_or(u16::MAX),
            n => n,
        };
        let mut name = KVec::new();
        name.extend_from_slice(cfg.name, GFP_KERNEL)?;
        let uuid = crate::clt::path::random_uuid();
        let wq = Arc::new(OwnedQueue::new(c_str!("rtrs_clt"))?, GFP_KERNEL)?;
        let port = cfg.paths[0].dst.port;
        let inner = Arc::pin_init(
            pin_init!(SessInner {
                name,
                uuid,
                ns,
                wq,
                cons_per_path: cons,
                max_segments: cfg.max_segments,
                reconnect_delay_ms: AtomicU32::new(cfg.reconnect_delay_ms),
                max_reconnect_attempts: AtomicI32::new(cfg.max_reconnect_attempts),
                policy: AtomicU32::new(cfg.policy.to_u32()),
                rr: AtomicUsize::new(0),
                closing: AtomicBool::new(false),
                link,
                attrs <- new_mutex!(None, "rtrs::clt::SessInner::attrs"),
                paths <- new_mutex!(KVec::new(), "rtrs::clt::SessInner::paths"),
                permits <- rdma::new_spinlock_irq!(None, "rtrs::clt::SessInner::permits"),
                permit_cv <- new_condvar!("rtrs::clt::SessInner::permit_cv"),
                reqs <- rdma::new_spinlock_irq!(KVec::new(), "rtrs::clt::SessInner::reqs"),
                keeper <- Ticker::new(),
                any_up: AtomicBool::new(false),
                keeper_work <- new_work!("rtrs::clt::SessInner::keeper_work"),
                port,
                dirs <- new_mutex!(KVec::new(), "rtrs::clt::SessInner::dirs"),
            }),
            GFP_KERNEL,
        )?;
        let sess = Session { inner };
        // Its directory first: a name in use fails at once.
        let dirs = crate::clt::sysfs::add_session(&sess.inner.name, sess.inner.clone())?;
        *sess.inner.dirs.lock() = dirs;
        for a in cfg.paths.iter() {
            sess.inner.add_path(*a)?;
        }
        let paths = sess.inner.paths_snapshot()?;
        let mut last = Err(enotconn());
        for p in paths.iter() {
            let r = p.connect().and_then(|()| sess.inner.adopt(p));
            match r {
                Ok(()) => {
                    pr_info!("rtrs clt: path {} connected\n", p.index);
                    sess.inner.publish(p);
                    last = Ok(());
                }
                Err(e) => {
                    pr_info!(
                        "rtrs clt: path {} not connected ({})\n",
                        p.index,
                        e.to_errno()
                    );
                    if last.is_err() {
                        last = Err(e);
                    }
                    p.fail();
                }
            }
        }
        last?;
        sess.inner.any_up.store(true, Ordering::Release);
        sess.inner
            .wq
            .enqueue(sess.inner.clone())
            .map_err(|_| EBUSY)?;
        Ok(sess)
    }

    /// The session's state, for sysfs and tests.
    pub fn inner(&self) -> &Arc<SessInner> {
        &self.inner
    }

    /// Queue depth and sizes.
    pub fn query(&self) -> Result<Attrs> {
        (*self.inner.attrs.lock()).ok_or(enotconn())
    }

    /// A permit for a request on connections of `con`; with `wait`,
    /// sleeps until one is free (`ERESTARTSYS` on a signal), else `EBUSY`.
    pub fn permit(&self, con: ConType, wait: bool) -> Result<Permit> {
        let s = &self.inner;
        let mut g = s.permits.lock();
        loop {
            if s.is_closing() {
                return Err(econnaborted());
            }
            let map = g.as_mut().ok_or(enotconn())?;
            if let Some(id) = map.take() {
                return Ok(Permit {
                    sess: s.clone(),
                    id,
                    con,
                });
            }
            if !wait {
                return Err(EBUSY);
            }
            if s.permit_cv.wait_interruptible(&mut g) {
                return Err(ERESTARTSYS);
            }
        }
    }

    /// Sends a request: `usr` (the user message) and, for a write, the
    /// bytes of `data`; for a read, `data` is where the server's bytes go.
    /// `done` is called with `tag` and the errno when it completes (on the
    /// server, or with `-econnaborted()` when no path is left); the permit
    /// is given back then. An error here means `done` is never called.
    /// Process context.
    pub fn request(
        &self,
        dir: Dir,
        permit: Permit,
        usr: &[u8],
        data: &[BufSlice<'_>],
        done: Arc<dyn IoDone>,
        tag: u64,
    ) -> Result {
        self.submit(dir, permit, usr, Data::Bufs(data), done, tag)
    }

    /// [`Session::request`] with the data in pieces of pages (a block
    /// request's own pages): they go to the wire, or the server's bytes
    /// into them, without a copy. Every piece but the first starts its
    /// page and every piece but the last ends it, at most
    /// [`Attrs::max_segments`] of them (`EINVAL` otherwise: the caller
    /// copies through a buffer then). The request keeps a reference on
    /// each page until it completes.
    pub fn request_pages(
        &self,
        dir: Dir,
        permit: Permit,
        usr: &[u8],
        pages: &[PageSlice],
        done: Arc<dyn IoDone>,
        tag: u64,
    ) -> Result {
        if !pages_fit(pages) {
            return Err(EINVAL);
        }
        self.submit(dir, permit, usr, Data::Pages(pages), done, tag)
    }

    fn submit(
        &self,
        dir: Dir,
        permit: Permit,
        usr: &[u8],
        data: Data<'_>,
        done: Arc<dyn IoDone>,
        tag: u64,
    ) -> Result {
        let s = &self.inner;
        let attrs = self.query()?;
        let data_len = data.bytes();
        if data_len > u64::from(attrs.max_io_size)
            || data.count() > attrs.max_segments as usize
            || usr.len() + 64 > HDR_ROOM
            || (dir == Dir::Read && data_len == 0 && data.count() > 0)
        {
            return Err(EINVAL);
        }
        let id = permit.id;
        let usr_len = u16::try_from(usr.len()).map_err(|_| EINVAL)?;
        {
            let mut reqs = s.reqs.lock();
            let slot = reqs.get_mut(id as usize).ok_or(EINVAL)?;
            if slot.stage != Stage::Free
                || slot.data.capacity() < data.count()
                || slot.pages.capacity() < data.count()
            {
                return Err(EBUSY);
            }
            // Within the slot's room: no allocation.
            match data {
                Data::Bufs(d) => {
                    for x in d.iter() {
                        slot.data
                            .push((x.buf.clone(), x.offset, x.len), GFP_ATOMIC)?;
                    }
                }
                Data::Pages(p) => {
                    for x in p.iter() {
                        slot.pages.push(x.share(), GFP_ATOMIC)?;
                    }
                }
            }
            slot.stage = Stage::Posted;
            slot.dir = dir;
            slot.con = permit.con;
            slot.usr_len = usr_len;
            slot.data_len = data_len as u32;
            slot.done = Some(done);
            slot.tag = tag;
            slot.permit = Some(permit);
            slot.path = None;
            slot.mr_key = 0;
            slot.write_out = false;
        }
        match s.post_anywhere(id, None, Usr::Bytes(usr), data) {
            Ok(()) => Ok(()),
            Err(e) => {
                // Not posted: the slot is freed, done is not called.
                let rel = s.reqs.lock()[id as usize].release();
                s.give_room(id, rel);
                Err(e)
            }
        }
    }

    /// The session's paths.
    pub fn paths(&self) -> Result<KVec<Arc<ClPath>>> {
        self.inner.paths_snapshot()
    }
}

impl Session {
    /// Closes the session now (also when dropped): every path closes and
    /// every request in flight completes with `-ECONNABORTED`; later
    /// requests fail. Process context; not from a request's completion.
    pub fn close(&self) {
        self.inner.close();
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.inner.close();
    }
}

impl SessInner {
    /// The session's name.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// Milliseconds before a reconnect.
    pub fn reconnect_delay_ms(&self) -> u32 {
        self.reconnect_delay_ms.load(Ordering::Relaxed)
    }

    /// Reconnect attempts per failure.
    pub fn max_reconnect_attempts(&self) -> i32 {
        self.max_reconnect_attempts.load(Ordering::Relaxed)
    }

    /// Sets the attempts (`EINVAL` outside the kernel's bounds); paths
    /// take it at their next failure.
    pub fn set_max_reconnect_attempts(&self, v: i32) -> Result {
        let v = crate::proto::mpath::check_max_attempts(v).map_err(|_| EINVAL)?;
        self.max_reconnect_attempts.store(v, Ordering::Relaxed);
        Ok(())
    }

    /// The multipath policy.
    pub fn policy(&self) -> Policy {
        Policy::from_u32(self.policy.load(Ordering::Relaxed)).unwrap_or_default()
    }

    /// Sets the multipath policy.
    pub fn set_policy(&self, p: Policy) {
        self.policy.store(p.to_u32(), Ordering::Relaxed);
    }

    fn paths_snapshot(&self) -> Result<KVec<Arc<ClPath>>> {
        let paths = self.paths.lock();
        let mut v = KVec::with_capacity(paths.len(), GFP_KERNEL)?;
        for p in paths.iter() {
            v.push(p.clone(), GFP_KERNEL)?;
        }
        Ok(v)
    }

    /// Adds a path (not connected yet).
    pub(crate) fn add_path(self: &Arc<Self>, addr: PathAddr) -> Result<Arc<ClPath>> {
        let mut paths = self.paths.lock();
        if paths.len() >= MAX_PATHS || paths.iter().any(|p| p.addr == addr) {
            return Err(EEXIST);
        }
        let index = paths.last().map_or(0, |p| p.index + 1);
        let p = ClPath::new(self.clone(), addr, index)?;
        paths.push(p.clone(), GFP_KERNEL)?;
        Ok(p)
    }

    /// Chooses a connected path for a request (never `skip`).
    fn choose_path(&self, skip: Option<&Arc<ClPath>>) -> Option<Arc<ClPath>> {
        let paths = self.paths.lock();
        let mut views = [PathView {
            connected: false,
            inflight: 0,
            latency_ns: 0,
        }; MAX_PATHS];
        let mut skip_i = None;
        for (i, p) in paths.iter().enumerate().take(MAX_PATHS) {
            views[i] = PathView {
                connected: p.phase() == Phase::Connected,
                inflight: p.inflight.load(Ordering::Relaxed),
                latency_ns: p.latency_ns.load(Ordering::Relaxed),
            };
            if skip.is_some_and(|s| Arc::ptr_eq(s, p)) {
                skip_i = Some(i);
            }
        }
        let n = paths.len().min(MAX_PATHS);
        let mut cursor = self.rr.load(Ordering::Relaxed);
        let i = choose(self.policy(), &views[..n], &mut cursor, skip_i)?;
        self.rr.store(cursor, Ordering::Relaxed);
        paths.get(i).cloned()
    }

    /// Posts request `id` (user message from `usr`, data `data`) on a
    /// connected path (not `skip`), trying the others if posting fails.
    fn post_anywhere(
        &self,
        id: u32,
        skip: Option<&Arc<ClPath>>,
        usr: Usr<'_>,
        data: Data<'_>,
    ) -> Result {
        // No connected path: what the kernel's client returns.
        let mut last = econnaborted();
        for _ in 0..MAX_PATHS {
            let Some(p) = self.choose_path(skip) else {
                break;
            };
            match self.post_on(&p, id, usr, data) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    last = e;
                    p.fail_later("a request could not be posted");
                    if p.phase() == Phase::Connected {
                        break;
                    }
                }
            }
        }
        Err(last)
    }

    /// Builds request `id` in `p`'s memory and posts it. Nothing is
    /// allocated: the user message goes straight into the permit's header
    /// area, the data slices into the permit's MR.
    fn post_on(&self, p: &Arc<ClPath>, id: u32, usr: Usr<'_>, data: Data<'_>) -> Result {
        let (dir, con, usr_len, data_len) = {
            let reqs = self.reqs.lock();
            let s = reqs.get(id as usize).ok_or(EINVAL)?;
            (s.dir, s.con, s.usr_len, s.data_len)
        };
        let ulen = usize::from(usr_len);
        let ctx = p.io_ctx(con == ConType::Admin, id)?;
        let res: &Res = &ctx.res;
        let mr = res.mrs.get(id as usize).ok_or(EINVAL)?;
        let mut key = 0;
        let mut data_sge = Sge::default();
        // A write's data is only read on this side, by the gather of its
        // RDMA WRITE: the MR maps it for local reads at once (no REG_MR,
        // nothing for the server to reach), and the mapping is dropped
        // when both the WRITE has completed and the response has come (no
        // LOCAL_INV). A read's MR is registered for the server's WRITE.
        let local = dir == Dir::Write && data_len > 0;
        if data_len > 0 {
            let n = match data {
                Data::Bufs(d) => mr.map_mr_sg(d, 4096)?,
                Data::Pages(pg) => mr.map_mr_pages(pg)?,
            };
            if n != data.count() {
                // Slices that do not make one virtually contiguous region.
                return Err(EINVAL);
            }
            let old = mr.rkey();
            key = (old & !0xff) | (old.wrapping_add(1) & 0xff);
            data_sge = Sge {
                addr: mr.iova(),
                length: data_len,
                lkey: key,
            };
        }
        // The RTRS message follows the user message in the permit's
        // header area.
        let mut m = [0u8; MSG_ROOM];
        let (layout, mlen) = match dir {
            Dir::Write => {
                let l = ctx
                    .geometry
                    .write_request(id, data_len, usr_len)
                    .map_err(|_| EINVAL)?;
                let n = RdmaMsg::Write(RdmaWrite { usr_len })
                    .write(&mut m)
                    .map_err(|_| EINVAL)?;
                (l, n)
            }
            Dir::Read => {
                let descs = [SgDesc {
                    addr: data_sge.addr,
                    key,
                    len: data_len,
                }];
                let cnt = usize::from(data_len > 0);
                let l = ctx
                    .geometry
                    .read_request(id, data_len, usr_len, cnt)
                    .map_err(|_| EINVAL)?;
                let flags = if cnt > 0 { RTRS_MSG_NEED_INVAL_F } else { 0 };
                let n = RdmaRead::new(usr_len, flags, &descs[..cnt])
                    .and_then(|r| r.write(&mut m))
                    .map_err(|_| EINVAL)?;
                (l, n)
            }
        };
        let hlen = ulen + mlen;
        if hlen > ctx.max_hdr_size as usize || hlen > HDR_ROOM {
            // What the kernel's client refuses too (EMSGSIZE).
            return Err(EINVAL);
        }
        let at = Res::hdr_at(id);
        match usr {
            Usr::Bytes(b) => res.hdr.write(at, b)?,
            Usr::From(old) => {
                let mut b = [0u8; HDR_ROOM];
                old.hdr.read(at, &mut b[..ulen])?;
                res.hdr.write(at, &b[..ulen])?;
            }
        }
        res.hdr.write(at + ulen, &m[..mlen])?;
        let hdr_sge = res.hdr.sge(at, hlen as u32, res.hdr_mr.lkey())?;
        let sg_w = [data_sge, hdr_sge];
        let sg_r = [hdr_sge];
        let sg: &[Sge] = if dir == Dir::Write && data_len > 0 {
            &sg_w
        } else {
            &sg_r
        };
        // Posted for a read's data only: the server writes it.
        let mut reg = SendWr::new(
            wr::IO,
            SendOp::RegMr {
                mr: mr.core(),
                key,
                access: Access::LOCAL_WRITE | Access::REMOTE_WRITE,
            },
            &[],
        );
        reg.flags = SendFlags::NONE;
        let op = SendOp::WriteWithImm {
            remote_addr: ctx.rbuf.addr + u64::from(layout.rdma_off),
            rkey: ctx.rbuf.rkey,
            imm: layout.imm,
        };
        let io = if local {
            let mut w = SendWr::new(wr::WRITE | u64::from(id), op, sg);
            w.flags = SendFlags::SIGNALED;
            w
        } else {
            let mut w = SendWr::new(wr::IO, op, sg);
            w.flags = SendFlags::NONE;
            w
        };
        {
            // The path is still connected when the request is placed on
            // it, under `reqs`: a path that fails changes its phase
            // before it looks for its requests (under `reqs`), so it
            // finds this one and fails it over, or this one sees the
            // failure here and goes elsewhere.
            let mut reqs = self.reqs.lock();
            if p.phase() != Phase::Connected {
                return Err(enotconn());
            }
            let s = reqs.get_mut(id as usize).ok_or(EINVAL)?;
            if s.stage != Stage::Posted || s.path.is_some() {
                // Finished meanwhile (the session closed), or placed by
                // another poster: it is not ours to post any more.
                return Ok(());
            }
            // Set under the lock, let go outside it (the slot held none:
            // it was not on a path).
            let old = s.path.replace(p.clone());
            s.mr_key = key;
            s.write_out = local;
            p.inflight.fetch_add(1, Ordering::Relaxed);
            drop(reqs);
            drop(old);
        }
        let posted = if local {
            mr.validate_local(key)
                .and_then(|()| ctx.con.post_send(&mut [io], &ctx.res.cqe))
                .inspect_err(|_| {
                    // Not posted: nothing reads the pages.
                    let _ = mr.invalidate(key);
                })
        } else if data_len > 0 {
            ctx.con.post_send(&mut [reg, io], &ctx.res.cqe)
        } else {
            ctx.con.post_send(&mut [io], &ctx.res.cqe)
        };
        if let Err(e) = posted {
            // Unless the path's failure took it already: then the
            // failover owns it (posts it elsewhere or finishes it), and
            // this poster must not try again.
            let mut reqs = self.reqs.lock();
            let mut old = None;
            if let Some(s) = reqs.get_mut(id as usize) {
                if s.path.as_ref().is_some_and(|q| Arc::ptr_eq(q, p)) {
                    old = s.path.take();
                    s.mr_key = 0;
                    s.write_out = false;
                    p.inflight.fetch_sub(1, Ordering::Relaxed);
                }
            }
            drop(reqs);
            return match old {
                Some(q) => {
                    drop(q);
                    Err(e)
                }
                None => Ok(()),
            };
        }
        let stats = &p.stats;
        match dir {
            Dir::Read => {
                stats.reads.fetch_add(1, Ordering::Relaxed);
                stats
                    .read_bytes
                    .fetch_add(u64::from(data_len), Ordering::Relaxed);
            }
            Dir::Write => {
                stats.writes.fetch_add(1, Ordering::Relaxed);
                stats
                    .write_bytes
                    .fetch_add(u64::from(data_len), Ordering::Relaxed);
            }
        }
        Ok(())
    }

    /// Completes request `id` with `errno`. Softirq or process context.
    fn finish(&self, id: u32, errno: i32) {
        self.finish_if(id, errno, None, 0)
    }

    /// Completes request `id` with `errno` if it is still on path `p`: a
    /// handler of `p`'s that let go of `reqs` since it looked (a failover
    /// of `p` may have taken the request meanwhile, and its permit may
    /// carry another request by now).
    fn finish_on(&self, p: &Arc<ClPath>, id: u32, errno: i32) {
        self.finish_if(id, errno, Some(p), 0)
    }

    /// [`SessInner::finish_on`] of a write whose data `p`'s MR maps for
    /// local reads under `key`: the mapping goes with the request.
    fn finish_write(&self, p: &Arc<ClPath>, id: u32, errno: i32, key: u32) {
        self.finish_if(id, errno, Some(p), key)
    }

    /// [`SessInner::finish`], only while the request is on `on` if given;
    /// the local mapping under `key` (if not 0) of its path's MR dropped
    /// before its permit goes back.
    fn finish_if(&self, id: u32, errno: i32, on: Option<&Arc<ClPath>>, key: u32) {
        let rel = {
            let mut reqs = self.reqs.lock();
            let Some(s) = reqs.get_mut(id as usize) else {
                return;
            };
            let moved = match (on, s.path.as_ref()) {
                (Some(p), Some(q)) => !Arc::ptr_eq(p, q),
                (Some(_), None) => true,
                (None, _) => false,
            };
            if s.stage == Stage::Free || moved {
                return;
            }
            s.release()
        };
        if let Some(p) = &rel.path {
            p.inflight.fetch_sub(1, Ordering::Relaxed);
        }
        if let Some(d) = &rel.done {
            d.done(rel.tag, errno);
        }
        if key != 0 || !rel.pages.is_empty() {
            // The request's pages: not kept by its (now invalid) MR.
            if let Some(p) = &rel.path {
                p.end_mr(id, key, !rel.pages.is_empty());
            }
        }
        // The permit goes back last, after the ULP heard.
        self.give_room(id, rel);
    }

    /// Lets go what a freed slot held, outside the lock, and gives its
    /// data room back; the permit goes last (the slot is not reused
    /// before).
    fn give_room(&self, id: u32, rel: Released) {
        let Released {
            done,
            permit,
            path,
            mut data,
            mut pages,
            ..
        } = rel;
        rdma::kshim::vec::clear(&mut data);
        rdma::kshim::vec::clear(&mut pages);
        drop(done);
        drop(path);
        {
            let mut reqs = self.reqs.lock();
            if let Some(s) = reqs.get_mut(id as usize) {
                if s.data.capacity() < data.capacity() {
                    core::mem::swap(&mut s.data, &mut data);
                }
                if s.pages.capacity() < pages.capacity() {
                    core::mem::swap(&mut s.pages, &mut pages);
                }
            }
        }
        drop(data);
        drop(pages);
        drop(permit);
    }

    /// Posts request `id` again, elsewhere than `p`: its data slices from
    /// the slot, its user message from `old`.
    fn repost(&self, id: u32, p: &Arc<ClPath>, old: &Res) -> Result {
        let (kept, pages) = {
            let reqs = self.reqs.lock();
            let s = reqs.get(id as usize).ok_or(EINVAL)?;
            let mut v = KVec::with_capacity(s.data.len(), GFP_ATOMIC)?;
            for d in s.data.iter() {
                v.push((d.0.clone(), d.1, d.2), GFP_ATOMIC)?;
            }
            let mut pg = KVec::with_capacity(s.pages.len(), GFP_ATOMIC)?;
            for x in s.pages.iter() {
                pg.push(x.share(), GFP_ATOMIC)?;
            }
            (v, pg)
        };
        if !pages.is_empty() {
            return self.post_anywhere(id, Some(p), Usr::From(old), Data::Pages(&pages));
        }
        let mut slices = KVec::with_capacity(kept.len(), GFP_KERNEL)?;
        for (buf, offset, len) in kept.iter() {
            slices.push(
                BufSlice {
                    buf,
                    offset: *offset,
                    len: *len,
                },
                GFP_KERNEL,
            )?;
        }
        self.post_anywhere(id, Some(p), Usr::From(old), Data::Bufs(&slices))
    }

    /// The keeper: every second, heartbeats and reconnects, until the
    /// session closes.
    fn keep(&self) {
        while self.keeper.wait(1000) {
            let Ok(paths) = self.paths_snapshot() else {
                continue;
            };
            for p in paths.iter() {
                p.tick();
            }
        }
    }

    /// Closes the session: no new request, the keeper stops, every path
    /// closes and every request still in flight completes with
    /// `-econnaborted()`. Process context.
    fn close(&self) {
        if self.closing.swap(true, Ordering::AcqRel) {
            return;
        }
        self.keeper.stop();
        self.permit_cv.notify_all();
        let paths = self.paths_snapshot().unwrap_or_default();
        for p in paths.iter() {
            p.kill();
            p.drop_dirs();
        }
        let dirs = core::mem::take(&mut *self.dirs.lock());
        drop(dirs);
        // Connects and failovers in progress end (they see `closing`).
        self.wq.drain();
        let n = self.reqs.lock().len();
        for id in 0..n {
            self.finish(id as u32, econnaborted().to_errno());
        }
        // The cycles through the paths (their handlers hold the session)
        // go.
        let paths = core::mem::take(&mut *self.paths.lock());
        drop(paths);
    }
}

impl PathOwner for SessInner {
    fn name(&self) -> &[u8] {
        &self.name
    }

    fn reconnect_delay_ms(&self) -> u32 {
        SessInner::reconnect_delay_ms(self)
    }

    fn max_reconnect_attempts(&self) -> i32 {
        SessInner::max_reconnect_attempts(self)
    }

    fn ns(&self) -> Result<NetNs> {
        self.ns.try_clone()
    }

    fn uuid(&self) -> Uuid {
        self.uuid
    }

    fn cons_per_path(&self) -> u16 {
        self.cons_per_path
    }

    fn max_segments(&self) -> u32 {
        self.max_segments
    }

    fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }

    /// The session's work queue (path failures, reconnects, the keeper).
    fn queue(&self) -> &Queue {
        &self.wq
    }

    /// The `Arc` of path `p` (completion handlers get a reference).
    fn path_arc(&self, p: &ClPath) -> Option<Arc<ClPath>> {
        self.paths
            .lock()
            .iter()
            .find(|q| core::ptr::eq::<ClPath>(&***q, p))
            .cloned()
    }

    /// A connected path's parameters become the session's (the first), or
    /// must allow them (the others).
    fn adopt(&self, p: &Arc<ClPath>) -> Result {
        let l = p.limits().ok_or(EINVAL)?;
        let mut attrs = self.attrs.lock();
        match *attrs {
            None => {
                let max_io = l.max_io_size;
                *attrs = Some(Attrs {
                    queue_depth: l.queue_depth,
                    max_io_size: max_io,
                    max_segments: self.max_segments,
                });
                drop(attrs);
                // Built outside the spinlocks, then placed.
                let mut slots = KVec::with_capacity(l.queue_depth as usize, GFP_KERNEL)?;
                for _ in 0..l.queue_depth {
                    slots.push(Slot::new(self.max_segments)?, GFP_KERNEL)?;
                }
                let map = PermitMap::new(l.queue_depth).map_err(|_| EINVAL)?;
                // Both were empty: nothing is let go under the locks.
                *self.permits.lock() = Some(map);
                let old = core::mem::replace(&mut *self.reqs.lock(), slots);
                drop(old);
                Ok(())
            }
            Some(a) if l.queue_depth >= a.queue_depth && l.max_io_size >= a.max_io_size => Ok(()),
            Some(_) => {
                pr_warn!(
                    "rtrs clt: path {}: the server's queue depth or IO size is below the session's\n",
                    p.index
                );
                Err(EINVAL)
            }
        }
    }

    /// Gives a connected path its sysfs directories, the first time.
    fn publish(&self, p: &Arc<ClPath>) {
        if p.has_dirs() {
            return;
        }
        let dirs = self.dirs.lock();
        let Some(paths) = dirs.get(1) else {
            return;
        };
        match crate::clt::sysfs::add_path(paths, p) {
            Ok(d) => {
                drop(dirs);
                p.set_dirs(d);
            }
            Err(e) => pr_warn!(
                "rtrs clt: path {}: no sysfs directory ({})\n",
                p.index,
                e.to_errno()
            ),
        }
    }

    /// A path reconnected.
    fn path_up(&self) {
        if !self.any_up.swap(true, Ordering::AcqRel) {
            if let Some(l) = &self.link {
                l.link_ev(true);
            }
        }
    }

    /// A path failed: the ULP hears when it was the last.
    fn path_down(&self) {
        let any = self
            .paths
            .lock()
            .iter()
            .any(|p| p.phase() == Phase::Connected);
        if !any && self.any_up.swap(false, Ordering::AcqRel) {
            if let Some(l) = &self.link {
                l.link_ev(false);
            }
        }
    }

    /// The requests in flight on failed path `p` go to another path (their
    /// user messages read from `old`, the memory `p` had), or complete
    /// with `-econnaborted()` if none is left. Process context.
    fn failover(&self, p: &Arc<ClPath>, old: Option<&Res>) {
        let n = self.reqs.lock().len();
        let (Ok(mut moved), Ok(mut answered)) = (
            KVec::<u32>::with_capacity(n, GFP_KERNEL),
            KVec::<(u32, i32)>::with_capacity(n, GFP_KERNEL),
        ) else {
            // No memory to sort them: every request of the path fails.
            for id in 0..n {
                let on_p = self.reqs.lock()[id]
                    .path
                    .as_ref()
                    .is_some_and(|q| Arc::ptr_eq(q, p));
                if on_p {
                    self.finish(id as u32, econnaborted().to_errno());
                }
            }
            return;
        };
        {
            let mut reqs = self.reqs.lock();
            for (i, s) in reqs.iter_mut().enumerate() {
                if !s.path.as_ref().is_some_and(|q| Arc::ptr_eq(q, p)) {
                    continue;
                }
                // Within the room reserved above: no allocation.
                match s.stage {
                    Stage::Posted => {
                        let _ = moved.push(i as u32, GFP_ATOMIC);
                    }
                    Stage::Inval(e) => {
                        let _ = answered.push((i as u32, e), GFP_ATOMIC);
                    }
                    Stage::Free => {}
                }
                s.mr_key = 0;
                s.write_out = false;
                p.inflight.fetch_sub(1, Ordering::Relaxed);
                // `p` itself, which the caller holds: never the last
                // reference, let go under the lock.
                s.path = None;
            }
        }
        for (id, e) in answered.iter() {
            self.finish(*id, *e);
        }
        for id in moved.iter() {
            let r = match (self.is_closing(), old) {
                (false, Some(old)) => self.repost(*id, p, old),
                _ => Err(econnaborted()),
            };
            if r.is_err() {
                self.finish(*id, econnaborted().to_errno());
            } else if let Some(q) = self.reqs.lock()[*id as usize].path.as_ref() {
                q.stats.failovers.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Removes path `p` (sysfs `remove_path`, from a work item): its
    /// requests fail over, it closes, its directories go. Not the last
    /// path.
    fn remove_path(&self, p: &Arc<ClPath>) {
        if self.paths.lock().len() < 2 {
            pr_warn!("rtrs clt: the last path of a session is not removed\n");
            return;
        }
        p.fail();
        p.kill();
        p.drop_dirs();
        rdma::kshim::vec::retain(&mut self.paths.lock(), |q| !Arc::ptr_eq(q, p));
        pr_info!("rtrs clt: path {} removed\n", p.index);
    }

    /// The response to request `msg_id` arrived on `p`.
    fn on_rsp(&self, p: &Arc<ClPath>, msg_id: u32, errno: i32, w_inval: bool) -> Result {
        let key = {
            let mut reqs = self.reqs.lock();
            let s = reqs.get_mut(msg_id as usize).ok_or(eproto())?;
            if s.stage != Stage::Posted || !s.path.as_ref().is_some_and(|q| Arc::ptr_eq(q, p)) {
                // Not a request of ours in flight on this path.
                return Err(eproto());
            }
            // Answered: should the path fail before the request ends
            // here, its failover ends it with this errno rather than
            // sending it again.
            s.stage = Stage::Inval(errno);
            if s.dir == Dir::Write && s.mr_key != 0 {
                // A write's data, mapped for local reads: let go once its
                // RDMA WRITE has completed too (`write_done`), which may
                // come before the response or after it.
                if s.write_out {
                    return Ok(());
                }
                let key = s.mr_key;
                drop(reqs);
                self.finish_write(p, msg_id, errno, key);
                return Ok(());
            }
            // A read's buffer the server invalidated, or no buffer: done.
            // Otherwise the buffer's key is invalidated first.
            if s.mr_key == 0 || (w_inval && s.dir == Dir::Read) {
                0
            } else {
                s.mr_key
            }
        };
        if key == 0 {
            self.finish_on(p, msg_id, errno);
            return Ok(());
        }
        let posted = p.io_ctx(true, msg_id).and_then(|ctx| {
            ctx.con.post_send(
                &mut [SendWr::new(
                    wr::LINV | u64::from(msg_id),
                    SendOp::LocalInv(key),
                    &[],
                )],
                &ctx.res.cqe,
            )
        });
        if posted.is_err() {
            // The path is going: its MRs go with it.
            self.finish_on(p, msg_id, errno);
        }
        Ok(())
    }

    /// Request `id`'s RDMA WRITE of its data completed on `p`: if the
    /// response came first, the request completes now.
    fn write_done(&self, p: &Arc<ClPath>, id: u32) {
        let (errno, key) = {
            let mut reqs = self.reqs.lock();
            match reqs.get_mut(id as usize) {
                Some(s) if s.write_out && s.path.as_ref().is_some_and(|q| Arc::ptr_eq(q, p)) => {
                    s.write_out = false;
                    match s.stage {
                        Stage::Inval(e) => (e, s.mr_key),
                        _ => return,
                    }
                }
                _ => return,
            }
        };
        self.finish_write(p, id, errno, key);
    }

    /// Request `id`'s buffer was invalidated on `p`.
    fn inv_done(&self, p: &Arc<ClPath>, id: u32) {
        let errno = {
            let reqs = self.reqs.lock();
            match reqs.get(id as usize) {
                Some(s) if s.path.as_ref().is_some_and(|q| Arc::ptr_eq(q, p)) => match s.stage {
                    Stage::Inval(e) => e,
                    _ => return,
                },
                _ => return,
            }
        };
        self.finish_on(p, id, errno);
    }
}

impl SessCtl for SessInner {
    fn max_reconnect_attempts(&self) -> i32 {
        SessInner::max_reconnect_attempts(self)
    }

    fn set_max_reconnect_attempts(&self, v: i32) -> Result {
        SessInner::set_max_reconnect_attempts(self, v)
    }

    fn policy(&self) -> Policy {
        SessInner::policy(self)
    }

    fn set_policy(&self, p: Policy) {
        SessInner::set_policy(self, p)
    }

    /// The server's port.
    fn port(&self) -> u16 {
        self.port
    }

    /// Adds a path (sysfs `add_path`) and waits for its connection, as
    /// the kernel's client does: the keeper connects it within a second.
    /// A path that does not connect is removed again and its errno
    /// returned.
    fn add_path_wait(self: Arc<Self>, addr: PathAddr) -> Result {
        if self.is_closing() {
            return Err(econnaborted());
        }
        let p = self.add_path(addr)?;
        let before = p.attempts();
        p.connect_soon();
        p.wait_attempt(before, SYSFS_WAIT_SECS).inspect_err(|_| {
            let _ = p.remove_later();
        })
    }
}
