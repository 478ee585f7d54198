// SPDX-License-Identifier: GPL-2.0

//! Queue pairs (`ib_create_qp`, `ib_modify_qp`, `ib_query_qp`,
//! `ib_destroy_qp`, `ib_post_send`, `ib_post_recv`, `ib_attach_mcast`,
//! `ib_detach_mcast`, `ib_drain_qp`).
//!
//! The core owns a QP's state, attributes and work queues; the provider
//! owns the transport ([`QpOps`]). Every `modify_qp` goes through
//! [`rdma::qp_state`](crate::qp_state) and a check of each attribute's value
//! before the provider sees it. Posted work requests are validated and
//! copied into the rings, then the provider is told ([`QpOps::post_send`]);
//! it takes entries with [`QpCore::sq_next`] / [`QpCore::rq_take`] and
//! completes them in order with [`QpCore::sq_complete`] /
//! [`QpCore::complete_recv`]. Moving to the error state (by `modify_qp`, a
//! failed completion or the provider) flushes every outstanding request
//! with `WR_FLUSH_ERR`; moving to RESET discards them.
//!
//! The provider's part is revocable: [`Qp::destroy`], or device
//! unregistration for a leaked QP, waits until no verb is inside it, calls
//! [`QpOps::destroy`] and drops it.

use core::any::Any;
use core::ops::Deref;
use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use kernel::error::code::{EINVAL, ENODEV, ENOMEM};
use kernel::prelude::*;
use kernel::sync::{new_condvar, new_mutex, Arc, ArcBorrow, CondVar, Mutex};
use kernel::types::Opaque;
use kernel::workqueue::{self, impl_has_work, new_work, Work, WorkItem};

use crate::ah::AhAttr;
use crate::attr::{Gid, Mtu};
use crate::bindings;
use crate::cq::{CqCore, PollCtx};
use crate::device::{Device, DeviceCaps};
use crate::errno::eopnotsupp;
use crate::event::{Element, Event, EventKind};
use crate::gate::Revocable;
use crate::mr::MrKind;
use crate::pd::PdCore;
use crate::qp_state::{check_modify, AttrMask, QpState, QpType};
use crate::srq::SrqCore;
use crate::sync::SpinLockIrq;
use crate::verbs::{Access, SendFlags, WcOpcode, WcStatus, WrOpcode};
use crate::wc::{CqeDone, Wc};
use crate::wr::{RecvWqe, RecvWr, Ring, SendOp, SendWqe, SendWr, MAX_INLINE, MAX_SGE};

/// The most multicast groups one QP can join.
pub const MAX_MCAST: usize = 16;

/// Queue sizes of a QP (`struct ib_qp_cap`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpCap {
    /// Send queue entries.
    pub max_send_wr: u32,
    /// Receive queue entries (0 with an SRQ).
    pub max_recv_wr: u32,
    /// SGEs per send request.
    pub max_send_sge: u32,
    /// SGEs per receive request.
    pub max_recv_sge: u32,
    /// Inline data bytes per send request.
    pub max_inline_data: u32,
}

/// What a QP is created with (`struct ib_qp_init_attr`).
pub struct QpInitAttr<'a> {
    /// Transport type: RC, UC, UD or GSI.
    pub qp_type: QpType,
    /// CQ of send completions.
    pub send_cq: &'a Arc<CqCore>,
    /// CQ of receive completions.
    pub recv_cq: &'a Arc<CqCore>,
    /// Shared receive queue, if any.
    pub srq: Option<&'a Arc<SrqCore>>,
    /// Queue sizes.
    pub cap: QpCap,
    /// Whether every send request is signaled, whatever its flags.
    pub sq_sig_all: bool,
    /// Port of a GSI QP.
    pub port_num: u32,
}

/// QP attributes (`struct ib_qp_attr`), for `modify_qp` and `query_qp`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpAttr {
    /// State to move to / current state.
    pub qp_state: QpState,
    /// Current state the caller believes (with `CUR_STATE`).
    pub cur_qp_state: QpState,
    /// Path MTU.
    pub path_mtu: Mtu,
    /// Q_Key (UD).
    pub qkey: u32,
    /// Expected PSN of the next request received.
    pub rq_psn: u32,
    /// PSN of the next request sent.
    pub sq_psn: u32,
    /// Remote QP (connected QPs).
    pub dest_qp_num: u32,
    /// Rights granted to the remote QP.
    pub qp_access_flags: Access,
    /// Queue sizes (query only).
    pub cap: QpCap,
    /// Address of the remote port (connected QPs).
    pub ah_attr: AhAttr,
    /// P_Key index.
    pub pkey_index: u16,
    /// Raise `SqDrained` when the send queue drained in SQD.
    pub en_sqd_async_notify: bool,
    /// Whether the QP is draining in SQD (query only).
    pub sq_draining: bool,
    /// Outstanding RDMA READs/atomics as requester.
    pub max_rd_atomic: u8,
    /// Outstanding RDMA READs/atomics as responder.
    pub max_dest_rd_atomic: u8,
    /// RNR NAK timer code (0 to 31).
    pub min_rnr_timer: u8,
    /// Port.
    pub port_num: u32,
    /// Local ACK timeout code (0 to 31).
    pub timeout: u8,
    /// Transport retries (0 to 7).
    pub retry_cnt: u8,
    /// RNR retries (0 to 7, 7 meaning infinite).
    pub rnr_retry: u8,
}

