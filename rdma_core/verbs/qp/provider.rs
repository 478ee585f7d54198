// SPDX-License-Identifier: GPL-2.0

//! The provider's side of a QP: the transport it implements ([`QpOps`]),
//! and what it does with the queues the core owns: take send queue entries
//! in order and complete them, take receive entries and complete them, move
//! the QP to the error state, schedule its work.
//!
//! Completions go to the QP's CQs in posting order; entering the error
//! state flushes what is left with `WR_FLUSH_ERR`.
//!
//! A provider reads a send entry where it lies, in the ring, under the send
//! queue's lock: [`ProviderQp::sq_take_with`] takes the next one and
//! [`ProviderQp::sq_with`] reads one already taken (to send a packet of it
//! again), each running a closure on `&SendWqe` and returning what the
//! closure made of it (a packet's payload, a few fields), so nothing of the
//! entry is copied and none of its references counted per packet.
//! ([`ProviderQp::sq_next`] copies the whole entry instead, for a provider
//! that must execute it with no lock held.)
//!
//! Locks: the send queue's lock is an IRQ-safe spinlock, taken inside the
//! provider's own locks (rxe: its requester state, then the queue) and
//! outside the locks of memory access: under it the closure may read
//! memory with [`ProviderQp::gather`] (an MR's state lock, then a user
//! region's gate, the order `post_send` already takes for inline data). It
//! must not sleep, send, complete (the CQ's locks and a raw completion
//! handler come after the queue's lock is released), post, or take the
//! queue's lock again through another `sq_*` call: so the packet is built
//! under the lock and sent after it.

use core::any::Any;
use core::ops::Deref;
use core::sync::atomic::Ordering;

use kernel::error::code::{EINVAL, ENOMEM};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::workqueue;

use crate::device::event::{Element, Event, EventKind};
use crate::device::ProviderDevice;
use crate::kshim::mem::Sge;
use crate::kshim::timer::Timer;
use crate::spec::attr::Gid;
use crate::spec::opcodes::{Access, SendFlags, WcFlags, WcOpcode, WcStatus};
use crate::spec::qp_state::{AttrMask, QpState};
use crate::verbs::mr::{self, AccessError};
use crate::verbs::qp::{QpAttr, QpCore};
use crate::verbs::srq::tm::{Delivery, TaggedRecv};
use crate::verbs::wc::Wc;
use crate::verbs::wr::{RecvWqe, SendWqe, TmJob, WqeOp, MAX_INLINE};

/// What [`ProviderQp::rq_take_for`] found.
pub enum RqTake {
    /// An entry the message fits, taken.
    Fits(RecvWqe),
    /// The next entry is too short: `None` when it stays queued (the QP's
    /// own receive queue), the entry when it was taken from an SRQ.
    Short(Option<RecvWqe>),
    /// No entry (or the QP is in error).
    Empty,
}

/// The provider's handle on a QP: what only the provider of the QP's
/// device may do, on top of everything a ULP may ([`QpCore`], through
/// `Deref`).
///
/// The core hands it to the provider in the [`QpOps`] callbacks, and a
/// provider finds the QP a packet is for through its own device handle
/// ([`ProviderQp::by_qpn`]); a ULP, which holds a [`Qp`](super::Qp) or an
/// `Arc<QpCore>`, cannot make one. So a ULP can post, poll, modify and
/// destroy, and cannot take a queue entry, complete one or fail the QP:
///
/// ```compile_fail
/// fn ulp(qp: &rdma::verbs::qp::Qp) {
///     qp.set_error(); // provider-only: not a method of a ULP's handle
/// }
/// ```
#[derive(Clone)]
pub struct ProviderQp(Arc<QpCore>);

impl ProviderQp {
    pub(crate) fn new(qp: Arc<QpCore>) -> ProviderQp {
        ProviderQp(qp)
    }

