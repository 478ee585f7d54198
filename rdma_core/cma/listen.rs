// SPDX-License-Identifier: GPL-2.0

//! The passive side: `listen`, the IB CM's question whether a REQ is for
//! this listener, the new id (and its `ConnectRequest` event) for a REQ,
//! and the delayed MRA for a request the ULP has not answered yet.

use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::sync::Arc;

use super::addr::{gid_of, hdr_addrs, Bound, SockAddr};
use super::conn::CMA_HDR_LEN;
use super::event::{CmEvent, EventKind};
use super::id::{CmId, CmIdCore, Phase, PortSpace, State, IDS};
use crate::cm::conn::{CmConn, ConnUser};
use crate::cm::port::CmPortShared;
use crate::cm::sidr::SidrRequest;
use crate::cm::table::{ListenUser, Listener};
use crate::kshim::errno::eaddrnotavail;
use crate::mad::MadAddr;
use crate::spec::attr::Mtu;
use crate::spec::cm_msg::{service_id_port, CmaHeader, Req, SidrReq};

/// The service timeout of the MRA rdma_cm sends for a request its consumer
/// has not accepted yet (`CMA_CM_MRA_SETTING`: about 65 s).
const MRA_SERVICE_TIMEOUT: u8 = 24;

impl CmIdCore {
    /// Listens on the bound address and port (`rdma_listen`).
    pub fn listen(self: &Arc<Self>) -> Result {
        let port = {
            let st = self.st.lock();
            if st.phase != Phase::AddrBound {
                return Err(EINVAL);
            }
            st.src.ok_or(EINVAL)?.port
        };
        let user: Arc<dyn ListenUser> = self.clone();
        let l = Listener::new(self.service_id(port), user)?;
        let mut st = self.st.lock();
        st.listener = Some(l);
        st.phase = Phase::Listening;
        Ok(())
    }

    /// After the request's event: if the consumer has not answered yet,
    /// a delayed MRA, so that a duplicate REQ is answered with an MRA
    /// while the consumer decides (rdma_cm does the same).
    pub(super) fn mra_if_unanswered(&self) {
        let conn = {
            let st = self.st.lock();
            if st.phase != Phase::ReqRcvd {
                return;
            }
            st.conn.clone()
        };
        if let Some(c) = conn {
            c.mra_delayed(MRA_SERVICE_TIMEOUT);
        }
    }
}

impl CmIdCore {
    /// A listener's new id for a request (a REQ or a SIDR REQ) whose
    /// rdma_cm header is `hdr`, for `service_id`, on `port`: in phase
    /// `ReqRcvd`, its addresses the header's (reversed), bound to `port`
    /// and the destination's GID, with what `fill` adds; among the live
    /// ids. `ENODEV` if the listener is no longer live.
    pub(super) fn request_child(
        &self,
        port: &Arc<CmPortShared>,
        hdr: &CmaHeader,
        service_id: u64,
        mtu: Mtu,
        fill: impl FnOnce(&mut State),
    ) -> Result<Arc<CmIdCore>> {
        let (src_ip, dst_ip) = hdr_addrs(hdr);
        let dev = port.device();
        let (_, index) = dev
            .find_gid_on_port(port.port_num(), &gid_of(dst_ip))
            .ok_or_else(eaddrnotavail)?;
        // Before the child's lock: the live ids come first. A listener no
        // longer among them was destroyed (completely, after `takes`):
        // the request is refused, never handed to its handler.
        let parent = self.me().ok_or(ENODEV)?;
        let child = CmIdCore::new(self.ns.try_clone()?, self.handler.clone(), self.ps)?;
        {
            let mut st = child.st.lock();
            st.phase = Phase::ReqRcvd;
            st.src = Some(SockAddr {
                ip: dst_ip,
                port: service_id_port(service_id),
            });
            st.dst = Some(SockAddr {
                ip: src_ip,
                port: hdr.port,
            });
            st.bound = Some(Bound {
                dev: dev.clone(),
                port: port.port_num(),
                sgid_index: index as u8,
                mtu,
            });
            st.parent = Some(parent);
            fill(&mut st);
        }
        IDS.get().ok_or(ENODEV)?.add(&child)?;
        Ok(child)
    }
}

impl ListenUser for CmIdCore {
    fn takes(&self, port: &CmPortShared, req: &Req) -> bool {
        // A UD listener's service is resolved by SIDR: a REQ for it is
        // refused.
        self.ps == PortSpace::Tcp && self.takes_header(port, req.cma_header().ok())
    }

    fn takes_sidr(&self, port: &CmPortShared, req: &SidrReq) -> bool {
        self.ps != PortSpace::Tcp && self.takes_header(port, req.cma_header().ok())
    }

    fn on_sidr_req(&self, req: Arc<SidrRequest>) -> Result {
        self.sidr_request(req)
    }

    fn on_req(
        &self,
        port: &Arc<CmPortShared>,
        conn: &Arc<CmConn>,
        req: &Req,
        _from: &MadAddr,
    ) -> Result<Arc<dyn ConnUser>> {
        let hdr = req.cma_header().map_err(|_| EINVAL)?;
        let mtu = Mtu::from_raw(u32::from(req.path_mtu)).unwrap_or(Mtu::Mtu1024);
        let child = self.request_child(port, &hdr, req.service_id, mtu, |st| {
            st.req = Some(*req);
            st.conn = Some(conn.clone());
        })?;
        let mut ev = CmEvent::new(EventKind::ConnectRequest, 0);
        ev.private_data
            .extend_from_slice(&req.private_data.as_ref()[CMA_HDR_LEN..], GFP_KERNEL)?;
        ev.param.responder_resources = req.responder_resources;
        ev.param.initiator_depth = req.initiator_depth;
        ev.param.flow_control = req.end_to_end_flow_control;
        ev.param.retry_count = req.retry_count;
        ev.param.rnr_retry_count = req.rnr_retry_count;
        ev.param.qp_num = Some(req.local_qpn);
        ev.param.srq = req.srq;
        ev.new_id = Some(CmId(child.clone()));
        child.post(ev);
        Ok(child)
    }
}
