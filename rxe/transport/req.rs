// SPDX-License-Identifier: GPL-2.0

//! The requester of an RC or UC QP.
//!
//! The requester takes send WQEs in order, gives each its PSNs (one per
//! packet; a READ takes as many as its response has packets), and sends
//! their packets from the QP's work, at most [`WINDOW`] PSNs beyond the
//! oldest unacknowledged one. It remembers, per WQE taken, only its first
//! PSN, its packet count and kind; the WQE itself stays in the core's ring
//! and is read where it lies for every packet ([`ProviderQp::sq_with`]),
//! never copied.
//!
//! What comes back (ACKs, NAKs, responses) is the completer's (`comp.rs`),
//! which shares this file's [`ReqState`] under the same lock.
//!
//! Locks, per packet: the QP's `work` mutex (the work runs alone), then
//! `req`, under which the next step is decided and the packet made: its
//! headers and payload are read from the WQE under the core's send queue
//! lock, inside `req` (the payload gathered from local memory there, which
//! takes only the memory's own locks). Both are released before the packet
//! is sent, since sending may deliver on the loopback path before it
//! returns, and that delivery takes `req` (ACKs) or `resp` and completes.
//! `req` is taken again afterwards to record what was sent. A local
//! operation (REG_MR, LOCAL_INV, BIND_MW) takes its operation out of the
//! WQE (the MR and window it holds, counted) and executes it with no lock
//! held.
//!
//! To a QP of ours reached without frames (the loopback path, no fault
//! armed), request packets go in runs ([`RcQp::send_run`]): the peer's
//! responder lock is taken once for a run, and `req` is taken under it
//! between two packets, to record one and make the next (the nesting
//! `Documentation/rxe.rst` writes down under "Locking").

use kernel::prelude::*;
use kernel::time::Ktime;

use rdma::provider::{
    AccessError, ProviderQp, QpState, SendFlags, SendWqe, WcStatus, WqeOp, WrOpcode,
};

use crate::counters::Counter;
use crate::net::frame::{self, MAX_PAYLOAD};
use crate::net::recv;
use crate::net::xmit::{self, SendError};
use crate::transport::rc::{Conn, Out, RcQp, WorkBuf};
use crate::wire::headers::{AtomicEth, ExtHeaders, Feth, Ieth, ImmDt, Reth};
use crate::wire::opcode::Opcode;
use crate::wire::packet::{self, Headers};
use crate::wire::psn::{psn_add, psn_diff};
use crate::wire::segment::{self, Message};

/// The most PSNs sent and not acknowledged.
pub(crate) const WINDOW: u32 = 128;

/// An ACK is asked for at least every this many packets.
const ACK_EVERY: u32 = 32;

/// What a WQE taken by the requester is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Executed locally (REG_MR, LOCAL_INV, BIND_MW): no packet.
    Local,
    /// SEND, RDMA WRITE, ATOMIC WRITE: done when acknowledged.
    Plain,
    /// RDMA READ or FLUSH: done when its response is in.
    Read,
    /// Compare-and-swap or fetch-and-add: done with its atomic ACK.
    Atomic,
}

/// What the requester remembers of a WQE it took.
#[derive(Clone, Copy)]
pub(super) struct Taken {
    pub(super) first_psn: u32,
    pub(super) npkts: u32,
    pub(super) kind: Kind,
    pub(super) len: u32,
    /// Every packet went out at least once.
    pub(super) sent: bool,
    /// A SEND (counted in `rdma_sends` when it completes).
    pub(super) send: bool,
    /// The result, once known before any ACK (local operations, and
    /// requests that failed locally).
    pub(super) status: Option<WcStatus>,
}

impl Taken {
    const EMPTY: Taken = Taken {
        first_psn: 0,
        npkts: 0,
        kind: Kind::Local,
        len: 0,
        sent: false,
        send: false,
        status: None,
    };

    pub(super) fn end_psn(&self) -> u32 {
        psn_add(self.first_psn, self.npkts)
    }

