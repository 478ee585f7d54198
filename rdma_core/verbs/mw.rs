// SPDX-License-Identifier: GPL-2.0

//! Memory windows (`ib_alloc_mw`, `IB_WR_BIND_MW`, `ib_dealloc_mw`) and
//! remote access by rkey, whether the key names an MR or an MW.
//!
//! A window is a remote-access view of part of an MR that has `MW_BIND`
//! rights. It is bound by a `BIND_MW` work request, executed in send queue
//! order by the provider ([`MwCore::bind`]). A type 1 window is usable by
//! any QP of its PD and can be re-bound at will; a type 2 window is bound to
//! one QP, and must be invalidated (`LOCAL_INV`, or a SEND with invalidate)
//! before it can be bound again, as the IBTA says.
//!
//! A binding holds the QP object (not its number, which a later QP of any
//! PD may get) and is undone when that QP is destroyed; every access checks
//! that the QP's PD is the window's. While windows are bound to an MR it
//! can be neither deregistered nor invalidated (`MrCore::get_window`).
//!
//! Window keys live in the upper half of the 24-bit key index space, MR
//! keys in the lower half, so one rkey names one object. Providers resolve
//! every remote access through [`Device::remote_copy_in`] and its siblings,
//! which apply the window's range, rights and QP rules and then the MR's.

use core::sync::atomic::Ordering;

use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::device::{Device, DeviceCaps};
use crate::kshim::errno::eopnotsupp;
use crate::kshim::sync::SpinLockIrq;
use crate::spec::opcodes::Access;
use crate::verbs::mr::{AccessError, MrCore};
use crate::verbs::object::{Handle, Life, Object, Use};
use crate::verbs::pd::PdCore;
use crate::verbs::qp::QpCore;
use crate::verbs::restrack::{Resources, Table};

/// The first key index of memory windows.
pub(crate) const MW_INDEX_BASE: u32 = 1 << 23;

/// The type of a memory window (`enum ib_mw_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MwType {
    /// Bound for its whole PD; re-bindable.
    Type1 = 1,
    /// Bound to one QP; invalidated before it is bound again.
    Type2 = 2,
}

struct Binding {
    /// Counted in the MR's windows while the binding lives.
    mr: Arc<MrCore>,
    addr: u64,
    length: u64,
    access: Access,
    /// The QP a type 2 window is bound to, counted in its windows.
    qp: Option<Arc<QpCore>>,
}

