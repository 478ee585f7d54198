// SPDX-License-Identifier: GPL-2.0

//! The id itself: [`CmIdCore`] and its state, [`CmId`] (the ULP's owning
//! handle), the live ids (keyed by address, so that an id finds its own
//! `Arc` in O(log n)), creation and destruction, what an id is bound to
//! and its QP.

use core::sync::atomic::{AtomicBool, Ordering};

use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::rbtree::{RBTree, RBTreeNode};
use kernel::sync::{new_condvar, new_mutex, Arc, CondVar, Mutex};
use kernel::workqueue::{impl_has_work, new_work, Work};

use super::addr::{Bound, SockAddr};
use super::event::{CmHandler, Queue};
use crate::cm::conn::CmConn;
use crate::cm::table::Listener;
use crate::device::Device;
use crate::kshim::global::Global;
use crate::kshim::route::NetNs;
use crate::kshim::sync::SpinLockIrq;
use crate::spec::cm_msg::{Rep, Req};
use crate::spec::opcodes::Access;
use crate::spec::qp_state::{AttrMask, QpState, QpType};
use crate::verbs::pd::PdCore;
use crate::verbs::qp::{Qp, QpAttr, QpCore, QpInitAttr};

/// An id's port space (`enum rdma_ucm_port_space`): which service IDs
/// its ports map to and so which QP type it connects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortSpace {
    /// `RDMA_PS_TCP`: RC.
    Tcp,
    /// `RDMA_PS_UDP`: UD, Q_Key [`UDP_QKEY`](super::mcast::UDP_QKEY).
    Udp,
    /// `RDMA_PS_IPOIB`: UD, with the Q_Key of the IPoIB broadcast group
    /// (which only an SA knows: none over RoCE).
    Ipoib,
}

impl PortSpace {
    /// Its number (`RDMA_PS_*`), the upper half of its service IDs.
    pub fn number(self) -> u16 {
        match self {
            PortSpace::Tcp => 0x0106,
            PortSpace::Udp => 0x0111,
            PortSpace::Ipoib => 0x0002,
        }
    }

    /// The type of the QPs of its ids.
    pub fn qp_type(self) -> QpType {
        match self {
            PortSpace::Tcp => QpType::Rc,
            PortSpace::Udp | PortSpace::Ipoib => QpType::Ud,
        }
    }
}

/// Where an id is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Phase {
    Idle,
    AddrBound,
    AddrResolved,
    RouteResolved,
    Listening,
    /// Passive: REQ received, not answered.
    ReqRcvd,
    Connecting,
    Established,
    Disconnected,
    Destroyed,
}

/// What an id has and where it is, under `CmIdCore::st`.
pub(super) struct State {
    pub(super) phase: Phase,
    pub(super) src: Option<SockAddr>,
    pub(super) dst: Option<SockAddr>,
    pub(super) bound: Option<Bound>,
    pub(super) qp: Option<Qp>,
    pub(super) conn: Option<Arc<CmConn>>,
    pub(super) listener: Option<Listener>,
    /// Passive: the REQ.
    pub(super) req: Option<Req>,
    /// Active: the PSN we receive at (our REQ's).
    pub(super) rq_psn: u32,
    /// Active: what `connect` asked for (retries).
    pub(super) param_retry: u8,
    /// Active: the REP's private data, for the Established event.
    pub(super) rep_data: KVec<u8>,
    /// Passive: the listener the request came to.
    pub(super) parent: Option<Arc<CmIdCore>>,
    /// The PSN of our side: our REQ's or REP's starting PSN, and so the
    /// PSN our QP receives at (`seq_num` of the C rdma_cm).
    pub(super) seq_num: u32,
    /// The QP of user space's the connection names (`ConnParam::qp_num`).
    pub(super) user_qpn: Option<u32>,
    /// Active, for a user QP: the REP, whose RTU waits for `establish`.
    pub(super) rep: Option<Rep>,
    /// Active: the responder resources our REQ offered.
    pub(super) resp_res: u8,
    /// The device and port of the address `bind_addr` bound, if not the
    /// wildcard (a listener's, reported by `rdma res` and rdma_ucm's
    /// `QUERY_ROUTE` as in C; device removal goes by `bound`).
    pub(super) bind_dev: Option<(Arc<Device>, u32)>,
    /// The multicast groups the id joined (UD ids).
    pub(super) mcs: KVec<super::mcast::Membership>,
    /// Active, UD: the SIDR REQ under way.
    pub(super) sidr: Option<crate::cm::sidr::CmSidr>,
    /// Passive, UD: the SIDR REQ that made the id, until answered.
    pub(super) sidr_req: Option<Arc<crate::cm::sidr::SidrRequest>>,
    /// The local ACK timeout (IBA time) `set_ack_timeout` asked for, in
    /// place of the connection's for the QP's RTS.
    pub(super) ack_timeout: Option<u8>,
}