    pub(super) fn waits_response(&self) -> bool {
        matches!(self.kind, Kind::Read | Kind::Atomic)
    }
}

/// The requester's state.
pub(crate) struct ReqState {
    /// The WQEs taken and not completed, by sequence number modulo the
    /// length.
    pub(super) slots: KVec<Taken>,
    /// Sequence number of the oldest WQE taken.
    pub(super) head: u64,
    /// Sequence number the next WQE taken gets.
    pub(super) tail: u64,
    /// The WQE to send a packet of next, and which packet.
    pub(super) cur: u64,
    pub(super) cur_pkt: u32,
    /// PSN of the next new packet.
    pub(super) next_psn: u32,
    /// The oldest PSN not acknowledged.
    pub(super) una: u32,
    /// Packets sent since the last one that asked for an ACK.
    pub(super) noack: u32,
    /// READs and atomics outstanding.
    pub(super) rd_out: u32,
    pub(super) retry_left: u8,
    pub(super) rnr_left: u8,
    /// Local ACK timeout deadline (ns, monotonic).
    pub(super) deadline: Option<i64>,
    /// Sending waits until then after an RNR NAK.
    pub(super) rnr_until: Option<i64>,
    /// Changes when sending restarts from `una`, so a packet built before
    /// does not move the send position.
    pub(super) gen: u32,
    /// A READ response gap already asked for a resend.
    pub(super) gap_retry: bool,
    /// After a timeout: send one packet (asking for an ACK) and wait for
    /// its answer before sending more, so recovery does not add to the
    /// congestion that may have caused the loss. After a second timeout in
    /// a row the probe goes twice: a lost probe or answer then costs a
    /// retry with probability p² rather than p, which keeps 7 retries
    /// ample at 20 % loss each way.
    pub(super) probe: bool,
    pub(super) probe_sent: bool,
    /// In RTS with a connection.
    pub(super) active: bool,
    /// A request failed locally: take no more WQEs.
    pub(super) halted: bool,
    /// The work stopped with WQEs waiting for an answer of the responder
    /// (window, slots, READ/atomic credits, fence, probe): the next ACK
    /// that makes progress schedules it. Any other ACK does not, so a
    /// stream of ACKs does not wake the work for nothing.
    pub(super) blocked: bool,
}

impl ReqState {
    pub(crate) fn new(max_wr: usize) -> Result<ReqState> {
        Ok(ReqState {
            slots: KVec::from_elem(Taken::EMPTY, max_wr.max(1), GFP_KERNEL)?,
            head: 0,
            tail: 0,
            cur: 0,
            cur_pkt: 0,
            next_psn: 0,
            una: 0,
            noack: 0,
            rd_out: 0,
            retry_left: 0,
            rnr_left: 0,
            deadline: None,
            rnr_until: None,
            gen: 0,
            gap_retry: false,
            probe: false,
            probe_sent: false,
            active: false,
            halted: false,
            blocked: false,
        })
    }

    pub(super) fn clear(&mut self) {
        self.head = 0;
        self.tail = 0;
        self.cur = 0;
        self.cur_pkt = 0;
        self.noack = 0;
        self.rd_out = 0;
        self.deadline = None;
        self.rnr_until = None;
        self.gen = self.gen.wrapping_add(1);
        self.gap_retry = false;
        self.probe = false;
        self.probe_sent = false;
        self.active = false;
        self.halted = false;
        self.blocked = false;
    }

    /// Sending goes on from `una`: at the first packet not yet
    /// acknowledged of the first WQE from `start` that still has one, or
    /// after everything taken.
    pub(super) fn send_from_una(&mut self, start: u64) {
        let una = self.una;
        let from = (start..self.tail).find(|&s| {
            let e = self.get(s);
            e.kind != Kind::Local && e.status.is_none() && psn_diff(e.end_psn(), una) > 0
        });
        match from {
            Some(seq) => {
                let first = self.get(seq).first_psn;
                self.cur = seq;
                self.cur_pkt = psn_diff(una, first).max(0) as u32;
            }
            None => {
                self.cur = self.tail;
                self.cur_pkt = 0;
            }
        }
    }

