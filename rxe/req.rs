// SPDX-License-Identifier: GPL-2.0

//! The requester of an RC or UC QP, and (RC) its completer.
//!
//! The requester takes send WQEs in order, gives each its PSNs (one per
//! packet; a READ takes as many as its response has packets), and sends
//! their packets from the QP's work, at most [`WINDOW`] PSNs beyond the
//! oldest unacknowledged one. It remembers, per WQE taken, only its first
//! PSN, its packet count and kind; the WQE itself stays in the core's ring
//! and is read again ([`QpCore::sq_peek`]) to send a packet a second time.
//!
//! The completer takes ACKs, NAKs and READ/atomic responses (softirq),
//! moves the oldest unacknowledged PSN (`una`) forward and completes WQEs
//! in order. A NAK for a PSN sequence error, a local ACK timeout, an RNR
//! NAK (after its timer) or a READ response gap sends again from `una`,
//! resuming a message in its middle (a READ as a new request for the rest
//! of its data). UC has no completer: a WQE completes once its packets are
//! out.

use core::sync::atomic::Ordering;

use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::time::Ktime;

use rdma::mr::{self, AccessError};
use rdma::qp::QpCore;
use rdma::qp_state::QpState;
use rdma::verbs::{SendFlags, WcStatus, WrOpcode};
use rdma::wr::{SendWqe, MAX_SGE};

use crate::proto::headers::{AtomicEth, ExtHeaders, Feth, Ieth, ImmDt, NakCode, Reth, Syndrome};
use crate::proto::opcode::{Opcode, Operation};
use crate::proto::packet::Packet;
use crate::proto::psn::{psn_add, psn_diff, psn_sub};
use crate::proto::segment::{self, Message};
use crate::rc::{Conn, Out, RcQp, WorkBuf};
use crate::xmit::SendError;

/// The most PSNs sent and not acknowledged.
pub(crate) const WINDOW: u32 = 128;

/// An ACK is asked for at least every this many packets.
const ACK_EVERY: u32 = 32;

/// Packets the work sends per run before letting others run.
const BUDGET: u32 = 128;

/// What a WQE taken by the requester is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
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
struct Taken {
    first_psn: u32,
    npkts: u32,
    kind: Kind,
    len: u32,
    /// Every packet went out at least once.
    sent: bool,
    /// The result, once known before any ACK (local operations, and
    /// requests that failed locally).
    status: Option<WcStatus>,
}

impl Taken {
    const EMPTY: Taken = Taken {
        first_psn: 0,
        npkts: 0,
        kind: Kind::Local,
        len: 0,
        sent: false,
        status: None,
    };

    fn end_psn(&self) -> u32 {
        psn_add(self.first_psn, self.npkts)
    }

    fn waits_response(&self) -> bool {
        matches!(self.kind, Kind::Read | Kind::Atomic)
    }
}

/// The requester's state.
pub(crate) struct ReqState {
    /// The WQEs taken and not completed, by sequence number modulo the
    /// length.
    slots: KVec<Taken>,
    /// Sequence number of the oldest WQE taken.
    head: u64,
    /// Sequence number the next WQE taken gets.
    tail: u64,
    /// The WQE to send a packet of next, and which packet.
    cur: u64,
    cur_pkt: u32,
    /// PSN of the next new packet.
    next_psn: u32,
    /// The oldest PSN not acknowledged.
    una: u32,
    /// Packets sent since the last one that asked for an ACK.
    noack: u32,
    /// READs and atomics outstanding.
    rd_out: u32,
    retry_left: u8,
    rnr_left: u8,
    /// Local ACK timeout deadline (ns, monotonic).
    deadline: Option<i64>,
    /// Sending waits until then after an RNR NAK.
    rnr_until: Option<i64>,
    /// Changes when sending restarts from `una`, so a packet built before
    /// does not move the send position.
    gen: u32,
    /// A READ response gap already asked for a resend.
    gap_retry: bool,
    /// After a timeout: send one packet (asking for an ACK) and wait for
    /// its answer before sending more, so recovery does not add to the
    /// congestion that may have caused the loss.
    probe: bool,
    probe_sent: bool,
    /// In RTS with a connection.
    active: bool,
    /// A request failed locally: take no more WQEs.
    halted: bool,
    /// The work stopped with WQEs waiting for an answer of the responder
    /// (window, slots, READ/atomic credits, fence, probe): the next ACK
    /// that makes progress schedules it. Any other ACK does not, so a
    /// stream of ACKs does not wake the work for nothing.
    blocked: bool,
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

