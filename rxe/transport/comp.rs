// SPDX-License-Identifier: GPL-2.0

//! The completer of an RC QP.
//!
//! The completer takes ACKs, NAKs and READ/atomic responses (softirq),
//! moves the oldest unacknowledged PSN (`una`) forward and completes WQEs
//! in order. A NAK for a PSN sequence error, a local ACK timeout, an RNR
//! NAK (after its timer) or a READ response gap sends again from `una`,
//! resuming a message in its middle (a READ as a new request for the rest
//! of its data). UC has no completer: a WQE completes once its packets are
//! out.
//!
//! It works on the requester's state ([`ReqState`], `req.rs`), under the
//! requester's lock: the two are one state machine seen from both ends.

use rdma::provider::{ProviderQp, QpState, WcStatus, WqeOp, MAX_SGE};

use crate::counters::Counter;
use crate::transport::rc::{Conn, RcQp};
use crate::transport::req::{local_status, now_ns, Kind, ReqState};
use crate::wire::headers::{NakCode, Syndrome};
use crate::wire::opcode::{Opcode, Operation};
use crate::wire::packet::Packet;
use crate::wire::psn::{psn_add, psn_diff, psn_sub};
use crate::wire::segment;

impl RcQp {
    /// Completes the WQEs at the head that are done, in order.
    pub(super) fn complete_ready(&self, st: &mut ReqState, qp: &ProviderQp) {
        while st.head < st.tail {
            let e = st.get(st.head);
            // Everything before it is complete (it is the head); a request
            // that failed locally also waits until its PSNs are reached.
            let reached = self.uc || psn_diff(e.first_psn, st.una) <= 0;
            let (status, len) = match (e.kind, e.status) {
                (_, Some(s)) if e.kind == Kind::Local || reached => (s, 0),
                (Kind::Plain, None)
                    if (self.uc && e.sent) || (!self.uc && psn_diff(e.end_psn(), st.una) <= 0) =>
                {
                    (WcStatus::Success, e.len)
                }
                _ => break,
            };
            if !self.pop_complete(st, qp, status, len) {
                return;
            }
        }
    }

    /// Completes the head WQE; false if that failed the QP.
    pub(super) fn pop_complete(
        &self,
        st: &mut ReqState,
        qp: &ProviderQp,
        status: WcStatus,
        len: u32,
    ) -> bool {
        let e = st.get(st.head);
        st.head += 1;
        if st.cur < st.head {
            st.cur = st.head;
            st.cur_pkt = 0;
        }
        if e.waits_response() {
            st.rd_out = st.rd_out.saturating_sub(1);
        }
        // A slot (and maybe a READ/atomic credit) is free again.
        self.wake(st, qp);
        if status != WcStatus::Success {
            st.active = false;
        }
        if e.send && status == WcStatus::Success {
            self.rd.counters.inc(Counter::RdmaSends);
        }
        qp.sq_complete(status, len);
        status == WcStatus::Success
    }

    /// Fails the head WQE with `status`: the QP goes to the error state.
    pub(super) fn fail_head(&self, st: &mut ReqState, qp: &ProviderQp, status: WcStatus) {
        if st.head < st.tail {
            self.pop_complete(st, qp, status, 0);
        }
        st.active = false;
    }

    /// Sending starts again from `una` (after an RNR wait).
    pub(super) fn restart(&self, st: &mut ReqState) {
        st.gen = st.gen.wrapping_add(1);
        st.noack = 0;
        st.probe = false;
        st.probe_sent = false;
        st.send_from_una(st.head);
    }

    /// A retransmission: sending starts again from `una` after a timeout,
    /// a sequence NAK or a missing response (`completer_retry_err`, as the
    /// C rxe counts it).
    pub(super) fn retry(&self, st: &mut ReqState) {
        self.rd.counters.inc(Counter::CompleterRetryErr);
        self.restart(st);
    }

    /// After a restart, an ACK may show the responder had more than was
    /// thought (the ACK was late, not lost): sending skips ahead to `una`
    /// instead of repeating what is acknowledged.
    pub(super) fn catch_up(&self, st: &mut ReqState) {
        if st.cur >= st.tail {
            return;
        }
        let e = st.get(st.cur);
        if e.kind == Kind::Local || e.status.is_some() {
            return;
        }
        let una = st.una;
        if psn_diff(psn_add(e.first_psn, st.cur_pkt), una) >= 0 {
            return;
        }
        if matches!(e.kind, Kind::Read | Kind::Atomic) && psn_diff(e.end_psn(), una) > 0 {
            // Its request may be on the wire this very moment (the work
            // sends without the lock, and the first response can come
            // back before it marks the request sent): asking again for
            // the rest would make the responder send it twice. After a
            // restart, the restart chose where the READ resumes.
            return;
        }
        st.gen = st.gen.wrapping_add(1);
        st.send_from_una(st.cur);
    }

