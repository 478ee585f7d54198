// SPDX-License-Identifier: GPL-2.0

//! Connections: [`ConnParam`], `connect` (the REQ), `accept` (the REP),
//! `reject` and `disconnect`, the QP's moves to RTR and RTS with the REQ's
//! and REP's values, and the IB CM's events of the connection turned into
//! the id's events.

use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::sync::Arc;

use super::addr::{gid_of, Bound, IpAddr};
use super::event::{CmEvent, EventKind};
use super::id::{CmIdCore, Phase, PortSpace, State};
use crate::cm::conn::{CmConn, ConnEvent, ConnUser, RepAnswer};
use crate::kshim::errno::{enotconn, etimedout};
use crate::mad::MadAddr;
use crate::spec::attr::{Gid, Mtu};
use crate::spec::cm_msg::{
    tcp_service_id, Bytes, CmaHeader, RejReason, Rep, Req, ReqPath, REQ_PRIVATE_DATA_LEN,
    TRANSPORT_RC,
};
use crate::spec::cm_state::ack_timeout;
use crate::spec::opcodes::Access;
use crate::spec::qp_state::{AttrMask, QpState};
use crate::verbs::ah::{AhAttr, GlobalRoute};
use crate::verbs::qp::{Qp, QpAttr};

/// The packet life time of a RoCE path without an SA (IBA time).
const PACKET_LIFE_TIME: u8 = 16;
/// The CM response timeout rdma_cm puts in its REQs (IBA time).
const CM_RESPONSE_TIMEOUT: u8 = 20;
/// The REQ's Max CM Retries rdma_cm asks for.
const MAX_CM_RETRIES: u8 = 15;
/// The ACK delay of our software devices (IBA time), as rxe reports.
const CA_ACK_DELAY: u8 = 15;
/// The rdma_cm header in front of a REQ's private data.
pub(super) const CMA_HDR_LEN: usize = crate::spec::cm_msg::CMA_HDR_LEN;

/// The connection parameters (`struct rdma_conn_param`).
#[derive(Debug, Default)]
pub struct ConnParam {
    /// Private data for the peer (REQ: up to 56 bytes; REP: 196; REJ 148).
    pub private_data: KVec<u8>,
    /// RDMA READs/atomics the peer may have outstanding at us.
    pub responder_resources: u8,
    /// RDMA READs/atomics we may have outstanding at the peer.
    pub initiator_depth: u8,
    /// End-to-end flow control.
    pub flow_control: bool,
    /// Transport retries (0 to 7).
    pub retry_count: u8,
    /// RNR retries (0 to 7, 7 meaning infinite).
    pub rnr_retry_count: u8,
    /// The REQ's CM response timeout (IBA time; rdma_cm's 20 if `None`),
    /// for tests that need a peer that never answers to time out soon.
    pub cm_response_timeout: Option<u8>,
    /// The REQ's Max CM Retries (rdma_cm's 15 if `None`).
    pub max_cm_retries: Option<u8>,
    /// The number of a QP the id does not own (user space's, through
    /// rdma_ucm): `connect` and `accept` name it in the REQ or REP and
    /// leave its moves to its owner, who asks [`CmIdCore::init_qp_attr`]
    /// for them. `None`: the id's own QP ([`CmIdCore::create_qp`]).
    pub qp_num: Option<u32>,
    /// The QP receives from an SRQ (the REQ's and REP's SRQ bit).
    pub srq: bool,
}

/// The rights a connected QP grants its peer, as the C stack's CM sets
/// them (its INIT attributes, which rdma_cm applies before RTR): RDMA
/// WRITE always; RDMA READ and atomics only with responder resources
/// (`max_dest_rd_atomic`, what this side agreed to serve).
pub(super) fn peer_access(max_dest_rd_atomic: u8) -> Access {
    if max_dest_rd_atomic > 0 {
        Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC
    } else {
        Access::REMOTE_WRITE
    }
}