impl Drop for Binding {
    fn drop(&mut self) {
        self.mr.put_window();
        if let Some(qp) = &self.qp {
            qp.windows.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

struct MwState {
    key: u8,
    binding: Option<Binding>,
}

/// The core's memory window.
#[pin_data]
pub struct MwCore {
    pd: Arc<PdCore>,
    /// The index part of the key; the PD's use, given back at release.
    life: Life<Use<PdCore>>,
    mw_type: MwType,
    #[pin]
    state: SpinLockIrq<MwState>,
}

impl MwCore {
    /// The remote key.
    pub fn rkey(&self) -> u32 {
        self.life.num() << 8 | u32::from(self.state.lock().key)
    }

    /// The window's type.
    pub fn mw_type(&self) -> MwType {
        self.mw_type
    }

    /// Whether the window is bound to memory.
    pub fn is_bound(&self) -> bool {
        self.state.lock().binding.is_some()
    }

    /// Executes a `BIND_MW` work request of `qp` (for providers, in send
    /// queue order): the window covers `length` bytes of `mr` at `addr`
    /// with `access`, under `key` (index part unchanged). The checks are
    /// the IBTA's: same PD for QP, window and MR; the MR allows binding; a
    /// writable window needs a locally writable MR; the range lies in the
    /// MR; a type 2 window must be free and gets a non-empty range.
    pub(crate) fn bind(
        &self,
        qp: &Arc<QpCore>,
        mr: &Arc<MrCore>,
        key: u32,
        addr: u64,
        length: u64,
        access: Access,
    ) -> core::result::Result<(), AccessError> {
        if key >> 8 != self.life.num()
            || access.has_unknown()
            || access.contains(Access::ZERO_BASED)
        {
            return Err(AccessError::Key);
        }
        if !core::ptr::eq(&**qp.pd(), &*self.pd) || !core::ptr::eq(&**mr.pd(), &*self.pd) {
            return Err(AccessError::Pd);
        }
        let mr_access = mr.access();
        let writable = access.intersects(Access::REMOTE_WRITE | Access::REMOTE_ATOMIC);
        if !mr.is_valid()
            || !mr_access.contains(Access::MW_BIND)
            || (writable && !mr_access.contains(Access::LOCAL_WRITE))
        {
            return Err(AccessError::Rights);
        }
        let (start, len) = (mr.iova(), mr.length());
        if addr < start || length > len || addr - start > len - length {
            return Err(AccessError::Bounds);
        }
        let old = {
            let mut st = self.state.lock();
            if self.mw_type == MwType::Type2 && (st.binding.is_some() || length == 0) {
                return Err(AccessError::Key);
            }
            // Counted in the MR under its lock: a deregistration or an
            // invalidation of the MR that got there first wins.
            if !mr.get_window() {
                return Err(AccessError::Rights);
            }
            let qp = if self.mw_type == MwType::Type2 {
                qp.windows.fetch_add(1, Ordering::AcqRel);
                Some(qp.clone())
            } else {
                None
            };
            st.key = key as u8;
            st.binding.replace(Binding {
                mr: mr.clone(),
                addr,
                length,
                access,
                qp,
            })
        };
        // A type 1 window's previous binding; it may hold the last
        // reference to its MR: dropped outside the lock.
        drop(old);
        Ok(())
    }

    /// Undoes the binding of a type 2 window to `qp`, if it is bound to
    /// that QP.
    fn unbind_from(&self, qp: &QpCore) {
        let old = {
            let mut st = self.state.lock();
            match &st.binding {
                Some(Binding { qp: Some(q), .. }) if core::ptr::eq(&**q, qp) => st.binding.take(),
                _ => None,
            }
        };
        drop(old);
    }

    /// Invalidates the window under `key` (`LOCAL_INV` or SEND with
    /// invalidate): type 2 only.
    pub fn invalidate(&self, key: u32) -> core::result::Result<(), AccessError> {
        let old = {
            let mut st = self.state.lock();
            if self.mw_type != MwType::Type2 || key as u8 != st.key || st.binding.is_none() {
                return Err(AccessError::Key);
            }
            st.binding.take()
        };
        drop(old);
        Ok(())
    }

    /// The MR and its key behind an access through this window, after the
    /// window's own checks.
    fn resolve(
        &self,
        key: u32,
        qp: &QpCore,
        iova: u64,
        len: u64,
        need: Access,
    ) -> core::result::Result<Arc<MrCore>, AccessError> {
        let st = self.state.lock();
        let b = st.binding.as_ref().ok_or(AccessError::Key)?;
        if key as u8 != st.key {
            return Err(AccessError::Key);
        }
        // The QP's PD must be the window's; a type 2 window answers only
        // the QP object it is bound to (held, so no other QP is at its
        // address), whatever number that QP had.
        let qp_ok = core::ptr::eq(&**qp.pd(), &*self.pd)
            && match self.mw_type {
                MwType::Type1 => true,
                MwType::Type2 => b.qp.as_ref().is_some_and(|q| core::ptr::eq(&**q, qp)),
            };
        if !qp_ok {
            return Err(AccessError::Pd);
        }
        if !b.access.contains(need) {
            return Err(AccessError::Rights);
        }
        if iova < b.addr || len > b.length || iova - b.addr > b.length - len {
            return Err(AccessError::Bounds);
        }
        Ok(b.mr.clone())
    }
}

impl Object for MwCore {
    type Deps = Use<PdCore>;

    fn device(&self) -> &Arc<Device> {
        self.pd.device()
    }

    fn table<'a>(&self, res: &'a Resources) -> &'a Table<Self> {
        &res.mw
    }

    fn life(&self) -> &Life<Use<PdCore>> {
        &self.life
    }

    /// Unbound: the MR it covered is no longer reachable through it.
    fn on_release(&self) {
        let old = self.state.lock().binding.take();
        drop(old);
    }
}

/// A memory window, owned by a ULP. Dropping it deallocates it.
pub type Mw = Handle<MwCore>;

impl Handle<MwCore> {
    /// Allocates a window on `pd` (`ib_alloc_mw`): `EOPNOTSUPP` without the
    /// device's `MEM_WINDOW` capability. May sleep.
    pub fn alloc(pd: &Arc<PdCore>, mw_type: MwType) -> Result<Mw> {
        crate::kshim::verb::might_sleep();
        let dev = pd.device();
        let _usage = dev.try_get().ok_or(ENODEV)?;
        if !dev.attr().cap_flags.contains(DeviceCaps::MEM_WINDOW) {
            return Err(eopnotsupp());
        }
        let pd_use = Use::take(pd)?;
        let index = dev.res.mw.reserve()?;
        let number = index.num();
        let core = Arc::pin_init(
            pin_init!(MwCore {
                pd: pd.clone(),
                life: Life::new(number, pd_use),
                mw_type,
                state <- crate::new_spinlock_irq!(MwState { key: crate::kshim::random::u8(), binding: None }, "MwCore::state"),
            }),
            GFP_KERNEL,
        )?;
        index.publish(core.clone());
        Ok(Handle::new(core))
    }