    /// Everything up to PSN `a` is acknowledged.
    pub(super) fn ack_through(&self, st: &mut ReqState, qp: &ProviderQp, conn: &Conn, a: u32) {
        if psn_diff(a, st.una) < 0 {
            return;
        }
        let mut new_una = psn_add(a, 1);
        let mut implied_nak = false;
        if let Some(seq) = st.first_waiting() {
            let e = st.get(seq);
            if psn_diff(e.first_psn, a) <= 0 {
                // A later request is acknowledged but this READ or atomic
                // has no response: it was lost.
                implied_nak = true;
                if psn_diff(e.first_psn, new_una) < 0 {
                    new_una = e.first_psn;
                }
            }
        }
        if psn_diff(new_una, st.una) > 0 {
            st.una = new_una;
            self.progress(st, qp, conn);
        }
        self.complete_ready(st, qp);
        if implied_nak {
            self.retry(st);
            qp.schedule();
        }
    }

    /// `una` moved: the retry budgets start again, and so does the ACK
    /// timer if something is still outstanding.
    pub(super) fn progress(&self, st: &mut ReqState, qp: &ProviderQp, conn: &Conn) {
        st.retry_left = conn.retry_cnt;
        st.rnr_left = conn.rnr_retry;
        st.gap_retry = false;
        st.probe = false;
        st.probe_sent = false;
        st.deadline = if st.una != st.next_psn {
            conn.timeout_us.map(|t| now_ns() + (t as i64) * 1000)
        } else {
            None
        };
        self.catch_up(st);
        self.wake(st, qp);
    }

    /// Schedules the work if it stopped to wait for the responder.
    pub(super) fn wake(&self, st: &mut ReqState, qp: &ProviderQp) {
        if st.blocked {
            st.blocked = false;
            qp.schedule();
        }
    }