/// The attributes of a connected QP's move to RTR (the C CM's).
pub(super) const RTR_MASK: AttrMask = AttrMask(
    AttrMask::STATE.0
        | AttrMask::AV.0
        | AttrMask::PATH_MTU.0
        | AttrMask::DEST_QPN.0
        | AttrMask::RQ_PSN.0
        | AttrMask::MAX_DEST_RD_ATOMIC.0
        | AttrMask::MIN_RNR_TIMER.0,
);

/// The attributes of a connected QP's move to RTS.
pub(super) const RTS_MASK: AttrMask = AttrMask(
    AttrMask::STATE.0
        | AttrMask::SQ_PSN.0
        | AttrMask::TIMEOUT.0
        | AttrMask::RETRY_CNT.0
        | AttrMask::RNR_RETRY.0
        | AttrMask::MAX_QP_RD_ATOMIC.0,
);

/// Moves a connected QP to RTR with `rtr`, then to RTS with `rts` (what
/// rdma_cm's `cma_modify_qp_rtr` and `_rts` set from the REQ and REP).
/// The peer's rights come with RTR, from `rtr.max_dest_rd_atomic`
/// ([`peer_access`]).
fn to_rts(qp: &Qp, rtr: &QpAttr, rts: &QpAttr) -> Result {
    let rtr = QpAttr {
        qp_access_flags: peer_access(rtr.max_dest_rd_atomic),
        ..*rtr
    };
    qp.modify(&rtr, RTR_MASK | AttrMask::ACCESS_FLAGS)?;
    qp.modify(rts, RTS_MASK)
}

impl CmIdCore {
    /// The address of the peer's port for the QP and the CM.
    fn ah(b: &Bound, dgid: Gid, flow_label: u32, hop_limit: u8, tclass: u8) -> AhAttr {
        AhAttr {
            port_num: b.port,
            sl: 0,
            static_rate: 0,
            grh: GlobalRoute {
                dgid,
                flow_label,
                sgid_index: b.sgid_index,
                hop_limit,
                traffic_class: tclass,
            },
            dmac: [0; 6],
        }
    }