    /// The provider's handle on QP `qpn` of its device `dev` (packets name
    /// their QP by number). Any context.
    pub fn by_qpn(dev: &ProviderDevice, qpn: u32) -> Option<ProviderQp> {
        dev.res.qp_by_num(qpn).map(ProviderQp::new)
    }

    /// The QP as a ULP sees it.
    pub fn core(&self) -> &Arc<QpCore> {
        &self.0
    }

    /// The provider's handle on QP `qpn` of the same device (a software
    /// device moving data between its own QPs).
    pub fn sibling(&self, qpn: u32) -> Option<ProviderQp> {
        self.0.device().res.qp_by_num(qpn).map(ProviderQp::new)
    }

    /// Schedules [`QpOps::run`]. Any context.
    pub fn schedule(&self) {
        self.0.schedule();
    }

    /// Schedules [`QpOps::run`] in `usecs` microseconds (retransmission and
    /// RNR timers); a later call replaces an earlier one. Any context.
    pub fn schedule_in(&self, usecs: u32) {
        self.0.schedule_in(usecs);
    }

    /// Runs `f` on this QP's transport if it is of type `T` and not revoked;
    /// false otherwise.
    pub fn provider<T: QpOps>(&self, f: impl FnOnce(&T)) -> bool {
        self.0.provider(f)
    }

    /// Takes the next send queue entry not yet started and runs `f` on it
    /// under the send queue's lock (the file's doc says what `f` may do);
    /// None when there is none. Any context.
    pub fn sq_take_with<R>(&self, f: impl FnOnce(&SendWqe) -> R) -> Option<R> {
        self.0.sq_take_with(f)
    }

    /// Takes the next send queue entry not yet started, copying it into
    /// `out`; false when there is none. Any context. For a provider that
    /// executes the entry with no lock held; others use
    /// [`ProviderQp::sq_take_with`].
    pub fn sq_next(&self, out: &mut SendWqe) -> bool {
        self.0.sq_next(out)
    }

    /// Runs `f` on the `i`-th entry from the head (taken or not), under
    /// the send queue's lock (the file's doc says what `f` may do); None
    /// when there is none. Any context.
    pub fn sq_with<R>(&self, i: usize, f: impl FnOnce(&SendWqe) -> R) -> Option<R> {
        self.0.sq_with(i, f)
    }

    /// Takes the next entry without reading it (after looking at it with
    /// [`ProviderQp::sq_with`]).
    pub fn sq_start(&self) -> bool {
        self.0.sq_start()
    }

    /// How many entries are started and not completed.
    pub fn sq_in_flight(&self) -> usize {
        self.0.sq_in_flight()
    }

    /// Completes the oldest started send entry with `status`.
    pub fn sq_complete(&self, status: WcStatus, byte_len: u32) -> bool {
        self.0.sq_complete(status, byte_len)
    }

    /// Takes the next receive entry (from the SRQ if the QP has one).
    pub fn rq_take(&self) -> Option<RecvWqe> {
        self.0.rq_take()
    }

    /// Takes the next receive entry for a message of `len` bytes, leaving
    /// one too short for it where it is unless it comes from an SRQ.
    pub fn rq_take_for(&self, len: u64) -> RqTake {
        self.0.rq_take_for(len)
    }

    /// Whether the QP takes its receive entries from an SRQ.
    pub fn has_srq(&self) -> bool {
        self.0.srq.is_some()
    }

    /// Completes a receive entry taken with [`ProviderQp::rq_take`]; a
    /// status other than success moves the QP to the error state.
    pub fn complete_recv(&self, wqe: RecvWqe, wc: Wc, solicited: bool) {
        self.0.complete_recv(wqe, wc, solicited)
    }

    /// Completes a receive entry with an error that the QP survives (a UD
    /// or UC message that did not fit an SRQ's entry): the QP stays in its
    /// state unless the CQ overflows.
    pub fn complete_recv_nonfatal(&self, wqe: RecvWqe, wc: Wc) {
        self.0.complete_recv_nonfatal(wqe, wc)
    }