impl Default for QpAttr {
    fn default() -> Self {
        QpAttr {
            qp_state: QpState::Reset,
            cur_qp_state: QpState::Reset,
            path_mtu: Mtu::Mtu1024,
            qkey: 0,
            rq_psn: 0,
            sq_psn: 0,
            dest_qp_num: 0,
            qp_access_flags: Access::NONE,
            cap: QpCap::default(),
            ah_attr: AhAttr::default(),
            pkey_index: 0,
            en_sqd_async_notify: false,
            sq_draining: false,
            max_rd_atomic: 0,
            max_dest_rd_atomic: 0,
            min_rnr_timer: 0,
            port_num: 1,
            timeout: 0,
            retry_cnt: 0,
            rnr_retry: 0,
        }
    }
}

/// What a provider learns about a QP it is asked to create.
#[derive(Clone, Copy, Debug)]
pub struct QpInfo {
    /// The QP number the core gave it.
    pub qpn: u32,
    /// Its type.
    pub qp_type: QpType,
    /// Its queue sizes.
    pub cap: QpCap,
    /// Port (GSI).
    pub port_num: u32,
}

/// A provider's transport for one QP.
///
/// `post_send` and `post_recv` are called from the consumer's context (any
/// context, with preemption disabled): they must not sleep and must not
/// complete work inline; they schedule it.
pub trait QpOps: Any + Send + Sync {
    /// A `modify_qp` the core has validated, before it commits. Returning an
    /// error refuses it with nothing changed. May sleep.
    fn modify(&self, _qp: &Arc<QpCore>, _attr: &QpAttr, _mask: AttrMask) -> Result {
        Ok(())
    }

    /// New send queue entries are waiting. The default schedules
    /// [`QpOps::run`].
    fn post_send(&self, qp: &Arc<QpCore>) {
        qp.schedule();
    }

    /// New receive queue entries are waiting.
    fn post_recv(&self, _qp: &Arc<QpCore>) {}

    /// The provider's work on the QP, in process context on a workqueue,
    /// one run at a time per QP, after [`QpCore::schedule`]. The core
    /// flushes it before the QP is destroyed, so a provider module has no
    /// work of its own to cancel.
    fn run(&self, _qp: &Arc<QpCore>) {}

    /// The QP joined (`attach` true) or left a multicast group. May sleep.
    fn mcast(&self, _qp: &Arc<QpCore>, _gid: &Gid, _attach: bool) -> Result {
        Ok(())
    }

    /// The QP is going away: stop and wait for the provider's work on it.
    /// After this returns the provider must not use the QP's queues. May
    /// sleep.
    fn destroy(&self, _qp: &QpCore) {}
}

struct SendQueue {
    ring: Ring<SendWqe>,
    /// Entries from the head that the provider has taken.
    started: usize,
    /// Flushed: the provider gets nothing more until RESET.
    err: bool,
}

struct RecvQueue {
    ring: Ring<RecvWqe>,
    err: bool,
}

/// The core's queue pair.
#[pin_data]
pub struct QpCore {
    pd: Arc<PdCore>,
    qpn: u32,
    qp_type: QpType,
    send_cq: Arc<CqCore>,
    recv_cq: Arc<CqCore>,
    srq: Option<Arc<SrqCore>>,
    sq_sig_all: bool,
    cap: QpCap,
    state: AtomicU32,
    #[pin]
    attr: SpinLockIrq<QpAttr>,
    /// Serialises `modify_qp`.
    #[pin]
    modify_lock: Mutex<()>,
    #[pin]
    sq: SpinLockIrq<SendQueue>,
    #[pin]
    rq: SpinLockIrq<RecvQueue>,
    #[pin]
    mcast: Mutex<KVec<Gid>>,
    #[pin]
    ops: Revocable<Arc<dyn QpOps>>,
    /// Runs [`QpOps::run`].
    #[pin]
    work: Work<QpCore>,
    /// Schedules `work` later ([`QpCore::schedule_in`]).
    #[pin]
    timer: Opaque<bindings::timer_list>,
    released: AtomicBool,
}

// SAFETY: the `Opaque` timer is only touched through the kernel's timer
// API, which does its own locking; everything else is `Send`.
unsafe impl Send for QpCore {}
// SAFETY: as for `Send`: shared use of the timer goes through the timer
// API, which is safe from any context.
unsafe impl Sync for QpCore {}

/// The timer of [`QpCore::schedule_in`] fired (softirq context).
///
/// # Safety
///
/// `t` must be the `timer` field of a `QpCore` inside an `Arc`.
unsafe extern "C" fn qp_timer_fired(t: *mut bindings::timer_list) {
    // SAFETY: `t` is the `timer` field of a `QpCore` inside an `Arc`; the
    // timer is shut down in `release` (which every QP goes through before
    // its last reference can go: the `Qp` handle holds one until then), so
    // the QP is alive while this runs.
    let qp = unsafe { &*kernel::container_of!(t, QpCore, timer) };
    // SAFETY: `qp` is inside an `Arc` (QPs are only created by
    // `Arc::pin_init`) and alive as argued above, so borrowing it as an
    // `ArcBorrow` for the duration of this call is valid.
    let qp = unsafe { ArcBorrow::from_raw(ptr::from_ref(qp)) };
    let arc: Arc<QpCore> = qp.into();
    arc.schedule();
}

impl_has_work! {
    impl HasWork<Self> for QpCore { self.work }
}

impl WorkItem for QpCore {
    type Pointer = Arc<QpCore>;

    fn run(this: Arc<QpCore>) {
        if let Some(ops) = this.ops.access() {
            ops.run(&this);
        }
    }
}

impl QpCore {
    /// The QP number.
    pub fn qpn(&self) -> u32 {
        self.qpn
    }

    /// The transport type.
    pub fn qp_type(&self) -> QpType {
        self.qp_type
    }

    /// The current state. Any context.
    pub fn state(&self) -> QpState {
        QpState::from_raw(self.state.load(Ordering::Acquire)).unwrap_or(QpState::Err)
    }

    /// The PD.
    pub fn pd(&self) -> &Arc<PdCore> {
        &self.pd
    }

