// SPDX-License-Identifier: GPL-2.0

//! The life of a verbs object: one protocol for the seven kinds (PD, CQ,
//! SRQ, MR, MW, AH, QP).
//!
//! - Creation takes uses of the parents ([`Use`]), reserves a number in the
//!   device's table ([`Reservation`]), builds the core object and publishes
//!   it. Each step gives itself back when dropped, so an error at any step
//!   leaves nothing behind, with no undo written by hand.
//! - The owner holds a [`Handle`]; the core object is shared (`Arc`) with
//!   the provider, with work requests that name it, with the table.
//! - [`release`] runs once, whichever comes first: [`Handle::destroy`],
//!   dropping the handle, the last dependent of an orphaned parent leaving,
//!   or the teardown of a leaked object at unregistration ([`teardown`]).
//!   It runs the kind's own step ([`Object::on_release`]: stop the provider
//!   part, flush), then gives the number and the parents' uses back.
//! - A PD, CQ or SRQ counts its dependents ([`UseCount`]): `destroy` is
//!   refused with `EBUSY` while any remain, and gives the handle back;
//!   dropping the handle instead leaves the release to the last dependent.

use core::ops::Deref;

use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::device::Device;
use crate::kshim::sync::TakeOnce;
use crate::verbs::restrack::{Resources, Table, UseCount};

/// A kind of verbs object, as the core shares it (`PdCore`, `QpCore`, ...).
pub trait Object: Send + Sync + Sized + 'static {
    /// What the object holds until its release: its parents' uses.
    #[doc(hidden)]
    type Deps: Send;

    /// Whether destroying one may sleep (all kinds but the AH).
    #[doc(hidden)]
    const SLEEPS: bool = true;

    /// The object's device.
    fn device(&self) -> &Arc<Device>;

    /// The table the object is numbered in, among a device's.
    #[doc(hidden)]
    fn table<'a>(&self, res: &'a Resources) -> &'a Table<Self>;

    /// The object's number and release state.
    #[doc(hidden)]
    fn life(&self) -> &Life<Self::Deps>;

    /// The kind's own release step, before the number and the uses go
    /// back (stop dispatch, revoke the provider part). Runs once.
    #[doc(hidden)]
    fn on_release(&self) {}

    /// Whether [`Handle::destroy`] may go on (an MR refuses while memory
    /// windows are bound to it). Dropping the handle does not ask.
    #[doc(hidden)]
    fn may_destroy(&self) -> Result {
        Ok(())
    }

    /// The count of dependents, for kinds that have them (PD, CQ, SRQ).
    #[doc(hidden)]
    fn uses(&self) -> Option<&UseCount> {
        None
    }

    /// Dependents the object made for itself (a PD's global MR), which do
    /// not hold `destroy` back; [`Object::drop_own`] lets them go.
    #[doc(hidden)]
    fn own_uses(&self) -> u32 {
        0
    }

    /// Lets the object's own dependents go (before destroy or orphaning).
    #[doc(hidden)]
    fn drop_own(&self) {}
}

/// An object's number and what its release gives back.
pub struct Life<D> {
    num: u32,
    deps: TakeOnce<D>,
}

impl<D> Life<D> {
    /// The life of object `num`, holding `deps` until its release.
    pub(crate) fn new(num: u32, deps: D) -> Self {
        Life {
            num,
            deps: TakeOnce::new(deps),
        }
    }

    /// The object's number on its device.
    pub(crate) fn num(&self) -> u32 {
        self.num
    }

    /// Whether the object is released (destroyed or torn down).
    pub(crate) fn is_released(&self) -> bool {
        self.deps.is_taken()
    }
}

/// Releases `obj` if nobody did yet: its own step, then its number and its
/// parents' uses go back.
pub(crate) fn release<T: Object>(obj: &T) {
    let Some(deps) = obj.life().deps.take() else {
        return;
    };
    obj.on_release();
    // The table's reference to the object is dropped after the uses, last.
    let _slot = obj.table(&obj.device().res).release(obj.life().num);
    drop(deps);
}

