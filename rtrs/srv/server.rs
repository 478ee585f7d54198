// SPDX-License-Identifier: GPL-2.0

//! The server: a listener on RTRS's port in a namespace, the paths of the
//! clients that connect, and the ULP's [`SrvOps`].
//!
//! Every connection of a path comes as a connection request carrying an
//! `rtrs_msg_conn_req`: connection 0 (the service connection) first, then
//! one per client CPU, one after another. Connection 0 makes the path;
//! the others join it by its session UUID. Each is accepted with an
//! `rtrs_msg_conn_rsp` giving the queue depth and the sizes (the same on
//! every connection). A path whose connection fails or disconnects is
//! closed whole, from a work item (never from the rdma_cm handler that
//! reported it).
//!
//! A keeper on the server's work queue sends every path its heartbeats
//! and closes the paths whose client went silent.
//!
//! Locks: `Server::paths` is held only to find, add or remove a path;
//! nothing is called with it held.

use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::workqueue::{impl_has_work, new_work, Work, WorkItem};

use rdma::cma::{CmEvent, CmHandler, CmId, CmIdCore, Disposition, EventKind, IpAddr, SockAddr};
use rdma::kshim::global::Global;
use rdma::kshim::mem::Buffer;
use rdma::kshim::param;
use rdma::kshim::route::NetNs;
use rdma::kshim::work::OwnedQueue;

use crate::proto::chunk::ChunkGeometry;
use crate::proto::conn::{ConnReq, ConnRsp, CONN_RSP_LEN};
use crate::proto::consts::{
    version_compatible, MAX_IMM_PAYL_BITS, MAX_SESS_QUEUE_DEPTH, MIN_CHUNK_SIZE,
};
use crate::srv::path::Path;
use crate::srv::sysfs::Sessions;
use crate::ticker::Ticker;

/// The direction of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// The client reads: the ULP fills the data area, the server writes it
    /// to the client.
    Read,
    /// The client wrote the data area.
    Write,
}

/// A request as the ULP sees it: its direction, the client's user message
/// and the data area of its chunk.
pub struct SrvRequest<'a> {
    /// Read or write.
    pub dir: Dir,
    /// The user message.
    pub usr: &'a [u8],
    chunk: &'a Buffer,
    base: usize,
    data_len: usize,
}

impl<'a> SrvRequest<'a> {
    pub(crate) fn new(
        dir: Dir,
        usr: &'a [u8],
        chunk: &'a Buffer,
        base: usize,
        data_len: usize,
    ) -> Self {
        SrvRequest {
            dir,
            usr,
            chunk,
            base,
            data_len,
        }
    }

    /// The length of the data area: the data written (write), the room
    /// for the data to return (read).
    pub fn data_len(&self) -> usize {
        self.data_len
    }

    fn check(&self, off: usize, len: usize) -> Result {
        if off <= self.data_len && len <= self.data_len - off {
            Ok(())
        } else {
            Err(EINVAL)
        }
    }

    /// Copies bytes of the data area at `off` into `out`.
    pub fn read_data(&self, off: usize, out: &mut [u8]) -> Result {
        self.check(off, out.len())?;
        self.chunk.read(self.base + off, out)
    }

    /// Copies `data` into the data area at `off`.
    pub fn write_data(&self, off: usize, data: &[u8]) -> Result {
        self.check(off, data.len())?;
        self.chunk.write(self.base + off, data)
    }
}

/// What a ULP on the server does.
pub trait SrvOps: Send + Sync {
    /// A request of path `path` (named by its client): returns 0 or a
    /// negative errno (at most 511), which the client's request completes
    /// with. Called in process context (a workqueue), one request of a
    /// connection at a time.
    fn rdma_ev(&self, path: &[u8], req: &SrvRequest<'_>) -> i32;
    /// A path is up (its INFO exchange done) or down.
    fn link_ev(&self, _path: &[u8], _up: bool) {}
}

/// The parameters the server announces (`rtrs_msg_conn_rsp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    /// Chunks per path (the client's permits).
    pub queue_depth: u32,
    /// Bytes of a chunk.
    pub chunk_size: u32,
    /// Room at the end of a chunk for the user and RTRS messages.
    pub max_hdr_size: u32,
    /// Each chunk has a memory region of its own, invalidated when a
    /// request arrives in it and registered again under a new key, which
    /// the response carries (`RKEY_RSP`): a client can write a chunk only
    /// while it owns it. The kernel server's default.
    pub always_invalidate: bool,
    /// Heartbeats are sent and acknowledged (`true`, always, but in fault
    /// tests): `false` makes a server that keeps its paths' transport up
    /// but never sends a heartbeat nor acknowledges one, so that a client
    /// fails such a path on heartbeats alone. Not a module parameter.
    pub heartbeats: bool,
}

