// SPDX-License-Identifier: GPL-2.0

//! UD ids' connections: service ID resolution (SIDR) through the IB CM's
//! [`sidr`](crate::cm::sidr), as the C rdma_cm does it for the UDP and
//! IPoIB port spaces.
//!
//! - Active: `connect` sends a SIDR REQ (the rdma_cm header, then at most
//!   180 bytes of private data) for the service ID of the destination's
//!   port; the SIDR REP gives `Established` with the service's address,
//!   QPN and Q_Key ([`UdParam`]) and the REP's private data, a REP of
//!   another status gives `Unreachable` (status: the SIDR status), a
//!   REP whose Q_Key is not the id's `AddrError` (`EINVAL`), no REP after
//!   the retries `Unreachable` (`ETIMEDOUT`).
//! - Passive: a listening UD id takes the SIDR REQs for its port and
//!   address: each makes a new id (`ConnectRequest` with the REQ's
//!   private data after the header), which `accept` answers with a SIDR
//!   REP of status SUCCESS naming its QP and Q_Key (at most 136 bytes of
//!   private data) and `reject` with one of status REJECT; a new id
//!   destroyed unanswered rejects it too.

use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::sync::Arc;

use super::addr::{gid_of, hdr_addrs, Bound, IpAddr, SockAddr};
use super::conn::{ConnParam, CMA_HDR_LEN};
use super::event::{CmEvent, EventKind};
use super::id::{CmId, CmIdCore, Phase};
use super::mcast::UdParam;
use crate::cm::port::CmPortShared;
use crate::cm::sidr::{CmSidr, SidrEvent, SidrReqParams, SidrRequest, SidrUser};
use crate::kshim::errno::etimedout;
use crate::mad::MadAddr;
use crate::spec::attr::Mtu;
use crate::spec::cm_msg::{
    CmaHeader, SidrStatus, SIDR_REP_PRIVATE_DATA_LEN, SIDR_REQ_PRIVATE_DATA_LEN,
};
use crate::verbs::ah::{AhAttr, GlobalRoute};

/// How long a SIDR REQ waits for its REP before it is sent again (ms;
/// the C rdma_cm's `1 << (CMA_CM_RESPONSE_TIMEOUT - 8)`).
const SIDR_TIMEOUT_MS: u32 = 1 << (20 - 8);
/// How many times it is sent again (`CMA_MAX_CM_RETRIES`).
const SIDR_RETRIES: u8 = 15;
/// The hop limit of a RoCE v2 route made without an SA.
const HOP_LIMIT: u8 = 64;

/// The flow label of the route between two ports (as RC connections
/// label theirs).
fn flow_label(sport: u16, dport: u16) -> u32 {
    (u32::from(sport) * 31 + u32::from(dport)) & 0xf_ffff
}

impl CmIdCore {
    /// The service ID of `port` in the id's port space, as
    /// `rdma_get_service_id` makes it for an IP address.
    pub(super) fn service_id(&self, port: u16) -> u64 {
        (u64::from(self.ps.number()) << 16) | u64::from(port)
    }

    /// The address of the peer of a UD id's route.
    fn ud_ah(b: &Bound, src: SockAddr, dst: SockAddr) -> AhAttr {
        AhAttr {
            port_num: b.port,
            sl: 0,
            static_rate: 0,
            grh: GlobalRoute {
                dgid: gid_of(dst.ip),
                flow_label: flow_label(src.port, dst.port),
                sgid_index: b.sgid_index,
                hop_limit: HOP_LIMIT,
                traffic_class: 0,
            },
            dmac: [0; 6],
        }
    }

    /// Active, UD: the SIDR REQ (see the module docs).
    pub(super) fn ud_connect(self: &Arc<Self>, param: &ConnParam) -> Result {
        let mut st = self.st.lock();
        if st.phase != Phase::RouteResolved {
            return Err(EINVAL);
        }
        if param.private_data.len() > SIDR_REQ_PRIVATE_DATA_LEN - CMA_HDR_LEN {
            return Err(EINVAL);
        }
        let (src, dst) = (st.src.ok_or(EINVAL)?, st.dst.ok_or(EINVAL)?);
        let b = st.bound.as_ref().ok_or(EINVAL)?;
        let mut pd = [0u8; SIDR_REQ_PRIVATE_DATA_LEN];
        let hdr = match (src.ip, dst.ip) {
            (IpAddr::V4(s), IpAddr::V4(d)) => CmaHeader::ipv4(src.port, s, d),
            _ => CmaHeader::ipv6(src.port, src.ip.to16(), dst.ip.to16()),
        };
        hdr.write(&mut pd).map_err(|_| EINVAL)?;
        let end = CMA_HDR_LEN + param.private_data.len();
        pd[CMA_HDR_LEN..end].copy_from_slice(&param.private_data);
        let shared = crate::cm::port::shared(&b.dev, b.port).ok_or(ENODEV)?;
        let to = MadAddr {
            ah: Self::ud_ah(b, src, dst),
            remote_qpn: 1,
            pkey_index: 0,
        };
        let p = SidrReqParams {
            service_id: self.service_id(dst.port),
            pkey: 0xffff,
            private_data: &pd[..end],
            timeout_ms: SIDR_TIMEOUT_MS,
            max_retries: SIDR_RETRIES,
        };
        let user: Arc<dyn SidrUser> = self.clone();
        // The REP may come before `send_req` returns: its event waits on
        // `st`, held here until the request is recorded.
        let sidr = CmSidr::send_req(&shared, &to, &p, user)?;
        st.sidr = Some(sidr);
        st.phase = Phase::Connecting;
        Ok(())
    }