    /// Whether the QP's SRQ is a tag-matching SRQ: its SENDs carry a TMH
    /// (Documentation/tag_matching.rst).
    pub fn tm_srq(&self) -> bool {
        self.0.has_tm_srq()
    }

    /// A message's first packet arrived at a QP of a TM SRQ: the tagged
    /// buffer its `tag` matched (an EAGER or RNDV message), or an ordinary
    /// receive of the SRQ (`tag` `None`, or nothing matched: unexpected,
    /// counted). With no ordinary receive for it, nothing changed
    /// ([`Delivery::Empty`]), as for a QP in error.
    pub fn tm_deliver(&self, tag: Option<u64>) -> Delivery {
        match &self.0.srq {
            Some(srq) if !matches!(self.0.state(), QpState::Err | QpState::Reset) => {
                srq.tm_deliver(tag)
            }
            _ => Delivery::Empty,
        }
    }

    /// A completion of a tagged buffer that does not end its use
    /// (`TM_MATCH` of a message whose data is still coming), on the TM
    /// SRQ's CQ: `wc` gets the buffer's identity and this QP's number.
    pub fn tm_complete(&self, t: &TaggedRecv, wc: Wc, solicited: bool) {
        self.0.tm_push(&t.wqe, wc, solicited);
    }

    /// The last completion of a tagged buffer, as
    /// [`ProviderQp::tm_complete`]; its entry in the list is released.
    pub fn tm_finish(&self, t: TaggedRecv, wc: Wc, solicited: bool) {
        self.0.tm_push(&t.wqe, wc, solicited);
        drop(t);
    }

    /// Whether the send queue has room for a rendezvous now (its READ and
    /// its FIN).
    pub fn tm_rndv_room(&self) -> bool {
        self.0.sq.lock().internal + 2 <= super::TM_JOBS
    }

    /// Queues a matched rendezvous on the send queue: the RDMA READ of
    /// `len` bytes at `va` under `rkey` into `t`'s buffer, then the FIN
    /// `fin` (at most [`MAX_INLINE`](crate::verbs::wr::MAX_INLINE)
    /// bytes, fenced behind the READ), and schedules the QP. When the READ
    /// completes, so does the buffer (`TM_DATA_VALID`, or the READ's
    /// error), and its entry is released. With no room or the queue
    /// flushed, the buffer completes with `WR_FLUSH_ERR` at once and
    /// `ENOMEM` is returned.
    pub fn tm_rndv(&self, t: TaggedRecv, va: u64, rkey: u32, len: u32, fin: &[u8]) -> Result {
        let flushed = Wc {
            status: WcStatus::WrFlushErr,
            opcode: WcOpcode::TmRecv,
            ..Wc::default()
        };
        if fin.len() > MAX_INLINE {
            self.tm_finish(t, flushed, false);
            return Err(EINVAL);
        }
        let read = SendWqe {
            wr_id: t.wqe.wr_id,
            cqe: t.wqe.cqe.clone(),
            op: WqeOp::Read {
                remote_addr: va,
                rkey,
            },
            length: len,
            num_sge: t.wqe.num_sge,
            sge: t.wqe.sge,
            tm: TmJob::RndvRead { handle: 0 },
            ..SendWqe::default()
        };
        let mut fin_wqe = SendWqe {
            op: WqeOp::Send,
            flags: SendFlags::FENCE,
            length: fin.len() as u32,
            inline: true,
            tm: TmJob::Fin,
            ..SendWqe::default()
        };
        fin_wqe.inline_data[..fin.len()].copy_from_slice(fin);
        {
            let mut sq = self.0.sq.lock();
            // The ring holds TM_JOBS entries beyond the ULP's.
            if sq.err || sq.internal + 2 > super::TM_JOBS || sq.ring.len() + 2 > sq.ring.limit() {
                drop(sq);
                self.tm_finish(t, flushed, false);
                return Err(ENOMEM);
            }
            let mut read = read;
            read.tm = TmJob::RndvRead {
                handle: t.hand_on(),
            };
            for w in [read, fin_wqe] {
                if let Ok(slot) = sq.ring.next_slot() {
                    *slot = w;
                    sq.ring.commit();
                    sq.internal += 1;
                }
            }
        }
        self.0.schedule();
        Ok(())
    }