    fn clear(&mut self) {
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
    fn send_from_una(&mut self, start: u64) {
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

    fn slot(&mut self, seq: u64) -> &mut Taken {
        let n = self.slots.len() as u64;
        &mut self.slots[(seq % n) as usize]
    }

    fn get(&self, seq: u64) -> Taken {
        let n = self.slots.len() as u64;
        self.slots[(seq % n) as usize]
    }

    /// The oldest WQE still waiting for a READ or atomic response.
    fn first_waiting(&self) -> Option<u64> {
        (self.head..self.tail).find(|&s| self.get(s).waits_response())
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
}

enum Next {
    Packet(Step),
    Local(u64),
}

fn now_ns() -> i64 {
    Ktime::ktime_get().to_ns()
}

fn usecs_until(now: i64, t: i64) -> u32 {
    (((t - now).max(0) / 1000) as u64).min(u64::from(u32::MAX)) as u32
}

/// The kind and packet count of a WQE at path MTU `mtu`.
fn classify(w: &SendWqe, mtu: u32) -> (Kind, u32) {
    match w.opcode {
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

fn local_status(e: AccessError) -> WcStatus {
    match e {
        AccessError::Bounds => WcStatus::LocLenErr,
        _ => WcStatus::LocProtErr,
    }
}

/// Executes a local operation: its completion status.
fn execute_local(qp: &QpCore, w: &SendWqe) -> WcStatus {
    let dev = qp.device();
    match w.opcode {
        WrOpcode::LocalInv => match dev.invalidate_key(w.invalidate_rkey) {
            Ok(()) => WcStatus::Success,
            Err(_) => WcStatus::LocProtErr,
        },
        WrOpcode::RegMr => match &w.mr {
            Some(m) if m.fast_reg(w.reg_key, w.reg_access).is_ok() => WcStatus::Success,
            _ => WcStatus::LocProtErr,
        },
        WrOpcode::BindMw => match (&w.mw, &w.mr) {
            (Some(mw), Some(m))
                if mw
                    .bind(qp, m, w.reg_key, w.bind_addr, w.bind_length, w.reg_access)
                    .is_ok() =>
            {
                WcStatus::Success
            }
            _ => WcStatus::MwBindErr,
        },
        _ => WcStatus::LocQpOpErr,
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

    /// Sends what there is to send (the QP's work).
    pub(crate) fn requester_run(&self, qp: &Arc<QpCore>, w: &mut WorkBuf) {
        for _ in 0..BUDGET {
            let conn = self.conn();
            let next = {
                let mut st = self.req.lock();
                if !st.active || !matches!(qp.state(), QpState::Rts | QpState::Sqd) {
                    return;
                }
                if !self.check_timers(&mut st, qp, &conn) {
                    return;
                }
                match self.next_step(&mut st, qp, &conn, w) {
                    Some(n) => n,
                    None => return,
                }
            };
            match next {
                Next::Local(seq) => {
                    let status = execute_local(qp, &w.wqe);
                    let mut st = self.req.lock();
                    if st.active && seq >= st.head && seq < st.tail {
                        st.slot(seq).status = Some(status);
                        self.complete_ready(&mut st, qp);
                    }
                }
                Next::Packet(step) => {
                    let res = self.send_request(qp, &conn, w, &step);
                    let mut st = self.req.lock();
                    if !st.active
                        || st.gen != step.gen
                        || st.cur != step.seq
                        || st.cur_pkt != step.pkt
                    {
                        continue;
                    }
                    if let Err(status) = res {
                        // Completes in order once everything before it has;
                        // nothing after it is taken.
                        let e = st.slot(step.seq);
                        e.status = Some(status);
                        e.sent = true;
                        st.halted = true;
                        st.cur = step.seq + 1;
                        st.cur_pkt = 0;
                        self.complete_ready(&mut st, qp);
                        continue;
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
                    // Its ACK may have come before it was marked sent (on
                    // the loopback path, during the send itself).
                    self.complete_ready(&mut st, qp);
                }
            }
        }
        // More to do: let other work run first.
        qp.schedule();
    }

    /// Handles an expired RNR wait or ACK timeout. False when sending must
    /// wait (the timer is armed) or the QP failed.
    fn check_timers(&self, st: &mut ReqState, qp: &Arc<QpCore>, conn: &Conn) -> bool {
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
            self.rd.counters.timeouts.fetch_add(1, Ordering::Relaxed);
            if st.retry_left == 0 {
                self.fail_head(st, qp, WcStatus::RetryExcErr);
                return false;
            }
            st.retry_left -= 1;
            let t = conn.timeout_us.unwrap_or(0);
            st.deadline = Some(now + (t as i64) * 1000);
            qp.schedule_in(t.min(u64::from(u32::MAX)) as u32);
            self.restart(st);
            st.probe = true;
        }
        true
    }

    /// Decides the next packet (or local operation), taking a new WQE if
    /// everything taken is out. The WQE is copied to `w.wqe`.
    fn next_step(
        &self,
        st: &mut ReqState,
        qp: &QpCore,
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
                if w.wqe_seq != Some(seq) {
                    if !qp.sq_peek((seq - st.head) as usize, &mut w.wqe) {
                        st.blocked = true;
                        return None;
                    }
                    w.wqe_seq = Some(seq);
                }
                let pkt = st.cur_pkt;
                let last = e.kind != Kind::Plain || pkt + 1 >= e.npkts;
                let ack_req = !self.uc && (last || st.noack + 1 >= ACK_EVERY || st.probe);
                st.noack = if ack_req { 0 } else { st.noack + 1 };
                if st.probe {
                    st.probe_sent = true;
                }
                return Some(Next::Packet(Step {
                    seq,
                    pkt,
                    psn: psn_add(e.first_psn, pkt),
                    npkts: e.npkts,
                    kind: e.kind,
                    ack_req,
                    gen: st.gen,
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
            // Nothing posted: posting schedules the work.
            if !qp.sq_peek(idx, &mut w.wqe) {
                return None;
            }
            let seq = st.tail;
            w.wqe_seq = Some(seq);
            let (kind, npkts) = classify(&w.wqe, conn.mtu);
            let waits = matches!(kind, Kind::Read | Kind::Atomic);
            if (waits && st.rd_out >= conn.max_rd_atomic)
                || (w.wqe.flags.contains(SendFlags::FENCE) && st.rd_out > 0)
            {
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
                len: w.wqe.length,
                sent: false,
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
                return Some(Next::Local(seq));
            }
        }
    }

    /// Builds and sends packet `s.pkt` of the WQE in `w.wqe`. A local
    /// failure (bad local memory) is the WQE's completion status; a packet
    /// the network refused counts as lost.
    fn send_request(
        &self,
        qp: &QpCore,
        conn: &Conn,
        w: &mut WorkBuf,
        s: &Step,
    ) -> core::result::Result<(), WcStatus> {
        let WorkBuf {
            pkt: buf,
            payload,
            wqe,
            ..
        } = w;
        let mtu = conn.mtu;
        let last = s.pkt + 1 >= s.npkts;
        let mut ext = ExtHeaders::default();
        let mut solicited = false;
        let (opcode, data): (Opcode, &[u8]) = match wqe.opcode {
            WrOpcode::Send
            | WrOpcode::SendWithImm
            | WrOpcode::SendWithInv
            | WrOpcode::RdmaWrite
            | WrOpcode::RdmaWriteWithImm => {
                let imm = wqe.opcode.has_imm();
                let msg = match wqe.opcode {
                    WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm => Message::Write { imm },
                    op => Message::Send {
                        imm,
                        inv: op == WrOpcode::SendWithInv,
                    },
                };
                let op = segment::request_opcode(self.uc, msg, s.pkt, s.npkts)
                    .ok_or(WcStatus::LocQpOpErr)?;
                let (off, len) = segment::slice(s.pkt, wqe.length, mtu);
                let data = &mut payload[..len as usize];
                fill(qp, wqe, off, data)?;
                if matches!(msg, Message::Write { .. }) && s.pkt == 0 {
                    ext.reth = Some(Reth {
                        va: wqe.remote_addr,
                        rkey: wqe.rkey,
                        len: wqe.length,
                    });
                }
                if last {
                    solicited = wqe.flags.contains(SendFlags::SOLICITED);
                    if imm {
                        ext.immdt = Some(ImmDt { imm: wqe.imm });
                    }
                    if wqe.opcode == WrOpcode::SendWithInv {
                        ext.ieth = Some(Ieth {
                            rkey: wqe.invalidate_rkey,
                        });
                    }
                }
                (op, &*data)
            }
            WrOpcode::RdmaRead | WrOpcode::RdmaReadWithInv => {
                // Sent again from packet `pkt` of its response: a request
                // for the rest.
                let (off, _) = segment::slice(s.pkt, wqe.length, mtu);
                ext.reth = Some(Reth {
                    va: wqe.remote_addr.wrapping_add(u64::from(off)),
                    rkey: wqe.rkey,
                    len: wqe.length - off,
                });
                (Opcode::RcRdmaReadRequest, &[][..])
            }
            WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => {
                let cmp = wqe.opcode == WrOpcode::AtomicCmpAndSwp;
                ext.atomic_eth = Some(AtomicEth {
                    va: wqe.remote_addr,
                    rkey: wqe.rkey,
                    swap_add: if cmp { wqe.swap } else { wqe.compare_add },
                    compare: if cmp { wqe.compare_add } else { 0 },
                });
                let op = if cmp {
                    Opcode::RcCompareSwap
                } else {
                    Opcode::RcFetchAdd
                };
                (op, &[][..])
            }
            WrOpcode::AtomicWrite => {
                let data = &mut payload[..8];
                fill(qp, wqe, 0, data)?;
                ext.reth = Some(Reth {
                    va: wqe.remote_addr,
                    rkey: wqe.rkey,
                    len: 8,
                });
                (Opcode::RcAtomicWrite, &*data)
            }
            WrOpcode::Flush => {
                let placement = u8::from(wqe.flush.global) | (u8::from(wqe.flush.persistent) << 1);
                ext.feth = Some(Feth::new(u8::from(wqe.flush_whole_mr), placement));
                ext.reth = Some(Reth {
                    va: wqe.remote_addr,
                    rkey: wqe.rkey,
                    len: if wqe.flush_whole_mr {
                        0
                    } else {
                        wqe.bind_length.min(u64::from(u32::MAX)) as u32
                    },
                });
                (Opcode::RcFlush, &[][..])
            }
            _ => return Err(WcStatus::LocQpOpErr),
        };
        let out = Out {
            opcode,
            psn: s.psn,
            ack_req: s.ack_req,
            solicited,
            ext,
        };
        match self.send(qp, conn, out, data, buf) {
            Ok(()) => Ok(()),
            // Lost: the ACK timeout sends it again.
            Err(SendError::Network) => Ok(()),
            Err(SendError::Build) => Err(WcStatus::LocLenErr),
        }
    }

    /// Completes the WQEs at the head that are done, in order.
    fn complete_ready(&self, st: &mut ReqState, qp: &Arc<QpCore>) {
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
    fn pop_complete(
        &self,
        st: &mut ReqState,
        qp: &Arc<QpCore>,
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
        qp.sq_complete(status, len);
        status == WcStatus::Success
    }

    /// Fails the head WQE with `status`: the QP goes to the error state.
    fn fail_head(&self, st: &mut ReqState, qp: &Arc<QpCore>, status: WcStatus) {
        if st.head < st.tail {
            self.pop_complete(st, qp, status, 0);
        }
        st.active = false;
    }

    /// Sending starts again from `una`.
    fn restart(&self, st: &mut ReqState) {
        st.gen = st.gen.wrapping_add(1);
        st.noack = 0;
        st.probe = false;
        st.probe_sent = false;
        self.rd.counters.retransmits.fetch_add(1, Ordering::Relaxed);
        st.send_from_una(st.head);
    }

    /// After a restart, an ACK may show the responder had more than was
    /// thought (the ACK was late, not lost): sending skips ahead to `una`
    /// instead of repeating what is acknowledged.
    fn catch_up(&self, st: &mut ReqState) {
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
    fn ack_through(&self, st: &mut ReqState, qp: &Arc<QpCore>, conn: &Conn, a: u32) {
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
            self.restart(st);
            qp.schedule();
        }
    }

    /// `una` moved: the retry budgets start again, and so does the ACK
    /// timer if something is still outstanding.
    fn progress(&self, st: &mut ReqState, qp: &Arc<QpCore>, conn: &Conn) {
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
    fn wake(&self, st: &mut ReqState, qp: &Arc<QpCore>) {
        if st.blocked {
            st.blocked = false;
            qp.schedule();
        }
    }

    /// An ACK, NAK or READ/atomic response arrived: whether it was taken.
    pub(crate) fn completer_receive(
        &self,
        qp: &Arc<QpCore>,
        conn: &Conn,
        pkt: &Packet<'_>,
    ) -> bool {
        if !matches!(qp.state(), QpState::Rts | QpState::Sqd | QpState::Sqe) {
            return false;
        }
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
                        self.rd.counters.rnr_naks_rx.fetch_add(1, Ordering::Relaxed);
                        if st.rnr_left == 0 {
                            self.fail_head(&mut st, qp, WcStatus::RnrRetryExcErr);
                            return true;
                        }
                        if st.rnr_left != 7 {
                            st.rnr_left -= 1;
                        }
                        let us = crate::proto::headers::rnr_timer_usec(timer);
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
                                self.restart(&mut st);
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
                self.read_response(&mut st, qp, conn, pkt);
                true
            }
            _ => false,
        }
    }

    fn read_response(&self, st: &mut ReqState, qp: &Arc<QpCore>, conn: &Conn, pkt: &Packet<'_>) {
        let psn = pkt.psn();
        let Some(seq) = st.first_waiting() else {
            return;
        };
        let e = st.get(seq);
        if e.kind != Kind::Read || psn_diff(psn, e.first_psn) < 0 || psn_diff(psn, e.end_psn()) >= 0
        {
            return;
        }
        // The response implies the ACK of everything before the READ.
        self.ack_through(st, qp, conn, psn_sub(e.first_psn, 1));
        if !st.active || st.head != seq {
            return;
        }
        if psn != st.una {
            // A response is missing: ask for the rest once.
            if psn_diff(psn, st.una) > 0 && !st.gap_retry {
                st.gap_retry = true;
                self.restart(st);
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
        let inv = qp.sq_with(0, |w| {
            (w.opcode == WrOpcode::RdmaReadWithInv).then_some(w.invalidate_rkey)
        });
        if let Some(Some(key)) = inv {
            if qp.device().invalidate_key(key).is_err() {
                status = WcStatus::LocProtErr;
            }
        }
        if self.pop_complete(st, qp, status, e.len) {
            self.complete_ready(st, qp);
        }
    }

    /// Writes response data into the head WQE's local memory.
    fn scatter_head(
        &self,
        qp: &QpCore,
        off: u64,
        data: &[u8],
    ) -> core::result::Result<(), WcStatus> {
        let Some((sge, n)) = qp.sq_with(0, |w| (w.sge, w.num_sge)) else {
            return Err(WcStatus::WrFlushErr);
        };
        mr::scatter(qp.device(), qp.pd(), &sge[..n.min(MAX_SGE)], off, data).map_err(local_status)
    }
}

/// Fills `out` with the WQE's data from byte `off`: inline data or its
/// SGEs' memory.
fn fill(qp: &QpCore, w: &SendWqe, off: u32, out: &mut [u8]) -> core::result::Result<(), WcStatus> {
    if w.inline {
        let off = off as usize;
        let src = w
            .inline_data
            .get(off..off + out.len())
            .ok_or(WcStatus::LocLenErr)?;
        out.copy_from_slice(src);
        return Ok(());
    }
    mr::gather(qp.device(), qp.pd(), w.sges(), u64::from(off), out).map_err(local_status)
}
