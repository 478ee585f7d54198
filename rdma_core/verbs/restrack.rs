// SPDX-License-Identifier: GPL-2.0

//! Per-device object tables, use counts and the teardown of leaked objects.
//!
//! Every verbs object lives in a [`Table`] of its device: the table gives it
//! its number (QPN, CQ/SRQ number, the index part of an MR's keys), lets a
//! provider find it by that number from any context (a packet names a QPN
//! or an rkey), counts the objects against the device's limits and is the
//! list that unregistration walks: after every client's `remove` has run and
//! the last usage reference is gone, what a ULP left behind is torn down,
//! provider part first, so no provider code is reachable once unregister
//! returns. The counts are what `/sys/class/rdma_rs/<dev>/resources` shows.
//!
//! [`UseCount`] is the "still in use" count of a PD, CQ or SRQ: dependents
//! take a use when they are created and give it back when destroyed;
//! destroying an object in use fails with `EBUSY`.

use core::sync::atomic::{AtomicU32, Ordering};

use kernel::error::code::{EBUSY, ENODEV, ENOMEM};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

use crate::device::DeviceAttr;
use crate::kshim::errno::eopnotsupp;
use crate::kshim::sync::SpinLockIrq;
use crate::spec::qp_state::QpType;
use crate::verbs::ah::AhCore;
use crate::verbs::cq::CqCore;
use crate::verbs::mr::MrCore;
use crate::verbs::mw::{MwCore, MW_INDEX_BASE};
use crate::verbs::object::{self, Reservation};
use crate::verbs::pd::PdCore;
use crate::verbs::qp::QpCore;
use crate::verbs::srq::SrqCore;

/// A slot of a [`Table`].
enum Slot<T> {
    Free,
    /// Handed out by [`Table::reserve`], not yet published.
    Reserved,
    Used(Arc<T>),
}

/// How many slots a table grows to before it reuses freed ones: a freed
/// number comes back only after about this many others were handed out
/// (less the live objects), as `xa_alloc_cyclic` does over its range.
const REUSE_WINDOW: u32 = 1024;

struct TableInner<T> {
    slots: KVec<Slot<T>>,
    /// Where the search for a free slot starts: just after the last one
    /// handed out, so numbers are given cyclically.
    next: u32,
    /// Reserved and used slots.
    count: u32,
    /// Set when the device goes away: nothing new is reserved.
    closed: bool,
}

impl<T> TableInner<T> {
    fn free_in(&self, from: u32, to: u32) -> Option<u32> {
        (from..to).find(|&i| matches!(self.slots[i as usize], Slot::Free))
    }
}

/// Objects of one kind on one device, numbered from `base`.
///
/// Numbers are handed out cyclically: the table grows to
/// `min(max, REUSE_WINDOW)` slots before a freed number is reused, and then
/// takes the first free slot after the one handed out last, so a number
/// (a QPN, the index part of a key) does not name a new object right after
/// its old one went.
#[pin_data]
pub struct Table<T> {
    #[pin]
    inner: SpinLockIrq<TableInner<T>>,
    /// The number of the first slot.
    base: u32,
    /// The most objects at once; 0 means the kind is not supported.
    max: u32,
}

impl<T> Table<T> {
    pub(crate) fn new(base: u32, max: u32) -> impl PinInit<Self> {
        pin_init!(Table {
            inner <- crate::new_spinlock_irq!(
                TableInner { slots: KVec::new(), next: 0, count: 0, closed: false },
                "Table::inner"
            ),
            base,
            max,
        })
    }