    /// Moves the QP to the error state (a transport failure).
    pub fn set_error(&self) {
        self.0.set_error()
    }

    /// Copies `out.len()` bytes from the memory of an SGE list, from byte
    /// `offset` of the list, checked against this QP's PD (local keys,
    /// no rights needed).
    pub fn gather(&self, sges: &[Sge], offset: u64, out: &mut [u8]) -> Result<(), AccessError> {
        mr::gather(self.0.device(), self.0.pd(), sges, offset, out)
    }

    /// Copies `data` into the memory of an SGE list, from byte `offset` of
    /// the list; each MR must grant local write.
    pub fn scatter(&self, sges: &[Sge], offset: u64, data: &[u8]) -> Result<(), AccessError> {
        mr::scatter(self.0.device(), self.0.pd(), sges, offset, data)
    }

    /// Checks a peer's access to `len` bytes at `addr` under `rkey` with
    /// rights `need`, against this QP's PD and QP number (memory windows).
    pub fn remote_check(
        &self,
        rkey: u32,
        addr: u64,
        len: u64,
        need: Access,
    ) -> Result<(), AccessError> {
        self.0.device().remote_check(rkey, &self.0, addr, len, need)
    }

    /// A peer's WRITE: `data` to `addr` under `rkey`.
    pub fn remote_copy_in(
        &self,
        rkey: u32,
        addr: u64,
        data: &[u8],
        need: Access,
    ) -> Result<(), AccessError> {
        self.0
            .device()
            .remote_copy_in(rkey, &self.0, addr, data, need)
    }

    /// A peer's READ: `out.len()` bytes at `addr` under `rkey`.
    pub fn remote_copy_out(
        &self,
        rkey: u32,
        addr: u64,
        out: &mut [u8],
        need: Access,
    ) -> Result<(), AccessError> {
        self.0
            .device()
            .remote_copy_out(rkey, &self.0, addr, out, need)
    }

    /// Executes a local operation of the send queue (REG_MR, LOCAL_INV,
    /// BIND_MW) and returns its completion status; any other opcode is
    /// `LocQpOpErr`. Not under the send queue's lock: a window's
    /// invalidation may drop the last reference to an MR.
    pub fn execute_local(&self, op: &WqeOp) -> WcStatus {
        let dev = self.0.device();
        match op {
            WqeOp::LocalInv(key) => match dev.invalidate_key(*key) {
                Ok(()) => WcStatus::Success,
                // An MR with windows bound: the C rxe's status.
                Err(AccessError::Busy) => WcStatus::LocQpOpErr,
                Err(_) => WcStatus::LocProtErr,
            },
            WqeOp::RegMr { mr, key, access } => match mr.fast_reg(*key, *access) {
                Ok(()) => WcStatus::Success,
                Err(_) => WcStatus::LocProtErr,
            },
            WqeOp::BindMw {
                mw,
                mr,
                key,
                addr,
                length,
                access,
            } => match mw.bind(&self.0, mr, *key, *addr, *length, *access) {
                Ok(()) => WcStatus::Success,
                Err(_) => WcStatus::MwBindErr,
            },
            _ => WcStatus::LocQpOpErr,
        }
    }

    /// Invalidates the MR or MW of `key` (SEND with invalidate, READ with
    /// invalidate).
    pub fn invalidate(&self, key: u32) -> Result<(), AccessError> {
        self.0.device().invalidate_key(key)
    }