    /// The ring position of WQE `seq`. (`max(1)` keeps the division
    /// free of a divide-by-zero panic path, which objtool of 6.12 cannot
    /// follow; the ring is never empty.)
    fn index(&self, seq: u64) -> usize {
        (seq % self.slots.len().max(1) as u64) as usize
    }

    pub(super) fn slot(&mut self, seq: u64) -> &mut Taken {
        let i = self.index(seq);
        &mut self.slots[i]
    }

    pub(super) fn get(&self, seq: u64) -> Taken {
        self.slots[self.index(seq)]
    }

    /// The oldest WQE still waiting for a READ or atomic response.
    pub(super) fn first_waiting(&self) -> Option<u64> {
        (self.head..self.tail).find(|&s| self.get(s).waits_response())
    }

    /// The READ (or FLUSH) waiting for its response whose PSNs hold `psn`:
    /// its sequence number, and the WQE.
    pub(super) fn read_for(&self, psn: u32) -> Option<(u64, Taken)> {
        let seq = self.first_waiting()?;
        let e = self.get(seq);
        (e.kind == Kind::Read && psn_diff(psn, e.first_psn) >= 0 && psn_diff(psn, e.end_psn()) < 0)
            .then_some((seq, e))
    }
}

/// One packet the work decided to send.
struct Step {
    seq: u64,
    pkt: u32,
    psn: u32,
    npkts: u32,
    kind: Kind,
    ack_req: bool,
    gen: u32,
    /// Sent twice: the probe after a second timeout in a row (see
    /// `ReqState::probe`).
    twice: bool,
    /// The packet, made under `req` and the send queue's lock, or the
    /// WQE's completion status if it could not be (bad local memory).
    built: core::result::Result<Built, WcStatus>,
}

/// The variable parts of a request packet whose payload is in the work's
/// `payload` buffer.
struct Built {
    opcode: Opcode,
    solicited: bool,
    ext: ExtHeaders,
    /// Payload bytes.
    len: usize,
}

enum Next {
    Packet(Step),
    /// A local operation to execute (WQE `seq`).
    Local(u64, WqeOp),
}

pub(super) fn now_ns() -> i64 {
    Ktime::ktime_get().to_ns()
}

pub(super) fn usecs_until(now: i64, t: i64) -> u32 {
    (((t - now).max(0) / 1000) as u64).min(u64::from(u32::MAX)) as u32
}

/// Whether step `s` may go in a run of packets without frames
/// (`RcQp::send_run`): a request packet made without error, sent once.
fn runs(s: &Step) -> bool {
    s.built.is_ok() && !s.twice && s.kind == Kind::Plain
}

/// Whether a run starts at step `s`: a packet that [`runs`] with more of
/// its message after it. A message of one packet (or the last packet of
/// one, alone) gains nothing from a run, whose first packet costs what a
/// packet sent alone does, and goes the usual way.
fn starts_run(s: &Step) -> bool {
    runs(s) && s.pkt + 1 < s.npkts
}

/// The kind and packet count of a WQE at path MTU `mtu`.
fn classify(w: &SendWqe, mtu: u32) -> (Kind, u32) {
    match w.opcode() {
        WrOpcode::Send
        | WrOpcode::SendWithImm
        | WrOpcode::SendWithInv
        | WrOpcode::RdmaWrite
        | WrOpcode::RdmaWriteWithImm => (Kind::Plain, segment::packet_count(w.length, mtu)),
        WrOpcode::AtomicWrite => (Kind::Plain, 1),
        WrOpcode::RdmaRead | WrOpcode::RdmaReadWithInv => {
            (Kind::Read, segment::packet_count(w.length, mtu))
        }
        WrOpcode::Flush => (Kind::Read, 1),
        WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => (Kind::Atomic, 1),
        _ => (Kind::Local, 0),
    }
}