    /// Deallocates the window (`ib_dealloc_mw`). May sleep.
    pub fn dealloc(self) {
        crate::kshim::verb::might_sleep();
        drop(self);
    }
}

/// What an rkey resolves to, ready for an access with the MR's key.
fn resolve(
    dev: &Device,
    rkey: u32,
    qp: &QpCore,
    iova: u64,
    len: u64,
    need: Access,
) -> core::result::Result<(Arc<MrCore>, u32, Access), AccessError> {
    let index = rkey >> 8;
    if index >= MW_INDEX_BASE {
        let mw = dev.res.mw.get(index).ok_or(AccessError::Key)?;
        let mr = mw.resolve(rkey, qp, iova, len, need)?;
        let key = mr.lkey();
        // The window's rights were checked; the MR only has to be valid
        // and cover the range.
        Ok((mr, key, Access::NONE))
    } else {
        let mr = dev.mr_by_key(rkey).ok_or(AccessError::Key)?;
        Ok((mr, rkey, need))
    }
}

impl Device {
    /// The window that `key` names (index part), if any: for BIND_MW
    /// entries of user rings, which name windows by key. Any context.
    pub(crate) fn mw_by_key(&self, key: u32) -> Option<Arc<MwCore>> {
        let index = key >> 8;
        if index < MW_INDEX_BASE {
            return None;
        }
        self.res.mw.get(index)
    }

    /// Checks a remote access by QP `qp` through `rkey` (an MR or an MW)
    /// without touching memory.
    pub(crate) fn remote_check(
        &self,
        rkey: u32,
        qp: &QpCore,
        iova: u64,
        len: u64,
        need: Access,
    ) -> core::result::Result<(), AccessError> {
        let (mr, key, need) = resolve(self, rkey, qp, iova, len, need)?;
        let pd = if need == Access::NONE {
            mr.pd().clone()
        } else {
            qp.pd().clone()
        };
        mr.check(key, &pd, iova, len, need)
    }