    /// The device.
    pub fn device(&self) -> &Arc<Device> {
        self.pd.device()
    }

    /// The send CQ.
    pub fn send_cq(&self) -> &Arc<CqCore> {
        &self.send_cq
    }

    /// The receive CQ.
    pub fn recv_cq(&self) -> &Arc<CqCore> {
        &self.recv_cq
    }

    /// The SRQ, if any.
    pub fn srq(&self) -> Option<&Arc<SrqCore>> {
        self.srq.as_ref()
    }

    /// The queue sizes.
    pub fn cap(&self) -> QpCap {
        self.cap
    }

    /// The attributes as last modified (for providers). Any context.
    pub fn attr(&self) -> QpAttr {
        *self.attr.lock()
    }

    /// Schedules the provider's [`QpOps::run`] (for providers). Any
    /// context.
    ///
    /// The work goes to the unbound system workqueue, as rdma_rxe's does:
    /// it runs on whichever CPU is free instead of waiting behind the task
    /// that posted (a ULP polling its CQ on the posting CPU would otherwise
    /// delay its own requests), and a work item never runs on two CPUs at
    /// once, so a QP's work stays serial.
    pub fn schedule(self: &Arc<Self>) {
        // Already queued is fine: that run sees the new work.
        let _ = workqueue::system_unbound().enqueue(self.clone());
    }

    /// Schedules the provider's [`QpOps::run`] in `usecs` microseconds (for
    /// providers: retransmission and RNR timers). A later call replaces an
    /// earlier one that has not fired; after the QP is destroyed it does
    /// nothing. Any context.
    pub fn schedule_in(&self, usecs: u32) {
        // SAFETY: the timer was set up when the QP was made and is shut
        // down in `release`; arming a shut-down timer is a no-op.
        unsafe { bindings::rdma_rs_timer_arm_us(self.timer.get(), usecs) };
    }

