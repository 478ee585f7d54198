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

use core::ops::Deref;
use core::sync::atomic::{AtomicBool, Ordering};

use kernel::error::code::ENODEV;
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::device::Device;
use crate::spec::opcodes::Access;
use crate::verbs::mr::Mr;
use crate::verbs::restrack::UseCount;

/// The core's protection domain, shared by its handle and its users.
pub struct PdCore {
    dev: Arc<Device>,
    num: u32,
    pub(crate) uses: UseCount,
    released: AtomicBool,
}

impl PdCore {
    /// The device of the PD.
    pub fn device(&self) -> &Arc<Device> {
        &self.dev
    }

    /// The PD's number on its device.
    pub fn num(&self) -> u32 {
        self.num
    }

    /// Takes a use for a new dependent (`ENODEV` once destroyed).
    pub(crate) fn get_use(&self) -> Result {
        self.uses.get()
    }

    /// Gives a dependent's use back.
    pub(crate) fn put_use(&self) {
        if self.uses.put() {
            self.release();
        }
    }

    fn release(&self) {
        if !self.released.swap(true, Ordering::AcqRel) {
            self.dev.res.pd.release(self.num);
        }
    }

    /// Teardown of a PD its owner leaked (device unregistration).
    pub(crate) fn teardown(&self) {
        self.uses.force_kill();
        self.release();
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
pub struct Pd {
    core: Arc<PdCore>,
    /// The DMA MR behind the global key (dropped before the PD).
    global: Option<Mr>,
}

impl Pd {
    /// Allocates a PD (`ib_alloc_pd`). May sleep.
    pub fn alloc(dev: &Arc<Device>) -> Result<Pd> {
        Pd::alloc_with(dev, PdFlags::NONE)
    }

    /// Allocates a PD with `flags` (`ib_alloc_pd` with flags). May sleep.
    pub fn alloc_with(dev: &Arc<Device>, flags: PdFlags) -> Result<Pd> {
        let mut pd = Pd::alloc_plain(dev)?;
        if flags.contains(PdFlags::UNSAFE_GLOBAL_RKEY) {
            let access = Access::LOCAL_WRITE | Access::REMOTE_READ | Access::REMOTE_WRITE;
            pd.global = Some(Mr::dma(&pd.core, access)?);
        }
        Ok(pd)
    }

    fn alloc_plain(dev: &Arc<Device>) -> Result<Pd> {
        crate::kshim::verb::might_sleep();
        let _usage = dev.try_get().ok_or(ENODEV)?;
        let num = dev.res.pd.reserve()?;
        let core = match Arc::new(
            PdCore {
                dev: dev.clone(),
                num,
                uses: UseCount::new(),
                released: AtomicBool::new(false),
            },
            GFP_KERNEL,
        ) {
            Ok(core) => core,
            Err(e) => {
                dev.res.pd.release(num);
                return Err(e.into());
            }
        };
        dev.res.pd.publish(num, core.clone());
        Ok(Pd { core, global: None })
    }

    /// Destroys the PD (`ib_dealloc_pd`); `EBUSY`, with the handle back,
    /// while objects use it. May sleep.
    pub fn destroy(mut self) -> core::result::Result<(), (Pd, Error)> {
        crate::kshim::verb::might_sleep();
        let own = u32::from(self.global.is_some());
        match self.core.uses.kill_keeping(own) {
            Ok(()) => {
                // Its use goes with it: the count is dead, nothing reuses it.
                drop(self.global.take());
                self.core.release();
                Ok(())
            }
            Err(e) => Err((self, e)),
        }
    }

    /// The global key (`pd->unsafe_global_rkey`), usable as an lkey too, of
    /// a PD allocated with [`PdFlags::UNSAFE_GLOBAL_RKEY`].
    pub fn unsafe_global_rkey(&self) -> Option<u32> {
        self.global.as_ref().map(|mr| mr.rkey())
    }

    /// The shared core object, for creating dependents.
    pub fn core(&self) -> &Arc<PdCore> {
        &self.core
    }
}

impl Deref for Pd {
    type Target = PdCore;

    fn deref(&self) -> &PdCore {
        &self.core
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        drop(self.global.take());
        if self.core.uses.orphan() {
            self.core.release();
        }
    }
}