/// An id, as its handler and the CM see it.
#[pin_data]
pub struct CmIdCore {
    pub(super) ns: NetNs,
    pub(super) ps: PortSpace,
    pub(super) handler: Arc<dyn CmHandler>,
    #[pin]
    pub(super) st: Mutex<State>,
    #[pin]
    pub(super) queue: SpinLockIrq<Queue>,
    /// Notified when the queue's work item has delivered every event.
    #[pin]
    pub(super) idle: CondVar,
    pub(super) destroyed: AtomicBool,
    #[pin]
    pub(super) work: Work<CmIdCore>,
}

impl_has_work! {
    impl HasWork<Self> for CmIdCore { self.work }
}

/// An id, owned by a ULP: destroyed when dropped (`rdma_destroy_id`).
pub struct CmId(pub(super) Arc<CmIdCore>);

impl core::ops::Deref for CmId {
    type Target = Arc<CmIdCore>;

    fn deref(&self) -> &Arc<CmIdCore> {
        &self.0
    }
}

impl Drop for CmId {
    fn drop(&mut self) {
        self.0.destroy();
    }
}

/// Every live id, by its address (for [`CmIdCore::me`] and device
/// removal).
#[pin_data]
pub(super) struct Ids {
    #[pin]
    pub(super) list: Mutex<RBTree<usize, Arc<CmIdCore>>>,
}

pub(super) static IDS: Global<Ids> = Global::new();

impl Ids {
    /// Adds a live id.
    pub(super) fn add(&self, id: &Arc<CmIdCore>) -> Result {
        let node = RBTreeNode::new(id.key(), id.clone(), GFP_KERNEL)?;
        drop(self.list.lock().insert(node));
        Ok(())
    }

    /// How many ids are live.
    fn count(&self) -> usize {
        self.list.lock().iter().count()
    }
}

/// How many ids are live (created and not destroyed), all namespaces: for
/// tests that check that none is left behind.
pub fn live_ids() -> usize {
    IDS.get().map_or(0, |i| i.count())
}

impl CmId {
    /// A new id in namespace `ns` (`rdma_create_id`, RC, port space TCP).
    pub fn new(ns: NetNs, handler: Arc<dyn CmHandler>) -> Result<CmId> {
        CmId::new_in(ns, handler, PortSpace::Tcp)
    }

    /// A new id of port space `ps` in namespace `ns` (`rdma_create_id`).
    pub fn new_in(ns: NetNs, handler: Arc<dyn CmHandler>, ps: PortSpace) -> Result<CmId> {
        let core = CmIdCore::new(ns, handler, ps)?;
        IDS.get().ok_or(ENODEV)?.add(&core)?;
        Ok(CmId(core))
    }
}

impl CmIdCore {
    /// A new id, in no phase yet and not in the list of live ids.
    pub(super) fn new(
        ns: NetNs,
        handler: Arc<dyn CmHandler>,
        ps: PortSpace,
    ) -> Result<Arc<CmIdCore>> {
        Arc::pin_init(
            pin_init!(CmIdCore {
                ns,
                ps,
                handler,
                st <- new_mutex!(
                    State {
                        phase: Phase::Idle,
                        src: None,
                        dst: None,
                        bound: None,
                        qp: None,
                        conn: None,
                        listener: None,
                        req: None,
                        rq_psn: 0,
                        param_retry: 7,
                        rep_data: KVec::new(),
                        parent: None,
                        seq_num: crate::kshim::random::u32() & 0xff_ffff,
                        user_qpn: None,
                        rep: None,
                        resp_res: 0,
                        bind_dev: None,
                        mcs: KVec::new(),
                        sidr: None,
                        sidr_req: None,
                        ack_timeout: None,
                    },
                    "CmIdCore::st"
                ),
                queue <- crate::new_spinlock_irq!(
                    Queue {
                        events: KVec::new(),
                        running: false,
                        task: 0,
                        handing: 0,
                    },
                    "CmIdCore::queue"
                ),
                destroyed: AtomicBool::new(false),
                idle <- new_condvar!("CmIdCore::idle"),
                work <- new_work!("CmIdCore::work"),
            }),
            GFP_KERNEL,
        )
    }

    /// The id's port space.
    pub fn port_space(&self) -> PortSpace {
        self.ps
    }

    /// The source address (after `resolve_addr` or `bind_addr`).
    pub fn src_addr(&self) -> Option<SockAddr> {
        self.st.lock().src
    }

    /// The destination address.
    pub fn dst_addr(&self) -> Option<SockAddr> {
        self.st.lock().dst
    }

    /// The device the id is bound to, and its port.
    pub fn device(&self) -> Option<(Arc<Device>, u32)> {
        self.st
            .lock()
            .bound
            .as_ref()
            .map(|b| (b.dev.clone(), b.port))
    }