    /// Connects (`rdma_connect`): after `resolve_route` and `create_qp`.
    pub fn connect(self: &Arc<Self>, param: &ConnParam) -> Result {
        if self.ps != PortSpace::Tcp {
            return self.ud_connect(param);
        }
        let (conn, req) = {
            let mut st = self.st.lock();
            if st.phase != Phase::RouteResolved {
                return Err(EINVAL);
            }
            let (src, dst) = (st.src.ok_or(EINVAL)?, st.dst.ok_or(EINVAL)?);
            let b = st.bound.as_ref().ok_or(EINVAL)?;
            let qpn = Self::conn_qpn(&st, param)?;
            if param.private_data.len() > REQ_PRIVATE_DATA_LEN - CMA_HDR_LEN {
                return Err(EINVAL);
            }
            let mut pd = [0u8; REQ_PRIVATE_DATA_LEN];
            let hdr = match (src.ip, dst.ip) {
                (IpAddr::V4(s), IpAddr::V4(d)) => CmaHeader::ipv4(src.port, s, d),
                _ => CmaHeader::ipv6(src.port, src.ip.to16(), dst.ip.to16()),
            };
            hdr.write(&mut pd).map_err(|_| EINVAL)?;
            pd[CMA_HDR_LEN..CMA_HDR_LEN + param.private_data.len()]
                .copy_from_slice(&param.private_data);
            let flow_label = (u32::from(src.port) * 31 + u32::from(dst.port)) & 0xf_ffff;
            let psn = st.seq_num;
            let (sgid, dgid) = (gid_of(src.ip), gid_of(dst.ip));
            let req = Req {
                service_id: tcp_service_id(dst.port),
                local_ca_guid: b.dev.node_guid(),
                local_qpn: qpn,
                responder_resources: param.responder_resources,
                initiator_depth: param.initiator_depth,
                remote_cm_response_timeout: param
                    .cm_response_timeout
                    .unwrap_or(CM_RESPONSE_TIMEOUT)
                    .min(31),
                transport_service_type: TRANSPORT_RC,
                end_to_end_flow_control: param.flow_control,
                srq: param.srq,
                starting_psn: psn,
                local_cm_response_timeout: CM_RESPONSE_TIMEOUT,
                retry_count: param.retry_count.min(7),
                partition_key: 0xffff,
                path_mtu: b.mtu as u8,
                rnr_retry_count: param.rnr_retry_count.min(7),
                max_cm_retries: param.max_cm_retries.unwrap_or(MAX_CM_RETRIES).min(15),
                primary_path: ReqPath {
                    local_lid: 0xffff,
                    remote_lid: 0xffff,
                    local_gid: sgid,
                    remote_gid: dgid,
                    flow_label,
                    packet_rate: 0,
                    traffic_class: 0,
                    hop_limit: 64,
                    sl: 0,
                    subnet_local: false,
                    local_ack_timeout: PACKET_LIFE_TIME + 1,
                },
                private_data: Bytes::from_slice(&pd).map_err(|_| EINVAL)?,
                ..Req::default()
            };
            let shared = crate::cm::port::shared(&b.dev, b.port).ok_or(ENODEV)?;
            let addr = MadAddr {
                ah: Self::ah(b, dgid, flow_label, 64, 0),
                remote_qpn: 1,
                pkey_index: 0,
            };
            let conn = CmConn::new(shared, addr)?;
            st.rq_psn = psn;
            st.param_retry = param.retry_count.min(7);
            st.user_qpn = param.qp_num;
            st.resp_res = param.responder_resources;
            st.conn = Some(conn.clone());
            st.phase = Phase::Connecting;
            (conn, req)
        };
        let user: Arc<dyn ConnUser> = self.clone();
        conn.set_user(Some(user));
        conn.connect(req, PACKET_LIFE_TIME)
    }

    /// The QPN a connection names: the id's own QP's, or user space's
    /// (`param.qp_num`) for an id without one; `EINVAL` for both or
    /// neither.
    pub(super) fn conn_qpn(st: &State, param: &ConnParam) -> Result<u32> {
        match (st.qp.as_ref(), param.qp_num) {
            (Some(q), None) => Ok(q.qpn()),
            (None, Some(n)) => Ok(n & 0xff_ffff),
            _ => Err(EINVAL),
        }
    }

    /// Passive: the RTR and RTS attributes of the QP, from the REQ (what
    /// the C CM gives for them once a REQ came): the peer may have
    /// `resp_res` reads outstanding at us, we `init_depth` at it.
    pub(super) fn passive_attrs(
        st: &State,
        resp_res: u8,
        init_depth: u8,
    ) -> Result<(QpAttr, QpAttr)> {
        let req = st.req.as_ref().ok_or(EINVAL)?;
        let b = st.bound.as_ref().ok_or(EINVAL)?;
        let path = &req.primary_path;
        let mtu = Mtu::from_raw(u32::from(req.path_mtu)).unwrap_or(b.mtu);
        let rtr = QpAttr {
            qp_state: QpState::Rtr,
            path_mtu: mtu,
            dest_qp_num: req.local_qpn,
            rq_psn: st.seq_num,
            ah_attr: Self::ah(
                b,
                path.local_gid,
                path.flow_label,
                path.hop_limit,
                path.traffic_class,
            ),
            max_dest_rd_atomic: resp_res,
            min_rnr_timer: 0,
            ..QpAttr::default()
        };
        let rts = QpAttr {
            qp_state: QpState::Rts,
            sq_psn: req.starting_psn,
            timeout: st.ack_timeout.unwrap_or(path.local_ack_timeout),
            retry_cnt: req.retry_count,
            rnr_retry: req.rnr_retry_count,
            max_rd_atomic: init_depth,
            ..QpAttr::default()
        };
        Ok((rtr, rts))
    }

