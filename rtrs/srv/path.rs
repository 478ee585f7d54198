// SPDX-License-Identifier: GPL-2.0

//! One client path: its connections (cid 0, the service connection, and
//! one per client CPU), the chunk memory its requests are written into
//! (`srv::chunks`), the INFO exchange that makes it usable, the completions
//! of its connections, its heartbeats and its close.
//!
//! The client sends `INFO_REQ` (a SEND, the only one it ever makes, on
//! cid 0, into the info buffer, `srv::info`) once all its connections are
//! up; the server then posts the receives every later request consumes,
//! on every connection, and answers with `INFO_RSP`, which describes the
//! chunks.
//!
//! Its sysfs directories (`srv::sysfs`) are made when INFO_REQ names the
//! path, and go first when it closes.
//!
//! The connections' completions are polled where the ULP's `rdma_ev`
//! may run ([`SrvOps::context`]): in softirq or in a workqueue. What they
//! touch is safe in either; INFO_REQ, which makes sysfs directories and
//! tells the ULP, is handled on the server's work queue.
//!
//! Locks: `Path::state` (IRQ-safe) is held to read or change the
//! connections, the name, the heartbeats and the sysfs directories (once
//! per request: its connection found, the client heard, the name copied),
//! never across a post, a call into the ULP, an allocation that may sleep
//! or the removal of a directory. `Path::told_up` (a mutex, held while the
//! ULP is told the path is up) comes before `Path::state`.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::workqueue::{impl_has_work, new_work, Work, WorkItem};

use rdma::cma::{CmId, CmIdCore, SockAddr};
use rdma::device::Device;
use rdma::kshim::errno::econnreset;
use rdma::kshim::sync::SpinLockIrq;
use rdma::kshim::work::OwnedQueue;
use rdma::spec::opcodes::{WcOpcode, WcStatus};
use rdma::verbs::cq::{CqCore, PollCtx};
use rdma::verbs::pd::Pd;
use rdma::verbs::wc::{CqeDone, Wc};

use crate::proto::conn::{ConnReq, Uuid};
use crate::proto::consts::{RTRS_HB_INTERVAL_MS, RTRS_HB_MISSED_MAX};
use crate::proto::imm::Imm;
use crate::proto::mpath::{HbAction, Heartbeat};
use crate::proto::msg::{InfoReq, InfoRsp};
use crate::srv::chunks::Chunks;
use crate::srv::con::{Con, WR_INFO};
use crate::srv::info::Info;
use crate::srv::stats::Stats;
use crate::srv::sysfs::{PathDirs, Sessions, SysPath};
use crate::srv::{EvContext, Params, SrvOps};
use crate::sysfs::{Addr, PathEnds};

/// A connection request a path did not take: its id, if still ours to
/// refuse, the errno to refuse it with, and why (for the log).
pub(crate) struct Refusal {
    pub(crate) id: Option<CmId>,
    pub(crate) errno: Error,
    pub(crate) why: &'static str,
}

/// A copy of a path's name, on the stack (every request passes it to the
/// ULP: no allocation on that path).
pub(crate) struct Name([u8; 256]);

impl Name {
    /// The name's bytes, up to its NUL.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        let n = self.0.iter().position(|&c| c == 0).unwrap_or(self.0.len());
        &self.0[..n]
    }

    /// The name as text, for the log.
    pub(crate) fn as_str(&self) -> &str {
        core::str::from_utf8(self.as_bytes()).unwrap_or("?")
    }
}

/// Bytes as lower-case hex, for the log (a session's UUID).
struct Hex<'a>(&'a [u8]);

impl core::fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for b in self.0 {
            write!(f, "{:02x}", b)?;
        }
        Ok(())
    }
}

struct PathState {
    cons: KVec<Arc<Con>>,
    name: [u8; 256],
    up: bool,
    /// Its sysfs directories, from INFO_REQ until it closes.
    dirs: Option<PathDirs>,
    /// Our heartbeats to the client, and when the last went (ms).
    hb: Heartbeat,
    hb_ms: i64,
}