pub(super) fn local_status(e: AccessError) -> WcStatus {
    match e {
        AccessError::Bounds => WcStatus::LocLenErr,
        _ => WcStatus::LocProtErr,
    }
}

impl RcQp {
    /// Back to nothing taken (RESET).
    pub(crate) fn req_reset(&self) {
        self.req.lock().clear();
    }

    /// RTS: the first PSN, the retry budgets.
    pub(crate) fn req_start(&self, sq_psn: u32, conn: &Conn) {
        let mut st = self.req.lock();
        st.clear();
        st.next_psn = sq_psn;
        st.una = sq_psn;
        st.retry_left = conn.retry_cnt;
        st.rnr_left = conn.rnr_retry;
        st.active = true;
    }

    /// The QP is in error or going away: send and complete nothing more
    /// (the core flushes the WQEs).
    pub(crate) fn req_stop(&self) {
        self.req.lock().active = false;
    }

    /// Sends what there is to send, at most `budget` packets (the QP's
    /// work, `rc.rs`): whether more may be left.
    pub(crate) fn requester_run(&self, qp: &ProviderQp, w: &mut WorkBuf, budget: u32) -> bool {
        let mut sent = 0;
        // A step made but not sent by a run (`send_run`): sent next, even
        // past the budget, as it was taken from the queue.
        let mut carry: Option<Next> = None;
        // The peer is not reached without frames (across the network, or a
        // fault armed): not looked for again in this call.
        let mut no_runs = false;
        while sent < budget || carry.is_some() {
            let conn = self.conn();
            // A carried step goes the usual way (a run handed it back).
            let carried = carry.is_some();
            let next = match carry.take() {
                Some(next) => next,
                None => {
                    let mut st = self.req.lock();
                    if !st.active || !matches!(qp.state(), QpState::Rts | QpState::Sqd) {
                        return false;
                    }
                    if !self.check_timers(&mut st, qp, &conn) {
                        return false;
                    }
                    match self.next_step(&mut st, qp, &conn, w) {
                        Some(n) => n,
                        None => return false,
                    }
                }
            };
            sent += 1;
            match next {
                Next::Local(seq, op) => {
                    let status = qp.execute_local(&op);
                    // What the operation held goes with no lock held.
                    drop(op);
                    let mut st = self.req.lock();
                    if st.active && seq >= st.head && seq < st.tail {
                        st.slot(seq).status = Some(status);
                        self.complete_ready(&mut st, qp);
                    }
                }
                Next::Packet(step) => {
                    let mut step = Some(step);
                    if !no_runs && !carried && step.as_ref().is_some_and(starts_run) {
                        match self.send_run(qp, &conn, w, &mut step, budget.saturating_sub(sent)) {
                            Some((more, rest)) => {
                                sent += more;
                                carry = rest;
                            }
                            None => no_runs = true,
                        }
                    }
                    // Still here: not handed over by a run.
                    let Some(step) = step else {
                        continue;
                    };
                    let mut res = self.send_request(qp, &conn, w, &step);
                    if step.twice && res.is_ok() {
                        res = self.send_request(qp, &conn, w, &step);
                    }
                    let mut st = self.req.lock();
                    self.record_sent(&mut st, qp, &conn, &step, res);
                    // Its ACK may have come before it was marked sent (on
                    // the loopback path, during the send itself).
                    self.complete_ready(&mut st, qp);
                }
            }
        }
        true
    }