    /// Active: the RTR and RTS attributes of the QP, from the REP.
    pub(super) fn active_attrs(st: &State, rep: &Rep) -> Result<(QpAttr, QpAttr)> {
        let b = st.bound.as_ref().ok_or(ENODEV)?;
        let (src, dst) = (st.src.ok_or(EINVAL)?, st.dst.ok_or(EINVAL)?);
        let flow_label = (u32::from(src.port) * 31 + u32::from(dst.port)) & 0xf_ffff;
        let rtr = QpAttr {
            qp_state: QpState::Rtr,
            path_mtu: b.mtu,
            dest_qp_num: rep.local_qpn,
            rq_psn: st.rq_psn,
            ah_attr: Self::ah(b, gid_of(dst.ip), flow_label, 64, 0),
            max_dest_rd_atomic: rep.initiator_depth,
            min_rnr_timer: 0,
            ..QpAttr::default()
        };
        let rts = QpAttr {
            qp_state: QpState::Rts,
            sq_psn: rep.starting_psn,
            timeout: st
                .ack_timeout
                .unwrap_or(ack_timeout(rep.target_ack_delay, PACKET_LIFE_TIME)),
            retry_cnt: st.param_retry,
            rnr_retry: rep.rnr_retry_count,
            max_rd_atomic: rep.responder_resources,
            ..QpAttr::default()
        };
        Ok((rtr, rts))
    }

    /// Sets the local ACK timeout (IBA time: 4.096 us * 2^`timeout`) of the
    /// id's QP (`rdma_set_ack_timeout`): its RTS attributes carry it in
    /// place of the one the connection gives, from then on.
    pub fn set_ack_timeout(&self, timeout: u8) {
        self.st.lock().ack_timeout = Some(timeout);
    }

    /// Accepts a connection request (`rdma_accept`) on the id the
    /// `ConnectRequest` event gave: the id's own QP goes to RTR and RTS
    /// with the REQ's values (user space moves its QP itself, before), then
    /// the REP goes.
    pub fn accept(self: &Arc<Self>, param: &ConnParam) -> Result {
        if self.ps != PortSpace::Tcp {
            return self.ud_accept(param);
        }
        let (conn, rep) = {
            let mut st = self.st.lock();
            if st.phase != Phase::ReqRcvd {
                return Err(EINVAL);
            }
            let qpn = Self::conn_qpn(&st, param)?;
            let (rtr, rts) =
                Self::passive_attrs(&st, param.responder_resources, param.initiator_depth)?;
            if let Some(qp) = st.qp.as_ref() {
                to_rts(qp, &rtr, &rts)?;
            }
            let b = st.bound.as_ref().ok_or(EINVAL)?;
            let rep = Rep {
                local_qpn: qpn,
                starting_psn: st.seq_num,
                responder_resources: param.responder_resources,
                initiator_depth: param.initiator_depth,
                target_ack_delay: CA_ACK_DELAY,
                end_to_end_flow_control: param.flow_control,
                srq: param.srq,
                rnr_retry_count: param.rnr_retry_count.min(7),
                local_ca_guid: b.dev.node_guid(),
                private_data: Bytes::from_slice(&param.private_data).map_err(|_| EINVAL)?,
                ..Rep::default()
            };
            st.user_qpn = param.qp_num;
            st.phase = Phase::Connecting;
            (st.conn.clone().ok_or(EINVAL)?, rep)
        };
        conn.accept(rep)
    }