    /// Raises an asynchronous event of `kind` on this QP (`QpFatal`,
    /// `QpReqErr`, `QpAccessErr`, ...). Any context.
    pub fn event(&self, kind: EventKind) {
        self.0.device().dispatch_event(Event {
            kind,
            element: Element::Qp(self.0.qpn()),
        });
    }

    /// A peer's atomic on the 8 bytes at `addr` under `rkey`: replaces them
    /// by `f` of their value and returns the old value.
    pub fn remote_atomic(
        &self,
        rkey: u32,
        addr: u64,
        f: impl Fn(u64) -> u64,
    ) -> Result<u64, AccessError> {
        self.0.device().remote_atomic(rkey, &self.0, addr, f)
    }

    /// A peer's ATOMIC WRITE of `value` to the 8 bytes at `addr`.
    pub fn remote_atomic_write(&self, rkey: u32, addr: u64, value: u64) -> Result<(), AccessError> {
        self.0
            .device()
            .remote_atomic_write(rkey, &self.0, addr, value)
    }
}

impl Deref for ProviderQp {
    type Target = Arc<QpCore>;

    fn deref(&self) -> &Arc<QpCore> {
        &self.0
    }
}

/// A provider's transport for one QP.
///
/// `post_send` and `post_recv` are called from the consumer's context (any
/// context, with preemption disabled): they must not sleep and must not
/// complete work inline; they schedule it.
pub trait QpOps: Any + Send + Sync {
    /// A `modify_qp` the core has validated, before it commits. Returning an
    /// error refuses it with nothing changed. May sleep.
    fn modify(&self, _qp: &ProviderQp, _attr: &QpAttr, _mask: AttrMask) -> Result {
        Ok(())
    }

    /// New send queue entries are waiting. The default schedules
    /// [`QpOps::run`].
    fn post_send(&self, qp: &ProviderQp) {
        qp.schedule();
    }

    /// New receive queue entries are waiting.
    fn post_recv(&self, _qp: &ProviderQp) {}

    /// The provider's work on the QP, in process context on a workqueue,
    /// one run at a time per QP, after [`ProviderQp::schedule`]. The core
    /// flushes it before the QP is destroyed, so a provider module has no
    /// work of its own to cancel.
    fn run(&self, _qp: &ProviderQp) {}

    /// The QP joined (`attach` true) or left a multicast group. May sleep.
    fn mcast(&self, _qp: &ProviderQp, _gid: &Gid, _attach: bool) -> Result {
        Ok(())
    }

    /// The QP is going away: stop and wait for the provider's work on it.
    /// After this returns the provider must not use the QP's queues. May
    /// sleep.
    fn destroy(&self, _qp: &QpCore) {}
}

impl QpCore {
    /// Schedules the provider's [`QpOps::run`] (for providers). Any
    /// context.
    ///
    /// The work goes to the unbound system workqueue, as rdma_rxe's does:
    /// it runs on whichever CPU is free instead of waiting behind the task
    /// that posted (a ULP polling its CQ on the posting CPU would otherwise
    /// delay its own requests), and a work item never runs on two CPUs at
    /// once, so a QP's work stays serial.
    pub(crate) fn schedule(self: &Arc<Self>) {
        // Already queued is fine: that run sees the new work.
        let _ = workqueue::system_unbound().enqueue(self.clone());
    }

    /// Schedules the provider's [`QpOps::run`] in `usecs` microseconds (for
    /// providers: retransmission and RNR timers). A later call replaces an
    /// earlier one that has not fired; after the QP is destroyed it does
    /// nothing. Any context.
    pub(crate) fn schedule_in(self: &Arc<Self>, usecs: u32) {
        Timer::arm_us(self, usecs);
    }

    /// The provider's object of this QP, if it is of type `T`: lets a
    /// provider that found the QP by number reach its transport state.
    pub(crate) fn provider<T: QpOps>(&self, f: impl FnOnce(&T)) -> bool {
        let Some(ops) = self.ops.access() else {
            return false;
        };
        let any: &dyn Any = &**ops;
        match any.downcast_ref::<T>() {
            Some(t) => {
                f(t);
                true
            }
            None => false,
        }
    }