/// Why [`Params`] are refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamsFault {
    /// The queue depth is not 1 to 65535.
    QueueDepth,
    /// The chunk size is below 8 KiB or not a power of two.
    ChunkSize,
    /// Chunk numbers and offsets in a chunk do not fit the immediate's 28
    /// payload bits together.
    ImmBits,
    /// The header room is 0 or not below the chunk size.
    HdrSize,
}

/// The parameters [`Server::open`] uses: the module's, once its init read
/// them.
static MODULE_PARAMS: Global<Params> = Global::new();

impl Params {
    /// 64 chunks of 128 KiB with 4 KiB of headers: within the kernel
    /// client's limits (headers of at least 288 bytes, IO of at least 4 KiB
    /// and a multiple of 512) and small for a test guest (the kernel's
    /// server has 512 chunks). The defaults of the module parameters
    /// (`rtrs/params.c`), which must stay equal.
    pub const DEFAULT: Params = Params {
        queue_depth: 64,
        chunk_size: 128 * 1024,
        max_hdr_size: 4096,
        always_invalidate: true,
        heartbeats: true,
    };

    /// The largest IO.
    pub fn max_io_size(&self) -> u32 {
        self.chunk_size - self.max_hdr_size
    }

    /// What is wrong with the values, as the kernel's server checks its
    /// module parameters: a queue depth of 1 to 65535, a chunk of at least
    /// 8 KiB and a power of two, both fitting the immediate's 28 bits
    /// together; and headers below the chunk size.
    pub fn fault(&self) -> Option<ParamsFault> {
        if self.queue_depth == 0 || self.queue_depth > MAX_SESS_QUEUE_DEPTH {
            Some(ParamsFault::QueueDepth)
        } else if self.chunk_size < MIN_CHUNK_SIZE || !self.chunk_size.is_power_of_two() {
            Some(ParamsFault::ChunkSize)
        } else if ChunkGeometry::server(self.queue_depth, self.chunk_size).is_err() {
            Some(ParamsFault::ImmBits)
        } else if self.max_hdr_size == 0 || self.max_hdr_size >= self.chunk_size {
            Some(ParamsFault::HdrSize)
        } else {
            None
        }
    }

    /// `EINVAL` if the values have a [`fault`](Params::fault).
    pub fn check(&self) -> Result {
        match self.fault() {
            Some(_) => Err(EINVAL),
            None => Ok(()),
        }
    }

    /// The parameters `always_invalidate`, `max_chunk_size` and
    /// `sess_queue_depth` of `module` (`rdma_rs_rtrs`, whose C declares
    /// them: `rtrs/params.c`), checked; the header room is the default's.
    /// `EINVAL`, with the reason logged, for values the kernel's server
    /// refuses too. Process context.
    pub fn from_module(module: &'static ThisModule) -> Result<Params> {
        let qd = param::get_int(module, c_str!("sess_queue_depth"))?;
        let chunk = param::get_int(module, c_str!("max_chunk_size"))?;
        let inv = param::get_bool(module, c_str!("always_invalidate"))?;
        // Values beyond u32 are refused as they are.
        let p = Params {
            queue_depth: u32::try_from(qd).unwrap_or(0),
            chunk_size: u32::try_from(chunk).unwrap_or(0),
            always_invalidate: inv,
            ..Params::DEFAULT
        };
        match p.fault() {
            None => return Ok(p),
            Some(ParamsFault::QueueDepth) => pr_err!(
                "rtrs: sess_queue_depth={} refused: it must be 1 to {}\n",
                qd,
                MAX_SESS_QUEUE_DEPTH
            ),
            Some(ParamsFault::ChunkSize) => pr_err!(
                "rtrs: max_chunk_size={} refused: it must be a power of two of at least {}\n",
                chunk,
                MIN_CHUNK_SIZE
            ),
            Some(ParamsFault::ImmBits) => pr_err!(
                "rtrs: sess_queue_depth={} with max_chunk_size={} refused: chunk numbers and offsets do not fit the {} bits of an immediate's payload; lower one of them\n",
                qd,
                chunk,
                MAX_IMM_PAYL_BITS
            ),
            Some(ParamsFault::HdrSize) => pr_err!(
                "rtrs: max_chunk_size={} refused: it must exceed the {} bytes of headers\n",
                chunk,
                p.max_hdr_size
            ),
        }
        Err(EINVAL)
    }

