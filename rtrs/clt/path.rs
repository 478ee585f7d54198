// SPDX-License-Identifier: GPL-2.0

//! One path of a client session: a source and destination address, the
//! connections to the server (cid 0, the service connection, then one per
//! CPU), the memory requests are built in, the server's chunks as INFO_RSP
//! described them, and the path's life: connecting, connected, waiting to
//! reconnect, dead.
//!
//! Connections come up one after another, each an rdma_cm connect whose
//! REQ carries `rtrs_msg_conn_req` and whose REP carries the server's
//! `rtrs_msg_conn_rsp` (cid 0's gives the queue depth and sizes). Once all
//! are up, every receive is posted, INFO_REQ goes out on cid 0 and the
//! path is usable when INFO_RSP has told where the chunks are.
//!
//! A path fails (a connection's error or disconnection, a missed
//! heartbeat, a bad message) from a work item: its connections go, its
//! requests in flight are failed over by the session, and it waits to
//! reconnect.
//!
//! A path knows its session only as a [`PathOwner`], which the session
//! implements: the session's file uses this one, not the other way.
//!
//! Completions are handled in softirq (the kernel's client polls its IO
//! connections there too): what they touch is guarded by IRQ-safe
//! spinlocks and nothing there allocates but the events of a connect.
//!
//! Locks: `ClPath::st` guards the phase, the connections, the memory and
//! the chunks; `ClPath::ev` the rdma_cm events of a connect in progress
//! (both IRQ-safe spinlocks, nothing under them sleeps or allocates with
//! `GFP_KERNEL`). Neither is held across a post, a wait or a call into
//! the session; `ClPath::dirs` is a mutex (sysfs).

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use kernel::prelude::*;
use kernel::sync::{new_condvar, new_mutex, Arc, CondVar, Mutex};
use kernel::time::{msecs_to_jiffies, Ktime};
use kernel::workqueue::{impl_has_work, new_work, Queue, Work, WorkItem};

use rdma::cma::{CmEvent, CmHandler, CmId, CmIdCore, ConnParam, Disposition, EventKind, SockAddr};
use rdma::device::Device;
use rdma::kshim::class::SysDir;
use rdma::kshim::route::NetNs;
use rdma::kshim::sync::SpinLockIrq;
use rdma::spec::opcodes::{WcFlags, WcOpcode, WcStatus};
use rdma::verbs::cq::CqCore;
use rdma::verbs::pd::Pd;
use rdma::verbs::wc::{CqeDone, Wc};
use rdma::verbs::wr::{SendOp, SendWr};

use crate::clt::con::{wr, ClCon};
use crate::clt::res::{Res, INFO_RSP_ROOM, MAX_DEPTH, RECV_ROOM};
use crate::proto::chunk::ChunkGeometry;
use crate::proto::conn::{ConnReq, ConnRsp, Uuid, CONN_REQ_LEN};
use crate::proto::imm::Imm;
use crate::proto::mpath::{Backoff, HbAction, Heartbeat};
use crate::proto::msg::{InfoReq, InfoRsp, Rbuf, RkeyRsp, INFO_REQ_LEN};
use rdma::kshim::errno::{
    econnaborted, econnrefused, econnreset, ehostunreach, enotconn, eproto, etimedout,
};

/// Seconds to wait for each step of a connect.
const STEP_SECS: u32 = 30;

/// Seconds sysfs `reconnect` and `add_path` wait for the connection.
pub(crate) const SYSFS_WAIT_SECS: u32 = 2 * STEP_SECS + 2;

/// Where a path goes: an optional source address and the server's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathAddr {
    /// The source address (`None`: as the route says).
    pub src: Option<SockAddr>,
    /// The server's address and port.
    pub dst: SockAddr,
}

/// What a path needs of its session, which implements it: its settings,
/// its work queue, and what the session does when the path connects,
/// fails, is removed or completes a request.
pub(crate) trait PathOwner: Send + Sync {
    /// The session's namespace (each connection's id is made in it).
    fn ns(&self) -> Result<NetNs>;
    /// The session's UUID (every connection request carries it).
    fn uuid(&self) -> Uuid;
    /// The session's name (INFO_REQ carries it).
    fn name(&self) -> &[u8];
    /// Connections per path, the service connection included.
    fn cons_per_path(&self) -> u16;
    /// The most data slices of a request.
    fn max_segments(&self) -> u32;
    /// Milliseconds before a failed path's first reconnect attempt.
    fn reconnect_delay_ms(&self) -> u32;
    /// Reconnect attempts per failure.
    fn max_reconnect_attempts(&self) -> i32;
    /// Whether the session is closing (connects and reconnects stop).
    fn is_closing(&self) -> bool;
    /// The session's work queue (path failures, reconnects, removals).
    fn queue(&self) -> &Queue;
    /// The `Arc` of path `p` while it is the session's (rdma_cm handlers
    /// get a reference).
    fn path_arc(&self, p: &ClPath) -> Option<Arc<ClPath>>;
    /// Path `p` connected: its server's parameters become the session's
    /// (the first) or must allow them (`EINVAL` otherwise).
    fn adopt(&self, p: &Arc<ClPath>) -> Result;
    /// Gives connected path `p` its sysfs directories, the first time.
    fn publish(&self, p: &Arc<ClPath>);
    /// A path reconnected.
    fn path_up(&self);
    /// A path failed.
    fn path_down(&self);
    /// The requests in flight on failed path `p` go elsewhere or fail.
    fn failover(&self, p: &Arc<ClPath>, old: Option<&Res>);
    /// Removes path `p` (from a work item).
    fn remove_path(&self, p: &Arc<ClPath>);
    /// The response to request `msg_id` arrived on `p`.
    fn on_rsp(&self, p: &Arc<ClPath>, msg_id: u32, errno: i32, w_inval: bool) -> Result;
    /// Request `id`'s RDMA WRITE of its data completed on `p`.
    fn write_done(&self, p: &Arc<ClPath>, id: u32);
    /// Request `id`'s buffer was invalidated on `p`.
    fn inv_done(&self, p: &Arc<ClPath>, id: u32);
}

