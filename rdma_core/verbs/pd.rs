// SPDX-License-Identifier: GPL-2.0

//! Protection domains (`ib_alloc_pd`, `ib_dealloc_pd`).
//!
//! A PD groups the objects that may work together: a QP reaches only the
//! memory regions and address handles of its own PD. [`Pd`] is the owner's
//! handle: not `Clone`, and [`Pd::destroy`] consumes it, so a destroyed PD
//! cannot be used. Destroying a PD that MRs, AHs, QPs or SRQs still use
//! fails with `EBUSY` and gives the handle back; dropping the handle instead
//! lets the last of those users free it.
//!
//! A PD allocated with [`PdFlags::UNSAFE_GLOBAL_RKEY`] has a global key
//! ([`Pd::unsafe_global_rkey`], `pd->unsafe_global_rkey` in C): a DMA MR
//! that reaches every live buffer of every owner, locally and from the
//! wire, with local write and remote read and write rights. As in C, it is
//! for ULPs that trust their peers; in Rust it stays safe, as the key
//! reaches only memory allocated as [`Buffer`](crate::kshim::mem::Buffer)s
//! (see `rdma::verbs::mr`).

use kernel::error::code::ENODEV;
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::device::Device;
use crate::kshim::sync::SpinLockIrq;
use crate::spec::opcodes::Access;
use crate::verbs::mr::Mr;
use crate::verbs::object::{Handle, Life, Object};
use crate::verbs::restrack::{Resources, Table, UseCount};

/// The core's protection domain, shared by its handle and its users.
#[pin_data]
pub struct PdCore {
    dev: Arc<Device>,
    life: Life<()>,
    uses: UseCount,
    /// The DMA MR behind the global key, if the PD has one. It uses the
    /// PD, so it goes first: before `destroy` releases the PD, or when the
    /// handle is dropped (`Object::drop_own`).
    #[pin]
    global: SpinLockIrq<Option<Mr>>,
}

impl PdCore {
    /// The device of the PD.
    pub fn device(&self) -> &Arc<Device> {
        &self.dev
    }

    /// The PD's number on its device.
    pub fn num(&self) -> u32 {
        self.life.num()
    }

    /// How many objects use the PD (`rdma res show pd`'s `users`).
    pub fn users(&self) -> u32 {
        self.uses.users()
    }

    /// The global key (`pd->unsafe_global_rkey`), usable as an lkey too, of
    /// a PD allocated with [`PdFlags::UNSAFE_GLOBAL_RKEY`].
    pub fn unsafe_global_rkey(&self) -> Option<u32> {
        self.global.lock().as_ref().map(|mr| mr.rkey())
    }
}

impl Object for PdCore {
    type Deps = ();

    fn device(&self) -> &Arc<Device> {
        &self.dev
    }

    fn table<'a>(&self, res: &'a Resources) -> &'a Table<Self> {
        &res.pd
    }

    fn life(&self) -> &Life<()> {
        &self.life
    }

    fn uses(&self) -> Option<&UseCount> {
        Some(&self.uses)
    }

    fn own_uses(&self) -> u32 {
        u32::from(self.global.lock().is_some())
    }

    fn drop_own(&self) {
        let global = self.global.lock().take();
        drop(global);
    }
}

/// Flags of [`Pd::alloc_with`] (`enum ib_pd_flags`, same bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PdFlags(u32);

impl PdFlags {
    /// No flags.
    pub const NONE: PdFlags = PdFlags(0);
    /// Give the PD a global key over all buffers
    /// (`IB_PD_UNSAFE_GLOBAL_RKEY`).
    pub const UNSAFE_GLOBAL_RKEY: PdFlags = PdFlags(1);

    /// Whether every flag of `other` is set.
    pub fn contains(self, other: PdFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

/// A protection domain, owned by a ULP.
pub type Pd = Handle<PdCore>;

impl Handle<PdCore> {
    /// Allocates a PD (`ib_alloc_pd`). May sleep.
    pub fn alloc(dev: &Arc<Device>) -> Result<Pd> {
        Pd::alloc_with(dev, PdFlags::NONE)
    }

    /// Allocates a PD with `flags` (`ib_alloc_pd` with flags). May sleep.
    pub fn alloc_with(dev: &Arc<Device>, flags: PdFlags) -> Result<Pd> {
        crate::kshim::verb::might_sleep();
        let _usage = dev.try_get().ok_or(ENODEV)?;
        let num = dev.res.pd.reserve()?;
        let number = num.num();
        let core = Arc::pin_init(
            pin_init!(PdCore {
                dev: dev.clone(),
                life: Life::new(number, ()),
                uses: UseCount::new(),
                global <- crate::new_spinlock_irq!(None, "PdCore::global"),
            }),
            GFP_KERNEL,
        )?;
        num.publish(core.clone());
        let pd = Handle::new(core);
        if flags.contains(PdFlags::UNSAFE_GLOBAL_RKEY) {
            let access = Access::LOCAL_WRITE | Access::REMOTE_READ | Access::REMOTE_WRITE;
            let mr = Mr::dma(pd.core(), access)?;
            *pd.global.lock() = Some(mr);
        }
        Ok(pd)
    }
}
