// SPDX-License-Identifier: GPL-2.0

//! One connection of a client path: its rdma_cm id, QP and CQ, the
//! receives the server's messages land in, and the kinds of its work
//! requests (`wr`).
//!
//! Every receive has a small buffer of its own (`RECV_ROOM` bytes in the
//! path's receive area, `clt::res`): most of what arrives is an RDMA WRITE with
//! immediate data, which consumes a receive and writes nothing into it,
//! but INFO_RSP (cid 0), a server's zero-length SEND with invalidate and
//! RKEY_RSP (when the server always invalidates) carry bytes or consume
//! a receive all the same.

use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};

use rdma::cma::{CmId, CmIdCore};
use rdma::device::Device;
use rdma::kshim::mem::Sge;
use rdma::verbs::cq::{Cq, PollCtx};
use rdma::verbs::pd::Pd;
use rdma::verbs::qp::QpCore;
use rdma::verbs::wc::CqeDone;
use rdma::verbs::wr::SendWr;

use crate::clt::res::Res;

/// `wr_id`s: the kind in the top byte, a number below it.
pub(crate) mod wr {
    /// A receive; low bits: its index in the path's receive area.
    pub(crate) const RECV: u64 = 1 << 56;
    /// The INFO_RSP receive.
    pub(crate) const INFO: u64 = 2 << 56;
    /// INFO_REQ.
    pub(crate) const INFO_REQ: u64 = 3 << 56;
    /// A request's registration and RDMA WRITE (unsignaled).
    pub(crate) const IO: u64 = 4 << 56;
    /// A request's LOCAL_INV; low bits: the permit.
    pub(crate) const LINV: u64 = 5 << 56;
    /// A heartbeat or its acknowledgement (unsignaled).
    pub(crate) const HB: u64 = 6 << 56;
    /// A write's RDMA WRITE of its data (signaled: its data is released
    /// when it completes); low bits: the permit.
    pub(crate) const WRITE: u64 = 7 << 56;
    /// The kind of a `wr_id`.
    pub(crate) const fn kind(wr_id: u64) -> u64 {
        wr_id & (0xff << 56)
    }
    /// The number of a `wr_id`.
    pub(crate) const fn num(wr_id: u64) -> u32 {
        (wr_id & 0xffff_ffff) as u32
    }
}

/// A connection. Its id and CQ are destroyed by [`ClCon::teardown`], in
/// process context: a completion or rdma_cm handler may hold the last
/// reference to the connection, and neither may destroy its own CQ or id.
#[pin_data]
pub(crate) struct ClCon {
    /// The id, until torn down.
    #[pin]
    id: Mutex<Option<CmId>>,
    core: Arc<CmIdCore>,
    pub(crate) qp: Arc<QpCore>,
    pub(crate) qpn: u32,
    /// The CQ, until torn down.
    #[pin]
    cq: Mutex<Option<Cq>>,
    /// The first receive of this connection in the path's receive area.
    pub(crate) recv_base: u32,
    /// How many receives it has.
    pub(crate) recv_count: u32,
}

impl ClCon {
    /// A QP on `id` (address and route resolved), sized for `depth`
    /// requests in flight.
    pub(crate) fn new(
        id: CmId,
        dev: &Arc<Device>,
        pd: &Pd,
        depth: u32,
        recv_base: u32,
    ) -> Result<Arc<ClCon>> {
        // Per request (a read): a registration, the RDMA WRITE, an
        // invalidation (a write posts its RDMA WRITE alone);
        // heartbeats and their acknowledgements besides. A read's response
        // may consume two receives (the server's SEND with invalidate, then
        // the response).
        let send = 3 * depth + 32;
        let recv = 2 * depth + 16;
        // And the INFO_RSP receive of cid 0.
        let (cq, qp) = crate::qp::create(&id, dev, pd, (send, recv + 1, 2), PollCtx::Softirq)?;
        let qpn = qp.qpn();
        let core = (*id).clone();
        Arc::pin_init(
            pin_init!(ClCon {
                id <- new_mutex!(Some(id), "rtrs::clt::ClCon::id"),
                core,
                qp,
                qpn,
                cq <- new_mutex!(Some(cq), "rtrs::clt::ClCon::cq"),
                recv_base,
                recv_count: recv,
            }),
            GFP_KERNEL,
        )
    }

    /// The id.
    pub(crate) fn id(&self) -> &Arc<CmIdCore> {
        &self.core
    }

    /// Posts receive number `n` (of the path's receive area).
    pub(crate) fn post_recv(&self, res: &Res, n: u32, cqe: Arc<dyn CqeDone>) -> Result {
        let sg = [res.recv_sge(n)?];
        self.post_recv_sg(wr::RECV | u64::from(n), &sg, cqe)
    }

    /// Posts every receive of the connection.
    pub(crate) fn post_recvs(&self, res: &Res, cqe: &Arc<dyn CqeDone>) -> Result {
        for i in 0..self.recv_count {
            self.post_recv(res, self.recv_base + i, cqe.clone())?;
        }
        Ok(())
    }

    /// Posts a receive of `sg` with `wr_id`.
    pub(crate) fn post_recv_sg(&self, wr_id: u64, sg: &[Sge], cqe: Arc<dyn CqeDone>) -> Result {
        crate::qp::post_recv(&self.qp, wr_id, sg, cqe)
    }

    /// Posts `wrs`, each completing into `cqe`.
    pub(crate) fn post_send(&self, wrs: &mut [SendWr<'_>], cqe: &Arc<dyn CqeDone>) -> Result {
        crate::qp::post_send(&self.qp, wrs, cqe)
    }

    /// Disconnects, then destroys the id (and with it the QP) and the CQ,
    /// waiting for their handlers. Process context, not a handler of this
    /// connection.
    pub(crate) fn teardown(&self) {
        let _ = self.core.disconnect();
        let id = self.id.lock().take();
        drop(id);
        let cq = self.cq.lock().take();
        drop(cq);
    }
}
