// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues (`ib_create_srq`, `ib_modify_srq`, `ib_query_srq`,
//! `ib_post_srq_recv`, `ib_destroy_srq`).
//!
//! One ring of receive WQEs that several QPs of a PD consume from. With a
//! limit armed ([`SrqCore::modify`] with `limit`), the core raises
//! `SrqLimitReached` once when the number of WQEs falls below it, and
//! disarms, as the IBTA says.
//!
//! A user SRQ ([`Srq::create_user`]) takes its WQEs from a ring user space
//! maps, pumped into the SRQ's queue when a QP looks for one, as a user
//! QP's receive ring is (`qp/user.rs`); a bad entry is taken off the ring
//! and ends the QP that met it. Its resize maps a new ring
//! ([`SrqCore::new_user_ring`], [`SrqCore::resize_user`]).
//!
//! A tag-matching SRQ ([`Srq::create_tm`], [`tm`]) adds a list of tagged
//! buffers that list operations ([`SrqCore::post_ops`]) change, and its
//! own CQ for their completions and its messages'.

pub mod tm;

use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::device::event::{Element, Event, EventKind};
use crate::device::{Device, DeviceCaps};
use crate::kshim::errno::eopnotsupp;
use crate::kshim::sync::SpinLockIrq;
use crate::spec::uverbs::rxe_ring::RECV_WQE_DATA;
use crate::verbs::cq::CqCore;
use crate::verbs::object::{Handle, Life, Object, Use};
use crate::verbs::pd::PdCore;
use crate::verbs::qp::{Pumped, UserRq};
use crate::verbs::restrack::{Resources, Table, UseCount};
use crate::verbs::uring::UserRing;
use crate::verbs::wr::{RecvWqe, RecvWr, Ring, MAX_SGE};

/// SRQ attributes (`struct ib_srq_attr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqAttr {
    /// Most WQEs.
    pub max_wr: u32,
    /// Most SGEs per WQE.
    pub max_sge: u32,
    /// Limit that raises `SrqLimitReached` (0: not armed).
    pub srq_limit: u32,
}

struct SrqState {
    ring: Ring<RecvWqe>,
    max_sge: u32,
    limit: u32,
    /// A user SRQ's ring.
    user: Option<UserRq>,
    /// A TM SRQ's list of tagged buffers.
    tm: Option<tm::TmList>,
}

/// What an SRQ uses, given back in this order at its release.
pub struct SrqUses {
    _cq: Option<Use<CqCore>>,
    _pd: Use<PdCore>,
}

/// The core's shared receive queue.
#[pin_data]
pub struct SrqCore {
    pd: Arc<PdCore>,
    /// A TM SRQ's CQ: its list operations' and its QPs' receive
    /// completions go there.
    tm_cq: Option<Arc<CqCore>>,
    /// The SRQ's number; the uses of the CQ and the PD, given back at
    /// release.
    life: Life<SrqUses>,
    #[pin]
    state: SpinLockIrq<SrqState>,
    /// QPs using the SRQ.
    uses: UseCount,
}

impl SrqCore {
    /// The SRQ's number on its device.
    pub fn num(&self) -> u32 {
        self.life.num()
    }

    /// The PD.
    pub fn pd(&self) -> &Arc<PdCore> {
        &self.pd
    }