    /// Takes a number for a new object (`EOPNOTSUPP` if the device has no
    /// such objects, `ENOMEM` at its limit, `ENODEV` once it is going away),
    /// given back unless published. Does not sleep: the AH verbs use it
    /// from any context.
    pub(crate) fn reserve(&self) -> Result<Reservation<'_, T>> {
        Ok(Reservation::new(self, self.reserve_num()?))
    }

    fn reserve_num(&self) -> Result<u32> {
        if self.max == 0 {
            return Err(eopnotsupp());
        }
        let mut t = self.inner.lock();
        if t.closed {
            return Err(ENODEV);
        }
        if t.count >= self.max {
            return Err(ENOMEM);
        }
        let len = t.slots.len() as u32;
        let window = core::cmp::min(self.max, REUSE_WINDOW);
        let next = core::cmp::min(t.next, len);
        let found = match t.free_in(next, len) {
            Some(i) => Some(i),
            None if len < window => None,
            None => t.free_in(0, next),
        };
        let index = match found {
            Some(i) => i,
            // Below the window, or every slot in use (then `count < max`
            // allows one more).
            None => {
                t.slots.push(Slot::Free, GFP_ATOMIC)?;
                len
            }
        };
        t.slots[index as usize] = Slot::Reserved;
        t.count += 1;
        t.next = index + 1;
        Ok(self.base + index)
    }

    /// Makes a reserved number find `obj`.
    pub(crate) fn publish(&self, num: u32, obj: Arc<T>) {
        let mut t = self.inner.lock();
        if let Some(slot) = t.slots.get_mut((num - self.base) as usize) {
            *slot = Slot::Used(obj);
        }
    }

    /// Gives a number back (reserved or published); returns the object.
    pub(crate) fn release(&self, num: u32) -> Option<Arc<T>> {
        let index = num.checked_sub(self.base)?;
        let mut t = self.inner.lock();
        let slot = t.slots.get_mut(index as usize)?;
        let old = core::mem::replace(slot, Slot::Free);
        let obj = match old {
            Slot::Free => return None,
            Slot::Reserved => None,
            Slot::Used(obj) => Some(obj),
        };
        t.count -= 1;
        obj
    }

    /// The object of number `num`. Any context.
    pub(crate) fn get(&self, num: u32) -> Option<Arc<T>> {
        let index = num.checked_sub(self.base)?;
        let t = self.inner.lock();
        match t.slots.get(index as usize) {
            Some(Slot::Used(obj)) => Some(obj.clone()),
            _ => None,
        }
    }

    /// How many objects there are.
    pub(crate) fn count(&self) -> u32 {
        self.inner.lock().count
    }

    /// The published objects for which `f` holds (`f` runs under the
    /// table's lock: it must not take other locks).
    pub(crate) fn matching(&self, f: impl Fn(&T) -> bool) -> Result<KVec<Arc<T>>> {
        let t = self.inner.lock();
        let n = t
            .slots
            .iter()
            .filter(|s| matches!(s, Slot::Used(o) if f(o)))
            .count();
        let mut all = KVec::with_capacity(n, GFP_ATOMIC)?;
        for slot in t.slots.iter() {
            if let Slot::Used(obj) = slot {
                if f(obj) {
                    // Cannot fail: the capacity covers them.
                    let _ = all.push(obj.clone(), GFP_ATOMIC);
                }
            }
        }
        Ok(all)
    }

    /// Forbids new objects and returns the published ones, for teardown.
    pub(crate) fn close(&self) -> Result<KVec<Arc<T>>> {
        let mut t = self.inner.lock();
        t.closed = true;
        let mut all = KVec::with_capacity(t.slots.len(), GFP_ATOMIC)?;
        for slot in t.slots.iter() {
            if let Slot::Used(obj) = slot {
                // Cannot fail: the capacity covers every slot.
                let _ = all.push(obj.clone(), GFP_ATOMIC);
            }
        }
        Ok(all)
    }
}

/// The first number of a QP other than the GSI QP: 2 to 15 stay unused, as
/// in the C rxe (`RXE_MIN_QP_INDEX`).
pub const FIRST_QPN: u32 = 16;

/// Set in a [`UseCount`] once its object is destroyed.
const DEAD: u32 = 1 << 31;
/// Set when the owner dropped its handle while the object was in use: the
/// last user to leave finishes the destruction.
const ORPHAN: u32 = 1 << 30;

/// How many objects use a PD, CQ or SRQ; destroy is refused while any do.
pub struct UseCount(AtomicU32);

impl UseCount {
    pub(crate) const fn new() -> Self {
        UseCount(AtomicU32::new(0))
    }

    /// How many objects use it now (for listings: racy by nature).
    pub(crate) fn users(&self) -> u32 {
        self.0.load(Ordering::Relaxed) & !(DEAD | ORPHAN)
    }

