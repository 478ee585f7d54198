// SPDX-License-Identifier: GPL-2.0

//! The responder's part of tag matching: the SENDs an RC QP of a TM SRQ
//! receives (Documentation/tag_matching.rst).
//!
//! A message's first packet starts with a TMH. An EAGER or RNDV message is
//! matched against the SRQ's list by its tag; a NO_TAG or FIN message, and
//! one that matched nothing (unexpected), goes whole to an ordinary receive
//! of the SRQ, placed as any SEND is. A matched EAGER message lands in its
//! tagged buffer without the TMH: one packet completes once (`TM_MATCH |
//! TM_DATA_VALID`), a longer one twice (`TM_MATCH` with the first packet,
//! `TM_DATA_VALID` with the last). A matched RNDV completes `TM_MATCH` and
//! queues, on this QP's send queue, an RDMA READ of the sender's data into
//! the tagged buffer and a FIN fenced behind it; the READ's completion is
//! the buffer's `TM_DATA_VALID`. A tagged buffer too short for the
//! rendezvous gets the headers and completes `TM_RNDV_INCOMPLETE`.
//!
//! A first packet that is no TM message (no payload, an unknown operation,
//! an EAGER shorter than its TMH, an RNDV or FIN shorter than its TMH and
//! RVH, an RNDV over more than one packet) is an invalid request: counted
//! in `tm_bad_header`, NAKed, and the QP goes to the error state, as the
//! C rxe ends a QP on any invalid request; an ordinary receive of the SRQ,
//! if one is posted, completes with `REM_INV_REQ_ERR` first. Nothing is
//! written anywhere.
//!
//! Nothing here runs for a QP without a TM SRQ: the responder asks
//! [`ProviderQp::tm_srq`] once per message.

use kernel::prelude::*;

use rdma::provider::ratelimit::log_allowed;
use rdma::provider::tm_header::{self as header, TmMessage, Tmh, RNDV_HDRS_LEN, TMH_LEN};
use rdma::provider::{ProviderQp, TaggedRecv, TmDelivery, Wc, WcFlags, WcOpcode, WcStatus};

use super::{payload_fits, Cur, Outcome, RespState};
use crate::counters::Counter;
use crate::transport::rc::{Conn, RcQp};
use crate::wire::headers::NakCode;
use crate::wire::packet::Packet;
use crate::wire::psn::psn_add;

/// How a TM SRQ's message in an ordinary receive completes.
#[derive(Clone, Copy)]
pub(super) struct TmInfo {
    /// `TM_RECV` (unexpected) or `TM_NO_TAG` (NO_TAG, FIN).
    pub(super) opcode: WcOpcode,
    /// The TMH's tag and `app_ctx` (zero if the message is shorter than a
    /// TMH).
    pub(super) tag: u64,
    pub(super) app_ctx: u32,
}

impl TmInfo {
    fn new(opcode: WcOpcode, tmh: Option<Tmh>) -> Self {
        let tmh = tmh.unwrap_or_default();
        TmInfo {
            opcode,
            tag: tmh.tag,
            app_ctx: tmh.app_ctx,
        }
    }
}

/// A completion of a tagged buffer.
fn tagged_wc(status: WcStatus, flags: WcFlags, byte_len: u32, tmh: Option<&Tmh>) -> Wc {
    Wc {
        status,
        opcode: WcOpcode::TmRecv,
        wc_flags: flags,
        byte_len,
        tm_tag: tmh.map_or(0, |h| h.tag),
        tm_app_ctx: tmh.map_or(0, |h| h.app_ctx),
        ..Wc::default()
    }
}