    /// Rejects a connection request with private data (`rdma_reject`;
    /// the REJ's reason is CONSUMER_DEFINED, 28).
    pub fn reject(self: &Arc<Self>, private_data: &[u8]) -> Result {
        if self.ps != PortSpace::Tcp {
            return self.ud_reject(private_data);
        }
        let conn = {
            let mut st = self.st.lock();
            if st.phase != Phase::ReqRcvd {
                return Err(EINVAL);
            }
            st.phase = Phase::Disconnected;
            st.conn.clone().ok_or(EINVAL)?
        };
        conn.reject(RejReason::ConsumerDefined, private_data)
    }

    /// Disconnects (`rdma_disconnect`): the QP to ERR, then a DREQ (or
    /// nothing if the peer's DREQ came first).
    pub fn disconnect(self: &Arc<Self>) -> Result {
        let conn = {
            let mut st = self.st.lock();
            if !matches!(
                st.phase,
                Phase::Established | Phase::Disconnected | Phase::Connecting
            ) {
                return Err(enotconn());
            }
            Self::qp_to_err(&st);
            st.phase = Phase::Disconnected;
            st.conn.clone()
        };
        if let Some(c) = conn {
            // After the peer's DREQ, the CM has answered it already.
            let _ = c.disconnect();
        }
        Ok(())
    }
}

impl ConnUser for CmIdCore {
    fn rep_received(&self, _conn: &Arc<CmConn>, rep: &Rep) -> Result<RepAnswer> {
        let mut st = self.st.lock();
        let (rtr, rts) = Self::active_attrs(&st, rep)?;
        let mut data = KVec::new();
        data.extend_from_slice(rep.private_data.as_ref(), GFP_KERNEL)?;
        st.rep_data = data;
        match st.qp.as_ref() {
            Some(qp) => {
                to_rts(qp, &rtr, &rts)?;
                Ok(RepAnswer::Rtu)
            }
            // User space's QP: it moves it with what `init_qp_attr`
            // gives from this REP, then `establish` sends the RTU.
            None => {
                st.rep = Some(*rep);
                Ok(RepAnswer::Hold)
            }
        }
    }

    fn event(&self, _conn: &Arc<CmConn>, ev: ConnEvent) {
        let Some(me) = self.me() else { return };
        let out = {
            let mut st = self.st.lock();
            match ev {
                ConnEvent::Established => {
                    st.phase = Phase::Established;
                    let mut e = CmEvent::new(EventKind::Established, 0);
                    e.private_data = core::mem::take(&mut st.rep_data);
                    e
                }
                ConnEvent::Rejected {
                    reason,
                    private_data,
                } => {
                    st.phase = Phase::Disconnected;
                    let mut e = CmEvent::new(EventKind::Rejected, i32::from(reason));
                    let _ = e.private_data.extend_from_slice(&private_data, GFP_KERNEL);
                    e
                }
                ConnEvent::Unreachable => {
                    st.phase = Phase::Disconnected;
                    CmEvent::new(EventKind::Unreachable, etimedout().to_errno())
                }
                ConnEvent::Disconnected => {
                    // As rdma_cm: the QP is left as it is, so that what
                    // arrived before the DREQ still completes; the user's
                    // `disconnect` moves it to ERR.
                    st.phase = Phase::Disconnected;
                    CmEvent::new(EventKind::Disconnected, 0)
                }
                ConnEvent::TimewaitExit => CmEvent::new(EventKind::TimewaitExit, 0),
                ConnEvent::RepHeld => {
                    let mut e = CmEvent::new(EventKind::ConnectResponse, 0);
                    e.private_data = core::mem::take(&mut st.rep_data);
                    if let Some(rep) = st.rep.as_ref() {
                        e.param.responder_resources = rep.responder_resources;
                        e.param.initiator_depth = rep.initiator_depth;
                        e.param.flow_control = rep.end_to_end_flow_control;
                        e.param.rnr_retry_count = rep.rnr_retry_count;
                        e.param.srq = rep.srq;
                        e.param.qp_num = Some(rep.local_qpn);
                    }
                    e
                }
            }
        };
        me.post(out);
    }
}
