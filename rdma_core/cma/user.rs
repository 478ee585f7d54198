// SPDX-License-Identifier: GPL-2.0

//! Ids whose QP is not theirs: user space's, which rdma_ucm connects
//! through an id while libibverbs owns the QP. The connection names the
//! QP by number ([`ConnParam::qp_num`](super::ConnParam::qp_num)); user
//! space moves it itself with the attributes [`CmIdCore::init_qp_attr`]
//! gives (`rdma_init_qp_attr`), and the active side's RTU waits for
//! [`CmIdCore::establish`], which user space asks for once its QP is in
//! RTS (librdmacm's `ACCEPT` after `CONNECT_RESPONSE`).

use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::sync::Arc;

use super::conn::{peer_access, RTR_MASK, RTS_MASK};
use super::id::{CmIdCore, Phase, State};
use crate::spec::opcodes::Access;
use crate::spec::qp_state::{AttrMask, QpState, QpType};
use crate::verbs::qp::QpAttr;

impl CmIdCore {
    /// The attributes, and which of them are set, that move a QP of this
    /// id's connection to `state` (INIT, RTR or RTS), as the C
    /// `rdma_init_qp_attr` gives them. `EINVAL` for another state, an id
    /// with no device, or RTR and RTS before the peer's QP is known (the
    /// REQ on the passive side, the REP on the active one).
    ///
    /// For a UD id, whatever the state asked (INIT, RTR or RTS): the
    /// port, P_Key index and Q_Key ([`Self::qkey`]), as C gives them;
    /// its owner moves the QP on to RTR and RTS alone.
    pub fn init_qp_attr(self: &Arc<Self>, state: QpState) -> Result<(QpAttr, AttrMask)> {
        if self.ps.qp_type() == QpType::Ud {
            return self.ud_qp_attr(state);
        }
        let st = self.st.lock();
        let b = st.bound.as_ref().ok_or(EINVAL)?;
        match state {
            QpState::Init => {
                // Before a connection the peer may do nothing; once one
                // is under way, what we serve: the REQ's initiator depth
                // (passive), the REP's (active), our REQ's offer until then.
                let access = if let Some(req) = st.req.as_ref() {
                    peer_access(req.initiator_depth)
                } else if let Some(rep) = st.rep.as_ref() {
                    peer_access(rep.initiator_depth)
                } else if st.conn.is_some() {
                    peer_access(st.resp_res)
                } else {
                    Access::NONE
                };
                let attr = QpAttr {
                    qp_state: QpState::Init,
                    pkey_index: 0,
                    port_num: b.port,
                    qp_access_flags: access,
                    ..QpAttr::default()
                };
                Ok((
                    attr,
                    AttrMask::STATE
                        | AttrMask::ACCESS_FLAGS
                        | AttrMask::PKEY_INDEX
                        | AttrMask::PORT,
                ))
            }
            QpState::Rtr => {
                let (rtr, _) = Self::conn_attrs(&st)?;
                Ok((rtr, RTR_MASK))
            }
            QpState::Rts => {
                let (_, rts) = Self::conn_attrs(&st)?;
                Ok((rts, RTS_MASK))
            }
            _ => Err(EINVAL),
        }
    }

    /// The attributes of a UD id's QP (see [`Self::init_qp_attr`]).
    fn ud_qp_attr(&self, state: QpState) -> Result<(QpAttr, AttrMask)> {
        if !matches!(state, QpState::Init | QpState::Rtr | QpState::Rts) {
            return Err(EINVAL);
        }
        let qkey = self.qkey()?;
        let st = self.st.lock();
        let port = match st.bound.as_ref() {
            Some(b) => b.port,
            None => st.bind_dev.as_ref().ok_or(EINVAL)?.1,
        };
        let attr = QpAttr {
            qp_state: state,
            pkey_index: 0,
            port_num: port,
            qkey,
            rq_psn: st.seq_num,
            ..QpAttr::default()
        };
        Ok((
            attr,
            AttrMask::STATE | AttrMask::PKEY_INDEX | AttrMask::PORT | AttrMask::QKEY,
        ))
    }

    /// RTR and RTS attributes from what the peer sent: the REQ (passive,
    /// with the REQ's offer as the C CM takes it) or the REP (active).
    fn conn_attrs(st: &State) -> Result<(QpAttr, QpAttr)> {
        if let Some(req) = st.req.as_ref() {
            return Self::passive_attrs(st, req.initiator_depth, req.responder_resources);
        }
        match st.rep.as_ref() {
            Some(rep) => Self::active_attrs(st, rep),
            None => Err(EINVAL),
        }
    }

    /// Active, for a QP of user space's: the QP is in RTS, the RTU goes
    /// (`rdma_accept` with no parameters after `ConnectResponse`). No
    /// `Established` event follows: user space makes its own. `EINVAL` if
    /// no RTU waits (none came, or the peer ended the connection since).
    pub fn establish(self: &Arc<Self>) -> Result {
        let conn = {
            let st = self.st.lock();
            if st.phase != Phase::Connecting || st.rep.is_none() {
                return Err(EINVAL);
            }
            st.conn.clone().ok_or(EINVAL)?
        };
        conn.send_rtu()?;
        let mut st = self.st.lock();
        if st.phase == Phase::Connecting {
            st.phase = Phase::Established;
        }
        Ok(())
    }

    /// Passive: user space saw its QP receive before the RTU came
    /// (`rdma_notify` with `IBV_EVENT_COMM_EST`): the connection counts
    /// as established, and `Established` follows. `EINVAL` if no REP
    /// waits for its RTU.
    pub fn notify_established(self: &Arc<Self>) -> Result {
        let conn = {
            let st = self.st.lock();
            if st.phase != Phase::Connecting || st.req.is_none() {
                return Err(EINVAL);
            }
            st.conn.clone().ok_or(EINVAL)?
        };
        conn.established()
    }
}