    /// Records that the packet of `step` went (`res`: or why not), if the
    /// send position is still where the step was made (a retry or a reset
    /// since then moved it). Under `req`.
    fn record_sent(
        &self,
        st: &mut ReqState,
        qp: &ProviderQp,
        conn: &Conn,
        step: &Step,
        res: core::result::Result<(), WcStatus>,
    ) {
        if !st.active || st.gen != step.gen || st.cur != step.seq || st.cur_pkt != step.pkt {
            return;
        }
        if let Err(status) = res {
            // Completes in order once everything before it has; nothing
            // after it is taken.
            let e = st.slot(step.seq);
            e.status = Some(status);
            e.sent = true;
            st.halted = true;
            st.cur = step.seq + 1;
            st.cur_pkt = 0;
            return;
        }
        let e = st.slot(step.seq);
        if step.kind != Kind::Plain || step.pkt + 1 >= step.npkts {
            e.sent = true;
            st.cur = step.seq + 1;
            st.cur_pkt = 0;
        } else {
            st.cur_pkt += 1;
        }
        if self.uc {
            st.una = psn_add(step.psn, 1);
        } else if st.deadline.is_none() && st.una != st.next_psn {
            if let Some(t) = conn.timeout_us {
                st.deadline = Some(now_ns() + (t as i64) * 1000);
                qp.schedule_in(t.min(u64::from(u32::MAX)) as u32);
            }
        }
    }

    /// Sends a run of request packets, `first` (made) and the ones after
    /// it, to a QP of ours without frames, handing them to its responder
    /// under one taking of its lock (`resp.rs`, `responder_run`): the
    /// packets, what the responder does with each, the counters and the
    /// QPs' states are those of sending them one by one, without the
    /// lookups and locks each packet would take again. The run goes on
    /// while each next step is a request packet made without error and
    /// the responder took the last one with nothing to answer (an ACK
    /// asked for, as at the end of a message, ends it), at most `budget`
    /// packets after the first. Each next packet is made under `req` with
    /// the peer's `resp` held: the one place the two are nested, in that
    /// order (`Documentation/rxe.rst`, "Locking").
    ///
    /// Returns how many packets went after the first, and a step made but
    /// not sent, which the caller sends the usual way. `first` is taken
    /// when it was handed over; left, with nothing sent, when the peer
    /// would not take it this way. None, `first` left, when the peer is
    /// not reached without frames.
    fn send_run(
        &self,
        qp: &ProviderQp,
        conn: &Conn,
        w: &mut WorkBuf,
        first: &mut Option<Step>,
        budget: u32,
    ) -> Option<(u32, Option<Next>)> {
        let ip = conn.ip?;
        let target = xmit::direct_target(&self.rd, &ip, conn.dest_qpn)?;
        let Some(peer) = recv::direct_qp(&target, conn.dest_qpn) else {
            return Some((0, None));
        };
        let from = frame::src_gid(&ip);
        let mut delivered = 0u32;
        let mut carry = None;
        peer.provider::<RcQp>(|rc| {
            rc.responder_run(&peer, &from, self.uc, |deliver| {
                let Some(mut step) = first.take() else {
                    return;
                };
                loop {
                    // A fault armed since the run started: the packets
                    // from here on are frames, for it to act on.
                    if delivered > 0 && !xmit::frameless(&self.rd, &target, conn.dest_qpn) {
                        carry = Some(Next::Packet(step));
                        return;
                    }
                    let Some(headers) = self.request_headers(qp, conn, &step) else {
                        carry = Some(Next::Packet(step));
                        return;
                    };
                    let len = step.built.as_ref().map_or(0, |b| b.len);
                    let Ok(pkt) = packet::assemble(&headers, &w.payload[..len], MAX_PAYLOAD) else {
                        // Refused one way or the other: sent the usual
                        // way, which says how.
                        carry = Some(Next::Packet(step));
                        return;
                    };
                    xmit::count_direct(&self.rd);
                    if delivered > 0 {
                        self.rd.counters.inc(Counter::LoopbackRun);
                    }
                    let go_on = deliver(&pkt);
                    delivered += 1;
                    let mut st = self.req.lock();
                    self.record_sent(&mut st, qp, conn, &step, Ok(()));
                    if !go_on
                        || delivered > budget
                        || !st.active
                        || !matches!(qp.state(), QpState::Rts | QpState::Sqd)
                    {
                        return;
                    }
                    match self.next_step(&mut st, qp, conn, w) {
                        None => return,
                        Some(Next::Packet(s)) if runs(&s) => step = s,
                        Some(next) => {
                            carry = Some(next);
                            return;
                        }
                    }
                }
            });
        });
        if first.is_some() {
            // Not handed over: the peer is not an RC or UC QP that takes
            // requests from us.
            return Some((0, None));
        }
        let mut st = self.req.lock();
        self.complete_ready(&mut st, qp);
        Some((delivered.saturating_sub(1), carry))
    }