    /// Posts receive WQEs (`ib_post_srq_recv`); on error, the index of the
    /// first request not posted. Any context; never sleeps.
    pub fn post_recv(&self, wrs: &[RecvWr<'_>]) -> core::result::Result<(), (usize, Error)> {
        let _verb = crate::kshim::verb::Verb::enter();
        if self.life.is_released() {
            return Err((0, ENODEV));
        }
        let mut st = self.state.lock();
        if st.user.is_some() {
            // User space posts through its ring.
            return Err((0, EINVAL));
        }
        let max_sge = st.max_sge;
        for (i, wr) in wrs.iter().enumerate() {
            let slot = st.ring.next_slot().map_err(|e| (i, e))?;
            slot.fill(wr, max_sge).map_err(|e| (i, e))?;
            st.ring.commit();
        }
        Ok(())
    }

    /// Whether this is a tag-matching SRQ.
    pub fn is_tm(&self) -> bool {
        self.tm_cq.is_some()
    }

    /// A TM SRQ's CQ.
    pub fn tm_cq(&self) -> Option<&Arc<CqCore>> {
        self.tm_cq.as_ref()
    }

    /// A message's first packet arrived for a QP of this TM SRQ
    /// (`tag`: an EAGER or RNDV message's tag; `None`: a message that
    /// goes to an ordinary receive whatever the list holds). See
    /// [`tm::Delivery`].
    pub(crate) fn tm_deliver(self: &Arc<Self>, tag: Option<u64>) -> tm::Delivery {
        let (d, fire) = {
            let mut guard = self.state.lock();
            let st: &mut SrqState = &mut guard;
            let Some(t) = st.tm.as_mut() else {
                return tm::Delivery::Empty;
            };
            let ring = &mut st.ring;
            let d = t.deliver(tag, || ring.pop());
            let fire = matches!(d, tm::Found::Plain(_))
                && st.limit != 0
                && (st.ring.len() as u32) < st.limit;
            if fire {
                st.limit = 0;
            }
            (d, fire)
        };
        if fire {
            self.pd.device().dispatch_event(Event {
                kind: EventKind::SrqLimitReached,
                element: Element::Srq(self.life.num()),
            });
        }
        match d {
            tm::Found::Tagged(wqe, handle) => {
                tm::Delivery::Tagged(tm::TaggedRecv::new(wqe, handle, self.clone()))
            }
            tm::Found::Plain(w) => tm::Delivery::Plain(w),
            tm::Found::Empty => tm::Delivery::Empty,
        }
    }

    /// The message that consumed the entry of `handle` is done with its
    /// buffer: the slot may be listed again.
    pub(crate) fn tm_release(&self, handle: u32) {
        if let Some(t) = self.state.lock().tm.as_mut() {
            t.release(handle);
        }
    }

    /// Carries out tag-matching list operations (`ibv_post_srq_ops`), in
    /// order: `Add` fills in the entry's handle. On an error, the index
    /// of the first operation not carried out: `EINVAL` for an SRQ that
    /// is not a TM SRQ, too many SGEs or a handle of no entry; `ENOMEM`
    /// when the list is full or the chain is longer than `max_ops`. Any
    /// context; never sleeps.
    pub fn post_ops(&self, ops: &mut [tm::OpsWr<'_>]) -> core::result::Result<(), (usize, Error)> {
        let _verb = crate::kshim::verb::Verb::enter();
        if self.life.is_released() {
            return Err((0, ENODEV));
        }
        let mut guard = self.state.lock();
        let st: &mut SrqState = &mut guard;
        let max_sge = st.max_sge;
        match (st.tm.as_mut(), &self.tm_cq) {
            (Some(t), Some(cq)) => t.post(ops, max_sge, cq),
            _ => Err((0, EINVAL)),
        }
    }

    /// Takes the oldest WQE (for providers, when a message arrives for a QP
    /// of this SRQ). Raises `SrqLimitReached` when that crosses the limit.
    ///
    /// For a user SRQ, a bad entry met in its ring is taken off it and its
    /// `wr_id` returned as the error: the caller's QP completes it with an
    /// error and goes to the error state.
    pub(crate) fn take(&self) -> core::result::Result<Option<RecvWqe>, u64> {
        let (wqe, fire) = {
            let mut guard = self.state.lock();
            let st: &mut SrqState = &mut guard;
            let max_sge = st.max_sge;
            if let Some(u) = st.user.as_mut() {
                if st.ring.len() == 0 {
                    if let Pumped::Bad = u.pump(&mut st.ring, max_sge) {
                        if st.ring.len() == 0 {
                            return Err(u.skip_bad());
                        }
                    }
                }
            }
            let Some(wqe) = st.ring.pop() else {
                return Ok(None);
            };
            let fire = st.limit != 0 && (st.ring.len() as u32) < st.limit;
            if fire {
                st.limit = 0;
            }
            (wqe, fire)
        };
        if fire {
            self.pd.device().dispatch_event(Event {
                kind: EventKind::SrqLimitReached,
                element: Element::Srq(self.life.num()),
            });
        }
        Ok(Some(wqe))
    }

    /// The ring of a user SRQ, for mapping.
    pub fn user_ring(&self) -> Option<Arc<UserRing>> {
        self.state.lock().user.as_ref().map(|u| u.ring().clone())
    }

    /// The attributes (`ib_query_srq`); `srq_limit` is 0 once the limit
    /// event fired.
    pub fn query(&self) -> SrqAttr {
        let st = self.state.lock();
        SrqAttr {
            max_wr: st.ring.limit() as u32,
            max_sge: st.max_sge,
            srq_limit: st.limit,
        }
    }

    /// A new ring for a user SRQ's resize (`MODIFY_SRQ` of `max_wr`), of
    /// at least `max_wr` entries, made (it may sleep) before the SRQ's
    /// lock is taken: offered for mapping by its owner, then swapped in by
    /// [`SrqCore::resize_user`]. `EINVAL` for a kernel SRQ or a `max_wr`
    /// of 0 or above the device's; `EOPNOTSUPP` without the device's
    /// `SRQ_RESIZE` capability.
    pub fn new_user_ring(&self, max_wr: u32) -> Result<UserSrqResize> {
        crate::kshim::verb::might_sleep();
        if self.life.is_released() {
            return Err(ENODEV);
        }
        let attr = self.pd.device().attr();
        if !attr.cap_flags.contains(DeviceCaps::SRQ_RESIZE) {
            return Err(eopnotsupp());
        }
        if max_wr == 0 || max_wr > attr.max_srq_wr {
            return Err(EINVAL);
        }
        let max_sge = {
            let st = self.state.lock();
            if st.user.is_none() {
                return Err(EINVAL);
            }
            st.max_sge
        };
        let ring = UserRing::new(max_wr, RECV_WQE_DATA + max_sge as usize * 16)?;
        Ok(UserSrqResize {
            queue: Ring::new(ring.capacity() as usize)?,
            rq: UserRq::new(ring)?,
            max_wr,
        })
    }

    /// Swaps the ring of `resize` in for a user SRQ's ring, under the
    /// SRQ's lock, as the C rxe does: the WQEs user space posted and no QP
    /// took yet move to it in order. The WQEs already taken into the
    /// SRQ's queue stay there, ahead of them, and count against the new
    /// size. `EINVAL`, with nothing changed, when more are posted than it
    /// holds, when the armed limit is above `max_wr`, or when the ring
    /// holds an entry that did not check out. Returns the old ring, which
    /// user space unmaps. Any context; never sleeps.
    pub fn resize_user(&self, resize: UserSrqResize) -> Result<Arc<UserRing>> {
        if self.life.is_released() {
            return Err(ENODEV);
        }
        let UserSrqResize {
            rq,
            mut queue,
            max_wr,
        } = resize;
        let (old_rq, old_queue) = {
            let mut guard = self.state.lock();
            let st: &mut SrqState = &mut guard;
            if st.limit > max_wr {
                return Err(EINVAL);
            }
            let held = st.ring.len();
            let cap = rq.ring().capacity();
            let room = (cap as usize).checked_sub(held).ok_or(EINVAL)?;
            let u = st.user.as_mut().ok_or(EINVAL)?;
            let old_rq = u.resize(rq, room as u32)?;
            // Cannot fail: the new queue holds `cap >= held` entries.
            st.ring.transfer_to(&mut queue)?;
            (old_rq, core::mem::replace(&mut st.ring, queue))
        };
        // Freed out of the lock.
        drop(old_queue);
        Ok(old_rq.ring().clone())
    }

    /// Changes the SRQ (`ib_modify_srq`): `max_wr` (with `resize`; needs
    /// the device's `SRQ_RESIZE` capability, `EINVAL` below the WQEs
    /// posted) and/or `limit` (arms the limit event; `EINVAL` above
    /// `max_wr`). May sleep.
    pub fn modify(&self, resize: Option<u32>, limit: Option<u32>) -> Result {
        crate::kshim::verb::might_sleep();
        if self.life.is_released() {
            return Err(ENODEV);
        }
        if resize.is_some() && self.state.lock().user.is_some() {
            // A user ring is resized by a new mapping: `resize_user`.
            return Err(EINVAL);
        }
        let dev = self.pd.device();
        let mut fresh = match resize {
            Some(n) => {
                if !dev.attr().cap_flags.contains(DeviceCaps::SRQ_RESIZE) {
                    return Err(eopnotsupp());
                }
                if n == 0 || n > dev.attr().max_srq_wr {
                    return Err(EINVAL);
                }
                Some(Ring::new(n as usize)?)
            }
            None => None,
        };
        let old = {
            let mut st = self.state.lock();
            let max_wr = fresh.as_ref().map_or(st.ring.limit(), |r| r.limit()) as u32;
            if limit.is_some_and(|l| l > max_wr) {
                return Err(EINVAL);
            }
            let old = match fresh.as_mut() {
                Some(f) => {
                    st.ring.transfer_to(f)?;
                    fresh.map(|f| core::mem::replace(&mut st.ring, f))
                }
                None => None,
            };
            if let Some(l) = limit {
                st.limit = l;
            }
            old
        };
        drop(old);
        Ok(())
    }
}

/// A new ring for a user SRQ's resize ([`SrqCore::new_user_ring`]).
pub struct UserSrqResize {
    rq: UserRq,
    /// The SRQ's queue of taken WQEs, as large as the new ring.
    queue: Ring<RecvWqe>,
    max_wr: u32,
}

impl UserSrqResize {
    /// The new ring, for mapping.
    pub fn ring(&self) -> &Arc<UserRing> {
        self.rq.ring()
    }
}

impl Object for SrqCore {
    type Deps = SrqUses;

    fn device(&self) -> &Arc<Device> {
        self.pd.device()
    }

    fn table<'a>(&self, res: &'a Resources) -> &'a Table<Self> {
        &res.srq
    }

