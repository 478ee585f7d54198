// SPDX-License-Identifier: GPL-2.0

//! The responder of an RC or UC QP.
//!
//! Requests are taken in PSN order (softirq, or the sender's context on
//! the loopback path): SEND data goes into the receive WQE taken at the
//! message's first packet, RDMA WRITE data into the memory its RETH names
//! (checked on the first packet and again on every copy), atomics execute
//! at once and are remembered for a replay, and READ and FLUSH requests
//! are queued for the QP's work, which sends their responses.
//!
//! RC answers: an ACK where the requester asked for one, an RNR NAK when
//! no receive WQE is posted (the PSN is not consumed, the requester tries
//! again after the advertised timer), a PSN sequence NAK once per gap, a
//! second answer to duplicates (ACK again, READ again, atomic replayed),
//! and for invalid requests, access violations and bad receive memory a
//! NAK after which the QP is in the error state (a RETH length over 2^31
//! among them). UC answers nothing: a gap or an error drops the rest of
//! the message, and the receive WQE it had is used for the next one (one
//! from an SRQ that the message did not fit completes with an error, the
//! QP staying in RTS); a first packet at any PSN starts a new message.

use core::sync::atomic::Ordering;

use kernel::prelude::*;

use rdma::provider::ratelimit::log_allowed;
use rdma::provider::{
    Access, EventKind, Gid, ProviderQp, RecvWqe, TaggedRecv, Wc, WcFlags, WcOpcode, WcStatus,
};

use crate::counters::Counter;
use crate::net::xmit::SMALL_ROOM;
use crate::transport::rc::{Conn, Out, RcQp, WorkBuf};
use crate::wire::headers::{Aeth, AtomicAckEth, ExtHeaders, NakCode, Reth, Syndrome};
use crate::wire::opcode::{Opcode, Operation, Position};
use crate::wire::packet::Packet;
use crate::wire::psn::{psn_add, psn_diff, psn_sub};
use crate::wire::segment;

mod tm;

/// READ and FLUSH requests queued at most: the largest
/// `max_dest_rd_atomic` the device advertises (`max_qp_rd_atom`). A QP
/// takes as many as its own `max_dest_rd_atomic` (at least one).
pub(crate) const MAX_READS: usize = 128;

/// Answers queued at most: every READ with an ACK or an atomic answer
/// behind it.
const QUEUE: usize = 2 * MAX_READS;

/// Atomic results kept for replays: one for every atomic a requester can
/// have outstanding at the most `max_dest_rd_atomic` advertised.
const REPLAYS: usize = MAX_READS;

/// The largest DMA length a RETH may carry (IBTA C9-94).
const MAX_DMA_LEN: u32 = 1 << 31;

/// The credit field of an ACK: rxe advertises no credits.
const NO_CREDITS: u8 = Syndrome::CREDITS_INVALID;

/// The message being received.
enum Cur {
    None,
    Send {
        wqe: RecvWqe,
        off: u32,
        /// A TM SRQ's message in an ordinary receive: how it completes.
        tm: Option<tm::TmInfo>,
    },
    /// A TM SRQ's eager message in the tagged buffer it matched (its
    /// `TM_MATCH` completion went out with the first packet).
    Tagged {
        t: TaggedRecv,
        /// Data bytes placed (the TMH is not placed).
        off: u32,
    },
    Write {
        va: u64,
        rkey: u32,
        resid: u32,
        total: u32,
    },
}

/// An answer the work sends, in PSN order: a READ or FLUSH response, or
/// an ACK that must not overtake the READ responses queued before it.
#[derive(Clone, Copy, Default)]
struct ReadJob {
    psn: u32,
    va: u64,
    rkey: u32,
    len: u32,
    /// Response packets sent.
    sent: u32,
    /// Not a READ: this answer (`Reply::None`: a READ given up, see
    /// [`RespState::recycle`]).
    reply: Option<Reply>,
    /// Holds one of the QP's READ resources (`max_dest_rd_atomic`): from
    /// when it is queued until its last response packet goes out, which
    /// is when the requester may count the READ done and send another.
    held: bool,
    /// A duplicate READ executed again: its response went out in full
    /// before, so the requester may have it and be done with the READ.
    replay: bool,
}

/// The responder's state.
pub(crate) struct RespState {
    /// The PSN expected next.
    epsn: u32,
    /// Message sequence number: requests completed.
    msn: u32,
    cur: Cur,
    /// UC: a receive WQE kept from a dropped message.
    spare: Option<RecvWqe>,
    /// UC: the rest of the message is dropped.
    drop_msg: bool,
    /// A sequence NAK went out for the current gap.
    nak_sent: bool,
    reads: KVec<ReadJob>,
    read_head: usize,
    read_count: usize,
    /// How many of the queued jobs hold a READ resource (`ReadJob::held`),
    /// for the `max_dest_rd_atomic` limit.
    reads_queued: usize,
    /// (PSN, original value, valid) of the last atomics executed.
    replays: KVec<(u32, u64, bool)>,
    replay_next: usize,
    active: bool,
}

impl RespState {
    pub(crate) fn new() -> Result<RespState> {
        Ok(RespState {
            epsn: 0,
            msn: 0,
            cur: Cur::None,
            spare: None,
            drop_msg: false,
            nak_sent: false,
            reads: KVec::from_elem(ReadJob::default(), QUEUE, GFP_KERNEL)?,
            read_head: 0,
            read_count: 0,
            reads_queued: 0,
            replays: KVec::from_elem((0, 0, false), REPLAYS, GFP_KERNEL)?,
            replay_next: 0,
            active: false,
        })
    }

    /// Back to nothing received; returns the message in progress and the
    /// receive WQE kept.
    fn clear(&mut self) -> (Cur, Option<RecvWqe>) {
        let cur = core::mem::replace(&mut self.cur, Cur::None);
        let spare = self.spare.take();
        self.drop_msg = false;
        self.nak_sent = false;
        self.read_head = 0;
        self.read_count = 0;
        self.reads_queued = 0;
        self.replays.iter_mut().for_each(|r| *r = (0, 0, false));
        self.active = false;
        (cur, spare)
    }