    /// The headers of the request packet of step `s` (made).
    fn request_headers(&self, qp: &ProviderQp, conn: &Conn, s: &Step) -> Option<Headers> {
        let b = s.built.as_ref().ok()?;
        self.headers(
            qp,
            conn,
            Out {
                opcode: b.opcode,
                psn: s.psn,
                ack_req: s.ack_req,
                solicited: b.solicited,
                ext: b.ext,
            },
        )
    }

    /// Handles an expired RNR wait or ACK timeout. False when sending must
    /// wait (the timer is armed) or the QP failed.
    fn check_timers(&self, st: &mut ReqState, qp: &ProviderQp, conn: &Conn) -> bool {
        let now = now_ns();
        if let Some(t) = st.rnr_until {
            if now < t {
                qp.schedule_in(usecs_until(now, t));
                return false;
            }
            st.rnr_until = None;
            self.restart(st);
        }
        if let Some(t) = st.deadline {
            if now < t {
                // ACKs moved the deadline since the timer was armed.
                qp.schedule_in(usecs_until(now, t));
                return true;
            }
            if st.una == st.next_psn {
                st.deadline = None;
                return true;
            }
            self.rd.counters.inc(Counter::Timeouts);
            if st.retry_left == 0 {
                self.rd.counters.inc(Counter::RetryExceededErr);
                self.fail_head(st, qp, WcStatus::RetryExcErr);
                return false;
            }
            st.retry_left -= 1;
            let t = conn.timeout_us.unwrap_or(0);
            st.deadline = Some(now + (t as i64) * 1000);
            qp.schedule_in(t.min(u64::from(u32::MAX)) as u32);
            self.retry(st);
            st.probe = true;
        }
        true
    }