    /// The parameters [`Server::open`] uses: the module's (see
    /// [`Params::from_module`]), or [`Params::DEFAULT`] before its init
    /// read them.
    pub fn module_default() -> Params {
        MODULE_PARAMS.get().map_or(Params::DEFAULT, |p| *p)
    }

    /// Makes `self` what [`Params::module_default`] returns (module init);
    /// `None` forgets it (module exit).
    pub(crate) fn set_module_default(p: Option<Params>) -> Result {
        let p = match p {
            Some(p) => Some(Arc::new(p, GFP_KERNEL)?),
            None => None,
        };
        drop(MODULE_PARAMS.replace(p));
        Ok(())
    }
}

/// A listening server.
#[pin_data]
pub struct Inner {
    pub(crate) ops: Arc<dyn SrvOps>,
    pub(crate) params: Params,
    /// Where paths are closed.
    wq: Arc<OwnedQueue>,
    #[pin]
    paths: Mutex<KVec<Arc<Path>>>,
    /// The client sessions of the paths, in sysfs.
    sessions: Arc<Sessions>,
    /// The keeper's pace and stop flag.
    #[pin]
    keeper: Ticker,
    /// The keeper (heartbeats), on `wq`.
    #[pin]
    keeper_work: Work<Inner>,
}

impl_has_work! {
    impl HasWork<Self> for Inner { self.keeper_work }
}

impl WorkItem for Inner {
    type Pointer = Arc<Inner>;

    fn run(this: Arc<Inner>) {
        this.keep();
    }
}

/// A server, listening until dropped.
pub struct Server {
    inner: Arc<Inner>,
    listener: Option<CmId>,
}

impl Server {
    /// Listens on `port` of every address of namespace `ns`, answering
    /// requests with `ops`, with the module's parameters
    /// ([`Params::module_default`]: `sess_queue_depth`, `max_chunk_size`
    /// and `always_invalidate` of `rdma_rs_rtrs`). Process context.
    pub fn open(ns: NetNs, port: u16, ops: Arc<dyn SrvOps>) -> Result<Server> {
        Self::open_with(ns, port, ops, Params::module_default())
    }