    /// Passive, UD: answers the SIDR REQ with SUCCESS, naming the QP
    /// (`param.qp_num`, or the id's own) and the id's Q_Key.
    pub(super) fn ud_accept(self: &Arc<Self>, param: &ConnParam) -> Result {
        if param.private_data.len() > SIDR_REP_PRIVATE_DATA_LEN {
            return Err(EINVAL);
        }
        let qkey = self.qkey()?;
        let (req, qpn) = {
            let mut st = self.st.lock();
            if st.phase != Phase::ReqRcvd {
                return Err(EINVAL);
            }
            let qpn = Self::conn_qpn(&st, param)?;
            let req = st.sidr_req.take().ok_or(EINVAL)?;
            st.phase = Phase::Established;
            (req, qpn)
        };
        req.sidr_reply(SidrStatus::Success, qpn, qkey, &param.private_data)
    }

    /// Passive, UD: answers the SIDR REQ with REJECT.
    pub(super) fn ud_reject(self: &Arc<Self>, private_data: &[u8]) -> Result {
        if private_data.len() > SIDR_REP_PRIVATE_DATA_LEN {
            return Err(EINVAL);
        }
        let req = {
            let mut st = self.st.lock();
            if st.phase != Phase::ReqRcvd {
                return Err(EINVAL);
            }
            let req = st.sidr_req.take().ok_or(EINVAL)?;
            st.phase = Phase::Disconnected;
            req
        };
        req.sidr_reply(SidrStatus::Reject, 0, 0, private_data)
    }

    /// Whether a listener takes a request whose rdma_cm header is `hdr`,
    /// on `port`: listening, in the port's namespace, and bound to the
    /// header's destination (or the wildcard of its family).
    pub(super) fn takes_header(&self, port: &CmPortShared, hdr: Option<CmaHeader>) -> bool {
        let st = self.st.lock();
        if st.phase != Phase::Listening {
            return false;
        }
        let Some(bound) = st.src else { return false };
        let Some(nd) = port.device().netdev(port.port_num()) else {
            return false;
        };
        if nd.net_id() != self.ns.id() {
            return false;
        }
        let Some(hdr) = hdr else { return false };
        let (_, dst) = hdr_addrs(&hdr);
        match bound.ip {
            IpAddr::V4(a) if a == [0; 4] => matches!(dst, IpAddr::V4(_)),
            IpAddr::V6(a) if a == [0; 16] => true,
            ip => IpAddr::from16(ip.to16()) == dst,
        }
    }

    /// A SIDR REQ taken by this listener: its new id and the
    /// `ConnectRequest` event.
    pub(super) fn sidr_request(&self, req: Arc<SidrRequest>) -> Result {
        let hdr = req.req().cma_header().map_err(|_| EINVAL)?;
        let port = req.port().clone();
        let mtu = port
            .device()
            .query_port(port.port_num())
            .map_or(Mtu::Mtu1024, |a| a.active_mtu);
        let child = self.request_child(&port, &hdr, req.service_id(), mtu, |st| {
            st.sidr_req = Some(req.clone());
        })?;
        let mut ev = CmEvent::new(EventKind::ConnectRequest, 0);
        ev.private_data
            .extend_from_slice(&req.private_data()[CMA_HDR_LEN..], GFP_KERNEL)?;
        ev.new_id = Some(CmId(child.clone()));
        child.post(ev);
        Ok(())
    }
}

impl SidrUser for CmIdCore {
    fn sidr_event(&self, sev: SidrEvent) {
        let Some(me) = self.me() else { return };
        let qkey = self.qkey().unwrap_or(0);
        let ev = {
            let mut st = self.st.lock();
            if st.phase != Phase::Connecting {
                return;
            }
            // The request is over: its CmSidr goes (after the lock).
            let sidr = st.sidr.take();
            let ev = match sev {
                SidrEvent::Timeout => {
                    st.phase = Phase::Disconnected;
                    CmEvent::new(EventKind::Unreachable, etimedout().to_errno())
                }
                SidrEvent::Rep(rep) if rep.status != SidrStatus::Success as u8 => {
                    st.phase = Phase::Disconnected;
                    let mut ev = CmEvent::new(EventKind::Unreachable, i32::from(rep.status));
                    let _ = ev
                        .private_data
                        .extend_from_slice(&rep.private_data, GFP_KERNEL);
                    ev
                }
                SidrEvent::Rep(rep) if rep.qkey != qkey => {
                    st.phase = Phase::Disconnected;
                    CmEvent::new(EventKind::AddrError, EINVAL.to_errno())
                }
                SidrEvent::Rep(rep) => {
                    let (Some(b), Some(src), Some(dst)) = (st.bound.as_ref(), st.src, st.dst)
                    else {
                        return;
                    };
                    let ah = Self::ud_ah(b, src, dst);
                    st.phase = Phase::Established;
                    let mut ev = CmEvent::new(EventKind::Established, 0);
                    ev.ud = Some(UdParam {
                        ah,
                        qp_num: rep.qpn,
                        qkey: rep.qkey,
                    });
                    let _ = ev
                        .private_data
                        .extend_from_slice(&rep.private_data, GFP_KERNEL);
                    ev
                }
            };
            drop(st);
            drop(sidr);
            ev
        };
        me.post(ev);
    }
}
