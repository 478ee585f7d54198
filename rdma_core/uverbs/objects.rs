// SPDX-License-Identifier: GPL-2.0

//! The objects of one open `uverbsN` file, named by the handles user space
//! got back from the create commands.
//!
//! A handle is an index into the file's table; the lowest free index is
//! handed out, as the C uverbs does. A handle of another file, of an object
//! already destroyed, or of another kind of object finds nothing (`EINVAL`
//! from the command, as in C). The table holds the verbs objects' owner
//! handles: destroying one is taking it out and calling its `destroy`
//! (which gives it back on `EBUSY`); dropping the table drops them in an
//! order that respects their dependencies ([`Objects::destroy_all`]).

use kernel::error::code::EMFILE;
use kernel::prelude::*;

use kernel::sync::Arc;
use rdma::prelude::{Cq, Mr, Pd, Qp};
use rdma::verbs::ah::Ah;
use rdma::verbs::mw::Mw;
use rdma::verbs::srq::Srq;
use rdma::verbs::uring::UserRing;

use crate::event_file::{EventCount, EventQueue};

/// Handles a file may hold at once.
const MAX_OBJECTS: usize = 1 << 16;

/// A CQ of a file: the core's CQ, the ring user space maps, the channel
/// its completion events go to and the counts of its events read.
pub(crate) struct UCq {
    pub(crate) cq: Cq,
    pub(crate) user_handle: u64,
    pub(crate) ring: Arc<UserRing>,
    pub(crate) channel: Option<Arc<EventQueue>>,
    pub(crate) comp_count: Arc<EventCount>,
    pub(crate) async_count: Arc<EventCount>,
}

/// A QP of a file: the core's QP, its rings, the handle its asynchronous
/// events carry and the count of those read.
pub(crate) struct UQp {
    pub(crate) qp: Qp,
    pub(crate) user_handle: u64,
    pub(crate) async_count: Arc<EventCount>,
    pub(crate) sq_ring: Arc<UserRing>,
    pub(crate) rq_ring: Option<Arc<UserRing>>,
}

/// An SRQ of a file.
pub(crate) struct USrq {
    pub(crate) srq: Srq,
    pub(crate) user_handle: u64,
    pub(crate) async_count: Arc<EventCount>,
    pub(crate) ring: Arc<UserRing>,
}

/// An object of a file.
pub(crate) enum Obj {
    Pd(Pd),
    Mr(Mr),
    Mw(Mw),
    Cq(UCq),
    Qp(UQp),
    Ah(Ah),
    Srq(USrq),
}

impl Obj {
    /// The order of teardown: objects of a lower rank go first (they use
    /// those of higher ranks). Windows first: a bound one holds its MR
    /// (and a type 2 one its QP).
    fn rank(&self) -> u8 {
        match self {
            Obj::Mw(_) => 0,
            Obj::Mr(_) | Obj::Qp(_) | Obj::Ah(_) => 1,
            Obj::Cq(_) | Obj::Srq(_) => 2,
            Obj::Pd(_) => 3,
        }
    }
}

/// The table of one file.
pub(crate) struct Objects {
    slots: KVec<Option<Obj>>,
}

impl Objects {
    pub(crate) fn new() -> Self {
        Objects { slots: KVec::new() }
    }

    /// Stores `obj` and returns its handle; `EMFILE` past the limit (the
    /// object is given back with the error so the caller destroys it).
    pub(crate) fn insert(&mut self, obj: Obj) -> core::result::Result<u32, (Obj, Error)> {
        if let Some(i) = self.slots.iter().position(|s| s.is_none()) {
            self.slots[i] = Some(obj);
            return Ok(i as u32);
        }
        if self.slots.len() >= MAX_OBJECTS {
            return Err((obj, EMFILE));
        }
        let i = self.slots.len();
        match self.slots.push(None, GFP_KERNEL) {
            Ok(()) => {
                self.slots[i] = Some(obj);
                Ok(i as u32)
            }
            Err(e) => Err((obj, e.into())),
        }
    }

    /// The object of `handle`, if any.
    pub(crate) fn get(&self, handle: u32) -> Option<&Obj> {
        self.slots.get(handle as usize)?.as_ref()
    }

    /// The PD of `handle`, if that handle is a PD.
    pub(crate) fn pd(&self, handle: u32) -> Option<&Pd> {
        match self.get(handle)? {
            Obj::Pd(pd) => Some(pd),
            _ => None,
        }
    }

    /// The CQ of `handle`, if that handle is a CQ.
    pub(crate) fn cq(&self, handle: u32) -> Option<&UCq> {
        match self.get(handle)? {
            Obj::Cq(cq) => Some(cq),
            _ => None,
        }
    }

    /// The CQ of `handle`, if that handle is a CQ, to change.
    pub(crate) fn cq_mut(&mut self, handle: u32) -> Option<&mut UCq> {
        match self.slots.get_mut(handle as usize)?.as_mut()? {
            Obj::Cq(cq) => Some(cq),
            _ => None,
        }
    }

    /// The QP of `handle`, if that handle is a QP.
    pub(crate) fn qp(&self, handle: u32) -> Option<&UQp> {
        match self.get(handle)? {
            Obj::Qp(qp) => Some(qp),
            _ => None,
        }
    }

    /// The SRQ of `handle`, if that handle is an SRQ.
    pub(crate) fn srq(&self, handle: u32) -> Option<&USrq> {
        match self.get(handle)? {
            Obj::Srq(srq) => Some(srq),
            _ => None,
        }
    }

    /// The SRQ of `handle`, if that handle is an SRQ, to change (its
    /// resize).
    pub(crate) fn srq_mut(&mut self, handle: u32) -> Option<&mut USrq> {
        match self.slots.get_mut(handle as usize)?.as_mut()? {
            Obj::Srq(srq) => Some(srq),
            _ => None,
        }
    }

    /// Every object, for event lookups.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Obj> {
        self.slots.iter().flatten()
    }

    /// Takes the object of `handle` out if `pick` says it is of the
    /// wanted kind.
    pub(crate) fn take_if(&mut self, handle: u32, pick: impl Fn(&Obj) -> bool) -> Option<Obj> {
        let slot = self.slots.get_mut(handle as usize)?;
        if !slot.as_ref().is_some_and(pick) {
            return None;
        }
        slot.take()
    }

    /// Puts an object back at its handle (a destroy that failed).
    pub(crate) fn put_back(&mut self, handle: u32, obj: Obj) {
        if let Some(slot) = self.slots.get_mut(handle as usize) {
            if slot.is_none() {
                *slot = Some(obj);
            }
        }
    }

    /// Destroys every object, users before what they use. May sleep.
    pub(crate) fn destroy_all(&mut self) {
        for rank in 0..=3 {
            for slot in self.slots.iter_mut() {
                if slot.as_ref().is_some_and(|o| o.rank() == rank) {
                    // Dropping an owner handle destroys the object once its
                    // users are gone; they went in the earlier ranks.
                    drop(slot.take());
                }
            }
        }
        self.slots = KVec::new();
    }
}

impl Drop for Objects {
    fn drop(&mut self) {
        self.destroy_all();
    }
}