    /// As [`Server::open`], with `params` (`EINVAL` unless they pass
    /// [`Params::check`]).
    pub fn open_with(ns: NetNs, port: u16, ops: Arc<dyn SrvOps>, params: Params) -> Result<Server> {
        params.check()?;
        let wq = Arc::new(OwnedQueue::new(c_str!("rtrs_srv"))?, GFP_KERNEL)?;
        let sessions = Sessions::new()?;
        let inner = Arc::pin_init(
            pin_init!(Inner {
                ops,
                params,
                wq,
                paths <- new_mutex!(KVec::new(), "rtrs::srv::Inner::paths"),
                sessions,
                keeper <- Ticker::new(),
                keeper_work <- new_work!("rtrs::srv::Inner::keeper_work"),
            }),
            GFP_KERNEL,
        )?;
        let listener = CmId::new(ns, inner.clone())?;
        listener.bind_addr(SockAddr {
            ip: IpAddr::V4([0; 4]),
            port,
        })?;
        listener.listen()?;
        inner.wq.enqueue(inner.clone()).map_err(|_| EBUSY)?;
        pr_info!(
            "rtrs: listening on port {}: {} chunks of {} bytes, always_invalidate {}\n",
            port,
            params.queue_depth,
            params.chunk_size,
            if params.always_invalidate { "Y" } else { "N" }
        );
        Ok(Server {
            inner,
            listener: Some(listener),
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // No new connection, no more heartbeats, then every path closes.
        drop(self.listener.take());
        self.inner.keeper.stop();
        let paths = core::mem::take(&mut *self.inner.paths.lock());
        for p in paths.iter() {
            p.close();
        }
        // Closes queued from rdma_cm handlers finish before the ULP goes.
        self.inner.wq.drain();
    }
}

impl Inner {
    /// Every second until the server goes: the paths' heartbeats.
    fn keep(&self) {
        while self.keeper.wait(1000) {
            let paths = {
                let paths = self.paths.lock();
                let mut v = KVec::new();
                for p in paths.iter() {
                    if v.push(p.clone(), GFP_KERNEL).is_err() {
                        break;
                    }
                }
                v
            };
            for p in paths.iter() {
                p.tick();
            }
        }
    }

    fn find_path(&self, id: &Arc<CmIdCore>) -> Option<Arc<Path>> {
        self.paths.lock().iter().find(|p| p.owns(id)).cloned()
    }

    /// Takes `path` out of the table and closes it from a work item.
    fn close_later(&self, path: &Arc<Path>) {
        rdma::kshim::vec::retain(&mut self.paths.lock(), |p| !Arc::ptr_eq(p, path));
        path.close_later();
    }

    /// Refuses a connection request with `errno` in a conn_rsp.
    fn refuse(id: CmId, errno: i16) {
        let mut rsp = [0u8; CONN_RSP_LEN];
        if let Ok(n) = ConnRsp::reject(errno).write(&mut rsp) {
            let _ = id.reject(&rsp[..n]);
        }
    }

    fn connect_request(&self, ev: &mut CmEvent) {
        let Some(id) = ev.new_id.take() else {
            return;
        };
        let req = match ConnReq::parse(&ev.private_data) {
            Ok(r) if version_compatible(r.version) && r.check().is_ok() => r,
            _ => {
                if rdma::kshim::ratelimit::log_allowed() {
                    pr_warn!("rtrs: a malformed connection request refused (EINVAL)\n");
                }
                return Self::refuse(id, -22);
            }
        };
        pr_info!(
            "rtrs: connection request: cid {} of {}, recon_cnt {}\n",
            req.cid,
            req.cid_num,
            req.recon_cnt
        );
        let path = {
            let mut paths = self.paths.lock();
            rdma::kshim::vec::retain(&mut paths, |p| !p.is_closed());
            paths
                .iter()
                .find(|p| p.sess_uuid() == req.sess_uuid)
                .cloned()
        };
        let path = match (path, req.cid) {
            (Some(p), _) => p,
            (None, 0) => match Path::new(
                self.ops.clone(),
                self.params,
                self.wq.clone(),
                self.sessions.clone(),
                &req,
                &id,
            ) {
                Ok(p) => {
                    if self.paths.lock().push(p.clone(), GFP_KERNEL).is_err() {
                        return Self::refuse(id, -12);
                    }
                    p
                }
                Err(e) => return Self::refuse(id, e.to_errno() as i16),
            },
            // A connection of a path we do not know (its connection 0
            // failed, or it is from before a restart).
            (None, _) => return Self::refuse(id, -104),
        };
        if let Err(e) = path.add_con(id, &req) {
            if rdma::kshim::ratelimit::log_allowed() {
                pr_warn!("rtrs: connection {} of a path refused ({:?})\n", req.cid, e);
            }
            self.close_later(&path);
        }
    }
}

impl CmHandler for Inner {
    fn event(&self, id: &Arc<CmIdCore>, mut ev: CmEvent) -> Disposition {
        // The listener's own events are connection requests.
        if ev.kind == EventKind::ConnectRequest {
            self.connect_request(&mut ev);
            return Disposition::Keep;
        }
        let Some(path) = self.find_path(id) else {
            return Disposition::Keep;
        };
        match ev.kind {
            EventKind::Established => path.established(id),
            EventKind::Disconnected
            | EventKind::Rejected
            | EventKind::Unreachable
            | EventKind::DeviceRemoval
            | EventKind::TimewaitExit => self.close_later(&path),
            _ => {}
        }
        Disposition::Keep
    }
}