    /// READ and FLUSH requests holding a resource (not yet answered in
    /// full).
    fn reads_pending(&self) -> usize {
        self.reads_queued
    }

    /// Queues a READ or FLUSH (holding a resource, within the QP's
    /// `limit`) or an answer.
    fn push_read(&mut self, mut job: ReadJob, limit: usize) -> bool {
        let is_read = job.reply.is_none();
        if self.read_count >= QUEUE {
            return false;
        }
        // A replay finds room or is dropped (the requester asks again); a
        // new READ may take a replay's resource.
        if is_read && self.reads_queued >= limit && (job.replay || !self.recycle()) {
            return false;
        }
        job.held = is_read;
        let at = (self.read_head + self.read_count) % QUEUE;
        self.reads[at] = job;
        self.read_count += 1;
        self.reads_queued += usize::from(is_read);
        true
    }

    /// A new READ found every resource held: gives up the oldest replay
    /// (by PSN) that holds one, if any. The requester counts a READ until
    /// its response is in, and completes READs in order, so the READs it
    /// has outstanding are its latest ones; with every resource held and
    /// one more READ sent within its limit, a resource is held for a READ
    /// it has done with, and only a replay can be one (a READ answered in
    /// full once and asked for again by a retry that crossed that answer),
    /// the oldest replay first. The resources are recycled, oldest first,
    /// as the C rxe recycles its own.
    fn recycle(&mut self) -> bool {
        let mut oldest: Option<usize> = None;
        for i in 0..self.read_count {
            let at = (self.read_head + i) % QUEUE;
            let job = &self.reads[at];
            if job.held
                && job.replay
                && oldest.map_or(true, |o| psn_diff(job.psn, self.reads[o].psn) < 0)
            {
                oldest = Some(at);
            }
        }
        let Some(at) = oldest else {
            return false;
        };
        // Left in the queue as an answer that sends nothing: the work
        // takes it off when it reaches it (it may be sending from it).
        self.reads[at].held = false;
        self.reads[at].reply = Some(Reply::None);
        self.reads_queued -= 1;
        true
    }

    /// The front job's last response packet is about to go: its READ
    /// resource is free from now on, since the requester may complete the
    /// READ, and send another, before the send returns.
    fn release_front(&mut self) {
        if self.read_count > 0 && self.reads[self.read_head].held {
            self.reads[self.read_head].held = false;
            self.reads_queued -= 1;
        }
    }

    /// Takes the front job off the queue (answered in full).
    fn pop_front(&mut self) {
        if let Some(front) = self.front_read() {
            self.reads_queued -= usize::from(front.held);
            self.read_head = (self.read_head + 1) % QUEUE;
            self.read_count -= 1;
        }
    }

    /// Queues an answer behind the READ responses. A plain ACK replaces
    /// one queued last (it acknowledges everything that one did); with the
    /// queue full the answer is dropped, and the requester's retry gets
    /// another.
    fn queue_reply(&mut self, reply: Reply) {
        if self.read_count > 0 {
            let last = (self.read_head + self.read_count - 1) % QUEUE;
            let plain = |r: &Option<Reply>| {
                matches!(
                    r,
                    Some(Reply::Ack {
                        syndrome: Syndrome::Ack { .. },
                        ..
                    })
                )
            };
            if plain(&self.reads[last].reply) && plain(&Some(reply)) {
                self.reads[last].reply = Some(reply);
                return;
            }
        }
        let _ = self.push_read(
            ReadJob {
                reply: Some(reply),
                ..ReadJob::default()
            },
            QUEUE,
        );
    }

    /// A READ asked for again from PSN `psn`: if the job that answers it
    /// is still queued, it restarts (or skips ahead) to that packet.
    fn rewind_read(&mut self, psn: u32, mtu: u32) -> bool {
        for i in 0..self.read_count {
            let at = (self.read_head + i) % QUEUE;
            let job = &mut self.reads[at];
            if job.reply.is_some() {
                continue;
            }
            let k = psn_diff(psn, job.psn);
            if k >= 0 && (k as u32) < segment::packet_count(job.len, mtu) {
                job.sent = k as u32;
                return true;
            }
        }
        false
    }

    fn front_read(&self) -> Option<ReadJob> {
        (self.read_count > 0).then(|| self.reads[self.read_head])
    }

    fn replay(&self, psn: u32) -> Option<u64> {
        self.replays
            .iter()
            .find(|&&(p, _, valid)| valid && p == psn)
            .map(|&(_, orig, _)| orig)
    }

    fn remember(&mut self, psn: u32, orig: u64) {
        self.replays[self.replay_next] = (psn, orig, true);
        self.replay_next = (self.replay_next + 1) % REPLAYS;
    }

    /// Takes the receive WQE a new message goes into.
    fn take_wqe(&mut self, qp: &ProviderQp) -> Option<RecvWqe> {
        self.spare.take().or_else(|| qp.rq_take())
    }

    /// UC: drops the message in progress. Its receive WQE is kept for the
    /// next message, or, taken from an SRQ, completes with
    /// `REM_INV_REQ_ERR` (the C rxe's class E); the QP stays in its state.
    fn drop_message(&mut self, qp: &ProviderQp) {
        if let Cur::Send { wqe, .. } = core::mem::replace(&mut self.cur, Cur::None) {
            self.fail_wqe(qp, true, wqe, WcStatus::RemInvReqErr);
        }
    }