/// Where a path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// A connect is in progress.
    Connecting,
    /// Usable.
    Connected,
    /// Failed; waiting for the next attempt.
    Reconnecting,
    /// Given up (attempts exhausted, removed, or the session closed).
    Dead,
}

impl Phase {
    /// The word the sysfs `state` file shows.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Connecting => "connecting",
            Phase::Connected => "connected",
            Phase::Reconnecting => "reconnecting",
            Phase::Dead => "closed",
        }
    }
}

/// What a request needs of a connected path.
pub(crate) struct IoCtx {
    pub(crate) res: Arc<Res>,
    pub(crate) con: Arc<ClCon>,
    pub(crate) rbuf: Rbuf,
    pub(crate) geometry: ChunkGeometry,
    /// The server's room for the user message and RTRS message.
    pub(crate) max_hdr_size: u32,
}

/// The parameters a connected path's server gave.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) queue_depth: u32,
    pub(crate) max_io_size: u32,
    pub(crate) max_hdr_size: u32,
}

struct PathSt {
    phase: Phase,
    cons: KVec<Arc<ClCon>>,
    res: Option<Arc<Res>>,
    rbufs: KVec<Rbuf>,
    geometry: Option<ChunkGeometry>,
    limits: Option<Limits>,
    /// The server replaces a chunk's rkey after every request.
    new_rkey: bool,
    /// Connects made so far (`recon_cnt` of the next).
    recon_cnt: u16,
    backoff: Backoff,
    /// When the next reconnect is due (ms of the monotonic clock).
    next_at_ms: i64,
    hb: Heartbeat,
    /// When the last heartbeat went out (ms).
    hb_last_ms: i64,
    /// The id of the connect in progress, whose events are waited for.
    connecting: Option<Arc<CmIdCore>>,
    /// The source address of the last connect.
    src: Option<SockAddr>,
}

/// An rdma_cm event or the end of the INFO exchange, for a connect.
struct Ev {
    /// `None`: INFO_RSP arrived (`status`: its length) or a completion
    /// failed (`status` negative).
    kind: Option<EventKind>,
    status: i32,
    data: KVec<u8>,
}

/// Counters of a path (sysfs `stats`).
#[derive(Default)]
pub struct Stats {
    /// Read requests and their bytes.
    pub reads: AtomicU64,
    /// Bytes read.
    pub read_bytes: AtomicU64,
    /// Write requests.
    pub writes: AtomicU64,
    /// Bytes written.
    pub write_bytes: AtomicU64,
    /// Requests failed over to this path from a failed one.
    pub failovers: AtomicU64,
    /// Successful reconnects.
    pub reconnects: AtomicU64,
    /// Failed connect attempts.
    pub fail_cnt: AtomicU64,
}