impl RcQp {
    /// The first packet of a SEND to a QP of a TM SRQ. `None`: the message
    /// went to an ordinary receive (`st.cur`), which the caller places as
    /// any SEND; otherwise what became of the packet.
    pub(super) fn tm_first(
        &self,
        st: &mut RespState,
        qp: &ProviderQp,
        conn: &Conn,
        pkt: &Packet<'_>,
    ) -> Option<Outcome> {
        let psn = pkt.psn();
        let info = pkt.info();
        let data = pkt.payload;
        let msg = match header::parse(data) {
            // A rendezvous request is one packet (`max_rndv_hdr_size` is
            // below the smallest MTU).
            Ok(TmMessage::Rndv(..)) if !info.position.is_last() => None,
            Ok(m) => Some(m),
            Err(_) => None,
        };
        let Some(msg) = msg else {
            return Some(self.tm_bad_header(st, qp, psn, data));
        };
        let (tag, plain) = match msg {
            TmMessage::NoTag => (None, TmInfo::new(WcOpcode::TmNoTag, Tmh::read(data).ok())),
            TmMessage::Fin(tmh, _) => (None, TmInfo::new(WcOpcode::TmNoTag, Some(tmh))),
            TmMessage::Eager(tmh) | TmMessage::Rndv(tmh, _) => {
                (Some(tmh.tag), TmInfo::new(WcOpcode::TmRecv, Some(tmh)))
            }
        };
        // A rendezvous needs room on the send queue for its READ and FIN:
        // without it, the sender tries again later (nothing matched yet).
        if matches!(msg, TmMessage::Rndv(..)) && !qp.tm_rndv_room() {
            return Some(self.rnr(st, conn, psn));
        }
        let t = match qp.tm_deliver(tag) {
            TmDelivery::Empty => return Some(self.rnr(st, conn, psn)),
            TmDelivery::Plain(wqe) => {
                if tag.is_some() {
                    self.rd.counters.inc(Counter::TmUnexpected);
                }
                st.cur = Cur::Send {
                    wqe,
                    off: 0,
                    tm: Some(plain),
                };
                return None;
            }
            TmDelivery::Tagged(t) => t,
        };
        self.rd.counters.inc(Counter::TmMatched);
        Some(match msg {
            TmMessage::Rndv(tmh, rvh) => self.tm_rndv(st, qp, pkt, t, tmh, rvh),
            TmMessage::Eager(tmh) => self.tm_eager(st, qp, conn, pkt, t, tmh),
            // Only tagged messages match.
            TmMessage::NoTag | TmMessage::Fin(..) => Outcome::DROP,
        })
    }

    /// The first packet of an EAGER message that matched `t`.
    fn tm_eager(
        &self,
        st: &mut RespState,
        qp: &ProviderQp,
        conn: &Conn,
        pkt: &Packet<'_>,
        t: TaggedRecv,
        tmh: Tmh,
    ) -> Outcome {
        let psn = pkt.psn();
        let last = pkt.info().position.is_last();
        st.cur = Cur::Tagged { t, off: 0 };
        if !payload_fits(pkt.info().position, pkt.payload.len(), conn.mtu) {
            return self.fatal(st, qp, NakCode::InvalidRequest, psn);
        }
        if let Some(out) = self.tm_place(st, qp, psn, &pkt.payload[TMH_LEN..]) {
            return out;
        }
        st.epsn = psn_add(psn, 1);
        let Cur::Tagged { t, off } = core::mem::replace(&mut st.cur, Cur::None) else {
            return Outcome::DROP;
        };
        let solicited = pkt.headers.bth.solicited;
        if last {
            st.msn = psn_add(st.msn, 1);
            self.rd.counters.inc(Counter::RdmaRecvs);
            let flags = WcFlags::TM_MATCH | WcFlags::TM_DATA_VALID;
            qp.tm_finish(
                t,
                tagged_wc(WcStatus::Success, flags, off, Some(&tmh)),
                solicited,
            );
        } else {
            qp.tm_complete(
                &t,
                tagged_wc(WcStatus::Success, WcFlags::TM_MATCH, 0, Some(&tmh)),
                false,
            );
            st.cur = Cur::Tagged { t, off };
        }
        Outcome::taken(self.ack(st, pkt))
    }

    /// A middle or last packet of an EAGER message in a tagged buffer.
    pub(super) fn tm_next(
        &self,
        st: &mut RespState,
        qp: &ProviderQp,
        conn: &Conn,
        pkt: &Packet<'_>,
    ) -> Outcome {
        let psn = pkt.psn();
        let info = pkt.info();
        if !payload_fits(info.position, pkt.payload.len(), conn.mtu) {
            return self.fatal(st, qp, NakCode::InvalidRequest, psn);
        }
        if let Some(out) = self.tm_place(st, qp, psn, pkt.payload) {
            return out;
        }
        st.epsn = psn_add(psn, 1);
        if !info.position.is_last() {
            return Outcome::taken(self.ack(st, pkt));
        }
        let Cur::Tagged { t, off } = core::mem::replace(&mut st.cur, Cur::None) else {
            return Outcome::DROP;
        };
        st.msn = psn_add(st.msn, 1);
        self.rd.counters.inc(Counter::RdmaRecvs);
        // The second completion carries no TMH fields (as the hardware's).
        let wc = tagged_wc(WcStatus::Success, WcFlags::TM_DATA_VALID, off, None);
        qp.tm_finish(t, wc, pkt.headers.bth.solicited);
        Outcome::taken(self.ack(st, pkt))
    }