    /// Copies the oldest send entry the provider has not taken yet into
    /// `out` (for providers). False when there is none or the queue is
    /// flushed. Any context.
    pub(crate) fn sq_next(&self, out: &mut SendWqe) -> bool {
        let mut sq = self.sq.lock();
        if sq.err {
            return false;
        }
        let started = sq.started;
        match sq.ring.get(started) {
            Some(w) => {
                out.clone_from(w);
                sq.started += 1;
                true
            }
            None => false,
        }
    }

    /// Takes the oldest send entry the provider has not taken yet and
    /// calls `f` on it under the send queue's lock (for providers). None
    /// when there is none or the queue is flushed. Any context; `f` must
    /// not call back into the QP.
    pub(crate) fn sq_take_with<R>(&self, f: impl FnOnce(&SendWqe) -> R) -> Option<R> {
        let mut sq = self.sq.lock();
        if sq.err {
            return None;
        }
        let started = sq.started;
        let r = sq.ring.get(started).map(f)?;
        sq.started += 1;
        Some(r)
    }

    /// Calls `f` on the `i`-th send entry from the oldest, under the send
    /// queue's lock (for providers reading a field or two without copying
    /// the entry). None when there is none or the queue is flushed. Any
    /// context; `f` must not call back into the QP.
    pub(crate) fn sq_with<R>(&self, i: usize, f: impl FnOnce(&SendWqe) -> R) -> Option<R> {
        let sq = self.sq.lock();
        if sq.err {
            return None;
        }
        sq.ring.get(i).map(f)
    }

    /// Takes the oldest entry not taken yet without reading it (for
    /// providers that looked at it with [`ProviderQp::sq_with`]). Any
    /// context.
    pub(crate) fn sq_start(&self) -> bool {
        let mut sq = self.sq.lock();
        if sq.err || sq.started >= sq.ring.len() {
            return false;
        }
        sq.started += 1;
        true
    }

    /// Send entries the provider took and has not completed.
    pub(crate) fn sq_in_flight(&self) -> usize {
        self.sq.lock().started
    }

    /// Completes the oldest taken send entry with `status` (for providers,
    /// in order): a completion goes to the send CQ if it failed or was
    /// signaled; a failure moves the QP to the error state. False if there
    /// was nothing to complete (the queue was flushed meanwhile). Any
    /// context.
    pub(crate) fn sq_complete(self: &Arc<Self>, status: WcStatus, byte_len: u32) -> bool {
        let (wqe, drained) = {
            let mut sq = self.sq.lock();
            if sq.err || sq.started == 0 {
                return false;
            }
            sq.started -= 1;
            let wqe = sq.pop();
            (wqe, sq.ring.len() == 0)
        };
        let Some(wqe) = wqe else { return false };
        if wqe.tm != TmJob::None {
            self.tm_job_done(wqe, status, byte_len, false);
        } else if status != WcStatus::Success || wqe.signaled {
            let opcode = wqe.opcode().wc_opcode();
            let wc = Wc {
                wr_id: wqe.wr_id,
                cqe: wqe.cqe,
                status,
                opcode,
                byte_len,
                qp_num: self.qpn,
                ..Wc::default()
            };
            if self.send_cq.push(wc, false).is_err() {
                self.set_error();
            }
        }
        if status != WcStatus::Success {
            self.set_error();
        } else if drained && self.state() == QpState::Sqd {
            self.sq_drained();
        }
        true
    }