impl Stats {
    /// Zeroes the IO counters (sysfs `stats/rdma`).
    pub fn reset_rdma(&self) {
        for c in [
            &self.reads,
            &self.read_bytes,
            &self.writes,
            &self.write_bytes,
            &self.failovers,
        ] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// A path.
#[pin_data]
pub struct ClPath {
    sess: Arc<dyn PathOwner>,
    pub(crate) addr: PathAddr,
    /// Its index in the session.
    pub(crate) index: usize,
    uuid: Uuid,
    #[pin]
    st: SpinLockIrq<PathSt>,
    #[pin]
    ev: SpinLockIrq<KVec<Ev>>,
    #[pin]
    ev_cv: CondVar,
    /// Requests in flight on it.
    pub(crate) inflight: AtomicU32,
    /// The last heartbeat round trip (ns).
    pub(crate) latency_ns: AtomicU64,
    /// Counters.
    pub stats: Stats,
    /// Reconnect attempts ended, with or without success (never reset,
    /// unlike `stats`): what `wait_attempt` waits for.
    attempts: AtomicU64,
    /// Fails the path (`fail`) from the session's work queue.
    #[pin]
    fail_work: Work<ClPath, 1>,
    /// Reconnects it.
    #[pin]
    reconnect_work: Work<ClPath, 2>,
    /// Removes it from its session (sysfs `remove_path`).
    #[pin]
    remove_work: Work<ClPath, 3>,
    /// Its sysfs directories, once it connected.
    #[pin]
    dirs: Mutex<KVec<SysDir>>,
}

impl_has_work! {
    impl HasWork<Self, 1> for ClPath { self.fail_work }
    impl HasWork<Self, 2> for ClPath { self.reconnect_work }
    impl HasWork<Self, 3> for ClPath { self.remove_work }
}

impl WorkItem<3> for ClPath {
    type Pointer = Arc<ClPath>;

    fn run(this: Arc<ClPath>) {
        this.sess.remove_path(&this);
    }
}

impl WorkItem<1> for ClPath {
    type Pointer = Arc<ClPath>;

    fn run(this: Arc<ClPath>) {
        this.fail();
    }
}

impl WorkItem<2> for ClPath {
    type Pointer = Arc<ClPath>;

    fn run(this: Arc<ClPath>) {
        this.reconnect();
    }
}

fn now_ms() -> i64 {
    Ktime::ktime_get().to_ms()
}

fn now_ns() -> u64 {
    Ktime::ktime_get().to_ns() as u64
}

/// A random UUID (a path's, a session's).
pub(crate) fn random_uuid() -> Uuid {
    let mut u = [0u8; 16];
    for c in u.chunks_mut(4) {
        c.copy_from_slice(&rdma::kshim::random::u32().to_ne_bytes());
    }
    u
}

impl ClPath {
    pub(crate) fn new(
        sess: Arc<dyn PathOwner>,
        addr: PathAddr,
        index: usize,
    ) -> Result<Arc<ClPath>> {
        let backoff = Backoff::new(sess.reconnect_delay_ms(), sess.max_reconnect_attempts());
        let hb = Heartbeat::new(crate::proto::consts::RTRS_HB_MISSED_MAX);
        Arc::pin_init(
            pin_init!(ClPath {
                sess,
                addr,
                index,
                uuid: random_uuid(),
                st <- rdma::new_spinlock_irq!(
                    PathSt {
                        phase: Phase::Connecting,
                        cons: KVec::new(),
                        res: None,
                        rbufs: KVec::new(),
                        geometry: None,
                        limits: None,
                        new_rkey: false,
                        recon_cnt: 0,
                        backoff,
                        next_at_ms: 0,
                        hb,
                        hb_last_ms: 0,
                        connecting: None,
                        src: None,
                    },
                    "rtrs::clt::ClPath::st"
                ),
                ev <- rdma::new_spinlock_irq!(KVec::new(), "rtrs::clt::ClPath::ev"),
                ev_cv <- new_condvar!("rtrs::clt::ClPath::ev_cv"),
                inflight: AtomicU32::new(0),
                latency_ns: AtomicU64::new(0),
                stats: Stats::default(),
                attempts: AtomicU64::new(0),
                fail_work <- new_work!("rtrs::clt::ClPath::fail_work"),
                reconnect_work <- new_work!("rtrs::clt::ClPath::reconnect_work"),
                remove_work <- new_work!("rtrs::clt::ClPath::remove_work"),
                dirs <- new_mutex!(KVec::new(), "rtrs::clt::ClPath::dirs"),
            }),
            GFP_KERNEL,
        )
    }

    /// Where the path is.
    pub fn phase(&self) -> Phase {
        self.st.lock().phase
    }

    /// The last heartbeat round trip in ns (0 before the first).
    pub fn latency_ns(&self) -> u64 {
        self.latency_ns.load(Ordering::Relaxed)
    }

    /// Whether the server replaces a chunk's key after every request
    /// (its `always_invalidate`), as its last connect said.
    pub fn new_rkey(&self) -> bool {
        self.st.lock().new_rkey
    }

    /// The server's parameters (once connected).
    pub(crate) fn limits(&self) -> Option<Limits> {
        self.st.lock().limits
    }

    /// The name of the path's device, once connected.
    pub fn hca_name(&self, out: &mut [u8]) -> usize {
        let st = self.st.lock();
        match &st.res {
            Some(r) => {
                let n = r.dev.name().as_bytes();
                let l = n.len().min(out.len());
                out[..l].copy_from_slice(&n[..l]);
                l
            }
            None => 0,
        }
    }

    /// The context for a request on connection `cid` to chunk `buf_id`.
    pub(crate) fn io_ctx(&self, admin: bool, buf_id: u32) -> Result<IoCtx> {
        let st = self.st.lock();
        if st.phase != Phase::Connected {
            return Err(enotconn());
        }
        let n = st.cons.len();
        let idx = if admin || n < 2 {
            0
        } else {
            1 + rdma::kshim::cpu::current() as usize % (n - 1)
        };
        Ok(IoCtx {
            res: st.res.clone().ok_or(enotconn())?,
            con: st.cons.get(idx).cloned().ok_or(enotconn())?,
            rbuf: *st.rbufs.get(buf_id as usize).ok_or(EINVAL)?,
            geometry: st.geometry.ok_or(enotconn())?,
            max_hdr_size: st.limits.map_or(0, |l| l.max_hdr_size),
        })
    }

    /// Ends what permit `id`'s MR holds of its completed request: drops
    /// its local mapping under `key` if not 0 (a write's data, mapped for
    /// the QP's reads only: its RDMA WRITE completed, nothing reads its
    /// pages any more), then, if `pages`, lets go of the pages the MR
    /// still holds. Any context; nothing if the path's memory is gone
    /// (its MRs with it). Under `st`, so that no reference to the path's
    /// memory is let go here; the pages' own may be (a page may be freed
    /// in any context).
    pub(crate) fn end_mr(&self, id: u32, key: u32, pages: bool) {
        let st = self.st.lock();
        if let Some(mr) = st.res.as_ref().and_then(|r| r.mrs.get(id as usize)) {
            if key != 0 {
                let _ = mr.invalidate(key);
            }
            if pages {
                mr.drop_pages();
            }
        }
    }

    /// The connection and the path's memory of receive `wc`, which is
    /// taken in under one lock: the server is heard, and a new key it
    /// sends (`RKEY_RSP`) is the chunk's from now on. `None` if the path
    /// is going down (its connections were taken); `EPROTO` for a key
    /// that does not come as it must.
    fn heard_on(&self, wc: &Wc) -> Result<Option<(Arc<ClCon>, Arc<Res>)>> {
        let mut st = self.st.lock();
        let Some(con) = st.cons.iter().find(|c| c.qpn == wc.qp_num).cloned() else {
            return Ok(None);
        };
        let Some(res) = st.res.clone() else {
            return Ok(None);
        };
        // Anything from the server shows it alive.
        st.hb.any_rx();
        if wc.opcode == WcOpcode::Recv && wc.byte_len > 0 {
            // RKEY_RSP: the server's new key for a chunk.
            let mut raw = [0u8; RECV_ROOM as usize];
            let n = (wc.byte_len as usize).min(raw.len());
            res.read_recv(wr::num(wc.wr_id), &mut raw[..n])?;
            let rr = RkeyRsp::parse(&raw[..n]).map_err(|_| eproto())?;
            // It comes with the response of the same request.
            let same = match Imm::parse(wc.imm_data) {
                Ok(Imm::IoRsp(r)) => r.msg_id == u32::from(rr.buf_id),
                _ => false,
            };
            if !st.new_rkey || !same || !wc.wc_flags.contains(WcFlags::WITH_IMM) {
                return Err(eproto());
            }
            let rb = st.rbufs.get_mut(usize::from(rr.buf_id)).ok_or(eproto())?;
            rb.rkey = rr.rkey;
        }
        Ok(Some((con, res)))
    }

    // -- connecting --------------------------------------------------------

    /// Any context (completions push theirs in softirq).
    fn push_ev(&self, ev: Ev) {
        let _ = self.ev.lock().push(ev, GFP_ATOMIC);
        self.ev_cv.notify_all();
    }

    /// A completion failed while connecting: the connect ends at once.
    fn connect_failed(&self) {
        if self.phase() == Phase::Connecting {
            self.push_ev(Ev {
                kind: None,
                status: -5,
                data: KVec::new(),
            });
        }
    }

    /// Waits up to `secs` for `kind` (`None`: the INFO exchange's end);
    /// fails at once on a failure event.
    fn wait_ev(&self, kind: Option<EventKind>, secs: u32) -> Result<Ev> {
        let deadline = now_ms() + i64::from(secs) * 1000;
        let mut evs = self.ev.lock();
        loop {
            if let Some(i) = evs.iter().position(|e| e.kind == kind) {
                return rdma::kshim::vec::remove(&mut evs, i).ok_or(EINVAL);
            }
            if let Some(e) = evs.iter().find(|e| e.kind != kind) {
                // Anything else during a connect is a failure.
                return Err(match e.kind {
                    Some(EventKind::Rejected) => ConnRsp::reject_errno(&e.data)
                        .ok()
                        .filter(|&v| v < 0)
                        .map(|v| Error::from_errno(i32::from(v)))
                        .unwrap_or(econnrefused()),
                    Some(EventKind::Unreachable) => ehostunreach(),
                    Some(EventKind::AddrError) | Some(EventKind::RouteError) => ehostunreach(),
                    None => eproto(),
                    _ => econnreset(),
                });
            }
            let left = deadline - now_ms();
            if left <= 0 {
                return Err(etimedout());
            }
            let _ = self
                .ev_cv
                .wait_interruptible_timeout(&mut evs, msecs_to_jiffies(left as u32));
            if self.sess.is_closing() {
                return Err(econnaborted());
            }
        }
    }

    /// Connects every connection of the path and does the INFO exchange.
    /// Process context; blocks (up to `STEP_SECS` per step).
    pub(crate) fn connect(self: &Arc<Self>) -> Result {
        let r = self.try_connect();
        let (dead, res) = {
            let mut st = self.st.lock();
            st.connecting = None;
            st.recon_cnt = st.recon_cnt.wrapping_add(1);
            if r.is_err() {
                (core::mem::take(&mut st.cons), st.res.take())
            } else {
                (KVec::new(), None)
            }
        };
        // Outside the lock: their handlers take it.
        for c in dead.iter() {
            c.teardown();
        }
        drop(dead);
        drop(res);
        drop(core::mem::take(&mut *self.ev.lock()));
        r
    }

    fn try_connect(self: &Arc<Self>) -> Result {
        let sess = &self.sess;
        let cid_num = sess.cons_per_path();
        // As the kernel's client: the count goes up before every connect;
        // FIRST_CONN (the server may create the session) on every connect
        // but the first of a path other than the session's first.
        let (recon_cnt, first) = {
            let mut st = self.st.lock();
            st.phase = Phase::Connecting;
            (
                st.recon_cnt.wrapping_add(1),
                st.recon_cnt > 0 || self.index == 0,
            )
        };
        drop(core::mem::take(&mut *self.ev.lock()));
        // Room for every connection, so that publishing one under the
        // spinlock never allocates.
        let room = KVec::with_capacity(usize::from(cid_num), GFP_KERNEL)?;
        let old = core::mem::replace(&mut self.st.lock().cons, room);
        drop(old);
        let mut dev_pd: Option<(Arc<Device>, Pd)> = None;
        let mut limits: Option<(Limits, ChunkGeometry, bool)> = None;
        let mut recvs = 0u32;
        for cid in 0..cid_num {
            let handler: Arc<dyn CmHandler> = self.clone();
            let id = CmId::new(sess.ns()?, handler)?;
            self.st.lock().connecting = Some((*id).clone());
            id.resolve_addr(self.addr.src, self.addr.dst)?;
            self.wait_ev(Some(EventKind::AddrResolved), STEP_SECS)?;
            id.resolve_route()?;
            self.wait_ev(Some(EventKind::RouteResolved), STEP_SECS)?;
            let (dev, _port) = id.device().ok_or(ENODEV)?;
            if cid == 0 {
                self.st.lock().src = id.src_addr();
            }
            if dev_pd.is_none() {
                let pd = Pd::alloc(&dev)?;
                dev_pd = Some((dev.clone(), pd));
            }
            let (pdev, pd) = dev_pd.as_ref().ok_or(EINVAL)?;
            if !Arc::ptr_eq(pdev, &dev) {
                // Every connection of a path goes through one device.
                return Err(EINVAL);
            }
            let depth = limits.map_or(MAX_DEPTH, |l| l.0.queue_depth);
            let con = ClCon::new(id, pdev, pd, depth, recvs)?;
            recvs += con.recv_count;
            let req = ConnReq::new(cid, cid_num, recon_cnt, self.uuid, sess.uuid(), first);
            let mut raw = [0u8; CONN_REQ_LEN];
            let n = req.write(&mut raw).map_err(|_| EINVAL)?;
            let mut private_data = KVec::new();
            private_data.extend_from_slice(&raw[..n], GFP_KERNEL)?;
            con.id().connect(&ConnParam {
                private_data,
                responder_resources: 1,
                initiator_depth: 1,
                retry_count: 7,
                rnr_retry_count: 7,
                ..ConnParam::default()
            })?;
            let ev = self.wait_ev(Some(EventKind::Established), STEP_SECS)?;
            let rsp = ConnRsp::parse(&ev.data).map_err(|_| eproto())?;
            if rsp.errno != 0 {
                return Err(Error::from_errno(i32::from(rsp.errno).min(-1)));
            }
            if limits.is_none() {
                let qd = u32::from(rsp.queue_depth).min(MAX_DEPTH);
                let g = ChunkGeometry::from_conn_rsp(&rsp).map_err(|_| eproto())?;
                let l = Limits {
                    queue_depth: qd,
                    max_io_size: rsp.max_io_size,
                    max_hdr_size: rsp.max_hdr_size,
                };
                limits = Some((l, g, rsp.new_rkey()));
            }
            // Published at once: a failure tears down every connection
            // made so far (`connect`).
            self.st.lock().cons.push(con, GFP_ATOMIC)?;
        }
        let (l, g, new_rkey) = limits.ok_or(EINVAL)?;
        let (dev, pd) = dev_pd.ok_or(EINVAL)?;
        let res = Arc::new(
            Res::new(
                dev,
                pd,
                Arc::new(PathCqe(self.clone()), GFP_KERNEL)?,
                recvs,
                l.queue_depth,
                sess.max_segments(),
            )?,
            GFP_KERNEL,
        )?;
        let old = {
            let mut st = self.st.lock();
            st.geometry = Some(g);
            st.limits = Some(l);
            st.new_rkey = new_rkey;
            st.connecting = None;
            st.res.replace(res.clone())
        };
        // Never let go under `st` (its buffers are vmalloc'ed); there is
        // none unless an earlier connect left its memory behind.
        drop(old);
        // INFO_RSP's receive is the first of cid 0: it consumes it.
        let cqe = res.cqe.clone();
        let cons = self.cons();
        let con0 = cons.first().ok_or(EINVAL)?;
        let rsp_sg = [res
            .hdr
            .sge(res.info_rsp_at, INFO_RSP_ROOM as u32, res.hdr_mr.lkey())?];
        con0.post_recv_sg(wr::INFO, &rsp_sg, cqe.clone())?;
        for c in cons.iter() {
            c.post_recvs(&res, &cqe)?;
        }
        let mut m = [0u8; INFO_REQ_LEN];
        let n = InfoReq::new(sess.name())
            .and_then(|r| r.write(&mut m))
            .map_err(|_| EINVAL)?;
        res.hdr.write(res.info_req_at, &m[..n])?;
        let req_sg = [res.hdr.sge(res.info_req_at, n as u32, res.hdr_mr.lkey())?];
        con0.post_send(
            &mut [SendWr::new(wr::INFO_REQ, SendOp::Send, &req_sg)],
            &cqe,
        )?;
        let info = self.wait_ev(None, STEP_SECS)?;
        let len = usize::try_from(info.status).map_err(|_| eproto())?;
        self.parse_info_rsp(len)?;
        let mut st = self.st.lock();
        if st.rbufs.len() < l.queue_depth as usize {
            return Err(eproto());
        }
        st.phase = Phase::Connected;
        st.backoff.reset();
        st.hb = Heartbeat::new(crate::proto::consts::RTRS_HB_MISSED_MAX);
        st.hb_last_ms = now_ms();
        Ok(())
    }

    fn cons(&self) -> KVec<Arc<ClCon>> {
        let st = self.st.lock();
        let mut v = KVec::new();
        for c in st.cons.iter() {
            if v.push(c.clone(), GFP_ATOMIC).is_err() {
                break;
            }
        }
        v
    }

    /// INFO_RSP arrived (`len` bytes, softirq): the connect parses it.
    fn on_info_rsp(&self, len: u32) {
        self.push_ev(Ev {
            kind: None,
            status: i32::try_from(len).unwrap_or(i32::MAX),
            data: KVec::new(),
        });
    }

    fn parse_info_rsp(&self, len: usize) -> Result {
        let (res, l) = {
            let st = self.st.lock();
            (st.res.clone().ok_or(EINVAL)?, st.limits.ok_or(EINVAL)?)
        };
        let len = len.min(INFO_RSP_ROOM);
        let mut raw = KVec::from_elem(0u8, len, GFP_KERNEL)?;
        res.hdr.read(res.info_rsp_at, &mut raw)?;
        let rsp = InfoRsp::parse(&raw).map_err(|_| eproto())?;
        let g = self.st.lock().geometry.ok_or(EINVAL)?;
        let it = rsp
            .rbufs(g.queue_depth(), g.chunk_size())
            .map_err(|_| eproto())?;
        let mut rbufs = KVec::with_capacity(l.queue_depth as usize, GFP_KERNEL)?;
        for rb in it.take(l.queue_depth as usize) {
            rbufs.push(rb, GFP_KERNEL)?;
        }
        self.st.lock().rbufs = rbufs;
        Ok(())
    }

    // -- failing and reconnecting -------------------------------------------

    /// Fails the path from the session's work queue (from an rdma_cm
    /// handler, a completion, a missed heartbeat).
    pub(crate) fn fail_later(self: &Arc<Self>, why: &str) {
        {
            let st = self.st.lock();
            if st.phase != Phase::Connected {
                return;
            }
        }
        if rdma::kshim::ratelimit::log_allowed() {
            pr_warn!("rtrs clt: path {} failed: {}\n", self.index, why);
        }
        // Already queued: it fails once.
        let _ = self.sess.queue().enqueue::<_, 1>(self.clone());
    }

    /// Closes the connections of a failed (or closing) path, fails its
    /// requests over, and schedules the reconnect. Process context.
    pub(crate) fn fail(self: &Arc<Self>) {
        self.fail_to(true);
    }

    /// `fail`, then a reconnect (`reconnect`) or none (`Dead`).
    fn fail_to(self: &Arc<Self>, reconnect: bool) {
        let (cons, res, was_up) = {
            let mut st = self.st.lock();
            if st.phase == Phase::Dead || st.phase == Phase::Reconnecting {
                return;
            }
            let up = st.phase == Phase::Connected;
            // No reconnect before `schedule_reconnect` says when: the
            // keeper must not see an old time meanwhile.
            st.phase = Phase::Reconnecting;
            st.next_at_ms = i64::MAX;
            (core::mem::take(&mut st.cons), st.res.take(), up)
        };
        // The ids, QPs and CQs go (their work requests flushed) before any
        // request is posted elsewhere.
        for c in cons.iter() {
            c.teardown();
        }
        drop(cons);
        if was_up {
            pr_info!("rtrs clt: path {} disconnected\n", self.index);
        }
        // The memory goes after the failover, which reads the user
        // messages of the requests it moves from it.
        self.sess.failover(self, res.as_deref());
        drop(res);
        if reconnect {
            self.schedule_reconnect();
        } else {
            self.st.lock().phase = Phase::Dead;
        }
        if was_up {
            self.sess.path_down();
        }
    }

    /// Chooses when the next attempt is, or gives up.
    pub(crate) fn schedule_reconnect(&self) {
        let mut st = self.st.lock();
        if self.sess.is_closing() {
            st.phase = Phase::Dead;
            return;
        }
        match st.backoff.next(rdma::kshim::random::u32()) {
            Some(ms) => {
                // The kernel's client also waits a second more before each
                // attempt, for the server to clean the old path up.
                st.phase = Phase::Reconnecting;
                st.next_at_ms = now_ms()
                    + i64::from(ms)
                    + i64::from(crate::proto::consts::RTRS_RECONNECT_BACKOFF_MS);
            }
            None => {
                st.phase = Phase::Dead;
                drop(st);
                pr_info!(
                    "rtrs clt: path {}: reconnect attempts exhausted\n",
                    self.index
                );
            }
        }
    }

    /// Marks the path dead and closes it (session close, path removal).
    pub(crate) fn kill(&self) {
        let (cons, res) = {
            let mut st = self.st.lock();
            st.phase = Phase::Dead;
            (core::mem::take(&mut st.cons), st.res.take())
        };
        for c in cons.iter() {
            c.teardown();
        }
        drop(cons);
        drop(res);
        self.ev_cv.notify_all();
    }

    /// Connects within the keeper's next visit (a path added later).
    pub(crate) fn connect_soon(&self) {
        let mut st = self.st.lock();
        st.phase = Phase::Reconnecting;
        st.next_at_ms = 0;
    }

    /// The source address its last connect used.
    pub fn src(&self) -> Option<SockAddr> {
        self.st.lock().src
    }

    /// Sets its sysfs directories (after its first connect).
    pub(crate) fn set_dirs(&self, dirs: KVec<SysDir>) {
        let old = core::mem::replace(&mut *self.dirs.lock(), dirs);
        drop(old);
    }

    /// Whether it has its sysfs directories.
    pub(crate) fn has_dirs(&self) -> bool {
        !self.dirs.lock().is_empty()
    }

    /// Removes its sysfs directories (not from one of their stores).
    pub(crate) fn drop_dirs(&self) {
        let old = core::mem::take(&mut *self.dirs.lock());
        drop(old);
    }

    /// Reconnects now (sysfs `reconnect`): a connected path is failed
    /// first; a disconnected one is given its attempts back.
    pub(crate) fn reconnect_now(self: &Arc<Self>) -> Result {
        if self.phase() == Phase::Connected {
            self.fail();
        }
        let mut st = self.st.lock();
        match st.phase {
            Phase::Reconnecting | Phase::Dead if !self.sess.is_closing() => {
                st.backoff.reset();
                st.phase = Phase::Reconnecting;
                st.next_at_ms = 0;
                Ok(())
            }
            _ => Err(EBUSY),
        }
    }

    /// Disconnects and stays so (sysfs `disconnect`) until `reconnect`.
    pub(crate) fn disconnect_now(self: &Arc<Self>) -> Result {
        if self.phase() == Phase::Connecting {
            return Err(EBUSY);
        }
        if self.phase() == Phase::Connected {
            self.fail_to(false);
        } else {
            self.st.lock().phase = Phase::Dead;
        }
        Ok(())
    }

    /// Removes the path from its session from a work item (sysfs
    /// `remove_path`: its own directory goes).
    pub(crate) fn remove_later(self: &Arc<Self>) -> Result {
        self.sess
            .queue()
            .enqueue::<_, 3>(self.clone())
            .map_err(|_| EBUSY)
    }

    /// The keeper's visit (every second, process context): heartbeats of a
    /// connected path, the due reconnect of a failed one.
    pub(crate) fn tick(self: &Arc<Self>) {
        let now = now_ms();
        enum Todo {
            Nothing,
            Beat,
            Fail,
            Reconnect,
        }
        let todo = {
            let mut st = self.st.lock();
            match st.phase {
                Phase::Connected
                    if now - st.hb_last_ms
                        >= i64::from(crate::proto::consts::RTRS_HB_INTERVAL_MS) =>
                {
                    st.hb_last_ms = now;
                    match st.hb.tick() {
                        HbAction::Send => {
                            st.hb.sent(now_ns());
                            Todo::Beat
                        }
                        HbAction::Wait => Todo::Nothing,
                        HbAction::Fail => Todo::Fail,
                    }
                }
                Phase::Reconnecting if now >= st.next_at_ms => {
                    st.phase = Phase::Connecting;
                    Todo::Reconnect
                }
                _ => Todo::Nothing,
            }
        };
        match todo {
            Todo::Nothing => {}
            Todo::Beat => {
                if self.send_imm(Imm::HbMsg).is_err() {
                    self.fail_later("a heartbeat could not be sent");
                }
            }
            Todo::Fail => self.fail_later("heartbeats unanswered"),
            Todo::Reconnect => {
                if self.sess.queue().enqueue::<_, 2>(self.clone()).is_err() {
                    self.schedule_reconnect();
                }
            }
        }
    }

    fn reconnect(self: &Arc<Self>) {
        self.reconnect_once();
        self.attempts.fetch_add(1, Ordering::Release);
    }

    /// The reconnect attempts that have ended so far, for
    /// [`ClPath::wait_attempt`].
    pub(crate) fn attempts(&self) -> u64 {
        self.attempts.load(Ordering::Acquire)
    }

    /// Waits until a reconnect attempt has ended since `attempts()` was
    /// `before` (sysfs `reconnect` and `add_path` wait for the
    /// connection, as the kernel's do): `Ok` if the path is connected
    /// then; `ENOTCONN` if the attempt failed, the path is given up or the
    /// session closes; `ETIMEDOUT` after `secs`. Process context; sleeps.
    pub(crate) fn wait_attempt(&self, before: u64, secs: u32) -> Result {
        let deadline = now_ms() + i64::from(secs) * 1000;
        loop {
            if self.attempts() != before {
                return if self.phase() == Phase::Connected {
                    Ok(())
                } else {
                    Err(enotconn())
                };
            }
            if self.phase() == Phase::Dead || self.sess.is_closing() {
                return Err(enotconn());
            }
            if now_ms() >= deadline {
                return Err(etimedout());
            }
            rdma::kshim::time::msleep(20);
        }
    }

    fn reconnect_once(self: &Arc<Self>) {
        match self.connect().and_then(|()| self.sess.adopt(self)) {
            Ok(()) => {
                self.stats.reconnects.fetch_add(1, Ordering::Relaxed);
                pr_info!("rtrs clt: path {} reconnected\n", self.index);
                self.sess.publish(self);
                self.sess.path_up();
            }
            Err(e) => {
                self.stats.fail_cnt.fetch_add(1, Ordering::Relaxed);
                if rdma::kshim::ratelimit::log_allowed() {
                    pr_info!(
                        "rtrs clt: path {}: reconnect failed ({})\n",
                        self.index,
                        e.to_errno()
                    );
                }
                if self.phase() == Phase::Connected {
                    // Connected but refused by the session (a server
                    // restarted with a smaller queue or IO size): its
                    // connections and memory go, and any request placed
                    // on it meanwhile fails over, before the next try.
                    self.fail_to(true);
                } else {
                    self.schedule_reconnect();
                }
            }
        }
    }

    /// A zero-length RDMA WRITE with immediate `imm` on cid 0.
    fn send_imm(&self, imm: Imm) -> Result {
        let (con, res) = {
            let st = self.st.lock();
            (
                st.cons.first().cloned().ok_or(enotconn())?,
                st.res.clone().ok_or(enotconn())?,
            )
        };
        let v = imm.to_u32().map_err(|_| EINVAL)?;
        let op = SendOp::WriteWithImm {
            remote_addr: 0,
            rkey: 0,
            imm: v,
        };
        let mut w = SendWr::new(wr::HB, op, &[]);
        w.flags = rdma::spec::opcodes::SendFlags::NONE;
        con.post_send(&mut [w], &res.cqe)
    }

    // -- completions ---------------------------------------------------------

    fn on_recv(self: &Arc<Self>, wc: &Wc) -> Result {
        let Some((con, res)) = self.heard_on(wc)? else {
            return Ok(());
        };
        // The receive goes back before the request can end: the server
        // may answer the next one as soon as the ULP hears of this one.
        con.post_recv(&res, wr::num(wc.wr_id), res.cqe.clone())?;
        if !wc.wc_flags.contains(WcFlags::WITH_IMM) {
            // A SEND with invalidate of a read's buffer: the response follows.
            return Ok(());
        }
        match Imm::parse(wc.imm_data).map_err(|_| eproto())? {
            Imm::IoRsp(r) => self.sess.on_rsp(self, r.msg_id, r.errno, r.w_inval),
            Imm::HbMsg => self.send_imm(Imm::HbAck),
            Imm::HbAck => {
                let rtt = {
                    let mut st = self.st.lock();
                    st.hb.acked(now_ns());
                    st.hb.latency_ns()
                };
                self.latency_ns.store(rtt, Ordering::Relaxed);
                Ok(())
            }
            Imm::IoReq(_) => Err(eproto()),
        }
    }
}

impl CmHandler for ClPath {
    fn event(&self, id: &Arc<CmIdCore>, ev: CmEvent) -> Disposition {
        let connecting = {
            let st = self.st.lock();
            st.connecting.as_ref().is_some_and(|c| Arc::ptr_eq(c, id))
        };
        if connecting {
            self.push_ev(Ev {
                kind: Some(ev.kind),
                status: ev.status,
                data: ev.private_data,
            });
            return Disposition::Keep;
        }
        let ours = self.st.lock().cons.iter().any(|c| Arc::ptr_eq(c.id(), id));
        if ours
            && matches!(
                ev.kind,
                EventKind::Disconnected
                    | EventKind::Rejected
                    | EventKind::Unreachable
                    | EventKind::DeviceRemoval
            )
        {
            if let Some(p) = self.sess.path_arc(self) {
                p.fail_later("the connection went down");
            }
        }
        Disposition::Keep
    }
}

/// The completion handler of a path's work requests.
pub(crate) struct PathCqe(Arc<ClPath>);

impl CqeDone for PathCqe {
    fn done(&self, _cq: &CqCore, wc: &Wc) {
        self.0.completion(wc);
    }
}

impl ClPath {
    fn completion(self: &Arc<Self>, wc: &Wc) {
        if wc.status == WcStatus::WrFlushErr {
            return;
        }
        let me = self;
        if wc.status != WcStatus::Success {
            self.connect_failed();
            if rdma::kshim::ratelimit::log_allowed() {
                pr_warn!(
                    "rtrs clt: path {}: {:?} completed with {:?}\n",
                    self.index,
                    wc.opcode,
                    wc.status
                );
            }
            me.fail_later("a work request failed");
            return;
        }
        let r = match wr::kind(wc.wr_id) {
            wr::RECV => me.on_recv(wc),
            wr::INFO => {
                me.on_info_rsp(wc.byte_len);
                Ok(())
            }
            wr::LINV => {
                self.sess.inv_done(me, wr::num(wc.wr_id));
                Ok(())
            }
            wr::WRITE => {
                self.sess.write_done(me, wr::num(wc.wr_id));
                Ok(())
            }
            _ => Ok(()),
        };
        if let Err(e) = r {
            self.connect_failed();
            if rdma::kshim::ratelimit::log_allowed() {
                pr_warn!(
                    "rtrs clt: path {}: a bad {:?} from the server ({})\n",
                    self.index,
                    wc.opcode,
                    e.to_errno()
                );
            }
            me.fail_later("a bad message");
        }
    }
}