    /// Decides the next packet (or local operation), taking a new WQE if
    /// everything taken is out. A packet is made here, its payload in
    /// `w.payload`, from the WQE read under the send queue's lock.
    fn next_step(
        &self,
        st: &mut ReqState,
        qp: &ProviderQp,
        conn: &Conn,
        w: &mut WorkBuf,
    ) -> Option<Next> {
        loop {
            if st.probe_sent {
                // Waiting for the answer to the probe.
                st.blocked = true;
                return None;
            }
            if st.cur < st.tail {
                let seq = st.cur;
                let e = st.get(seq);
                if e.kind == Kind::Local || e.status.is_some() {
                    st.cur += 1;
                    st.cur_pkt = 0;
                    continue;
                }
                let pkt = st.cur_pkt;
                // `head` cannot move while `req` is held: the WQE at this
                // index is the one of `seq`.
                let idx = (seq - st.head) as usize;
                let payload = &mut w.payload;
                let Some(built) = qp.sq_with(idx, |wqe| {
                    self.build_request(qp, conn, wqe, pkt, e.npkts, payload)
                }) else {
                    st.blocked = true;
                    return None;
                };
                let last = e.kind != Kind::Plain || pkt + 1 >= e.npkts;
                let ack_req = !self.uc && (last || st.noack + 1 >= ACK_EVERY || st.probe);
                st.noack = if ack_req { 0 } else { st.noack + 1 };
                // A probe lost, or its answer lost, after the first
                // timeout: from the second one in a row on, the probe goes
                // twice, so that a lossy path does not run out of retries
                // on single packets (the copy is a duplicate, answered).
                let twice = st.probe && st.retry_left + 1 < conn.retry_cnt;
                if st.probe {
                    st.probe_sent = true;
                }
                return Some(Next::Packet(Step {
                    twice,
                    seq,
                    pkt,
                    psn: psn_add(e.first_psn, pkt),
                    npkts: e.npkts,
                    kind: e.kind,
                    ack_req,
                    gen: st.gen,
                    built,
                }));
            }
            // SQD finishes what was taken and starts nothing new.
            if st.halted || qp.state() == QpState::Sqd {
                return None;
            }
            let idx = (st.tail - st.head) as usize;
            if psn_diff(st.next_psn, st.una) >= WINDOW as i32 || idx >= st.slots.len() {
                st.blocked = true;
                return None;
            }
            // What the requester keeps of the WQE is read under the
            // queue's lock. Nothing posted: posting schedules the work.
            let mtu = conn.mtu;
            let (kind, npkts, fence, len, send) = qp.sq_with(idx, |wqe| {
                let (kind, npkts) = classify(wqe, mtu);
                (
                    kind,
                    npkts,
                    wqe.flags.contains(SendFlags::FENCE),
                    wqe.length,
                    matches!(
                        wqe.op,
                        WqeOp::Send | WqeOp::SendWithImm(_) | WqeOp::SendWithInv(_)
                    ),
                )
            })?;
            let seq = st.tail;
            let waits = matches!(kind, Kind::Read | Kind::Atomic);
            if (waits && st.rd_out >= conn.max_rd_atomic) || (fence && st.rd_out > 0) {
                st.blocked = true;
                return None;
            }
            if !qp.sq_start() {
                return None;
            }
            let first_psn = st.next_psn;
            *st.slot(seq) = Taken {
                first_psn,
                npkts,
                kind,
                len,
                sent: false,
                send,
                status: None,
            };
            st.tail += 1;
            st.next_psn = psn_add(first_psn, npkts);
            if waits {
                st.rd_out += 1;
            }
            st.cur_pkt = 0;
            if kind == Kind::Local {
                st.cur = st.tail;
                // A local operation is taken out of the WQE (the MR and
                // window it holds, counted), to execute it and let go of
                // it with no lock held. None: the queue was flushed.
                let op = qp.sq_with(idx, |wqe| wqe.op.clone())?;
                return Some(Next::Local(seq, op));
            }
        }
    }