    /// Takes a use; `ENODEV` if the object is already destroyed.
    pub(crate) fn get(&self) -> Result {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                (u & (DEAD | ORPHAN) == 0).then_some(u + 1)
            })
            .map(|_| ())
            .map_err(|_| ENODEV)
    }

    /// Gives a use back. Returns true when that was the last use of an
    /// orphaned object, which the caller must now destroy.
    #[must_use]
    pub(crate) fn put(&self) -> bool {
        let now = self.0.fetch_sub(1, Ordering::AcqRel) - 1;
        now == ORPHAN
            && self
                .0
                .compare_exchange(ORPHAN, DEAD, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
    }

    /// The owner lets go: true if the object is unused and must be destroyed
    /// now, false if the last user will do it (see [`UseCount::put`]).
    pub(crate) fn orphan(&self) -> bool {
        if self.kill().is_ok() {
            return true;
        }
        let before = self.0.fetch_or(ORPHAN, Ordering::AcqRel);
        // The last user may have left between the two steps.
        before & !(DEAD | ORPHAN) == 0
            && self
                .0
                .compare_exchange(ORPHAN, DEAD, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
    }

    /// Marks the object destroyed if nothing uses it, else `EBUSY`.
    pub(crate) fn kill(&self) -> Result {
        self.0
            .compare_exchange(0, DEAD, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
            .map_err(|_| EBUSY)
    }

    /// Marks the object destroyed if exactly `own` uses remain, those of
    /// objects it made for itself (a PD's global MR), else `EBUSY`.
    pub(crate) fn kill_keeping(&self, own: u32) -> Result {
        self.0
            .compare_exchange(own, own | DEAD, Ordering::AcqRel, Ordering::Acquire)
            .map(|_| ())
            .map_err(|_| EBUSY)
    }

    /// Marks the object destroyed whatever uses it (teardown of leaked
    /// objects, dependents first).
    pub(crate) fn force_kill(&self) {
        self.0.fetch_or(DEAD, Ordering::AcqRel);
    }
}

/// The object tables of one device.
#[pin_data]
pub struct Resources {
    #[pin]
    pub(crate) pd: Table<PdCore>,
    #[pin]
    pub(crate) cq: Table<CqCore>,
    /// QPs other than the GSI QP, numbered from [`FIRST_QPN`].
    #[pin]
    pub(crate) qp: Table<QpCore>,
    /// The GSI QP, number 1.
    #[pin]
    pub(crate) gsi: Table<QpCore>,
    #[pin]
    pub(crate) srq: Table<SrqCore>,
    /// MRs, numbered from 1 (the index part of their keys).
    #[pin]
    pub(crate) mr: Table<MrCore>,
    #[pin]
    pub(crate) ah: Table<AhCore>,
    /// MWs, numbered from [`MW_INDEX_BASE`] (the index part of their keys).
    #[pin]
    pub(crate) mw: Table<MwCore>,
}

impl Resources {
    pub(crate) fn new(attr: DeviceAttr) -> impl PinInit<Self> {
        pin_init!(Resources {
            pd <- Table::new(1, attr.max_pd),
            cq <- Table::new(1, attr.max_cq),
            qp <- Table::new(FIRST_QPN, attr.max_qp),
            gsi <- Table::new(1, u32::from(attr.max_qp > 0)),
            srq <- Table::new(1, attr.max_srq),
            mr <- Table::new(1, core::cmp::min(attr.max_mr, MW_INDEX_BASE - 1)),
            ah <- Table::new(1, attr.max_ah),
            mw <- Table::new(MW_INDEX_BASE, core::cmp::min(attr.max_mw, MW_INDEX_BASE)),
        })
    }

    /// A QP number for a new QP of type `qp_type`: number 1 for the one
    /// GSI QP (a second one is "in use", `EBUSY`), from [`FIRST_QPN`] for
    /// the others.
    pub(crate) fn reserve_qpn(&self, qp_type: QpType) -> Result<Reservation<'_, QpCore>> {
        if qp_type == QpType::Gsi {
            self.gsi
                .reserve()
                .map_err(|e| if e == ENOMEM { EBUSY } else { e })
        } else {
            self.qp.reserve()
        }
    }

    /// The table QP `qpn` is numbered in.
    pub(crate) fn qp_table(&self, qpn: u32) -> &Table<QpCore> {
        if qpn == 1 {
            &self.gsi
        } else {
            &self.qp
        }
    }

    /// The QP of number `qpn`. Any context.
    pub(crate) fn qp_by_num(&self, qpn: u32) -> Option<Arc<QpCore>> {
        self.qp_table(qpn).get(qpn)
    }

    /// One line per kind: `pd 2` and so on (the sysfs `resources` file).
    pub(crate) fn write_counts(&self, out: &mut impl core::fmt::Write) -> core::fmt::Result {
        writeln!(out, "pd {}", self.pd.count())?;
        writeln!(out, "cq {}", self.cq.count())?;
        writeln!(out, "qp {}", self.qp.count() + self.gsi.count())?;
        writeln!(out, "srq {}", self.srq.count())?;
        writeln!(out, "mr {}", self.mr.count())?;
        writeln!(out, "ah {}", self.ah.count())?;
        writeln!(out, "mw {}", self.mw.count())
    }

    /// The number of live objects of every kind.
    pub(crate) fn total(&self) -> u32 {
        self.pd.count()
            + self.cq.count()
            + self.qp.count()
            + self.gsi.count()
            + self.srq.count()
            + self.mr.count()
            + self.ah.count()
            + self.mw.count()
    }

    /// Tears down what the device's ULPs left behind, dependents first:
    /// QPs, SRQs, MWs, MRs, AHs, CQs, PDs. Process context, after the last usage
    /// reference is gone (nobody creates objects any more).
    pub(crate) fn teardown(&self, dev: &CStr) {
        let left = self.total();
        if left != 0 {
            pr_warn!(
                "{:?}: {} verbs objects left at unregistration; tearing them down\n",
                dev,
                left
            );
        }
        macro_rules! each {
            ($table:expr) => {
                match $table.close() {
                    Ok(objs) => objs.iter().for_each(|o| object::teardown(&**o)),
                    Err(_) => pr_err!("{:?}: no memory to tear objects down\n", dev),
                }
            };
        }
        each!(self.gsi);
        each!(self.qp);
        each!(self.srq);
        each!(self.mw);
        each!(self.mr);
        each!(self.ah);
        each!(self.cq);
        each!(self.pd);
    }
}