/// A client path.
#[pin_data]
pub struct Path {
    ops: Arc<dyn SrvOps>,
    /// Where its connections' completions are polled (the ULP's context).
    poll: PollCtx,
    params: Params,
    wq: Arc<OwnedQueue>,
    /// The server's sessions, which the path joins at INFO_REQ.
    sessions: Arc<Sessions>,
    sess_uuid: Uuid,
    /// The client's session, which may have other paths.
    paths_uuid: Uuid,
    cid_num: u16,
    dev: Arc<Device>,
    /// The port of `dev` that cid 0 came on.
    port: u32,
    /// Our address and the client's, as cid 0 came.
    local: Option<SockAddr>,
    peer: Option<SockAddr>,
    /// Requests counted.
    stats: Stats,
    /// The chunks, their MRs and keys.
    chunks: Chunks,
    /// The INFO exchange's buffer.
    info: Info,
    pd: Pd,
    #[pin]
    state: SpinLockIrq<PathState>,
    /// The completion handler of every connection (holds the path: the
    /// cycle goes at close).
    #[pin]
    comp: Mutex<Option<Arc<Comp>>>,
    /// The ULP was told the path is up (held while it is told).
    #[pin]
    told_up: Mutex<bool>,
    closed: AtomicBool,
    /// Heartbeats acknowledged (the first is logged).
    heartbeats: AtomicU64,
    /// Closes the path from the server's work queue.
    #[pin]
    close_work: Work<Path>,
    /// Handles INFO_REQ (`info_len` bytes) from the server's work queue.
    #[pin]
    info_work: Work<Path, 1>,
    info_len: AtomicU32,
}

impl_has_work! {
    impl HasWork<Self> for Path { self.close_work }
    impl HasWork<Self, 1> for Path { self.info_work }
}

impl WorkItem for Path {
    type Pointer = Arc<Path>;

    fn run(this: Arc<Path>) {
        this.close();
    }
}

impl WorkItem<1> for Path {
    type Pointer = Arc<Path>;

    fn run(this: Arc<Path>) {
        if this.is_closed() {
            return;
        }
        let len = this.info_len.load(Ordering::Acquire) as usize;
        if let Err(e) = this.on_info_req(len) {
            if !this.is_closed() && rdma::kshim::ratelimit::log_allowed() {
                pr_warn!(
                    "rtrs: path \"{}\" closed: a bad INFO_REQ (errno {})\n",
                    this.name().as_str(),
                    e.to_errno()
                );
            }
            this.close();
        }
    }
}

impl Path {
    /// A path for the connection request `req` (cid 0) that came on `id`.
    pub(crate) fn new(
        ops: Arc<dyn SrvOps>,
        params: Params,
        wq: Arc<OwnedQueue>,
        sessions: Arc<Sessions>,
        req: &ConnReq,
        id: &CmId,
    ) -> Result<Arc<Path>> {
        let (dev, port) = id.device().ok_or(ENODEV)?;
        let (local, peer) = (id.src_addr(), id.dst_addr());
        let pd = Pd::alloc(&dev)?;
        let (chunks, info) = Chunks::new(&pd, params)?;
        let sess_uuid = req.sess_uuid;
        let paths_uuid = req.paths_uuid;
        let cid_num = req.cid_num;
        let poll = match ops.context() {
            EvContext::Softirq => PollCtx::Softirq,
            EvContext::Process => PollCtx::Workqueue,
        };
        let path = Arc::pin_init(
            pin_init!(Path {
                ops,
                poll,
                params,
                wq,
                sessions,
                sess_uuid,
                paths_uuid,
                cid_num,
                dev,
                port,
                local,
                peer,
                stats: Stats::default(),
                chunks,
                info,
                pd,
                state <- rdma::new_spinlock_irq!(
                    PathState {
                        cons: KVec::new(),
                        name: [0; 256],
                        up: false,
                        dirs: None,
                        hb: Heartbeat::new(RTRS_HB_MISSED_MAX),
                        hb_ms: 0,
                    },
                    "rtrs::srv::Path::state"
                ),
                comp <- new_mutex!(None, "rtrs::srv::Path::comp"),
                told_up <- new_mutex!(false, "rtrs::srv::Path::told_up"),
                closed: AtomicBool::new(false),
                heartbeats: AtomicU64::new(0),
                close_work <- new_work!("rtrs::srv::Path::close_work"),
                info_work <- new_work!("rtrs::srv::Path::info_work"),
                info_len: AtomicU32::new(0),
            }),
            GFP_KERNEL,
        )?;
        let comp = Arc::new(Comp { path: path.clone() }, GFP_KERNEL)?;
        *path.comp.lock() = Some(comp);
        Ok(path)
    }