    fn life(&self) -> &Life<SrqUses> {
        &self.life
    }

    fn uses(&self) -> Option<&UseCount> {
        Some(&self.uses)
    }
}

/// A shared receive queue, owned by a ULP.
pub type Srq = Handle<SrqCore>;

impl Handle<SrqCore> {
    /// Creates an SRQ on `pd` (`ib_create_srq`): `EINVAL` for sizes beyond
    /// the device's limits, `EOPNOTSUPP` if it has no SRQs. May sleep.
    pub fn create(pd: &Arc<PdCore>, attr: &SrqAttr) -> Result<Srq> {
        Srq::create_inner(pd, attr, false, None)
    }

    /// Creates an SRQ whose WQEs come from a ring user space maps
    /// ([`SrqCore::user_ring`]) in the layout of the rxe user ABI; its
    /// `max_wr` is what the ring holds. May sleep.
    pub fn create_user(pd: &Arc<PdCore>, attr: &SrqAttr) -> Result<Srq> {
        Srq::create_inner(pd, attr, true, None)
    }

    /// Creates a tag-matching SRQ (`ibv_create_srq_ex` with
    /// `IBV_SRQT_TM`): its ordinary receives take the unexpected and
    /// untagged messages, its list `cap.max_num_tags` tagged buffers; its
    /// list operations and its messages complete on `cq`. `EOPNOTSUPP`
    /// if the device has no tag matching; `EINVAL` beyond its
    /// [`tm::TmCaps`], or for a CQ of another device. May sleep.
    pub fn create_tm(
        pd: &Arc<PdCore>,
        attr: &SrqAttr,
        cap: &tm::TmCap,
        cq: &Arc<CqCore>,
    ) -> Result<Srq> {
        crate::kshim::verb::might_sleep();
        let caps = pd.device().attr().tm_caps;
        if caps.max_num_tags == 0 || caps.flags & tm::TM_CAP_RC == 0 {
            return Err(eopnotsupp());
        }
        if cap.max_num_tags == 0
            || cap.max_num_tags > caps.max_num_tags
            || cap.max_ops == 0
            || cap.max_ops > caps.max_ops
            || attr.max_sge > caps.max_sge
            || !Arc::ptr_eq(cq.device(), pd.device())
        {
            return Err(EINVAL);
        }
        let seed =
            u64::from(crate::kshim::random::u32()) << 32 | u64::from(crate::kshim::random::u32());
        let list = tm::TmList::new(cap, seed)?;
        Srq::create_inner(pd, attr, false, Some((list, cq)))
    }