/// Tears down an object its owner leaked (device unregistration, with
/// dependents first): whatever still uses it.
pub(crate) fn teardown<T: Object>(obj: &T) {
    if let Some(uses) = obj.uses() {
        uses.force_kill();
    }
    release(obj);
}

/// A dependent's use of its parent (a QP's of its PD and CQs, an MR's of
/// its PD); given back when dropped, which releases an orphaned parent
/// whose last dependent this was.
pub struct Use<P: Object> {
    parent: Arc<P>,
}

impl<P: Object> Use<P> {
    /// Takes a use of `parent` (`ENODEV` once it is destroyed).
    pub(crate) fn take(parent: &Arc<P>) -> Result<Use<P>> {
        parent.uses().ok_or(EINVAL)?.get()?;
        Ok(Use {
            parent: parent.clone(),
        })
    }
}

impl<P: Object> Drop for Use<P> {
    fn drop(&mut self) {
        if self.parent.uses().is_some_and(|u| u.put()) {
            release(&*self.parent);
        }
    }
}

/// A number reserved in a device's table for an object being created;
/// given back when dropped unless [`Reservation::publish`]ed.
pub(crate) struct Reservation<'a, T> {
    table: &'a Table<T>,
    num: u32,
    published: bool,
}

impl<'a, T> Reservation<'a, T> {
    pub(crate) fn new(table: &'a Table<T>, num: u32) -> Self {
        Reservation {
            table,
            num,
            published: false,
        }
    }

    /// The reserved number.
    pub(crate) fn num(&self) -> u32 {
        self.num
    }

    /// Makes the number find `obj`: the object is created.
    pub(crate) fn publish(mut self, obj: Arc<T>) {
        self.table.publish(self.num, obj);
        self.published = true;
    }
}

impl<T> Drop for Reservation<'_, T> {
    fn drop(&mut self) {
        if !self.published {
            drop(self.table.release(self.num));
        }
    }
}

/// The owner's handle on a verbs object (`Pd`, `Cq`, `Srq`, `Mr`, `Mw`,
/// `Ah`, `Qp` are this type for their kinds): not `Clone`; destroying
/// consumes it, and dropping it destroys the object too.
pub struct Handle<T: Object> {
    core: Arc<T>,
}

impl<T: Object> Handle<T> {
    pub(crate) fn new(core: Arc<T>) -> Self {
        Handle { core }
    }

    /// The shared core object, for creating dependents and for work
    /// requests.
    pub fn core(&self) -> &Arc<T> {
        &self.core
    }

    /// Destroys the object (`ib_dealloc_pd`, `ib_destroy_cq`,
    /// `ib_dereg_mr`, ...): `EBUSY`, with the handle back, while
    /// dependents use it (`EINVAL` for an MR with memory windows bound). Process context for the kinds whose release
    /// waits (CQ, SRQ, QP, PD, MR, MW); any context for an AH.
    pub fn destroy(self) -> core::result::Result<(), (Self, Error)> {
        if T::SLEEPS {
            crate::kshim::verb::might_sleep();
        }
        if let Err(e) = self.core.may_destroy() {
            return Err((self, e));
        }
        if let Some(uses) = self.core.uses() {
            if let Err(e) = uses.kill_keeping(self.core.own_uses()) {
                return Err((self, e));
            }
            // Dead: nothing takes a use any more; the object's own
            // dependents go, giving theirs back.
            self.core.drop_own();
        }
        release(&*self.core);
        Ok(())
    }
}

// To the `Arc`, so that the methods of the core taking `self: &Arc<Self>`
// (posting, modify) are the handle's too.
impl<T: Object> Deref for Handle<T> {
    type Target = Arc<T>;

    fn deref(&self) -> &Arc<T> {
        &self.core
    }
}

impl<T: Object> Drop for Handle<T> {
    fn drop(&mut self) {
        match self.core.uses() {
            Some(uses) => {
                self.core.drop_own();
                if uses.orphan() {
                    release(&*self.core);
                }
            }
            None => release(&*self.core),
        }
    }
}