    /// Takes the next receive entry (from the SRQ if the QP has one), for a
    /// message that arrived. The provider owns it until it completes it with
    /// [`QpCore::complete_recv`]. Any context.
    pub(crate) fn rq_take(self: &Arc<Self>) -> Option<RecvWqe> {
        if let Some(srq) = &self.srq {
            if matches!(self.state(), QpState::Err | QpState::Reset) {
                return None;
            }
            return match srq.take() {
                Ok(w) => w,
                Err(wr_id) => {
                    // A bad entry of a user SRQ's ring ends this QP.
                    let wc = Wc {
                        status: WcStatus::LocQpOpErr,
                        ..Wc::flushed(wr_id, None, WcOpcode::Recv, self.qpn)
                    };
                    let _ = self.recv_cq.push(wc, false);
                    self.set_error();
                    None
                }
            };
        }
        let mut rq = self.rq.lock();
        if rq.err {
            return None;
        }
        if super::user::pump_rq(&mut rq, self.cap.max_recv_sge) {
            drop(rq);
            self.set_error();
            return None;
        }
        rq.ring.pop()
    }

    /// [`QpCore::rq_take`] for a message of `len` bytes: an entry of the
    /// QP's own receive queue too short for it stays at the head (the
    /// message is dropped and the entry waits for the next one); an SRQ's
    /// entry is taken all the same, to be completed with an error. Any
    /// context.
    pub(crate) fn rq_take_for(self: &Arc<Self>, len: u64) -> RqTake {
        if self.srq.is_some() {
            return match self.rq_take() {
                Some(w) if u64::from(w.length) >= len => RqTake::Fits(w),
                Some(w) => RqTake::Short(Some(w)),
                None => RqTake::Empty,
            };
        }
        let mut rq = self.rq.lock();
        if rq.err {
            return RqTake::Empty;
        }
        if super::user::pump_rq(&mut rq, self.cap.max_recv_sge) {
            drop(rq);
            self.set_error();
            return RqTake::Empty;
        }
        match rq.ring.get(0).map(|w| u64::from(w.length) >= len) {
            None => RqTake::Empty,
            Some(false) => RqTake::Short(None),
            Some(true) => rq.ring.pop().map_or(RqTake::Empty, RqTake::Fits),
        }
    }

    /// Completes a receive entry with an error status without moving the
    /// QP to the error state (only a CQ overflow does). Any context.
    pub(crate) fn complete_recv_nonfatal(self: &Arc<Self>, wqe: RecvWqe, mut wc: Wc) {
        wc.wr_id = wqe.wr_id;
        wc.cqe = wqe.cqe;
        wc.qp_num = self.qpn;
        if !wc.opcode.is_recv() {
            wc.opcode = WcOpcode::Recv;
        }
        if self.recv_cq.push(wc, false).is_err() {
            self.set_error();
        }
    }

    /// Completes a receive entry taken with [`QpCore::rq_take`]: `wc` is
    /// filled in with the entry's identity and this QP's number and goes to
    /// the receive CQ; a failure moves the QP to the error state. Any
    /// context.
    pub(crate) fn complete_recv(self: &Arc<Self>, wqe: RecvWqe, mut wc: Wc, solicited: bool) {
        wc.wr_id = wqe.wr_id;
        wc.cqe = wqe.cqe;
        wc.qp_num = self.qpn;
        if !wc.opcode.is_recv() {
            wc.opcode = WcOpcode::Recv;
        }
        let failed = wc.status != WcStatus::Success;
        if self.recv_cq.push(wc, solicited).is_err() || failed {
            self.set_error();
        }
    }

    /// Moves the QP to the error state and flushes its queues (for
    /// providers: a fatal transport error). Any context.
    pub(crate) fn set_error(self: &Arc<Self>) {
        let old = self.state.swap(QpState::Err.as_raw(), Ordering::AcqRel);
        self.attr.lock().qp_state = QpState::Err;
        if old != QpState::Reset.as_raw() && old != QpState::Err.as_raw() {
            self.entered_error();
        }
    }

