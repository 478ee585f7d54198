// SPDX-License-Identifier: GPL-2.0

//! Queue pairs (`ib_create_qp`, `ib_modify_qp`, `ib_query_qp`,
//! `ib_destroy_qp`, `ib_post_send`, `ib_post_recv`, `ib_attach_mcast`,
//! `ib_detach_mcast`, `ib_drain_qp`).
//!
//! The core owns a QP's state, attributes and work queues; the provider
//! owns the transport ([`QpOps`]). Every `modify_qp` goes through
//! [`rdma::spec::qp_state`](crate::spec::qp_state) and a check of each attribute's value
//! before the provider sees it. Posted work requests are validated and
//! copied into the rings, then the provider is told ([`QpOps::post_send`]);
//! it takes entries with [`QpCore::sq_take_with`] / [`QpCore::rq_take`] and
//! completes them in order with [`QpCore::sq_complete`] /
//! [`QpCore::complete_recv`]. Moving to the error state (by `modify_qp`, a
//! failed completion or the provider) flushes every outstanding request
//! with `WR_FLUSH_ERR`; moving to RESET discards them.
//!
//! The provider's part is revocable: [`Qp::destroy`], or device
//! unregistration for a leaked QP, waits until no verb is inside it, calls
//! [`QpOps::destroy`] and drops it.

mod drain;
mod modify;
mod post;
mod provider;
mod user;

pub use provider::{ProviderQp, QpOps, RqTake};
pub use user::UserQpRings;
pub(crate) use user::{Pumped, UserRq};

use core::sync::atomic::{AtomicU32, Ordering};

use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::workqueue::{impl_has_work, new_work, Work, WorkItem};

use crate::device::Device;
use crate::kshim::gate::Revocable;
use crate::kshim::sync::SpinLockIrq;
use crate::kshim::timer::{Timer, TimerItem};
use crate::spec::attr::{Gid, Mtu};
use crate::spec::opcodes::Access;
use crate::spec::qp_state::{QpState, QpType};
use crate::verbs::ah::AhAttr;
use crate::verbs::cq::CqCore;
use crate::verbs::object::{Handle, Life, Object, Use};
use crate::verbs::pd::PdCore;
use crate::verbs::restrack::{Resources, Table};
use crate::verbs::srq::SrqCore;
use crate::verbs::wr::{RecvWqe, Ring, SendWqe, TmJob, MAX_INLINE, MAX_SGE};

/// The most multicast groups one QP can join.
pub const MAX_MCAST: usize = 16;

/// Send queue entries a QP of a TM SRQ keeps for the core's rendezvous
/// steps, beyond its `max_send_wr`: a READ and a FIN each, so 16
/// rendezvous in progress at once (one more waits: its message is
/// answered RNR).
pub const TM_JOBS: usize = 32;

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

struct SendQueue {
    ring: Ring<SendWqe>,
    /// Entries from the head that the provider has taken.
    started: usize,
    /// Flushed: the provider gets nothing more until RESET.
    err: bool,
    /// Entries the core queued for a TM SRQ's rendezvous ([`TmJob`]): the
    /// ring has room for [`TM_JOBS`] of them beyond the ULP's
    /// `max_send_wr`.
    internal: usize,
    /// A user QP's send ring (`qp/user.rs`).
    user: Option<user::UserSq>,
}

impl SendQueue {
    /// Takes the oldest entry out; a user ring hears that its slot is
    /// free.
    fn pop(&mut self) -> Option<SendWqe> {
        let w = self.ring.pop()?;
        if w.tm != TmJob::None {
            self.internal -= 1;
        }
        if let Some(u) = self.user.as_mut() {
            u.retire();
        }
        Some(w)
    }
}

struct RecvQueue {
    ring: Ring<RecvWqe>,
    err: bool,
    /// A user QP's receive ring (`qp/user.rs`).
    user: Option<user::UserRq>,
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
    /// Type 2 memory windows bound to this QP (`super::mw`): unbound at
    /// its release.
    pub(crate) windows: AtomicU32,
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
    /// Schedules `work` later ([`ProviderQp::schedule_in`]).
    #[pin]
    timer: Timer<QpCore>,
    /// The QPN; the uses of the PD, CQs and SRQ, given back at release.
    life: Life<QpUses>,
}

/// What a QP uses, given back in this order at its release.
pub struct QpUses {
    _send_cq: Use<CqCore>,
    _recv_cq: Use<CqCore>,
    _srq: Option<Use<SrqCore>>,
    _pd: Use<PdCore>,
}

impl TimerItem for QpCore {
    fn timer(&self) -> &Timer<Self> {
        &self.timer
    }

    fn fired(this: Arc<Self>) {
        this.schedule();
    }
}

impl_has_work! {
    impl HasWork<Self> for QpCore { self.work }
}

impl WorkItem for QpCore {
    type Pointer = Arc<QpCore>;

