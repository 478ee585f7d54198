// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues (`ib_create_srq`, `ib_modify_srq`, `ib_query_srq`,
//! `ib_post_srq_recv`, `ib_destroy_srq`).
//!
//! One ring of receive WQEs that several QPs of a PD consume from. With a
//! limit armed ([`SrqCore::modify`] with `limit`), the core raises
//! `SrqLimitReached` once when the number of WQEs falls below it, and
//! disarms, as the IBTA says.

use core::ops::Deref;
use core::sync::atomic::{AtomicBool, Ordering};

use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::device::event::{Element, Event, EventKind};
use crate::device::DeviceCaps;
use crate::kshim::errno::eopnotsupp;
use crate::kshim::sync::SpinLockIrq;
use crate::verbs::pd::PdCore;
use crate::verbs::restrack::UseCount;
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
}

/// The core's shared receive queue.
#[pin_data]
pub struct SrqCore {
    pd: Arc<PdCore>,
    num: u32,
    #[pin]
    state: SpinLockIrq<SrqState>,
    pub(crate) uses: UseCount,
    released: AtomicBool,
}

impl SrqCore {
    /// The SRQ's number on its device.
    pub fn num(&self) -> u32 {
        self.num
    }

    /// The PD.
    pub fn pd(&self) -> &Arc<PdCore> {
        &self.pd
    }

    /// Posts receive WQEs (`ib_post_srq_recv`); on error, the index of the
    /// first request not posted. Any context; never sleeps.
    pub fn post_recv(&self, wrs: &[RecvWr<'_>]) -> core::result::Result<(), (usize, Error)> {
        let _verb = crate::kshim::verb::Verb::enter();
        if self.released.load(Ordering::Acquire) {
            return Err((0, ENODEV));
        }
        let mut st = self.state.lock();
        let max_sge = st.max_sge;
        for (i, wr) in wrs.iter().enumerate() {
            let slot = st.ring.next_slot().map_err(|e| (i, e))?;
            slot.fill(wr, max_sge).map_err(|e| (i, e))?;
            st.ring.commit();
        }
        Ok(())
    }

    /// Takes the oldest WQE (for providers, when a message arrives for a QP
    /// of this SRQ). Raises `SrqLimitReached` when that crosses the limit.
    pub(crate) fn take(&self) -> Option<RecvWqe> {
        let (wqe, fire) = {
            let mut st = self.state.lock();
            let wqe = st.ring.pop()?;
            let fire = st.limit != 0 && (st.ring.len() as u32) < st.limit;
            if fire {
                st.limit = 0;
            }
            (wqe, fire)
        };
        if fire {
            self.pd.device().dispatch_event(Event {
                kind: EventKind::SrqLimitReached,
                element: Element::Srq(self.num),
            });
        }
        Some(wqe)
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

    /// Changes the SRQ (`ib_modify_srq`): `max_wr` (with `resize`; needs
    /// the device's `SRQ_RESIZE` capability, `EINVAL` below the WQEs
    /// posted) and/or `limit` (arms the limit event; `EINVAL` above
    /// `max_wr`). May sleep.
    pub fn modify(&self, resize: Option<u32>, limit: Option<u32>) -> Result {
        crate::kshim::verb::might_sleep();
        if self.released.load(Ordering::Acquire) {
            return Err(ENODEV);
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

    pub(crate) fn get_use(&self) -> Result {
        self.uses.get()
    }

    pub(crate) fn put_use(&self) {
        if self.uses.put() {
            self.release();
        }
    }

    fn release(&self) {
        if !self.released.swap(true, Ordering::AcqRel) {
            self.pd.device().res.srq.release(self.num);
            self.pd.put_use();
        }
    }

    pub(crate) fn teardown(&self) {
        self.uses.force_kill();
        self.release();
    }
}

/// A shared receive queue, owned by a ULP.
pub struct Srq {
    core: Arc<SrqCore>,
}

impl Srq {
    /// Creates an SRQ on `pd` (`ib_create_srq`): `EINVAL` for sizes beyond
    /// the device's limits, `EOPNOTSUPP` if it has no SRQs. May sleep.
    pub fn create(pd: &Arc<PdCore>, attr: &SrqAttr) -> Result<Srq> {
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
        let ring = Ring::new(attr.max_wr as usize)?;
        pd.get_use()?;
        let num = match dev.res.srq.reserve() {
            Ok(n) => n,
            Err(e) => {
                pd.put_use();
                return Err(e);
            }
        };
        let st = SrqState {
            ring,
            max_sge: attr.max_sge,
            limit: attr.srq_limit,
        };
        let core = Arc::pin_init(
            pin_init!(SrqCore {
                pd: pd.clone(),
                num,
                state <- crate::new_spinlock_irq!(st, "SrqCore::state"),
                uses: UseCount::new(),
                released: AtomicBool::new(false),
            }),
            GFP_KERNEL,
        );
        let core = match core {
            Ok(c) => c,
            Err(e) => {
                dev.res.srq.release(num);
                pd.put_use();
                return Err(e);
            }
        };
        dev.res.srq.publish(num, core.clone());
        Ok(Srq { core })
    }

    /// Destroys the SRQ: `EBUSY`, with the handle back, while QPs use it.
    pub fn destroy(self) -> core::result::Result<(), (Srq, Error)> {
        crate::kshim::verb::might_sleep();
        match self.core.uses.kill() {
            Ok(()) => {
                self.core.release();
                Ok(())
            }
            Err(e) => Err((self, e)),
        }
    }

    /// The shared core object.
    pub fn core(&self) -> &Arc<SrqCore> {
        &self.core
    }
}

impl Deref for Srq {
    type Target = SrqCore;

    fn deref(&self) -> &SrqCore {
        &self.core
    }
}

impl Drop for Srq {
    fn drop(&mut self) {
        if self.core.uses.orphan() {
            self.core.release();
        }
    }
}