    /// The device and port the id is on: the one it resolved or was
    /// requested on, else the one of the address it bound.
    pub fn bound_device(&self) -> Option<(Arc<Device>, u32)> {
        let st = self.st.lock();
        match st.bound.as_ref() {
            Some(b) => Some((b.dev.clone(), b.port)),
            None => st.bind_dev.clone(),
        }
    }

    /// The IB CM connection end under the id, once it connects or was
    /// made by a request (tests read its communication IDs and state).
    pub fn cm_conn(&self) -> Option<Arc<CmConn>> {
        self.st.lock().conn.clone()
    }

    /// Passive: the listener whose request made this id.
    pub fn listener(&self) -> Option<Arc<CmIdCore>> {
        self.st.lock().parent.clone()
    }

    /// The path MTU of the id's route once it has one (a resolved route,
    /// or a request's), for those that report the route (rdma_ucm).
    pub fn route_mtu(&self) -> Option<crate::spec::attr::Mtu> {
        let st = self.st.lock();
        match st.phase {
            Phase::RouteResolved
            | Phase::ReqRcvd
            | Phase::Connecting
            | Phase::Established
            | Phase::Disconnected => st.bound.as_ref().map(|b| b.mtu),
            _ => None,
        }
    }

    /// The id's QP, once created.
    pub fn qp(&self) -> Option<Arc<QpCore>> {
        self.st.lock().qp.as_ref().map(|q| q.core().clone())
    }

    /// Creates the id's RC QP on its device (`rdma_create_qp`) and moves
    /// it to INIT; `init.qp_type` must be RC.
    pub fn create_qp(self: &Arc<Self>, pd: &Arc<PdCore>, init: &QpInitAttr<'_>) -> Result {
        let mut st = self.st.lock();
        let b = st.bound.as_ref().ok_or(EINVAL)?;
        if st.qp.is_some() || init.qp_type != QpType::Rc || !Arc::ptr_eq(pd.device(), &b.dev) {
            return Err(EINVAL);
        }
        let qp = Qp::create(pd, init)?;
        let attr = QpAttr {
            qp_state: QpState::Init,
            pkey_index: 0,
            port_num: b.port,
            // What the peer may do is settled at RTR (`conn::to_rts`);
            // until then, nothing.
            qp_access_flags: Access::NONE,
            ..QpAttr::default()
        };
        qp.modify(
            &attr,
            AttrMask::STATE | AttrMask::PKEY_INDEX | AttrMask::PORT | AttrMask::ACCESS_FLAGS,
        )?;
        st.qp = Some(qp);
        Ok(())
    }

    /// Moves the id's QP, if any, to ERR.
    pub(super) fn qp_to_err(st: &State) {
        if let Some(qp) = st.qp.as_ref() {
            let attr = QpAttr {
                qp_state: QpState::Err,
                ..QpAttr::default()
            };
            let _ = qp.modify(&attr, AttrMask::STATE);
        }
    }

    /// Destroys the id (`rdma_destroy_id`): its connection is ended, its
    /// QP destroyed, its listener removed; no event is delivered after.
    pub fn destroy(self: &Arc<Self>) {
        if self.destroyed.swap(true, Ordering::AcqRel) {
            return;
        }
        let (conn, qp, listener, parent, sidr) = {
            let mut st = self.st.lock();
            st.phase = Phase::Destroyed;
            (
                st.conn.take(),
                st.qp.take(),
                st.listener.take(),
                st.parent.take(),
                (st.sidr.take(), st.sidr_req.take()),
            )
        };
        // A SIDR REQ of ours is cancelled (waiting for its event being
        // delivered elsewhere: no lock held); one of the peer's not
        // answered is rejected.
        drop(sidr);
        drop(parent);
        drop(listener);
        self.leave_all_multicast();
        if let Some(c) = conn {
            c.set_user(None);
            c.destroy();
        }
        drop(qp);
        // Events still queued are dropped (a new id inside one with them),
        // and a handler running on another task is waited for, so that
        // none runs after this returns (`rdma_destroy_id`); from the
        // handler itself there is nothing to wait for.
        let events = {
            let mut q = self.queue.lock();
            core::mem::take(&mut q.events)
        };
        drop(events);
        self.wait_handler_elsewhere();
        // A listener's connection request being handed to the handler
        // (on its new id's work item) is waited for; one after sees
        // `destroyed` and is rejected.
        self.wait_handover_elsewhere();
        {
            let mut st = self.st.lock();
            st.bound = None;
            st.bind_dev = None;
        }
        if let Some(ids) = IDS.get() {
            let gone = ids.list.lock().remove(&self.key());
            drop(gone);
        }
    }

    /// The id's key among the live ids: its address.
    fn key(&self) -> usize {
        core::ptr::from_ref(self) as usize
    }

    /// An `Arc` of this id, from the live ids.
    pub(super) fn me(&self) -> Option<Arc<CmIdCore>> {
        let ids = IDS.get()?;
        let list = ids.list.lock();
        list.get(&self.key()).cloned()
    }
}