    fn run(this: Arc<QpCore>) {
        if let Some(ops) = this.ops.access() {
            ops.run(&ProviderQp::new(this.clone()));
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

    /// Whether the QP's SRQ is a tag-matching SRQ.
    pub fn has_tm_srq(&self) -> bool {
        self.srq.as_ref().is_some_and(|s| s.is_tm())
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
}

impl Object for QpCore {
    type Deps = QpUses;

    fn device(&self) -> &Arc<Device> {
        self.pd.device()
    }

    fn table<'a>(&self, res: &'a Resources) -> &'a Table<Self> {
        res.qp_table(self.qpn)
    }

    fn life(&self) -> &Life<QpUses> {
        &self.life
    }

    /// The provider's part first (waiting for verbs inside it), then its
    /// timer and work; outstanding requests are discarded. The type 2
    /// windows bound to the QP are unbound.
    fn on_release(&self) {
        if let Some(ops) = self.ops.revoke() {
            ops.destroy(self);
            drop(ops);
        }
        self.timer.shutdown();
        // A queued run finds no provider any more; wait for it anyway so
        // nothing of the QP's work is left behind.
        crate::kshim::work::flush(&self.work);
        self.state.store(QpState::Err.as_raw(), Ordering::Release);
        self.sq.lock().err = true;
        self.rq.lock().err = true;
        self.reset_queues_keep_err();
        crate::verbs::mw::unbind_qp(self);
    }
}

/// A queue pair, owned by a ULP. Dropping it destroys it (`ib_destroy_qp`:
/// the provider's part first, waiting for verbs inside it; outstanding
/// requests are discarded).
pub type Qp = Handle<QpCore>;

impl Handle<QpCore> {
    /// Creates a QP on `pd` (`ib_create_qp`): RC, UC, UD or GSI, with the
    /// queue sizes checked against the device (`EINVAL`), its CQs and SRQ
    /// on the same device; `EOPNOTSUPP` if the provider has no QPs. The QP
    /// starts in RESET. May sleep.
    pub fn create(pd: &Arc<PdCore>, init: &QpInitAttr<'_>) -> Result<Qp> {
        Qp::create_inner(pd, init, None)
    }

    fn create_inner(
        pd: &Arc<PdCore>,
        init: &QpInitAttr<'_>,
        user: Option<(user::UserSq, Option<user::UserRq>)>,
    ) -> Result<Qp> {
        crate::kshim::verb::might_sleep();
        let dev = pd.device();
        let _usage = dev.try_get().ok_or(ENODEV)?;
        let a = dev.attr();
        let c = &init.cap;
        let same_dev = |d: &Arc<Device>| Arc::ptr_eq(d, dev);
        if !matches!(
            init.qp_type,
            QpType::Rc | QpType::Uc | QpType::Ud | QpType::Gsi
        ) || c.max_send_wr == 0
            || (user.is_none() && (c.max_send_wr > a.max_qp_wr || c.max_recv_wr > a.max_qp_wr))
            || (init.srq.is_none() && c.max_recv_wr == 0)
            || c.max_send_sge > a.max_send_sge
            || c.max_send_sge as usize > MAX_SGE
            || c.max_recv_sge > a.max_recv_sge
            || c.max_recv_sge as usize > MAX_SGE
            || c.max_inline_data as usize > MAX_INLINE
            || !same_dev(init.send_cq.device())
            || !same_dev(init.recv_cq.device())
            || init.srq.is_some_and(|s| !Arc::ptr_eq(s.pd(), pd))
            // A TM SRQ serves kernel RC QPs (it queues their rendezvous
            // READs on their send queues).
            || init
                .srq
                .is_some_and(|s| s.is_tm() && (init.qp_type != QpType::Rc || user.is_some()))
        {
            return Err(EINVAL);
        }
        if init.qp_type == QpType::Gsi {
            dev.check_port(init.port_num)?;
        }
        let (user_sq, user_rq) = match user {
            Some((s, r)) => (Some(s), r),
            None => (None, None),
        };
        let tm_cq = init.srq.and_then(|s| s.tm_cq());
        let sq = Ring::new(c.max_send_wr as usize + if tm_cq.is_some() { TM_JOBS } else { 0 })?;
        let rq = Ring::new(if init.srq.is_some() {
            0
        } else {
            c.max_recv_wr as usize
        })?;
        let pd_use = Use::take(pd)?;
        let send_cq = Use::take(init.send_cq)?;
        let recv_cq = Use::take(init.recv_cq)?;
        let srq = init.srq.map(Use::take).transpose()?;
        let uses = QpUses {
            _send_cq: send_cq,
            _recv_cq: recv_cq,
            _srq: srq,
            _pd: pd_use,
        };
        let reservation = dev.res.reserve_qpn(init.qp_type)?;
        let qpn = reservation.num();
        let number = qpn;
        let info = QpInfo {
            qpn,
            qp_type: init.qp_type,
            // The provider sizes its own state for the whole send ring,
            // the TM SRQ's room included.
            cap: QpCap {
                max_send_wr: sq.limit() as u32,
                ..*c
            },
            port_num: init.port_num,
        };
        let ops = dev.ops().and_then(|o| o.create_qp(&info))?;
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
                // A TM SRQ's QPs complete their receives on its CQ.
                recv_cq: tm_cq.unwrap_or(init.recv_cq).clone(),
                srq: init.srq.cloned(),
                sq_sig_all: init.sq_sig_all,
                cap: *c,
                state: AtomicU32::new(QpState::Reset.as_raw()),
                windows: AtomicU32::new(0),
                attr <- crate::new_spinlock_irq!(attr, "QpCore::attr"),
                modify_lock <- new_mutex!((), "QpCore::modify_lock"),
                sq <- crate::new_spinlock_irq!(
                    SendQueue { ring: sq, started: 0, err: false, internal: 0, user: user_sq },
                    "QpCore::sq"
                ),
                rq <- crate::new_spinlock_irq!(
                    RecvQueue { ring: rq, err: false, user: user_rq },
                    "QpCore::rq"
                ),
                mcast <- new_mutex!(KVec::new(), "QpCore::mcast"),
                ops <- Revocable::new(ops),
                work <- new_work!("QpCore::work"),
                timer <- Timer::new(),
                life: Life::new(number, uses),
            }),
            GFP_KERNEL,
        )?;
        reservation.publish(core.clone());
        Ok(Handle::new(core))
    }
}