    /// The QP just entered the error state: flush, and for a QP of an SRQ
    /// say that it will consume no more of the SRQ's WQEs (the IBTA's
    /// "last WQE reached", which tells the ULP it may destroy the QP).
    pub(super) fn entered_error(self: &Arc<Self>) {
        self.flush();
        if self.srq.is_some() {
            self.device().dispatch_event(Event {
                kind: EventKind::QpLastWqeReached,
                element: Element::Qp(self.qpn),
            });
        }
    }

    pub(super) fn sq_drained(&self) {
        let notify = {
            let mut a = self.attr.lock();
            let n = a.sq_draining && a.en_sqd_async_notify;
            a.sq_draining = false;
            n
        };
        if notify {
            self.device().dispatch_event(Event {
                kind: EventKind::SqDrained,
                element: Element::Qp(self.qpn),
            });
        }
    }

    /// Pushes a completion of the tagged buffer `wqe` to the TM SRQ's CQ
    /// (the QP's receive CQ); an overflow moves the QP to the error state.
    fn tm_push(self: &Arc<Self>, wqe: &RecvWqe, mut wc: Wc, solicited: bool) {
        wc.wr_id = wqe.wr_id;
        wc.cqe = wqe.cqe.clone();
        wc.qp_num = self.qpn;
        if self.recv_cq.push(wc, solicited).is_err() {
            self.set_error();
        }
    }

    /// A rendezvous step the core queued ([`TmJob`]) is done with
    /// `status`: the READ's tagged buffer completes on the TM SRQ's CQ
    /// (`TM_DATA_VALID`, or the READ's error) and its entry is released;
    /// a FIN completes nothing. No lock held.
    fn tm_job_done(self: &Arc<Self>, w: SendWqe, status: WcStatus, byte_len: u32, flushing: bool) {
        let TmJob::RndvRead { handle } = w.tm else {
            return;
        };
        let ok = status == WcStatus::Success;
        let wc = Wc {
            wr_id: w.wr_id,
            cqe: w.cqe,
            status,
            opcode: WcOpcode::TmRecv,
            wc_flags: if ok {
                WcFlags::TM_DATA_VALID
            } else {
                WcFlags::NONE
            },
            byte_len,
            qp_num: self.qpn,
            ..Wc::default()
        };
        if flushing {
            let _ = self.recv_cq.push_from_core(wc);
        } else if self.recv_cq.push(wc, false).is_err() {
            self.set_error();
        }
        if let Some(srq) = &self.srq {
            srq.tm_release(handle);
        }
    }

    /// A rendezvous step taken off the send queue without completing
    /// (to RESET): its tagged buffer's entry is released.
    pub(super) fn drop_tm_job(&self, w: &SendWqe) {
        if let (TmJob::RndvRead { handle }, Some(srq)) = (w.tm, &self.srq) {
            srq.tm_release(handle);
        }
    }

    /// Completes every outstanding request with `WR_FLUSH_ERR`. Taken one
    /// at a time so no queue lock is held while completing.
    pub(super) fn flush(self: &Arc<Self>) {
        self.sq.lock().err = true;
        loop {
            let wqe = {
                let mut sq = self.sq.lock();
                sq.started = 0;
                sq.pop()
            };
            let Some(w) = wqe else { break };
            if w.tm != TmJob::None {
                self.tm_job_done(w, WcStatus::WrFlushErr, 0, true);
                continue;
            }
            let opcode = w.opcode().wc_opcode();
            let wc = Wc::flushed(w.wr_id, w.cqe, opcode, self.qpn);
            let _ = self.send_cq.push_from_core(wc);
        }
        self.flush_user_sq();
        if self.srq.is_some() {
            return;
        }
        self.rq.lock().err = true;
        loop {
            let wqe = self.rq.lock().ring.pop();
            let Some(w) = wqe else { break };
            let wc = Wc::flushed(w.wr_id, w.cqe, WcOpcode::Recv, self.qpn);
            let _ = self.recv_cq.push_from_core(wc);
        }
        self.flush_user_rq();
    }
}