    /// The session UUID its connections carry.
    pub(crate) fn sess_uuid(&self) -> Uuid {
        self.sess_uuid
    }

    /// Whether it was closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// The completion handler, while the path is open.
    pub(crate) fn comp(&self) -> Option<Arc<Comp>> {
        self.comp.lock().clone()
    }

    /// Whether `id` is one of its connections.
    pub(crate) fn owns(&self, id: &Arc<CmIdCore>) -> bool {
        self.state.lock().cons.iter().any(|c| c.is(id))
    }

    /// The connection of QP number `qpn` and the path's name, something
    /// having come on it from the client, which is heard (one lock for
    /// the three, once per request).
    fn heard_on(&self, qpn: u32) -> Option<(Arc<Con>, Name)> {
        let mut st = self.state.lock();
        let con = st.cons.iter().find(|c| c.qpn() == qpn)?.clone();
        st.hb.any_rx();
        Some((con, Name(st.name)))
    }

    /// The service connection.
    pub(crate) fn con0(&self) -> Option<Arc<Con>> {
        self.state
            .lock()
            .cons
            .iter()
            .find(|c| c.cid() == 0)
            .cloned()
    }

    /// The client's name for the path (from INFO_REQ): the name of its
    /// session.
    pub(crate) fn name(&self) -> Name {
        Name(self.state.lock().name)
    }