    /// An ACK, NAK or READ/atomic response arrived: whether it was taken.
    pub(crate) fn completer_receive(&self, qp: &ProviderQp, conn: &Conn, pkt: &Packet<'_>) -> bool {
        if !matches!(qp.state(), QpState::Rts | QpState::Sqd | QpState::Sqe) {
            return false;
        }
        self.rd.counters.inc(Counter::AckDeferred);
        let psn = pkt.psn();
        let mut st = self.req.lock();
        if !st.active || psn_diff(psn, st.una) < 0 || psn_diff(psn, st.next_psn) >= 0 {
            // Not for anything outstanding: a duplicate or a stray.
            return false;
        }
        match pkt.info().operation {
            Operation::Acknowledge => {
                let Some(aeth) = pkt.headers.ext.aeth else {
                    return false;
                };
                match Syndrome::from_u8(aeth.syndrome) {
                    Syndrome::Ack { .. } => self.ack_through(&mut st, qp, conn, psn),
                    Syndrome::RnrNak { timer } => {
                        self.ack_through(&mut st, qp, conn, psn_sub(psn, 1));
                        if !st.active {
                            return true;
                        }
                        self.rd.counters.inc(Counter::RcvdRnrErr);
                        if st.rnr_left == 0 {
                            self.rd.counters.inc(Counter::RetryRnrExceededErr);
                            self.fail_head(&mut st, qp, WcStatus::RnrRetryExcErr);
                            return true;
                        }
                        if st.rnr_left != 7 {
                            st.rnr_left -= 1;
                        }
                        let us = crate::wire::headers::rnr_timer_usec(timer);
                        st.rnr_until = Some(now_ns() + i64::from(us) * 1000);
                        st.deadline = None;
                        qp.schedule_in(us);
                    }
                    Syndrome::Nak(code) => {
                        self.ack_through(&mut st, qp, conn, psn_sub(psn, 1));
                        if !st.active {
                            return true;
                        }
                        let status = match code {
                            NakCode::PsnSequenceError => {
                                self.rd.counters.inc(Counter::RcvdSeqErr);
                                self.retry(&mut st);
                                qp.schedule();
                                return true;
                            }
                            NakCode::InvalidRequest => WcStatus::RemInvReqErr,
                            NakCode::RemoteAccessError => WcStatus::RemAccessErr,
                            NakCode::InvalidRdRequest => WcStatus::RemInvRdReqErr,
                            _ => WcStatus::RemOpErr,
                        };
                        self.fail_head(&mut st, qp, status);
                    }
                    Syndrome::Reserved(_) => return false,
                }
                true
            }
            Operation::AtomicAcknowledge => {
                let Some(ack) = pkt.headers.ext.atomic_ack_eth else {
                    return false;
                };
                let Some(seq) = st.first_waiting() else {
                    return false;
                };
                let e = st.get(seq);
                if e.kind != Kind::Atomic || e.first_psn != psn {
                    return false;
                }
                self.ack_through(&mut st, qp, conn, psn_sub(psn, 1));
                if !st.active || st.head != seq || st.una != psn {
                    return st.active;
                }
                let status = match self.scatter_head(qp, 0, &ack.orig.to_ne_bytes()) {
                    Ok(()) => WcStatus::Success,
                    Err(s) => s,
                };
                st.una = psn_add(psn, 1);
                self.progress(&mut st, qp, conn);
                if self.pop_complete(&mut st, qp, status, 8) {
                    self.complete_ready(&mut st, qp);
                }
                true
            }
            Operation::RdmaReadResponse => {
                // A zero-length READ RESPONSE ONLY for a request that is
                // not a READ is an acknowledgement: the kernel's rxe
                // answers an ATOMIC_WRITE so.
                let for_read = st.read_for(psn).is_some();
                let is_ack = pkt.opcode == Opcode::RcRdmaReadResponseOnly
                    && pkt.payload.is_empty()
                    && pkt.headers.ext.aeth.is_some_and(|a| {
                        matches!(Syndrome::from_u8(a.syndrome), Syndrome::Ack { .. })
                    });
                if !for_read && is_ack {
                    self.ack_through(&mut st, qp, conn, psn);
                    return true;
                }
                self.read_response(&mut st, qp, conn, pkt);
                true
            }
            _ => false,
        }
    }

    pub(super) fn read_response(
        &self,
        st: &mut ReqState,
        qp: &ProviderQp,
        conn: &Conn,
        pkt: &Packet<'_>,
    ) {
        let psn = pkt.psn();
        let Some((seq, e)) = st.read_for(psn) else {
            return;
        };
        // The response implies the ACK of everything before the READ.
        self.ack_through(st, qp, conn, psn_sub(e.first_psn, 1));
        if !st.active || st.head != seq {
            return;
        }
        if psn != st.una {
            // A response is missing: ask for the rest once.
            if psn_diff(psn, st.una) > 0 && !st.gap_retry {
                st.gap_retry = true;
                self.retry(st);
                qp.schedule();
            }
            return;
        }
        let k = psn_diff(psn, e.first_psn) as u32;
        let last = k + 1 >= e.npkts;
        let (off, len) = segment::slice(k, e.len, conn.mtu);
        if pkt.info().position.is_last() != last || pkt.payload.len() != len as usize {
            return;
        }
        if let Err(s) = self.scatter_head(qp, u64::from(off), pkt.payload) {
            self.fail_head(st, qp, s);
            return;
        }
        st.una = psn_add(psn, 1);
        self.progress(st, qp, conn);
        if !last {
            return;
        }
        let mut status = WcStatus::Success;
        let inv = qp.sq_with(0, |w| match w.op {
            WqeOp::ReadWithInv { invalidate, .. } => Some(invalidate),
            _ => None,
        });
        if let Some(Some(key)) = inv {
            if qp.invalidate(key).is_err() {
                status = WcStatus::LocProtErr;
            }
        }
        if self.pop_complete(st, qp, status, e.len) {
            self.complete_ready(st, qp);
        }
    }

    /// Writes response data into the head WQE's local memory.
    pub(super) fn scatter_head(
        &self,
        qp: &ProviderQp,
        off: u64,
        data: &[u8],
    ) -> core::result::Result<(), WcStatus> {
        let Some((sge, n)) = qp.sq_with(0, |w| (w.sge, w.num_sge)) else {
            return Err(WcStatus::WrFlushErr);
        };
        qp.scatter(&sge[..n.min(MAX_SGE)], off, data)
            .map_err(local_status)
    }
}