    /// Makes packet `pkt` of `npkts` of `wqe`: its variable headers, and
    /// its payload in `payload`. Called under `req` and the send queue's
    /// lock: it reads memory and nothing else. A local failure (bad local
    /// memory) is the WQE's completion status.
    fn build_request(
        &self,
        qp: &ProviderQp,
        conn: &Conn,
        wqe: &SendWqe,
        pkt: u32,
        npkts: u32,
        payload: &mut [u8],
    ) -> core::result::Result<Built, WcStatus> {
        let mtu = conn.mtu;
        let last = pkt + 1 >= npkts;
        let mut ext = ExtHeaders::default();
        let mut solicited = false;
        let (opcode, len): (Opcode, usize) = match wqe.op {
            WqeOp::Send
            | WqeOp::SendWithImm(_)
            | WqeOp::SendWithInv(_)
            | WqeOp::Write { .. }
            | WqeOp::WriteWithImm { .. } => {
                let imm = wqe.op.imm();
                let msg = match wqe.op {
                    WqeOp::Write { .. } | WqeOp::WriteWithImm { .. } => {
                        Message::Write { imm: imm.is_some() }
                    }
                    _ => Message::Send {
                        imm: imm.is_some(),
                        inv: wqe.op.send_invalidate().is_some(),
                    },
                };
                let op = segment::request_opcode(self.uc, msg, pkt, npkts)
                    .ok_or(WcStatus::LocQpOpErr)?;
                let (off, len) = segment::slice(pkt, wqe.length, mtu);
                fill(qp, wqe, off, &mut payload[..len as usize])?;
                if let (Message::Write { .. }, Some((va, rkey)), 0) = (msg, wqe.op.remote(), pkt) {
                    ext.reth = Some(Reth {
                        va,
                        rkey,
                        len: wqe.length,
                    });
                }
                if last {
                    solicited = wqe.flags.contains(SendFlags::SOLICITED);
                    if let Some(imm) = imm {
                        ext.immdt = Some(ImmDt { imm });
                    }
                    if let Some(rkey) = wqe.op.send_invalidate() {
                        ext.ieth = Some(Ieth { rkey });
                    }
                }
                (op, len as usize)
            }
            WqeOp::Read { remote_addr, rkey }
            | WqeOp::ReadWithInv {
                remote_addr, rkey, ..
            } => {
                // Sent again from packet `pkt` of its response: a request
                // for the rest.
                let (off, _) = segment::slice(pkt, wqe.length, mtu);
                ext.reth = Some(Reth {
                    va: remote_addr.wrapping_add(u64::from(off)),
                    rkey,
                    len: wqe.length - off,
                });
                (Opcode::RcRdmaReadRequest, 0)
            }
            WqeOp::CmpAndSwp {
                remote_addr,
                rkey,
                compare,
                swap,
            } => {
                ext.atomic_eth = Some(AtomicEth {
                    va: remote_addr,
                    rkey,
                    swap_add: swap,
                    compare,
                });
                (Opcode::RcCompareSwap, 0)
            }
            WqeOp::FetchAndAdd {
                remote_addr,
                rkey,
                add,
            } => {
                ext.atomic_eth = Some(AtomicEth {
                    va: remote_addr,
                    rkey,
                    swap_add: add,
                    compare: 0,
                });
                (Opcode::RcFetchAdd, 0)
            }
            WqeOp::AtomicWrite { remote_addr, rkey } => {
                fill(qp, wqe, 0, &mut payload[..8])?;
                ext.reth = Some(Reth {
                    va: remote_addr,
                    rkey,
                    len: 8,
                });
                (Opcode::RcAtomicWrite, 8)
            }
            WqeOp::Flush {
                remote_addr,
                rkey,
                length,
                flush,
                whole_mr,
            } => {
                let placement = u8::from(flush.global) | (u8::from(flush.persistent) << 1);
                ext.feth = Some(Feth::new(u8::from(whole_mr), placement));
                ext.reth = Some(Reth {
                    va: remote_addr,
                    rkey,
                    len: if whole_mr {
                        0
                    } else {
                        length.min(u64::from(u32::MAX)) as u32
                    },
                });
                (Opcode::RcFlush, 0)
            }
            _ => return Err(WcStatus::LocQpOpErr),
        };
        Ok(Built {
            opcode,
            solicited,
            ext,
            len,
        })
    }

    /// Sends the packet of step `s`, made by [`RcQp::build_request`], with
    /// no lock held. Its local failure is the WQE's completion status; a
    /// packet the network refused counts as lost.
    fn send_request(
        &self,
        qp: &ProviderQp,
        conn: &Conn,
        w: &mut WorkBuf,
        s: &Step,
    ) -> core::result::Result<(), WcStatus> {
        let b = s.built.as_ref().map_err(|status| *status)?;
        let headers = self
            .request_headers(qp, conn, s)
            .ok_or(WcStatus::LocLenErr)?;
        let WorkBuf { pkt: buf, payload } = w;
        match xmit::send(
            &self.rd,
            Some(&self.route),
            &headers,
            &payload[..b.len],
            buf,
        ) {
            Ok(()) => Ok(()),
            // Lost: the ACK timeout sends it again.
            Err(SendError::Network) => Ok(()),
            Err(SendError::Build) => Err(WcStatus::LocLenErr),
        }
    }
}

/// Fills `out` with the WQE's data from byte `off`: inline data or its
/// SGEs' memory.
fn fill(
    qp: &ProviderQp,
    w: &SendWqe,
    off: u32,
    out: &mut [u8],
) -> core::result::Result<(), WcStatus> {
    if w.inline {
        let off = off as usize;
        let src = w
            .inline_data
            .get(off..off + out.len())
            .ok_or(WcStatus::LocLenErr)?;
        out.copy_from_slice(src);
        return Ok(());
    }
    qp.gather(w.sges(), u64::from(off), out)
        .map_err(local_status)
}
