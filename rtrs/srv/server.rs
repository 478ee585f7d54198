// SPDX-License-Identifier: GPL-2.0

//! The server: a listener on RTRS's port in a namespace, the paths of the
//! clients that connect, and the ULP's [`SrvOps`] (which, with the
//! [`Params`], the server's module root `srv` defines).
//!
//! Every connection of a path comes as a connection request carrying an
//! `rtrs_msg_conn_req`: connection 0 (the service connection) first, then
//! one per client CPU, one after another. Connection 0 makes the path;
//! the others join it by its session UUID. Each is accepted with an
//! `rtrs_msg_conn_rsp` giving the queue depth and the sizes (the same on
//! every connection). A request that does not fit the path it names (the
//! path up or closing, another connection count, a cid it has, another
//! device) is refused alone with `ECONNRESET`, as the kernel's server
//! refuses it: the path and its IO do not notice. A path whose connection
//! fails or disconnects once made is closed whole, from a work item (never
//! from the rdma_cm handler that reported it).
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
use rdma::kshim::route::NetNs;
use rdma::kshim::work::OwnedQueue;

use crate::proto::conn::{ConnReq, ConnRsp, CONN_RSP_LEN};
use crate::proto::consts::version_compatible;
use crate::srv::path::Path;
use crate::srv::sysfs::Sessions;
use crate::srv::{Params, SrvOps};
use crate::ticker::Ticker;

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
        let (path, made) = match (path, req.cid) {
            (Some(p), _) => (p, false),
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
                    (p, true)
                }
                Err(e) => return Self::refuse(id, e.to_errno() as i16),
            },
            // A connection of a path we do not know (its connection 0
            // failed, or it is from before a restart).
            (None, _) => return Self::refuse(id, -104),
        };
        // A request that does not fit is refused alone: the path it named
        // (and its IO) does not notice, as with the kernel's server. Only
        // a path this very request made goes with it.
        if let Err(r) = path.add_con(id, &req) {
            if rdma::kshim::ratelimit::log_allowed() {
                pr_warn!(
                    "rtrs: connection request refused: cid {} of {}: {} (errno {})\n",
                    req.cid,
                    req.cid_num,
                    r.why,
                    r.errno.to_errno()
                );
            }
            if let Some(id) = r.id {
                Self::refuse(id, r.errno.to_errno() as i16);
            }
            if made {
                self.close_later(&path);
            }
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