    /// The provider's object of this QP, if it is of type `T`: lets a
    /// provider that found the QP by number reach its transport state.
    pub fn provider<T: QpOps>(&self, f: impl FnOnce(&T)) -> bool {
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

    /// Posts send work requests (`ib_post_send`); on error, the index of
    /// the first request not posted and why. Any context; never sleeps.
    pub fn post_send(
        self: &Arc<Self>,
        wrs: &[SendWr<'_>],
    ) -> core::result::Result<(), (usize, Error)> {
        let _verb = crate::verb::Verb::enter();
        let ops = self.ops.access().ok_or((0, ENODEV))?;
        let state = self.state();
        if matches!(state, QpState::Reset | QpState::Init | QpState::Rtr) {
            return Err((0, EINVAL));
        }
        let attr_port = self.attr.lock().port_num;
        let mut result = Ok(());
        {
            let mut sq = self.sq.lock();
            for (i, wr) in wrs.iter().enumerate() {
                let r = match sq.ring.next_slot() {
                    Ok(slot) => self.fill_send(slot, wr, attr_port),
                    Err(e) => Err(e),
                };
                if let Err(e) = r {
                    result = Err((i, e));
                    break;
                }
                sq.ring.commit();
            }
        }
        // The requests before a bad one are posted: ring for them.
        if !matches!(result, Err((0, _))) {
            if state == QpState::Err {
                self.flush();
            } else {
                ops.post_send(self);
            }
        }
        result
    }

    fn fill_send(&self, w: &mut SendWqe, wr: &SendWr<'_>, _port: u32) -> Result {
        let op = wr.op.opcode();
        if !op.allowed_on(self.qp_type) || wr.flags.has_unknown() {
            return Err(EINVAL);
        }
        let caps = self.device().attr().cap_flags;
        if matches!(
            op,
            WrOpcode::SendWithInv
                | WrOpcode::LocalInv
                | WrOpcode::RegMr
                | WrOpcode::RdmaReadWithInv
        ) && !caps.contains(DeviceCaps::MEM_MGT_EXTENSIONS)
        {
            return Err(eopnotsupp());
        }
        if op == WrOpcode::BindMw && !caps.contains(DeviceCaps::MEM_WINDOW) {
            return Err(eopnotsupp());
        }
        let inline = wr.flags.contains(SendFlags::INLINE) && op.gathers();
        if !inline && (wr.sg.len() > self.cap.max_send_sge as usize || wr.sg.len() > MAX_SGE) {
            return Err(EINVAL);
        }
        let length = crate::mr::sge_len(wr.sg)?;
        if (op.is_atomic() || op == WrOpcode::AtomicWrite) && length != 8 {
            return Err(EINVAL);
        }
        w.wr_id = wr.wr_id;
        w.cqe = wr.cqe.clone();
        w.opcode = op;
        w.flags = wr.flags;
        w.signaled = self.sq_sig_all || wr.flags.contains(SendFlags::SIGNALED);
        w.imm = 0;
        w.invalidate_rkey = 0;
        w.remote_addr = 0;
        w.rkey = 0;
        w.compare_add = 0;
        w.swap = 0;
        w.mr = None;
        w.mw = None;
        w.bind_length = 0;
        w.flush_whole_mr = false;
        w.ah = None;
        w.length = length;
        match wr.op {
            SendOp::Send => {}
            SendOp::SendWithImm(imm) => w.imm = imm,
            SendOp::SendWithInv(k) | SendOp::LocalInv(k) => w.invalidate_rkey = k,
            SendOp::Write { remote_addr, rkey } | SendOp::Read { remote_addr, rkey } => {
                w.remote_addr = remote_addr;
                w.rkey = rkey;
            }
            SendOp::ReadWithInv {
                remote_addr,
                rkey,
                invalidate,
            } => {
                w.remote_addr = remote_addr;
                w.rkey = rkey;
                w.invalidate_rkey = invalidate;
            }
            SendOp::Flush {
                remote_addr,
                rkey,
                length,
                flush,
                whole_mr,
            } => {
                if !flush.global && !flush.persistent {
                    return Err(EINVAL);
                }
                w.remote_addr = remote_addr;
                w.rkey = rkey;
                w.bind_length = length;
                w.flush = flush;
                w.flush_whole_mr = whole_mr;
            }
            SendOp::AtomicWrite { remote_addr, rkey } => {
                if remote_addr % 8 != 0 {
                    return Err(EINVAL);
                }
                w.remote_addr = remote_addr;
                w.rkey = rkey;
            }
            SendOp::WriteWithImm {
                remote_addr,
                rkey,
                imm,
            } => {
                w.remote_addr = remote_addr;
                w.rkey = rkey;
                w.imm = imm;
            }
            SendOp::CmpAndSwp {
                remote_addr,
                rkey,
                compare,
                swap,
            } => {
                if remote_addr % 8 != 0 {
                    return Err(EINVAL);
                }
                w.remote_addr = remote_addr;
                w.rkey = rkey;
                w.compare_add = compare;
                w.swap = swap;
            }
            SendOp::FetchAndAdd {
                remote_addr,
                rkey,
                add,
            } => {
                if remote_addr % 8 != 0 {
                    return Err(EINVAL);
                }
                w.remote_addr = remote_addr;
                w.rkey = rkey;
                w.compare_add = add;
            }
            SendOp::RegMr { mr, key, access } => {
                if mr.kind() != MrKind::FastReg
                    || !core::ptr::eq(&**mr.pd(), &*self.pd)
                    || key >> 8 != mr.lkey() >> 8
                    || !access.check()
                {
                    return Err(EINVAL);
                }
                w.mr = Some(mr.clone());
                w.reg_key = key;
                w.reg_access = access;
            }
            SendOp::BindMw {
                mw,
                mr,
                key,
                addr,
                length,
                access,
            } => {
                crate::mw::check_bind_request(mw, mr, &self.pd)?;
                w.mw = Some(mw.clone());
                w.mr = Some(mr.clone());
                w.reg_key = key;
                w.reg_access = access;
                w.bind_addr = addr;
                w.bind_length = length;
            }
        }
        if matches!(self.qp_type, QpType::Ud | QpType::Gsi) {
            let ud = wr.ud.as_ref().ok_or(EINVAL)?;
            if !core::ptr::eq(&**ud.ah.pd(), &*self.pd) || ud.remote_qpn >= 1 << 24 {
                return Err(EINVAL);
            }
            w.ah = Some(ud.ah.clone());
            w.remote_qpn = ud.remote_qpn;
            w.remote_qkey = ud.remote_qkey;
        }
        w.inline = inline;
        if inline {
            if length > self.cap.max_inline_data || length as usize > MAX_INLINE {
                return Err(EINVAL);
            }
            w.num_sge = 0;
            crate::mr::gather(
                self.device(),
                &self.pd,
                wr.sg,
                0,
                &mut w.inline_data[..length as usize],
            )
            .map_err(|_| EINVAL)?;
        } else {
            w.num_sge = wr.sg.len();
            w.sge[..wr.sg.len()].copy_from_slice(wr.sg);
        }
        Ok(())
    }

    /// Posts receive work requests (`ib_post_recv`). Any context; never
    /// sleeps. `EINVAL` in RESET or with an SRQ.
    pub fn post_recv(
        self: &Arc<Self>,
        wrs: &[RecvWr<'_>],
    ) -> core::result::Result<(), (usize, Error)> {
        let _verb = crate::verb::Verb::enter();
        let ops = self.ops.access().ok_or((0, ENODEV))?;
        let state = self.state();
        if state == QpState::Reset || self.srq.is_some() {
            return Err((0, EINVAL));
        }
        let mut result = Ok(());
        {
            let mut rq = self.rq.lock();
            for (i, wr) in wrs.iter().enumerate() {
                let r = match rq.ring.next_slot() {
                    Ok(slot) => slot.fill(wr, self.cap.max_recv_sge),
                    Err(e) => Err(e),
                };
                if let Err(e) = r {
                    result = Err((i, e));
                    break;
                }
                rq.ring.commit();
            }
        }
        if !matches!(result, Err((0, _))) {
            if state == QpState::Err {
                self.flush();
            } else {
                ops.post_recv(self);
            }
        }
        result
    }

    /// Copies the oldest send entry the provider has not taken yet into
    /// `out` (for providers). False when there is none or the queue is
    /// flushed. Any context.
    pub fn sq_next(&self, out: &mut SendWqe) -> bool {
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

    /// Copies the `i`-th send entry from the oldest (taken or not) into
    /// `out` (for providers: to look before taking, or to send a taken
    /// one again). False when there is none or the queue is flushed. Any
    /// context.
    pub fn sq_peek(&self, i: usize, out: &mut SendWqe) -> bool {
        let sq = self.sq.lock();
        if sq.err {
            return false;
        }
        match sq.ring.get(i) {
            Some(w) => {
                out.clone_from(w);
                true
            }
            None => false,
        }
    }

    /// Calls `f` on the `i`-th send entry from the oldest, under the send
    /// queue's lock (for providers reading a field or two without copying
    /// the entry). None when there is none or the queue is flushed. Any
    /// context; `f` must not call back into the QP.
    pub fn sq_with<R>(&self, i: usize, f: impl FnOnce(&SendWqe) -> R) -> Option<R> {
        let sq = self.sq.lock();
        if sq.err {
            return None;
        }
        sq.ring.get(i).map(f)
    }

    /// Takes the oldest entry not taken yet without copying it (for
    /// providers that looked at it with [`QpCore::sq_peek`]). Any context.
    pub fn sq_start(&self) -> bool {
        let mut sq = self.sq.lock();
        if sq.err || sq.started >= sq.ring.len() {
            return false;
        }
        sq.started += 1;
        true
    }

    /// Send entries the provider took and has not completed.
    pub fn sq_in_flight(&self) -> usize {
        self.sq.lock().started
    }

    /// Completes the oldest taken send entry with `status` (for providers,
    /// in order): a completion goes to the send CQ if it failed or was
    /// signaled; a failure moves the QP to the error state. False if there
    /// was nothing to complete (the queue was flushed meanwhile). Any
    /// context.
    pub fn sq_complete(self: &Arc<Self>, status: WcStatus, byte_len: u32) -> bool {
        let (wqe, drained) = {
            let mut sq = self.sq.lock();
            if sq.err || sq.started == 0 {
                return false;
            }
            sq.started -= 1;
            let wqe = sq.ring.pop();
            (wqe, sq.ring.len() == 0)
        };
        let Some(wqe) = wqe else { return false };
        if status != WcStatus::Success || wqe.signaled {
            let wc = Wc {
                wr_id: wqe.wr_id,
                cqe: wqe.cqe,
                status,
                opcode: wqe.opcode.wc_opcode(),
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
    pub fn rq_take(&self) -> Option<RecvWqe> {
        if let Some(srq) = &self.srq {
            if matches!(self.state(), QpState::Err | QpState::Reset) {
                return None;
            }
            return srq.take();
        }
        let mut rq = self.rq.lock();
        if rq.err {
            return None;
        }
        rq.ring.pop()
    }

    /// Completes a receive entry taken with [`QpCore::rq_take`]: `wc` is
    /// filled in with the entry's identity and this QP's number and goes to
    /// the receive CQ; a failure moves the QP to the error state. Any
    /// context.
    pub fn complete_recv(self: &Arc<Self>, wqe: RecvWqe, mut wc: Wc, solicited: bool) {
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
    pub fn set_error(self: &Arc<Self>) {
        let old = self.state.swap(QpState::Err.as_raw(), Ordering::AcqRel);
        self.attr.lock().qp_state = QpState::Err;
        if old != QpState::Reset.as_raw() && old != QpState::Err.as_raw() {
            self.entered_error();
        }
    }

    /// The QP just entered the error state: flush, and for a QP of an SRQ
    /// say that it will consume no more of the SRQ's WQEs (the IBTA's
    /// "last WQE reached", which tells the ULP it may destroy the QP).
    fn entered_error(self: &Arc<Self>) {
        self.flush();
        if self.srq.is_some() {
            self.device().dispatch_event(Event {
                kind: EventKind::QpLastWqeReached,
                element: Element::Qp(self.qpn),
            });
        }
    }

    fn sq_drained(&self) {
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

    /// Completes every outstanding request with `WR_FLUSH_ERR`. Taken one
    /// at a time so no queue lock is held while completing.
    fn flush(self: &Arc<Self>) {
        self.sq.lock().err = true;
        loop {
            let wqe = {
                let mut sq = self.sq.lock();
                sq.started = 0;
                sq.ring.pop()
            };
            let Some(w) = wqe else { break };
            let wc = Wc::flushed(w.wr_id, w.cqe, w.opcode.wc_opcode(), self.qpn);
            let _ = self.send_cq.push_from_core(wc);
        }
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
    }

    /// Empties the queues without completions (to RESET).
    fn reset_queues(&self) {
        loop {
            let mut sq = self.sq.lock();
            sq.started = 0;
            sq.err = false;
            if sq.ring.pop().is_none() {
                break;
            }
        }
        loop {
            let mut rq = self.rq.lock();
            rq.err = false;
            if rq.ring.pop().is_none() {
                break;
            }
        }
    }

    /// Checks the values of the attributes in `mask`.
    fn check_values(&self, attr: &QpAttr, mask: AttrMask) -> Result {
        let dev = self.device();
        let a = dev.attr();
        let port = if mask.contains(AttrMask::PORT) {
            dev.check_port(attr.port_num)?;
            attr.port_num
        } else {
            self.attr.lock().port_num
        };
        if mask.contains(AttrMask::PKEY_INDEX) && u32::from(attr.pkey_index) >= dev.pkey_tbl_len() {
            return Err(EINVAL);
        }
        if mask.contains(AttrMask::AV) {
            attr.ah_attr.check(dev)?;
        }
        if mask.contains(AttrMask::PATH_MTU) {
            let pa = dev.query_port(port)?;
            if attr.path_mtu > pa.max_mtu {
                return Err(EINVAL);
            }
        }
        if mask.contains(AttrMask::MAX_QP_RD_ATOMIC)
            && u32::from(attr.max_rd_atomic) > a.max_qp_init_rd_atom
        {
            return Err(EINVAL);
        }
        if mask.contains(AttrMask::MAX_DEST_RD_ATOMIC)
            && u32::from(attr.max_dest_rd_atomic) > a.max_qp_rd_atom
        {
            return Err(EINVAL);
        }
        if mask.contains(AttrMask::ACCESS_FLAGS)
            && attr.qp_access_flags.0 & !(Access::QP_REMOTE.0 | Access::LOCAL_WRITE.0) != 0
        {
            return Err(EINVAL);
        }
        let small = |m: AttrMask, v: u8, max: u8| !mask.contains(m) || v <= max;
        if !small(AttrMask::RETRY_CNT, attr.retry_cnt, 7)
            || !small(AttrMask::RNR_RETRY, attr.rnr_retry, 7)
            || !small(AttrMask::MIN_RNR_TIMER, attr.min_rnr_timer, 31)
            || !small(AttrMask::TIMEOUT, attr.timeout, 31)
        {
            return Err(EINVAL);
        }
        let psn_ok = |m: AttrMask, v: u32| !mask.contains(m) || v < 1 << 24;
        if !psn_ok(AttrMask::SQ_PSN, attr.sq_psn)
            || !psn_ok(AttrMask::RQ_PSN, attr.rq_psn)
            || !psn_ok(AttrMask::DEST_QPN, attr.dest_qp_num)
        {
            return Err(EINVAL);
        }
        if mask.contains(AttrMask::CAP) || mask.contains(AttrMask::RATE_LIMIT) {
            return Err(eopnotsupp());
        }
        Ok(())
    }

    /// Modifies the QP (`ib_modify_qp`): the transition and the attribute
    /// mask are checked against the IBTA state machine, each attribute's
    /// value against the device, then the provider agrees and the change is
    /// committed. `EINVAL` for any refusal. May sleep.
    pub fn modify(self: &Arc<Self>, attr: &QpAttr, mask: AttrMask) -> Result {
        crate::might_sleep();
        let ops = self.ops.access().ok_or(ENODEV)?;
        let _serial = self.modify_lock.lock();
        let cur = if mask.contains(AttrMask::CUR_STATE) {
            attr.cur_qp_state
        } else {
            self.state()
        };
        let next = if mask.contains(AttrMask::STATE) {
            attr.qp_state
        } else {
            cur
        };
        if let Err(e) = check_modify(cur, next, self.qp_type, mask) {
            pr_debug!(
                "QP {}: modify {:?} -> {:?} refused: {:?}\n",
                self.qpn,
                cur,
                next,
                e
            );
            return Err(EINVAL);
        }
        self.check_values(attr, mask)?;
        ops.modify(self, attr, mask)?;
        let drained = {
            let mut a = self.attr.lock();
            let m = |bit: AttrMask| mask.contains(bit);
            if m(AttrMask::EN_SQD_ASYNC_NOTIFY) {
                a.en_sqd_async_notify = attr.en_sqd_async_notify;
            }
            if m(AttrMask::ACCESS_FLAGS) {
                a.qp_access_flags = attr.qp_access_flags;
            }
            if m(AttrMask::PKEY_INDEX) {
                a.pkey_index = attr.pkey_index;
            }
            if m(AttrMask::PORT) {
                a.port_num = attr.port_num;
            }
            if m(AttrMask::QKEY) {
                a.qkey = attr.qkey;
            }
            if m(AttrMask::AV) {
                a.ah_attr = attr.ah_attr;
            }
            if m(AttrMask::PATH_MTU) {
                a.path_mtu = attr.path_mtu;
            }
            if m(AttrMask::TIMEOUT) {
                a.timeout = attr.timeout;
            }
            if m(AttrMask::RETRY_CNT) {
                a.retry_cnt = attr.retry_cnt;
            }
            if m(AttrMask::RNR_RETRY) {
                a.rnr_retry = attr.rnr_retry;
            }
            if m(AttrMask::RQ_PSN) {
                a.rq_psn = attr.rq_psn;
            }
            if m(AttrMask::MAX_QP_RD_ATOMIC) {
                a.max_rd_atomic = attr.max_rd_atomic;
            }
            if m(AttrMask::MIN_RNR_TIMER) {
                a.min_rnr_timer = attr.min_rnr_timer;
            }
            if m(AttrMask::SQ_PSN) {
                a.sq_psn = attr.sq_psn;
            }
            if m(AttrMask::MAX_DEST_RD_ATOMIC) {
                a.max_dest_rd_atomic = attr.max_dest_rd_atomic;
            }
            if m(AttrMask::DEST_QPN) {
                a.dest_qp_num = attr.dest_qp_num;
            }
            a.qp_state = next;
            a.sq_draining = next == QpState::Sqd;
            next == QpState::Sqd && self.sq.lock().ring.len() == 0
        };
        let old = self.state.swap(next.as_raw(), Ordering::AcqRel);
        match next {
            QpState::Err if old != QpState::Err.as_raw() => self.entered_error(),
            QpState::Reset => {
                self.reset_queues();
                let mut a = self.attr.lock();
                *a = QpAttr {
                    port_num: a.port_num,
                    ..QpAttr::default()
                };
            }
            QpState::Sqd if drained => self.sq_drained(),
            _ => {}
        }
        Ok(())
    }

    /// The attributes and queue sizes (`ib_query_qp`). May sleep.
    pub fn query(&self) -> Result<QpAttr> {
        crate::might_sleep();
        let mut a = *self.attr.lock();
        a.qp_state = self.state();
        a.cur_qp_state = a.qp_state;
        a.cap = self.cap;
        Ok(a)
    }

    /// Joins a multicast group (`ib_attach_mcast`): UD QPs only, a
    /// multicast GID (first byte 0xff). May sleep.
    pub fn attach_mcast(self: &Arc<Self>, gid: &Gid) -> Result {
        crate::might_sleep();
        if self.qp_type != QpType::Ud || gid.0[0] != 0xff {
            return Err(EINVAL);
        }
        let ops = self.ops.access().ok_or(ENODEV)?;
        let mut groups = self.mcast.lock();
        if groups.iter().any(|g| g == gid) {
            return Ok(());
        }
        if groups.len() >= MAX_MCAST {
            return Err(ENOMEM);
        }
        groups.reserve(1, GFP_KERNEL)?;
        ops.mcast(self, gid, true)?;
        groups.push(*gid, GFP_KERNEL)?;
        Ok(())
    }

    /// Leaves a multicast group (`ib_detach_mcast`): `EINVAL` if the QP is
    /// not in it. May sleep.
    pub fn detach_mcast(self: &Arc<Self>, gid: &Gid) -> Result {
        crate::might_sleep();
        let ops = self.ops.access().ok_or(ENODEV)?;
        let mut groups = self.mcast.lock();
        crate::vec::remove_first(&mut groups, |g| g == gid).ok_or(EINVAL)?;
        ops.mcast(self, gid, false)
    }

    /// Whether the QP is in multicast group `gid` (for providers).
    pub fn in_mcast(&self, gid: &Gid) -> bool {
        self.mcast.lock().iter().any(|g| g == gid)
    }

    fn release(&self) {
        if self.released.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(ops) = self.ops.revoke() {
            ops.destroy(self);
            drop(ops);
        }
        // SAFETY: the timer was set up when the QP was made; after this no
        // `schedule_in` re-arms it.
        unsafe { bindings::rdma_rs_timer_shutdown(self.timer.get()) };
        // A queued run finds no provider any more; wait for it anyway so
        // nothing of the QP's work is left behind.
        // SAFETY: `work` is an initialised work item of this live QP; both
        // bindings name the same C struct.
        unsafe { bindings::flush_work(Work::raw_get(core::ptr::addr_of!(self.work)).cast()) };
        self.state.store(QpState::Err.as_raw(), Ordering::Release);
        self.sq.lock().err = true;
        self.rq.lock().err = true;
        self.reset_queues_keep_err();
        self.device().res.release_qpn(self.qpn);
        self.send_cq.put_use();
        self.recv_cq.put_use();
        if let Some(srq) = &self.srq {
            srq.put_use();
        }
        self.pd.put_use();
    }

    fn reset_queues_keep_err(&self) {
        while self.sq.lock().ring.pop().is_some() {}
        while self.rq.lock().ring.pop().is_some() {}
    }

    pub(crate) fn teardown(&self) {
        self.release();
    }
}

/// A queue pair, owned by a ULP. Dropping it destroys it.
pub struct Qp {
    core: Arc<QpCore>,
}

/// Gives back the uses a QP under construction took, in reverse order.
struct Uses<'a> {
    pd: Option<&'a PdCore>,
    send_cq: Option<&'a CqCore>,
    recv_cq: Option<&'a CqCore>,
    srq: Option<&'a SrqCore>,
}

impl Drop for Uses<'_> {
    fn drop(&mut self) {
        if let Some(s) = self.srq {
            s.put_use();
        }
        if let Some(c) = self.recv_cq {
            c.put_use();
        }
        if let Some(c) = self.send_cq {
            c.put_use();
        }
        if let Some(p) = self.pd {
            p.put_use();
        }
    }
}

impl Qp {
    /// Creates a QP on `pd` (`ib_create_qp`): RC, UC, UD or GSI, with the
    /// queue sizes checked against the device (`EINVAL`), its CQs and SRQ
    /// on the same device; `EOPNOTSUPP` if the provider has no QPs. The QP
    /// starts in RESET. May sleep.
    pub fn create(pd: &Arc<PdCore>, init: &QpInitAttr<'_>) -> Result<Qp> {
        crate::might_sleep();
        let dev = pd.device();
        let _usage = dev.try_get().ok_or(ENODEV)?;
        let a = dev.attr();
        let c = &init.cap;
        let same_dev = |d: &Arc<Device>| Arc::ptr_eq(d, dev);
        if !matches!(
            init.qp_type,
            QpType::Rc | QpType::Uc | QpType::Ud | QpType::Gsi
        ) || c.max_send_wr == 0
            || c.max_send_wr > a.max_qp_wr
            || c.max_recv_wr > a.max_qp_wr
            || (init.srq.is_none() && c.max_recv_wr == 0)
            || c.max_send_sge > a.max_send_sge
            || c.max_send_sge as usize > MAX_SGE
            || c.max_recv_sge > a.max_recv_sge
            || c.max_recv_sge as usize > MAX_SGE
            || c.max_inline_data as usize > MAX_INLINE
            || !same_dev(init.send_cq.device())
            || !same_dev(init.recv_cq.device())
            || init.srq.is_some_and(|s| !Arc::ptr_eq(s.pd(), pd))
        {
            return Err(EINVAL);
        }
        if init.qp_type == QpType::Gsi {
            dev.check_port(init.port_num)?;
        }
        let sq = Ring::new(c.max_send_wr as usize)?;
        let rq = Ring::new(if init.srq.is_some() {
            0
        } else {
            c.max_recv_wr as usize
        })?;
        let mut uses = Uses {
            pd: None,
            send_cq: None,
            recv_cq: None,
            srq: None,
        };
        pd.get_use()?;
        uses.pd = Some(pd);
        init.send_cq.get_use()?;
        uses.send_cq = Some(init.send_cq);
        init.recv_cq.get_use()?;
        uses.recv_cq = Some(init.recv_cq);
        if let Some(s) = init.srq {
            s.get_use()?;
            uses.srq = Some(s);
        }
        let qpn = dev.res.reserve_qpn(init.qp_type)?;
        let info = QpInfo {
            qpn,
            qp_type: init.qp_type,
            cap: *c,
            port_num: init.port_num,
        };
        let ops = match dev.ops().and_then(|o| o.create_qp(&info)) {
            Ok(ops) => ops,
            Err(e) => {
                dev.res.release_qpn(qpn);
                return Err(e);
            }
        };
        let attr = QpAttr {
            port_num: if init.qp_type == QpType::Gsi {
                init.port_num
            } else {
                1
            },
            cap: *c,
            ..QpAttr::default()
        };
        let core = Arc::pin_init(
            pin_init!(QpCore {
                pd: pd.clone(),
                qpn,
                qp_type: init.qp_type,
                send_cq: init.send_cq.clone(),
                recv_cq: init.recv_cq.clone(),
                srq: init.srq.cloned(),
                sq_sig_all: init.sq_sig_all,
                cap: *c,
                state: AtomicU32::new(QpState::Reset.as_raw()),
                attr <- crate::new_spinlock_irq!(attr, "QpCore::attr"),
                modify_lock <- new_mutex!((), "QpCore::modify_lock"),
                sq <- crate::new_spinlock_irq!(
                    SendQueue { ring: sq, started: 0, err: false },
                    "QpCore::sq"
                ),
                rq <- crate::new_spinlock_irq!(RecvQueue { ring: rq, err: false }, "QpCore::rq"),
                mcast <- new_mutex!(KVec::new(), "QpCore::mcast"),
                ops <- Revocable::new(ops),
                work <- new_work!("QpCore::work"),
                // SAFETY: `rdma_rs_timer_setup` initialises the whole timer.
                timer <- Opaque::ffi_init(|p| unsafe {
                    bindings::rdma_rs_timer_setup(p, Some(qp_timer_fired))
                }),
                released: AtomicBool::new(false),
            }),
            GFP_KERNEL,
        );
        let core = match core {
            Ok(c) => c,
            Err(e) => {
                dev.res.release_qpn(qpn);
                return Err(e);
            }
        };
        // The QP owns the uses from here on.
        core::mem::forget(uses);
        dev.res.publish_qp(qpn, core.clone());
        Ok(Qp { core })
    }

    /// Destroys the QP (`ib_destroy_qp`): the provider's part first (waiting
    /// for verbs inside it), outstanding requests are discarded. May sleep.
    pub fn destroy(self) {
        crate::might_sleep();
        drop(self);
    }

    /// The shared core object.
    pub fn core(&self) -> &Arc<QpCore> {
        &self.core
    }

    /// See [`QpCore::post_send`].
    pub fn post_send(&self, wrs: &[SendWr<'_>]) -> core::result::Result<(), (usize, Error)> {
        self.core.post_send(wrs)
    }

    /// See [`QpCore::post_recv`].
    pub fn post_recv(&self, wrs: &[RecvWr<'_>]) -> core::result::Result<(), (usize, Error)> {
        self.core.post_recv(wrs)
    }

    /// See [`QpCore::modify`].
    pub fn modify(&self, attr: &QpAttr, mask: AttrMask) -> Result {
        self.core.modify(attr, mask)
    }

    /// See [`QpCore::attach_mcast`].
    pub fn attach_mcast(&self, gid: &Gid) -> Result {
        self.core.attach_mcast(gid)
    }

    /// See [`QpCore::detach_mcast`].
    pub fn detach_mcast(&self, gid: &Gid) -> Result {
        self.core.detach_mcast(gid)
    }

    /// Drains the QP (`ib_drain_qp`): moves it to the error state and
    /// returns once the completions of every request posted before have
    /// been handled. Needs CQs made with `Cq::alloc`; Direct CQs are polled
    /// here. With an SRQ only the send queue is drained. May sleep.
    pub fn drain(&self) -> Result {
        crate::might_sleep();
        let core = &self.core;
        let usable = |cq: &CqCore| cq.poll_ctx().is_some();
        if !usable(&core.send_cq) || !usable(&core.recv_cq) {
            return Err(EINVAL);
        }
        if core.state() != QpState::Err {
            let attr = QpAttr {
                qp_state: QpState::Err,
                ..QpAttr::default()
            };
            core.modify(&attr, AttrMask::STATE)?;
        }
        let marker = Arc::pin_init(DrainMarker::new(), GFP_KERNEL)?;
        let cqe: Arc<dyn CqeDone> = marker.clone();
        let wr = SendWr {
            wr_id: u64::MAX,
            cqe: Some(cqe.clone()),
            op: SendOp::Send,
            flags: SendFlags::SIGNALED,
            sg: &[],
            ud: None,
        };
        // In ERR, posting flushes at once; a UD QP needs no AH for that,
        // but the check wants one: drain the SQ of UD QPs by waiting for
        // the flush of what is there (already done by the modify).
        let mut want = 0;
        if !matches!(core.qp_type, QpType::Ud | QpType::Gsi) {
            core.post_send(&[wr]).map_err(|(_, e)| e)?;
            want += 1;
        }
        if core.srq.is_none() {
            core.post_recv(&[RecvWr {
                wr_id: u64::MAX,
                cqe: Some(cqe),
                sg: &[],
            }])
            .map_err(|(_, e)| e)?;
            want += 1;
        }
        marker.wait(want, &[&core.send_cq, &core.recv_cq]);
        Ok(())
    }
}

impl Deref for Qp {
    type Target = QpCore;

    fn deref(&self) -> &QpCore {
        &self.core
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        self.core.release();
    }
}

/// The completion callback of `drain`'s marker requests.
#[pin_data]
struct DrainMarker {
    #[pin]
    seen: SpinLockIrq<u32>,
    #[pin]
    cv: CondVar,
}

impl DrainMarker {
    fn new() -> impl PinInit<Self> {
        pin_init!(DrainMarker {
            seen <- crate::new_spinlock_irq!(0, "DrainMarker::seen"),
            cv <- new_condvar!("DrainMarker::cv"),
        })
    }

    fn wait(&self, want: u32, cqs: &[&Arc<CqCore>]) {
        loop {
            for cq in cqs {
                if cq.poll_ctx() == Some(PollCtx::Direct) {
                    let _ = cq.process_direct(crate::cq::BUDGET);
                }
            }
            let mut seen = self.seen.lock();
            if *seen >= want {
                return;
            }
            if cqs.iter().any(|c| c.poll_ctx() == Some(PollCtx::Direct)) {
                drop(seen);
                crate::testing::msleep(1);
            } else {
                self.cv.wait(&mut seen);
            }
        }
    }
}

impl CqeDone for DrainMarker {
    fn done(&self, _cq: &CqCore, _wc: &Wc) {
        *self.seen.lock() += 1;
        self.cv.notify_all();
    }
}