    /// A request that took receive WQE `wqe` failed with `status`, as the
    /// C rxe's `RESPST_ERR_*` classes C, D and E say: RC completes it (the
    /// QP is going to the error state), UC through an SRQ completes it
    /// with the QP staying in its state, and UC keeps its own receive for
    /// the next message.
    fn fail_wqe(&mut self, qp: &ProviderQp, uc: bool, wqe: RecvWqe, status: WcStatus) {
        let wc = Wc {
            status,
            opcode: WcOpcode::Recv,
            ..Wc::default()
        };
        if !uc {
            qp.complete_recv(wqe, wc, false);
        } else if qp.has_srq() {
            qp.complete_recv_nonfatal(wqe, wc);
        } else {
            self.spare = Some(wqe);
        }
    }
}

/// The answer to a request, sent once the state's lock is released.
#[derive(Clone, Copy, Debug)]
enum Reply {
    None,
    Ack {
        psn: u32,
        syndrome: Syndrome,
        msn: u32,
    },
    AtomicAck {
        psn: u32,
        msn: u32,
        orig: u64,
    },
    /// A zero-length READ RESPONSE ONLY: how the kernel's rxe acknowledges
    /// an ATOMIC_WRITE, so how we do too.
    ReadAck {
        psn: u32,
        msn: u32,
    },
}

/// What handling a request led to.
struct Outcome {
    reply: Reply,
    /// The QP goes to the error state after the reply.
    error: bool,
    /// A READ response is queued for the work.
    schedule: bool,
    /// The packet was used (for the counters).
    taken: bool,
}

impl Outcome {
    const DROP: Outcome = Outcome {
        reply: Reply::None,
        error: false,
        schedule: false,
        taken: false,
    };

    fn taken(reply: Reply) -> Outcome {
        Outcome {
            reply,
            error: false,
            schedule: false,
            taken: true,
        }
    }
}

/// Whether a packet's payload length fits its place in a message.
fn payload_fits(pos: Position, len: usize, mtu: u32) -> bool {
    let mtu = mtu as usize;
    match pos {
        Position::First | Position::Middle => len == mtu,
        Position::Last => len >= 1 && len <= mtu,
        Position::Only => len <= mtu,
    }
}

/// The status of the receive WQE a request had taken when it is NAKed
/// with `code` (the C rxe's classes A and C).
fn nak_status(code: NakCode) -> WcStatus {
    match code {
        NakCode::RemoteAccessError => WcStatus::RemAccessErr,
        NakCode::RemoteOperationalError => WcStatus::LocQpOpErr,
        _ => WcStatus::RemInvReqErr,
    }
}

/// Whether the connection grants `right` and the RETH's memory may be
/// reached with it. A zero-length request names no memory: its rkey and
/// address are not checked (IBTA C9-88), only the QP's right.
fn reth_allowed(qp: &ProviderQp, conn: &Conn, reth: &Reth, right: Access) -> bool {
    conn.access.contains(right)
        && (reth.len == 0
            || qp
                .remote_check(reth.rkey, reth.va, u64::from(reth.len), right)
                .is_ok())
}

impl RcQp {
    /// RTR: the first PSN expected.
    pub(crate) fn resp_start(&self, rq_psn: u32) {
        let held = {
            let mut st = self.resp.lock();
            let held = st.clear();
            st.epsn = rq_psn;
            st.msn = 0;
            st.active = true;
            held
        };
        drop(held);
    }

    /// RESET, or the QP is going away: forget everything, completing
    /// nothing.
    pub(crate) fn resp_reset(&self) {
        let held = self.resp.lock().clear();
        drop(held);
    }

    /// The QP is in error: the receive WQEs held are flushed.
    pub(crate) fn resp_flush(&self, qp: &ProviderQp) {
        let (cur, spare) = self.resp.lock().clear();
        let flushed = |opcode| Wc {
            status: WcStatus::WrFlushErr,
            opcode,
            ..Wc::default()
        };
        let cur = match cur {
            Cur::Send { wqe, .. } => Some(wqe),
            Cur::Tagged { t, .. } => {
                qp.tm_finish(t, flushed(WcOpcode::TmRecv), false);
                None
            }
            _ => None,
        };
        for wqe in [cur, spare].into_iter().flatten() {
            qp.complete_recv(wqe, flushed(WcOpcode::Recv), false);
        }
    }

    /// A request arrived: whether it was taken.
    pub(crate) fn responder_receive(&self, qp: &ProviderQp, conn: &Conn, pkt: &Packet<'_>) -> bool {
        if !Self::takes_requests(qp) {
            return false;
        }
        let out = {
            let mut st = self.resp.lock();
            if !st.active {
                return false;
            }
            self.respond_in_order(&mut st, qp, conn, pkt)
        };
        self.finish(qp, conn, &out);
        out.taken
    }

    /// Whether the QP's state lets the responder take requests.
    fn takes_requests(qp: &ProviderQp) -> bool {
        use rdma::provider::QpState;
        matches!(
            qp.state(),
            QpState::Rtr | QpState::Rts | QpState::Sqd | QpState::Sqe
        )
    }

    /// Handles one request under the state's lock: [`Self::respond`], with
    /// its answer queued behind the READ responses still queued.
    fn respond_in_order(
        &self,
        st: &mut RespState,
        qp: &ProviderQp,
        conn: &Conn,
        pkt: &Packet<'_>,
    ) -> Outcome {
        let mut out = self.respond(st, qp, conn, pkt);
        // Answers go in PSN order: behind READ responses still queued,
        // an ACK waits its turn (an error NAK does not: the QP stops).
        if st.read_count > 0 && !out.error && !matches!(out.reply, Reply::None) {
            st.queue_reply(out.reply);
            out.reply = Reply::None;
            out.schedule = true;
        }
        out
    }

