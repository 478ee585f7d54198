// SPDX-License-Identifier: GPL-2.0

//! The per-device CQ pool (`ib_cq_pool_get`, `ib_cq_pool_put`).
//!
//! ULPs with many QPs (storage targets, RTRS) share completion queues
//! instead of making one per QP: [`Device::cq_pool_get`] hands out a
//! [`PooledCq`], a reservation of `nr_cqe` entries on a core-polled CQ of
//! the requested poll context, picking the least used CQ that has room and
//! creating one when none has. Dropping the reservation gives the entries
//! back. The pool's CQs live until the device is unregistered: after every
//! client's `remove`, the pool lets go of them.

use core::ops::Deref;

use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::device::Device;
use crate::verbs::cq::{Cq, CqCore, PollCtx};

/// The size of the CQs the pool creates (`IB_MAX_SHARED_CQ_SZ`), unless the
/// device's limit is lower or a request larger.
const POOL_CQE: u32 = 4096;

/// One CQ of a pool.
pub(crate) struct PoolEntry {
    cq: Cq,
    ctx: PollCtx,
    used: u32,
}

/// Entries reserved on a shared CQ; dropping it gives them back.
pub struct PooledCq {
    dev: Arc<Device>,
    cq: Arc<CqCore>,
    nr_cqe: u32,
}

impl PooledCq {
    /// The shared CQ, for creating QPs.
    pub fn core(&self) -> &Arc<CqCore> {
        &self.cq
    }

    /// The number of entries reserved.
    pub fn nr_cqe(&self) -> u32 {
        self.nr_cqe
    }
}

impl Deref for PooledCq {
    type Target = CqCore;

    fn deref(&self) -> &CqCore {
        &self.cq
    }
}

impl Drop for PooledCq {
    fn drop(&mut self) {
        let mut pool = self.dev.cq_pool.lock();
        if let Some(e) = pool.iter_mut().find(|e| Arc::ptr_eq(e.cq.core(), &self.cq)) {
            e.used -= self.nr_cqe;
        }
    }
}

impl Device {
    /// Reserves `nr_cqe` entries on a shared CQ polled in `ctx`
    /// (`ib_cq_pool_get`). `EINVAL` for 0 entries, more than the device's
    /// largest CQ, or [`PollCtx::Direct`] (a direct CQ has one owner). May
    /// sleep.
    pub fn cq_pool_get(self: &Arc<Self>, nr_cqe: u32, ctx: PollCtx) -> Result<PooledCq> {
        crate::kshim::verb::might_sleep();
        let max = self.attr().max_cqe;
        if nr_cqe == 0 || nr_cqe > max || ctx == PollCtx::Direct {
            return Err(EINVAL);
        }
        let mut pool = self.cq_pool.lock();
        let best = pool
            .iter_mut()
            .filter(|e| e.ctx == ctx && e.cq.capacity() as u32 - e.used >= nr_cqe)
            .min_by_key(|e| e.used);
        let entry = match best {
            Some(e) => e,
            None => {
                let size = core::cmp::min(max, core::cmp::max(POOL_CQE, nr_cqe));
                pool.reserve(1, GFP_KERNEL)?;
                let cq = Cq::alloc(self, size, ctx)?;
                pool.push(PoolEntry { cq, ctx, used: 0 }, GFP_KERNEL)?;
                let last = pool.len() - 1;
                &mut pool[last]
            }
        };
        entry.used += nr_cqe;
        Ok(PooledCq {
            dev: self.clone(),
            cq: entry.cq.core().clone(),
            nr_cqe,
        })
    }

    /// The number of CQs in the device's pool.
    pub fn cq_pool_len(&self) -> usize {
        self.cq_pool.lock().len()
    }
}

/// Lets go of the pool's CQs (device unregistration, after the clients'
/// `remove`). A CQ a leaked QP still uses is freed with that QP.
pub(crate) fn cleanup(dev: &Device) {
    let entries = core::mem::take(&mut *dev.cq_pool.lock());
    for e in entries.iter() {
        if e.used != 0 {
            pr_warn!(
                "{:?}: pooled CQ {} still has {} entries reserved\n",
                dev.name(),
                e.cq.num(),
                e.used
            );
        }
    }
    drop(entries);
}