    /// Why request `req` does not fit the path as `st` shows it, if it
    /// does not: the path is past connecting (up or closed), or names
    /// another connection count, or a cid it has. Any of these the
    /// kernel's server refuses with `ECONNRESET`, the path untouched.
    fn misfit(&self, st: &PathState, req: &ConnReq) -> Option<&'static str> {
        if self.is_closed() || st.up {
            Some("the path is not connecting")
        } else if req.cid_num != self.cid_num || req.cid >= self.cid_num {
            Some("another connection count")
        } else if st.cons.iter().any(|c| c.cid() == req.cid) {
            Some("a duplicate cid")
        } else {
            None
        }
    }

    /// Adds connection `req.cid` on `id` and accepts it. Whatever fails,
    /// the path and its other connections are untouched: a request that
    /// does not fit comes back in the [`Refusal`] for the caller to refuse
    /// (as the kernel's server does); one that fails after its QP was
    /// made is gone (its id destroyed: the CM rejects it).
    pub(crate) fn add_con(self: &Arc<Self>, id: CmId, req: &ConnReq) -> Result<(), Refusal> {
        let refuse = |id, why| Refusal {
            id,
            errno: econnreset(),
            why,
        };
        if let Some(why) = self.misfit(&self.state.lock(), req) {
            return Err(refuse(Some(id), why));
        }
        // Every connection of a path comes through the device of cid 0.
        if !id.device().is_some_and(|(d, _)| Arc::ptr_eq(&d, &self.dev)) {
            return Err(refuse(Some(id), "another device"));
        }
        let Some(comp) = self.comp() else {
            return Err(refuse(Some(id), "the path is not connecting"));
        };
        let comp: Arc<dyn CqeDone> = comp;
        let qd = self.params.queue_depth;
        let con = Con::new(
            id, req.cid, &self.dev, &self.pd, qd, &self.info, comp, self.poll,
        )
        .map_err(|e| Refusal {
            id: None,
            errno: e,
            why: "no QP for it",
        })?;
        {
            // Checked again with the connection published at once: a
            // request for the same cid may have come meanwhile, or the
            // path closed (`close` marks it before it takes the
            // connections: one published here goes with the others).
            let mut st = self.state.lock();
            let misfit = self.misfit(&st, req);
            let pushed = match misfit {
                Some(_) => Err(econnreset()),
                None => st.cons.push(con.clone(), GFP_ATOMIC).map_err(Error::from),
            };
            if let Err(e) = pushed {
                drop(st);
                con.close();
                return Err(Refusal {
                    id: None,
                    errno: e,
                    why: misfit.unwrap_or("no memory"),
                });
            }
        }
        if let Err(e) = con.accept(&self.params) {
            rdma::kshim::vec::retain(&mut self.state.lock().cons, |c| !Arc::ptr_eq(c, &con));
            con.close();
            return Err(Refusal {
                id: None,
                errno: e,
                why: "the accept failed",
            });
        }
        Ok(())
    }

    /// A heartbeat of the client was acknowledged.
    pub(crate) fn heartbeat_acked(&self) {
        if self.heartbeats.fetch_add(1, Ordering::Relaxed) == 0 {
            pr_info!(
                "rtrs: path \"{}\": first heartbeat acknowledged\n",
                self.name().as_str()
            );
        }
    }

    /// The client acknowledged our heartbeat.
    pub(crate) fn hb_acked(&self) {
        let now = kernel::time::Ktime::ktime_get().to_ns() as u64;
        self.state.lock().hb.acked(now);
    }

    /// The server's keeper (every second): a connected path gets a
    /// heartbeat on cid 0 every 5 s if the client was heard since the
    /// last, and is closed after 5 periods of silence, as the kernel's
    /// server does. A server muted for fault tests (`Params::heartbeats` off) neither
    /// sends heartbeats nor counts the client's silence.
    pub(crate) fn tick(self: &Arc<Self>) {
        if !self.params.heartbeats || self.is_closed() {
            return;
        }
        let t = kernel::time::Ktime::ktime_get();
        let (now_ms, now_ns) = (t.to_ms(), t.to_ns() as u64);
        let action = {
            let mut st = self.state.lock();
            if !st.up {
                return;
            }
            if st.hb_ms == 0 {
                st.hb_ms = now_ms;
                return;
            }
            if now_ms - st.hb_ms < i64::from(RTRS_HB_INTERVAL_MS) {
                return;
            }
            st.hb_ms = now_ms;
            let a = st.hb.tick();
            if a == HbAction::Send {
                st.hb.sent(now_ns);
            }
            a
        };
        match action {
            HbAction::Send => {
                let sent = Imm::HbMsg
                    .to_u32()
                    .map_err(|_| EINVAL)
                    .and_then(|imm| self.con0().ok_or(ENODEV)?.write_imm(imm));
                if sent.is_err() {
                    self.close_later();
                }
            }
            HbAction::Wait => {}
            HbAction::Fail => {
                if rdma::kshim::ratelimit::log_allowed() {
                    pr_warn!(
                        "rtrs: path \"{}\" closed: heartbeats unanswered\n",
                        self.name().as_str()
                    );
                }
                self.close_later();
            }
        }
    }

    /// Request `payload` (its immediate's) arrived on `con` of the path
    /// named `name`: the ULP answers it, counted.
    fn serve(&self, con: &Con, name: &Name, payload: u32) -> Result {
        con.on_request(&self.chunks, payload, |req, bytes| {
            self.stats.count(req.dir, bytes);
            self.ops.rdma_ev(name.as_bytes(), req)
        })
    }

    /// A connection is established.
    pub(crate) fn established(&self, _id: &Arc<CmIdCore>) {}

    /// INFO_REQ arrived on cid 0 (`len` bytes in the info buffer), in a
    /// completion: handled on the server's work queue (cid 0 has one
    /// receive for it: it comes once).
    fn info_later(self: &Arc<Self>, len: u32) {
        self.info_len.store(len, Ordering::Release);
        let _ = self.wq.enqueue::<Arc<Path>, 1>(self.clone());
    }

    /// INFO_REQ (`len` bytes in the info buffer): posts every
    /// connection's receives, then sends INFO_RSP. Process context.
    fn on_info_req(self: &Arc<Self>, len: usize) -> Result {
        let mut raw = [0u8; 272];
        let n = core::cmp::min(len, raw.len());
        self.info.read_req(&mut raw[..n])?;
        let req = InfoReq::parse(&raw[..n]).map_err(|_| EINVAL)?;
        // Room for every connection, taken before the lock (a path never
        // has more than `cid_num`: `misfit`).
        let mut cons = KVec::with_capacity(usize::from(self.cid_num), GFP_KERNEL)?;
        {
            let mut st = self.state.lock();
            let name = req.name();
            let l = core::cmp::min(name.len(), 255);
            st.name[..l].copy_from_slice(&name[..l]);
            for c in st.cons.iter() {
                cons.push(c.clone(), GFP_ATOMIC)?;
            }
        }
        if cons.len() != usize::from(self.cid_num) {
            return Err(EINVAL);
        }
        self.add_dirs()?;
        let qd = self.params.queue_depth;
        for c in cons.iter() {
            // The service connection takes admin requests and heartbeats.
            let n = if c.cid() == 0 { qd + 8 } else { qd };
            c.post_empty_recvs(n)?;
        }
        let descs = self.chunks.descs()?;
        let mut out = KVec::from_elem(0u8, 8 + 16 * descs.len(), GFP_KERNEL)?;
        let n = InfoRsp::new(&descs)
            .and_then(|r| r.write(&mut out))
            .map_err(|_| EINVAL)?;
        self.info.write_rsp(&out[..n])?;
        let con0 = cons.iter().find(|c| c.cid() == 0).ok_or(EINVAL)?;
        if self.params.always_invalidate {
            con0.register_chunks(&self.chunks)?;
        }
        con0.send_info_rsp(&self.info, n)?;
        // The ULP hears of the path up, then down, once each: `close`,
        // which may run meanwhile (the server's queue is unbound), marks
        // the path closed before it takes `told_up`.
        let mut told = self.told_up.lock();
        {
            let mut st = self.state.lock();
            if self.is_closed() {
                return Err(ENODEV);
            }
            st.up = true;
        }
        *told = true;
        let name = self.name();
        pr_info!(
            "rtrs: path \"{}\" up: {} connections, session {}\n",
            name.as_str(),
            cons.len(),
            Hex(&self.sess_uuid)
        );
        self.ops.link_ev(name.as_bytes(), true);
        Ok(())
    }

    /// Joins its client session in sysfs and makes its directories
    /// (`EPERM` if another client session has its name, as the kernel's
    /// server refuses it).
    fn add_dirs(self: &Arc<Self>) -> Result {
        let name = self.name();
        let dirs = match self
            .sessions
            .join(self.paths_uuid, name.as_bytes(), self.clone())
        {
            Ok(d) => d,
            Err(e) => {
                if rdma::kshim::ratelimit::log_allowed() {
                    pr_warn!(
                        "rtrs: path \"{}\" from {}: no sysfs directory (errno {})\n",
                        name.as_str(),
                        Addr(self.peer.map(|a| a.ip)),
                        e.to_errno()
                    );
                }
                return Err(e);
            }
        };
        let mut st = self.state.lock();
        if self.is_closed() {
            // `close` took the directories already: these go now, as the
            // path does.
            drop(st);
            drop(dirs);
            return Err(ENODEV);
        }
        st.dirs = Some(dirs);
        Ok(())
    }

    /// Closes the path from its work queue (from an rdma_cm handler or a
    /// completion).
    pub(crate) fn close_later(self: &Arc<Self>) {
        if self.is_closed() {
            return;
        }
        // Already queued: it closes once.
        let _ = self.wq.enqueue::<Arc<Path>, 0>(self.clone());
    }

    /// Closes the path: its sysfs directories go, every connection
    /// disconnects and goes, the ULP is told. Process context, not in an
    /// rdma_cm handler of the path nor in a store of its sysfs files.
    pub(crate) fn close(&self) {
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        // Its sysfs directories go first (waiting for their readers), so a
        // client that sees the disconnection finds the path's name free.
        let dirs = self.state.lock().dirs.take();
        drop(dirs);
        let cons = {
            let mut st = self.state.lock();
            st.up = false;
            core::mem::take(&mut st.cons)
        };
        for c in cons.iter() {
            c.close();
        }
        drop(cons);
        drop(self.comp.lock().take());
        let was_up = core::mem::replace(&mut *self.told_up.lock(), false);
        if was_up {
            let name = self.name();
            pr_info!("rtrs: path \"{}\" closed\n", name.as_str());
            self.ops.link_ev(name.as_bytes(), false);
        }
    }
}