    /// What follows a request's handling once the state's lock is
    /// released: its answer, the error state, the work scheduled.
    fn finish(&self, qp: &ProviderQp, conn: &Conn, out: &Outcome) {
        self.answer(qp, conn, out.reply);
        if out.error {
            self.resp_flush(qp);
            qp.set_error();
            // The ULP learns why its QP stopped (the requester's side
            // learns it from its completion).
            let kind = match out.reply {
                Reply::Ack {
                    syndrome: Syndrome::Nak(NakCode::RemoteAccessError),
                    ..
                } => EventKind::QpAccessErr,
                Reply::Ack {
                    syndrome: Syndrome::Nak(NakCode::InvalidRequest | NakCode::InvalidRdRequest),
                    ..
                } => EventKind::QpReqErr,
                _ => EventKind::QpFatal,
            };
            qp.event(kind);
        }
        if out.schedule {
            qp.schedule();
        }
    }

    /// Takes a run of request packets from a QP of ours on the loopback
    /// path (`req.rs`, `send_run`) under one taking of the state's lock:
    /// `feed` calls the function it is given with each packet in turn,
    /// which handles it as [`Self::responder_receive`] would, counts it as
    /// `net/recv.rs` would, and returns whether the run may go on (the
    /// packet was taken and needs no answer; otherwise the run is over
    /// and the answer goes once the lock is released). A packet fed after
    /// the run is over, or once the QP's state takes no more requests,
    /// is dropped and counted so. False, with nothing fed, when the QP
    /// would take no packet from `from` of transport `uc` (the caller then
    /// sends them one by one, to be dropped and counted the usual way).
    /// The caller holds no lock of this QP.
    pub(crate) fn responder_run(
        &self,
        qp: &ProviderQp,
        from: &Gid,
        uc: bool,
        feed: impl FnOnce(&mut dyn FnMut(&Packet<'_>) -> bool),
    ) -> bool {
        let conn = self.conn();
        if uc != self.uc || conn.ip.is_none() || *from != conn.dgid || !Self::takes_requests(qp) {
            return false;
        }
        let counters = &self.rd.counters;
        let mut end: Option<Outcome> = None;
        {
            let mut st = self.resp.lock();
            if !st.active {
                return false;
            }
            feed(&mut |pkt: &Packet<'_>| {
                counters.inc(Counter::RcvdPkts);
                // The QP's state is checked for every packet, as alone: a
                // completion in the run may have moved it to the error
                // state (a CQ overrun).
                if end.is_some() || !Self::takes_requests(qp) {
                    counters.drop_rx(Counter::RxDropQp);
                    return false;
                }
                let out = self.respond_in_order(&mut st, qp, &conn, pkt);
                if out.taken {
                    counters.inc(Counter::RxPackets);
                } else {
                    counters.drop_rx(Counter::RxDropQp);
                }
                let plain =
                    out.taken && !out.error && !out.schedule && matches!(out.reply, Reply::None);
                if !plain {
                    end = Some(out);
                }
                plain
            });
        }
        if let Some(out) = end {
            self.finish(qp, &conn, &out);
        }
        true
    }

    fn answer(&self, qp: &ProviderQp, conn: &Conn, reply: Reply) {
        let mut buf = [0u8; SMALL_ROOM];
        let (opcode, psn, ext) = match reply {
            Reply::None => return,
            Reply::Ack { psn, syndrome, msn } => (
                Opcode::RcAcknowledge,
                psn,
                ExtHeaders {
                    aeth: Some(Aeth {
                        syndrome: syndrome.to_u8(),
                        msn,
                    }),
                    ..ExtHeaders::default()
                },
            ),
            Reply::AtomicAck { psn, msn, orig } => (
                Opcode::RcAtomicAcknowledge,
                psn,
                ExtHeaders {
                    aeth: Some(Aeth {
                        syndrome: Syndrome::Ack {
                            credits: NO_CREDITS,
                        }
                        .to_u8(),
                        msn,
                    }),
                    atomic_ack_eth: Some(AtomicAckEth { orig }),
                    ..ExtHeaders::default()
                },
            ),
            Reply::ReadAck { psn, msn } => (
                Opcode::RcRdmaReadResponseOnly,
                psn,
                ExtHeaders {
                    aeth: Some(Aeth {
                        syndrome: Syndrome::Ack {
                            credits: NO_CREDITS,
                        }
                        .to_u8(),
                        msn,
                    }),
                    ..ExtHeaders::default()
                },
            ),
        };
        let out = Out {
            opcode,
            psn,
            ack_req: false,
            solicited: false,
            ext,
        };
        // A lost answer is answered again when the request comes again.
        let _ = self.send(qp, conn, out, &[], &mut buf);
    }

    /// The reply and state change for one request (the state's lock held).
    fn respond(
        &self,
        st: &mut RespState,
        qp: &ProviderQp,
        conn: &Conn,
        pkt: &Packet<'_>,
    ) -> Outcome {
        let psn = pkt.psn();
        let info = pkt.info();
        let d = psn_diff(psn, st.epsn);
        if d != 0 && self.uc {
            // UC: a first packet at any PSN, ahead or behind, starts a new
            // message (the sender may have lost packets or started over),
            // as the C rxe resynchronises; any other packet out of
            // sequence ends the message in progress, and the rest of it
            // is dropped.
            st.drop_message(qp);
            if !info.position.is_first() {
                st.drop_msg = true;
                if d > 0 {
                    st.epsn = psn_add(psn, 1);
                }
                return Outcome::DROP;
            }
            st.drop_msg = false;
            st.epsn = psn;
        } else if d > 0 {
            // Packets are missing.
            if st.nak_sent {
                return Outcome::DROP;
            }
            st.nak_sent = true;
            self.rd.counters.inc(Counter::OutOfSeqRequest);
            return Outcome::taken(Reply::Ack {
                psn: st.epsn,
                syndrome: Syndrome::Nak(NakCode::PsnSequenceError),
                msn: st.msn,
            });
        } else if d < 0 {
            self.rd.counters.inc(Counter::DuplicateRequest);
            return self.duplicate(st, qp, conn, pkt);
        }
        st.nak_sent = false;
        if self.uc && st.drop_msg {
            if !info.position.is_first() {
                st.epsn = psn_add(psn, 1);
                return Outcome::DROP;
            }
            st.drop_msg = false;
        }
        let in_sequence = match (&st.cur, info.operation) {
            (Cur::None, _) => info.position.is_first(),
            (Cur::Send { .. } | Cur::Tagged { .. }, Operation::Send)
            | (Cur::Write { .. }, Operation::RdmaWrite) => !info.position.is_first(),
            _ => false,
        };
        if !in_sequence {
            if self.uc {
                st.drop_message(qp);
                if !info.position.is_first() {
                    st.drop_msg = true;
                    st.epsn = psn_add(psn, 1);
                    return Outcome::DROP;
                }
            } else {
                return self.fatal(st, qp, NakCode::InvalidRequest, psn);
            }
        }
        // A DMA length over 2^31 (IBTA C9-94) is an invalid request,
        // refused before its key is looked at, as the C rxe refuses it.
        if let Some(reth) = pkt.headers.ext.reth {
            if info.position.is_first() && reth.len > MAX_DMA_LEN {
                self.rd.counters.inc(Counter::LengthErr);
                if log_allowed() {
                    pr_info!(
                        "QP {}: a request with a RETH length of {} refused\n",
                        qp.qpn(),
                        reth.len
                    );
                }
                return self.fatal(st, qp, NakCode::InvalidRequest, psn);
            }
        }
        match info.operation {
            Operation::Send => self.recv_send(st, qp, conn, pkt),
            Operation::RdmaWrite => self.recv_write(st, qp, conn, pkt),
            Operation::RdmaReadRequest | Operation::Flush => {
                let out = self.recv_read(st, qp, conn, pkt, false);
                if out.taken && !out.error {
                    let n = if info.operation == Operation::Flush {
                        1
                    } else {
                        segment::packet_count(pkt.headers.ext.reth.map_or(0, |r| r.len), conn.mtu)
                    };
                    st.epsn = psn_add(psn, n);
                    st.msn = psn_add(st.msn, 1);
                }
                out
            }
            Operation::CompareSwap | Operation::FetchAdd => self.recv_atomic(st, qp, conn, pkt),
            Operation::AtomicWrite => self.recv_atomic_write(st, qp, conn, pkt),
            _ => self.fatal(st, qp, NakCode::InvalidRequest, psn),
        }
    }

    /// RC: NAK `code` for `psn`, and the QP goes to the error state; the
    /// receive WQE of a SEND in progress completes with the status the C
    /// rxe gives it for that NAK. UC: the message is dropped.
    fn fatal(&self, st: &mut RespState, qp: &ProviderQp, code: NakCode, psn: u32) -> Outcome {
        if self.uc {
            st.drop_message(qp);
            st.drop_msg = true;
            st.epsn = psn_add(psn, 1);
            return Outcome::DROP;
        }
        match core::mem::replace(&mut st.cur, Cur::None) {
            Cur::Send { wqe, .. } => st.fail_wqe(qp, false, wqe, nak_status(code)),
            Cur::Tagged { t, .. } => {
                let wc = Wc {
                    status: nak_status(code),
                    opcode: WcOpcode::TmRecv,
                    ..Wc::default()
                };
                qp.tm_finish(t, wc, false);
            }
            _ => {}
        }
        Outcome {
            reply: Reply::Ack {
                psn,
                syndrome: Syndrome::Nak(code),
                msn: st.msn,
            },
            error: true,
            schedule: false,
            taken: true,
        }
    }

    /// [`Self::fatal`] for a new request; a replayed one (`replay`) is
    /// dropped instead, leaving the message in progress alone.
    fn refuse(
        &self,
        st: &mut RespState,
        qp: &ProviderQp,
        code: NakCode,
        psn: u32,
        replay: bool,
    ) -> Outcome {
        if replay {
            Outcome::DROP
        } else {
            self.fatal(st, qp, code, psn)
        }
    }

    /// The ACK of an in-order request, if the requester asked for one.
    fn ack(&self, st: &RespState, pkt: &Packet<'_>) -> Reply {
        if self.uc || !pkt.headers.bth.ack_req {
            return Reply::None;
        }
        Reply::Ack {
            psn: pkt.psn(),
            syndrome: Syndrome::Ack {
                credits: NO_CREDITS,
            },
            msn: st.msn,
        }
    }

    /// RNR NAK (RC): no receive WQE; the PSN is not consumed.
    fn rnr(&self, st: &mut RespState, conn: &Conn, psn: u32) -> Outcome {
        if self.uc {
            st.drop_msg = true;
            st.epsn = psn_add(psn, 1);
            return Outcome::DROP;
        }
        self.rd.counters.inc(Counter::SendRnrErr);
        Outcome::taken(Reply::Ack {
            psn,
            syndrome: Syndrome::RnrNak {
                timer: conn.min_rnr_timer,
            },
            msn: st.msn,
        })
    }

    fn recv_send(
        &self,
        st: &mut RespState,
        qp: &ProviderQp,
        conn: &Conn,
        pkt: &Packet<'_>,
    ) -> Outcome {
        let psn = pkt.psn();
        let info = pkt.info();
        let data = pkt.payload;
        // As the C rxe: the receive WQE is taken first (none: RNR), then
        // the length is checked (a bad one completes the WQE as `fatal`
        // says), then the data placed.
        if info.position.is_first() {
            if !self.uc && qp.tm_srq() {
                // A TM SRQ's message: matched or placed here, or gone to
                // an ordinary receive (`st.cur`) to be placed below.
                if let Some(out) = self.tm_first(st, qp, conn, pkt) {
                    return out;
                }
            } else {
                let Some(wqe) = st.take_wqe(qp) else {
                    return self.rnr(st, conn, psn);
                };
                st.cur = Cur::Send {
                    wqe,
                    off: 0,
                    tm: None,
                };
            }
        } else if matches!(st.cur, Cur::Tagged { .. }) {
            return self.tm_next(st, qp, conn, pkt);
        }
        if !payload_fits(info.position, data.len(), conn.mtu) {
            return self.fatal(st, qp, NakCode::InvalidRequest, psn);
        }
        let Cur::Send { wqe, off, .. } = &mut st.cur else {
            return Outcome::DROP;
        };
        let end = u64::from(*off) + data.len() as u64;
        let too_long = end > u64::from(wqe.length);
        if too_long && self.uc {
            // UC: the message is dropped and the QP stays; its own
            // receive is kept for the next message, an SRQ's completes
            // with REM_INV_REQ_ERR (Documentation/rxe.rst: the C rxe
            // would end the QP here, see its table).
            self.rd.counters.inc(Counter::LengthErr);
            if log_allowed() {
                pr_info!(
                    "QP {}: a UC message longer than its receive dropped\n",
                    qp.qpn()
                );
            }
            return self.fatal(st, qp, NakCode::InvalidRequest, psn);
        }
        // A receive that cannot take the data, too short (RC) or whose
        // memory does not check out (a bad lkey, an SGE outside its MR):
        // as the C rxe (its malformed WQE, class A), the WQE completes
        // with LOC_QP_OP_ERR, RC NAKs a remote operational error, and the
        // QP goes to the error state, whatever its type.
        if too_long || qp.scatter(wqe.sges(), u64::from(*off), data).is_err() {
            let Cur::Send { wqe, .. } = core::mem::replace(&mut st.cur, Cur::None) else {
                return Outcome::DROP;
            };
            let wc = Wc {
                status: WcStatus::LocQpOpErr,
                opcode: WcOpcode::Recv,
                ..Wc::default()
            };
            qp.complete_recv(wqe, wc, false);
            if self.uc {
                st.drop_msg = true;
                st.epsn = psn_add(psn, 1);
                return Outcome::DROP;
            }
            return self.fatal(st, qp, NakCode::RemoteOperationalError, psn);
        }
        *off = end as u32;
        st.epsn = psn_add(psn, 1);
        if !info.position.is_last() {
            return Outcome::taken(self.ack(st, pkt));
        }
        let Cur::Send { wqe, off, tm } = core::mem::replace(&mut st.cur, Cur::None) else {
            return Outcome::DROP;
        };
        let mut wc = Wc {
            status: WcStatus::Success,
            opcode: WcOpcode::Recv,
            byte_len: off,
            ..Wc::default()
        };
        if let Some(i) = tm {
            wc.opcode = i.opcode;
            wc.tm_tag = i.tag;
            wc.tm_app_ctx = i.app_ctx;
        }
        if let Some(imm) = pkt.headers.ext.immdt {
            wc.wc_flags = wc.wc_flags | WcFlags::WITH_IMM;
            wc.imm_data = imm.imm;
        }
        if let Some(ieth) = pkt.headers.ext.ieth {
            if qp.invalidate(ieth.rkey).is_err() {
                // An unknown key, or an MR with windows bound: the C rxe's
                // status for either (its class J).
                wc.status = WcStatus::RemInvReqErr;
                qp.complete_recv(wqe, wc, false);
                return self.fatal(st, qp, NakCode::InvalidRequest, psn);
            }
            wc.wc_flags = wc.wc_flags | WcFlags::WITH_INVALIDATE;
            wc.invalidate_rkey = ieth.rkey;
        }
        st.msn = psn_add(st.msn, 1);
        self.rd.counters.inc(Counter::RdmaRecvs);
        qp.complete_recv(wqe, wc, pkt.headers.bth.solicited);
        Outcome::taken(self.ack(st, pkt))
    }

    fn recv_write(
        &self,
        st: &mut RespState,
        qp: &ProviderQp,
        conn: &Conn,
        pkt: &Packet<'_>,
    ) -> Outcome {
        let psn = pkt.psn();
        let info = pkt.info();
        let data = pkt.payload;
        let last = info.position.is_last();
        // As the C rxe: the QP's right first (not granted: an invalid
        // request, UC drops), then the receive WQE of a WRITE with
        // immediate (none: RNR), then the lengths and the key; a failure
        // after the WQE is taken completes it as `fail_wqe` says.
        if info.position.is_first() && !conn.access.contains(Access::REMOTE_WRITE) {
            return self.fatal(st, qp, NakCode::InvalidRequest, psn);
        }
        // WRITE with immediate consumes a receive WQE with its last packet:
        // without one, RNR before anything is written. The message is
        // recorded only once the packet is taken: a one-packet WRITE with
        // immediate may meet an RNR first, and its retry starts it again.
        let wqe = if last && info.has_immediate() {
            match st.take_wqe(qp) {
                Some(w) => Some(w),
                None => return self.rnr(st, conn, psn),
            }
        } else {
            None
        };
        let fail = |st: &mut RespState, wqe: Option<RecvWqe>, code: NakCode| {
            if let Some(w) = wqe {
                st.fail_wqe(qp, self.uc, w, nak_status(code));
            }
            self.fatal(st, qp, code, psn)
        };
        // Where the packet goes.
        let (va, rkey, resid, total) = if info.position.is_first() {
            let Some(reth) = pkt.headers.ext.reth else {
                return fail(st, wqe, NakCode::InvalidRequest);
            };
            if !reth_allowed(qp, conn, &reth, Access::REMOTE_WRITE) {
                return fail(st, wqe, NakCode::RemoteAccessError);
            }
            (reth.va, reth.rkey, reth.len, reth.len)
        } else {
            match st.cur {
                Cur::Write {
                    va,
                    rkey,
                    resid,
                    total,
                } => (va, rkey, resid, total),
                _ => {
                    if let Some(w) = wqe {
                        st.spare = Some(w);
                    }
                    return Outcome::DROP;
                }
            }
        };
        let fits = if last {
            data.len() == resid as usize && data.len() <= conn.mtu as usize
        } else {
            payload_fits(info.position, data.len(), conn.mtu) && data.len() < resid as usize
        };
        if !fits {
            return fail(st, wqe, NakCode::InvalidRequest);
        }
        if !data.is_empty()
            && qp
                .remote_copy_in(rkey, va, data, Access::REMOTE_WRITE)
                .is_err()
        {
            return fail(st, wqe, NakCode::RemoteAccessError);
        }
        st.epsn = psn_add(psn, 1);
        if !last {
            st.cur = Cur::Write {
                va: va.wrapping_add(data.len() as u64),
                rkey,
                resid: resid - data.len() as u32,
                total,
            };
            return Outcome::taken(self.ack(st, pkt));
        }
        st.cur = Cur::None;
        st.msn = psn_add(st.msn, 1);
        if let Some(wqe) = wqe {
            let wc = Wc {
                status: WcStatus::Success,
                opcode: WcOpcode::RecvRdmaWithImm,
                byte_len: total,
                wc_flags: WcFlags::WITH_IMM,
                imm_data: pkt.headers.ext.immdt.map_or(0, |i| i.imm),
                ..Wc::default()
            };
            self.rd.counters.inc(Counter::RdmaRecvs);
            qp.complete_recv(wqe, wc, pkt.headers.bth.solicited);
        }
        Outcome::taken(self.ack(st, pkt))
    }

    /// Checks a READ or FLUSH request and queues its response (`replay`:
    /// a duplicate, answered in full before). A replay that fails a check
    /// is dropped here, before [`Self::fatal`] could fail the message in
    /// progress: its PSN is behind that message's, and the first one was
    /// answered (a forged or long-delayed duplicate whose key has gone
    /// since must not end a SEND that has nothing to do with it).
    fn recv_read(
        &self,
        st: &mut RespState,
        qp: &ProviderQp,
        conn: &Conn,
        pkt: &Packet<'_>,
        replay: bool,
    ) -> Outcome {
        let psn = pkt.psn();
        let Some(reth) = pkt.headers.ext.reth else {
            return self.refuse(st, qp, NakCode::InvalidRequest, psn, replay);
        };
        let job = if let Some(feth) = pkt.headers.ext.feth {
            let p = feth.placement_type();
            let mut need = Access::NONE;
            if p & 1 != 0 {
                need = need | Access::FLUSH_GLOBAL;
            }
            if p & 2 != 0 {
                need = need | Access::FLUSH_PERSISTENT;
            }
            // The QP must grant the flush too, as with the C rxe.
            if !conn.access.contains(need) {
                return self.refuse(st, qp, NakCode::InvalidRequest, psn, replay);
            }
            let len = if feth.selectivity() == 1 { 0 } else { reth.len };
            if qp
                .remote_check(reth.rkey, reth.va, u64::from(len), need)
                .is_err()
            {
                return self.refuse(st, qp, NakCode::RemoteAccessError, psn, replay);
            }
            // Memory is the persistence domain here: a full fence is the
            // flush.
            core::sync::atomic::fence(Ordering::SeqCst);
            ReadJob {
                psn,
                replay,
                ..ReadJob::default()
            }
        } else {
            // A right the QP does not grant: an invalid request, as the
            // C rxe answers it (its unsupported opcode, class C).
            if !conn.access.contains(Access::REMOTE_READ) {
                return self.refuse(st, qp, NakCode::InvalidRequest, psn, replay);
            }
            if !reth_allowed(qp, conn, &reth, Access::REMOTE_READ) {
                return self.refuse(st, qp, NakCode::RemoteAccessError, psn, replay);
            }
            ReadJob {
                psn,
                va: reth.va,
                rkey: reth.rkey,
                len: reth.len,
                replay,
                ..ReadJob::default()
            }
        };
        // More READs at once than the QP's responder resources: the
        // requester broke the negotiated limit (C9-147). (A replay that
        // finds no room is dropped by the caller, and not counted.)
        if !st.push_read(job, conn.max_dest_rd_atomic as usize) {
            if !replay {
                self.rd.counters.inc(Counter::RdAtomicExceeded);
            }
            return self.refuse(st, qp, NakCode::InvalidRdRequest, psn, replay);
        }
        Outcome {
            reply: Reply::None,
            error: false,
            schedule: true,
            taken: true,
        }
    }

    fn recv_atomic(
        &self,
        st: &mut RespState,
        qp: &ProviderQp,
        conn: &Conn,
        pkt: &Packet<'_>,
    ) -> Outcome {
        let psn = pkt.psn();
        let Some(a) = pkt.headers.ext.atomic_eth else {
            return self.fatal(st, qp, NakCode::InvalidRequest, psn);
        };
        // As the C rxe: the QP's right not granted is an invalid request.
        if !conn.access.contains(Access::REMOTE_ATOMIC) {
            return self.fatal(st, qp, NakCode::InvalidRequest, psn);
        }
        // Then, as the C rxe, the key, the bounds and the MR's right (a
        // violation: remote access error), and only then the alignment (a
        // misaligned address: an invalid request), whatever the key.
        if qp
            .remote_check(a.rkey, a.va, 8, Access::REMOTE_ATOMIC)
            .is_err()
        {
            return self.fatal(st, qp, NakCode::RemoteAccessError, psn);
        }
        if a.va % 8 != 0 {
            return self.fatal(st, qp, NakCode::InvalidRequest, psn);
        }
        let cmp = pkt.opcode == Opcode::RcCompareSwap;
        let orig = qp.remote_atomic(a.rkey, a.va, |old| {
            if !cmp {
                old.wrapping_add(a.swap_add)
            } else if old == a.compare {
                a.swap_add
            } else {
                old
            }
        });
        let Ok(orig) = orig else {
            return self.fatal(st, qp, NakCode::RemoteAccessError, psn);
        };
        st.remember(psn, orig);
        st.epsn = psn_add(psn, 1);
        st.msn = psn_add(st.msn, 1);
        Outcome::taken(Reply::AtomicAck {
            psn,
            msn: st.msn,
            orig,
        })
    }

    fn recv_atomic_write(
        &self,
        st: &mut RespState,
        qp: &ProviderQp,
        conn: &Conn,
        pkt: &Packet<'_>,
    ) -> Outcome {
        let psn = pkt.psn();
        let (Some(reth), Ok(bytes)) = (pkt.headers.ext.reth, <[u8; 8]>::try_from(pkt.payload))
        else {
            return self.fatal(st, qp, NakCode::InvalidRequest, psn);
        };
        if !conn.access.contains(Access::REMOTE_WRITE) {
            return self.fatal(st, qp, NakCode::InvalidRequest, psn);
        }
        if qp
            .remote_atomic_write(reth.rkey, reth.va, u64::from_ne_bytes(bytes))
            .is_err()
        {
            return self.fatal(st, qp, NakCode::RemoteAccessError, psn);
        }
        st.epsn = psn_add(psn, 1);
        st.msn = psn_add(st.msn, 1);
        // Answered as the kernel's rxe answers it: a zero-length READ
        // RESPONSE ONLY, whether or not an ACK was asked for.
        Outcome::taken(Reply::ReadAck { psn, msn: st.msn })
    }

    /// A request seen before (RC): answered again, nothing executed twice.
    fn duplicate(
        &self,
        st: &mut RespState,
        qp: &ProviderQp,
        conn: &Conn,
        pkt: &Packet<'_>,
    ) -> Outcome {
        let psn = pkt.psn();
        match pkt.info().operation {
            // Answered again as the first time; not executed again.
            Operation::AtomicWrite => Outcome::taken(Reply::ReadAck { psn, msn: st.msn }),
            Operation::Send | Operation::RdmaWrite => {
                if !pkt.headers.bth.ack_req {
                    return Outcome::DROP;
                }
                Outcome::taken(Reply::Ack {
                    psn: psn_sub(st.epsn, 1),
                    syndrome: Syndrome::Ack {
                        credits: NO_CREDITS,
                    },
                    msn: st.msn,
                })
            }
            Operation::RdmaReadRequest | Operation::Flush => {
                // Still queued: send it again from the packet asked for
                // rather than queue a second copy.
                if st.rewind_read(psn, conn.mtu) {
                    return Outcome {
                        reply: Reply::None,
                        error: false,
                        schedule: true,
                        taken: true,
                    };
                }
                // No room now: dropped, the requester asks again.
                if st.reads_pending() >= conn.max_dest_rd_atomic as usize {
                    return Outcome::DROP;
                }
                // One that fails a check now is dropped there (the first
                // one was answered).
                self.recv_read(st, qp, conn, pkt, true)
            }
            Operation::CompareSwap | Operation::FetchAdd => match st.replay(psn) {
                Some(orig) => Outcome::taken(Reply::AtomicAck {
                    psn,
                    msn: st.msn,
                    orig,
                }),
                None => Outcome::DROP,
            },
            _ => Outcome::DROP,
        }
    }

    /// Sends the queued READ and FLUSH responses, at most `budget`
    /// packets (the QP's work, `rc.rs`): whether more may be left.
    pub(crate) fn send_read_responses(
        &self,
        qp: &ProviderQp,
        w: &mut WorkBuf,
        budget: u32,
    ) -> bool {
        for _ in 0..budget {
            let conn = self.conn();
            let (job, msn) = {
                let mut st = self.resp.lock();
                if !st.active {
                    return false;
                }
                let Some(j) = st.front_read() else {
                    return false;
                };
                if j.reply.is_none() && j.sent + 1 >= segment::packet_count(j.len, conn.mtu) {
                    st.release_front();
                }
                (j, st.msn)
            };
            if let Some(reply) = job.reply {
                self.answer(qp, &conn, reply);
                let mut st = self.resp.lock();
                if st.front_read().is_some_and(|f| f.reply.is_some()) {
                    st.pop_front();
                }
                continue;
            }
            let n = segment::packet_count(job.len, conn.mtu);
            let k = job.sent;
            let (off, len) = segment::slice(k, job.len, conn.mtu);
            let data = &mut w.payload[..len as usize];
            let psn = psn_add(job.psn, k);
            if len > 0
                && qp
                    .remote_copy_out(
                        job.rkey,
                        job.va.wrapping_add(u64::from(off)),
                        data,
                        Access::REMOTE_READ,
                    )
                    .is_err()
            {
                // The memory went away since the request was checked.
                let out = {
                    let mut st = self.resp.lock();
                    self.fatal(&mut st, qp, NakCode::RemoteAccessError, psn)
                };
                self.answer(qp, &conn, out.reply);
                self.resp_flush(qp);
                qp.set_error();
                return false;
            }
            let opcode = segment::read_response_opcode(k, n);
            let mut ext = ExtHeaders::default();
            if opcode
                .info()
                .headers
                .contains(crate::wire::opcode::ExtHeader::Aeth)
            {
                ext.aeth = Some(Aeth {
                    syndrome: Syndrome::Ack {
                        credits: NO_CREDITS,
                    }
                    .to_u8(),
                    msn,
                });
            }
            let out = Out {
                opcode,
                psn,
                ack_req: false,
                solicited: false,
                ext,
            };
            // A lost response is asked for again by the requester.
            let _ = self.send(qp, &conn, out, data, &mut w.pkt);
            let mut st = self.resp.lock();
            if let Some(front) = st.front_read() {
                if front.reply.is_none() && front.psn == job.psn && front.sent == k {
                    if k + 1 >= n {
                        st.pop_front();
                    } else {
                        let h = st.read_head;
                        st.reads[h].sent += 1;
                    }
                }
            }
        }
        true
    }
}
