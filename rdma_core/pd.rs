// SPDX-License-Identifier: GPL-2.0

//! Protection domains (`ib_alloc_pd`, `ib_dealloc_pd`).
//!
//! A PD groups the objects that may work together: a QP reaches only the
//! memory regions and address handles of its own PD. [`Pd`] is the owner's
//! handle: not `Clone`, and [`Pd::destroy`] consumes it, so a destroyed PD
//! cannot be used. Destroying a PD that MRs, AHs, QPs or SRQs still use
//! fails with `EBUSY` and gives the handle back; dropping the handle instead
//! lets the last of those users free it.

use core::ops::Deref;
use core::sync::atomic::{AtomicBool, Ordering};

use kernel::error::code::ENODEV;
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::device::Device;
use crate::res::UseCount;

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

/// A protection domain, owned by a ULP.
pub struct Pd {
    core: Arc<PdCore>,
}

impl Pd {
    /// Allocates a PD (`ib_alloc_pd`). May sleep.
    pub fn alloc(dev: &Arc<Device>) -> Result<Pd> {
        crate::might_sleep();
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
        Ok(Pd { core })
    }

    /// Destroys the PD (`ib_dealloc_pd`); `EBUSY`, with the handle back,
    /// while objects use it. May sleep.
    pub fn destroy(self) -> core::result::Result<(), (Pd, Error)> {
        crate::might_sleep();
        match self.core.uses.kill() {
            Ok(()) => {
                self.core.release();
                Ok(())
            }
            Err(e) => Err((self, e)),
        }
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
        if self.core.uses.orphan() {
            self.core.release();
        }
    }
}