    /// A peer's write of `data` at `iova` through `rkey`, for QP `qp`.
    pub(crate) fn remote_copy_in(
        &self,
        rkey: u32,
        qp: &QpCore,
        iova: u64,
        data: &[u8],
        need: Access,
    ) -> core::result::Result<(), AccessError> {
        let (mr, key, need) = resolve(self, rkey, qp, iova, data.len() as u64, need)?;
        let pd = if need == Access::NONE {
            mr.pd().clone()
        } else {
            qp.pd().clone()
        };
        mr.copy_in(key, &pd, iova, data, need)
    }

    /// A peer's read of `out.len()` bytes at `iova` through `rkey`.
    pub(crate) fn remote_copy_out(
        &self,
        rkey: u32,
        qp: &QpCore,
        iova: u64,
        out: &mut [u8],
        need: Access,
    ) -> core::result::Result<(), AccessError> {
        let (mr, key, need) = resolve(self, rkey, qp, iova, out.len() as u64, need)?;
        let pd = if need == Access::NONE {
            mr.pd().clone()
        } else {
            qp.pd().clone()
        };
        mr.copy_out(key, &pd, iova, out, need)
    }

    /// A peer's atomic on the 8 bytes at `iova` through `rkey`; returns the
    /// old value.
    pub(crate) fn remote_atomic(
        &self,
        rkey: u32,
        qp: &QpCore,
        iova: u64,
        f: impl Fn(u64) -> u64,
    ) -> core::result::Result<u64, AccessError> {
        let (mr, key, need) = resolve(self, rkey, qp, iova, 8, Access::REMOTE_ATOMIC)?;
        if need == Access::NONE {
            // Through a window: the window granted the atomic right.
            let pd = mr.pd().clone();
            mr.atomic_unchecked_rights(key, &pd, iova, f)
        } else {
            mr.atomic(key, qp.pd(), iova, f)
        }
    }

    /// A peer's ATOMIC_WRITE of `value` to the 8 bytes at `iova` through
    /// `rkey` (needs remote write rights).
    pub(crate) fn remote_atomic_write(
        &self,
        rkey: u32,
        qp: &QpCore,
        iova: u64,
        value: u64,
    ) -> core::result::Result<(), AccessError> {
        let (mr, key, need) = resolve(self, rkey, qp, iova, 8, Access::REMOTE_WRITE)?;
        let pd = if need == Access::NONE {
            mr.pd().clone()
        } else {
            qp.pd().clone()
        };
        mr.atomic_with(key, &pd, iova, need, |_| value).map(|_| ())
    }

    /// Invalidates `key` (an MR or a type 2 MW) for `LOCAL_INV` or a SEND
    /// with invalidate.
    pub(crate) fn invalidate_key(&self, key: u32) -> core::result::Result<(), AccessError> {
        if key >> 8 >= MW_INDEX_BASE {
            self.res
                .mw
                .get(key >> 8)
                .ok_or(AccessError::Key)?
                .invalidate(key)
        } else {
            self.mr_by_key(key).ok_or(AccessError::Key)?.invalidate(key)
        }
    }
}

/// Unbinds the type 2 windows bound to `qp`, which is being destroyed.
/// Process context. Should the list not be allocated, the windows stay
/// bound to the dead QP object and refuse every access all the same.
pub(crate) fn unbind_qp(qp: &QpCore) {
    if qp.windows.load(Ordering::Acquire) == 0 {
        return;
    }
    let Ok(all) = qp
        .device()
        .res
        .mw
        .matching(|mw| mw.mw_type == MwType::Type2)
    else {
        return;
    };
    for mw in all.iter() {
        mw.unbind_from(qp);
    }
}

/// Checks that a bind request names objects that can be bound at all.
pub(crate) fn check_bind_request(mw: &MwCore, mr: &MrCore, pd: &PdCore) -> Result {
    if !core::ptr::eq(&*mw.pd, pd) || !core::ptr::eq(&**mr.pd(), pd) {
        return Err(EINVAL);
    }
    Ok(())
}