impl SysPath for Path {
    fn ends(&self) -> PathEnds<'_> {
        PathEnds {
            hca: self.dev.name().as_bytes(),
            port: self.port,
            src: self.peer.map(|a| a.ip),
            dst: self.local.map(|a| a.ip),
        }
    }

    fn stats(&self) -> &Stats {
        &self.stats
    }

    fn disconnect(self: Arc<Self>) {
        pr_info!(
            "rtrs: path \"{}\" from {}: disconnect requested\n",
            self.name().as_str(),
            Addr(self.peer.map(|a| a.ip))
        );
        // From the work queue: closing removes this very file.
        self.close_later();
    }
}

/// The completion handler of a path's connections.
pub(crate) struct Comp {
    path: Arc<Path>,
}

impl Comp {
    fn handle(&self, wc: &Wc) -> Result {
        let path = &self.path;
        match wc.opcode {
            WcOpcode::Recv if wc.wr_id == WR_INFO => {
                path.info_later(wc.byte_len);
                Ok(())
            }
            WcOpcode::RecvRdmaWithImm => {
                // Anything from the client shows it alive.
                let (con, name) = path.heard_on(wc.qp_num).ok_or(ENODEV)?;
                // The receive goes back first: the client may send again
                // as soon as it sees our response.
                con.post_empty_recvs(1)?;
                match Imm::parse(wc.imm_data) {
                    Ok(Imm::IoReq(payload)) if path.params.always_invalidate => {
                        path.chunks.invalidate(payload)?;
                        path.serve(&con, &name, payload)
                    }
                    Ok(Imm::IoReq(payload)) => path.serve(&con, &name, payload),
                    // A server muted for fault tests does not answer.
                    Ok(Imm::HbMsg) if !path.params.heartbeats => Ok(()),
                    Ok(Imm::HbMsg) => {
                        let ack = Imm::HbAck.to_u32().map_err(|_| EINVAL)?;
                        path.con0().ok_or(ENODEV)?.write_imm(ack)?;
                        path.heartbeat_acked();
                        Ok(())
                    }
                    Ok(Imm::HbAck) => {
                        path.hb_acked();
                        Ok(())
                    }
                    Ok(_) => Ok(()),
                    Err(_) => Err(EINVAL),
                }
            }
            _ => Ok(()),
        }
    }
}

impl CqeDone for Comp {
    fn done(&self, _cq: &CqCore, wc: &Wc) {
        if wc.status == WcStatus::WrFlushErr {
            return;
        }
        let r = if wc.status == WcStatus::Success {
            self.handle(wc)
        } else {
            Err(EIO)
        };
        if let Err(e) = r {
            if rdma::kshim::ratelimit::log_allowed() {
                let name = self.path.name();
                let name = name.as_str();
                if wc.status == WcStatus::Success {
                    pr_warn!(
                        "rtrs: path \"{}\" closed: a bad {:?} (errno {})\n",
                        name,
                        wc.opcode,
                        e.to_errno()
                    );
                } else {
                    pr_warn!(
                        "rtrs: path \"{}\" closed: {:?} completed with {:?}\n",
                        name,
                        wc.opcode,
                        wc.status
                    );
                }
            }
            self.path.close_later();
        }
    }
}