    /// Places `data` at the tagged buffer's offset; a buffer too short or
    /// whose memory does not check out ends the message as a receive of
    /// that kind does (`recv_send`): `LOC_QP_OP_ERR`, a remote operational
    /// error NAK, the QP in error.
    fn tm_place(
        &self,
        st: &mut RespState,
        qp: &ProviderQp,
        psn: u32,
        data: &[u8],
    ) -> Option<Outcome> {
        let Cur::Tagged { t, off } = &mut st.cur else {
            return Some(Outcome::DROP);
        };
        let end = u64::from(*off) + data.len() as u64;
        if end > u64::from(t.wqe.length) || qp.scatter(t.wqe.sges(), u64::from(*off), data).is_err()
        {
            let Cur::Tagged { t, .. } = core::mem::replace(&mut st.cur, Cur::None) else {
                return Some(Outcome::DROP);
            };
            qp.tm_finish(
                t,
                tagged_wc(WcStatus::LocQpOpErr, WcFlags::NONE, 0, None),
                false,
            );
            return Some(self.fatal(st, qp, NakCode::RemoteOperationalError, psn));
        }
        *off = end as u32;
        None
    }

    /// A rendezvous request that matched `t`: `TM_MATCH`, then the READ
    /// and the FIN on the send queue; a buffer too short gets the headers
    /// and `TM_RNDV_INCOMPLETE`.
    fn tm_rndv(
        &self,
        st: &mut RespState,
        qp: &ProviderQp,
        pkt: &Packet<'_>,
        t: TaggedRecv,
        tmh: Tmh,
        rvh: header::Rvh,
    ) -> Outcome {
        let psn = pkt.psn();
        let data = pkt.payload;
        let solicited = pkt.headers.bth.solicited;
        if rvh.len > t.wqe.length {
            // Software takes over: the headers (and the user data after
            // them, as far as the buffer goes) are in the buffer.
            let n = data.len().min(t.wqe.length as usize);
            st.cur = Cur::Tagged { t, off: 0 };
            if let Some(out) = self.tm_place(st, qp, psn, &data[..n]) {
                return out;
            }
            let Cur::Tagged { t, off } = core::mem::replace(&mut st.cur, Cur::None) else {
                return Outcome::DROP;
            };
            let wc = tagged_wc(
                WcStatus::TmRndvIncomplete,
                WcFlags::TM_MATCH,
                off,
                Some(&tmh),
            );
            qp.tm_finish(t, wc, solicited);
        } else {
            self.rd.counters.inc(Counter::TmRndv);
            qp.tm_complete(
                &t,
                tagged_wc(WcStatus::Success, WcFlags::TM_MATCH, rvh.len, Some(&tmh)),
                false,
            );
            let mut fin = [0u8; RNDV_HDRS_LEN];
            let n = header::write_fin(&tmh, &rvh, &mut fin).unwrap_or(0);
            // Room was checked before matching; a QP flushed meanwhile
            // has its buffer completed with WR_FLUSH_ERR.
            let _ = qp.tm_rndv(t, rvh.va, rvh.rkey, rvh.len, &fin[..n]);
        }
        st.epsn = psn_add(psn, 1);
        st.msn = psn_add(st.msn, 1);
        Outcome::taken(self.ack(st, pkt))
    }

    /// A first packet that is no TM message: see the file's doc.
    fn tm_bad_header(&self, st: &mut RespState, qp: &ProviderQp, psn: u32, data: &[u8]) -> Outcome {
        self.rd.counters.inc(Counter::TmBadHeader);
        if log_allowed() {
            pr_info!(
                "QP {}: a SEND to a TM SRQ without a valid TM header ({} bytes, op {}) refused\n",
                qp.qpn(),
                data.len(),
                data.first().copied().unwrap_or(0)
            );
        }
        if let TmDelivery::Plain(wqe) = qp.tm_deliver(None) {
            st.cur = Cur::Send {
                wqe,
                off: 0,
                tm: None,
            };
        }
        self.fatal(st, qp, NakCode::InvalidRequest, psn)
    }
}