    fn create_inner(
        pd: &Arc<PdCore>,
        attr: &SrqAttr,
        user: bool,
        tm: Option<(tm::TmList, &Arc<CqCore>)>,
    ) -> Result<Srq> {
        crate::kshim::verb::might_sleep();
        let dev = pd.device();
        let _usage = dev.try_get().ok_or(ENODEV)?;
        let a = dev.attr();
        if a.max_srq == 0 {
            return Err(eopnotsupp());
        }
        if attr.max_wr == 0
            || attr.max_wr > a.max_srq_wr
            || attr.max_sge == 0
            || attr.max_sge > a.max_srq_sge
            || attr.max_sge as usize > MAX_SGE
            || attr.srq_limit > attr.max_wr
        {
            return Err(EINVAL);
        }
        let (ring, user) = if user {
            let r = UserRing::new(attr.max_wr, RECV_WQE_DATA + attr.max_sge as usize * 16)?;
            (Ring::new(r.capacity() as usize)?, Some(UserRq::new(r)?))
        } else {
            (Ring::new(attr.max_wr as usize)?, None)
        };
        let (tm, tm_cq) = match tm {
            Some((list, cq)) => (Some(list), Some(cq)),
            None => (None, None),
        };
        let uses = SrqUses {
            _cq: tm_cq.map(Use::take).transpose()?,
            _pd: Use::take(pd)?,
        };
        let num = dev.res.srq.reserve()?;
        let number = num.num();
        let st = SrqState {
            ring,
            max_sge: attr.max_sge,
            limit: attr.srq_limit,
            user,
            tm,
        };
        let core = Arc::pin_init(
            pin_init!(SrqCore {
                pd: pd.clone(),
                tm_cq: tm_cq.cloned(),
                life: Life::new(number, uses),
                state <- crate::new_spinlock_irq!(st, "SrqCore::state"),
                uses: UseCount::new(),
            }),
            GFP_KERNEL,
        )?;
        num.publish(core.clone());
        Ok(Handle::new(core))
    }
}
