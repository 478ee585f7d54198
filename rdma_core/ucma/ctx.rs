// SPDX-License-Identifier: GPL-2.0

//! An id of user space's ([`Ctx`]): the rdma_cm id it owns, the handle
//! user space names it by, its cookie (`uid`, returned in its events), the
//! file its events go to, and how many of them user space has read
//! (`DESTROY_ID` returns that count; librdmacm waits until it has
//! acknowledged as many before it frees its side).
//!
//! The [`routes`] map an rdma_cm id to its `Ctx`, for the event handler,
//! which the rdma_cm calls with the id (a request's new id comes with its
//! listener's handler, so one handler serves every id, and finds the
//! `Ctx` here).

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use kernel::error::code::{EINVAL, ENODEV, ENOENT};
use kernel::prelude::*;
use kernel::rbtree::{RBTree, RBTreeNode};
use kernel::sync::{new_mutex, Arc, Mutex};

use rdma::cma::{CmId, CmIdCore, IpAddr};
use rdma::kshim::global::Global;

use crate::file::{UEvent, UcmaFile};

/// Handles are numbered across all files (an id keeps its handle when it
/// moves to another file, `MIGRATE_ID`).
static NEXT_HANDLE: AtomicU32 = AtomicU32::new(0);

/// Multicast joins are numbered across all files too, apart from ids.
static NEXT_MC: AtomicU32 = AtomicU32::new(0);

/// A multicast join of an id's (`JOIN_IP_MCAST`, `JOIN_MCAST`): what
/// user space names it by (`handle`, for `LEAVE_MCAST`), its cookie
/// (`uid`, returned in its events) and how many of its events user space
/// has read (`LEAVE_MCAST` returns that count).
pub(crate) struct Mc {
    pub(crate) handle: u32,
    pub(crate) uid: u64,
    events_reported: AtomicU32,
}

impl Mc {
    /// Events of the join read.
    pub(crate) fn events_reported(&self) -> u32 {
        self.events_reported.load(Ordering::Relaxed)
    }

    /// One more event of the join read.
    pub(crate) fn count_read(&self) {
        self.events_reported.fetch_add(1, Ordering::Relaxed);
    }
}

/// An id of user space's.
#[pin_data]
pub(crate) struct Ctx {
    /// What user space names the id by.
    pub(crate) handle: u32,
    uid: AtomicU64,
    pub(crate) id: CmId,
    #[pin]
    file: Mutex<Arc<UcmaFile>>,
    events_reported: AtomicU32,
    /// A listener's: connection requests queued and not read yet, and how
    /// many may be (`LISTEN`'s backlog).
    pub(crate) pending: AtomicU32,
    pub(crate) backlog: AtomicU32,
    /// The id's multicast joins, by handle. Taken before the file's lock
    /// (a join's event is queued under it, so that a join left never has
    /// an event queued after `LEAVE_MCAST` cleared them).
    #[pin]
    pub(crate) mcs: Mutex<RBTree<u32, Arc<Mc>>>,
}

impl Ctx {
    /// A new id of `file`'s, with cookie `uid`.
    pub(crate) fn new(id: CmId, file: Arc<UcmaFile>, uid: u64) -> Result<Arc<Ctx>> {
        Arc::pin_init(
            pin_init!(Ctx {
                handle: NEXT_HANDLE.fetch_add(1, Ordering::Relaxed),
                uid: AtomicU64::new(uid),
                id,
                file <- new_mutex!(file, "ucma::Ctx::file"),
                events_reported: AtomicU32::new(0),
                pending: AtomicU32::new(0),
                backlog: AtomicU32::new(0),
                mcs <- new_mutex!(RBTree::new(), "ucma::Ctx::mcs"),
            }),
            GFP_KERNEL,
        )
    }

    /// The cookie user space gave.
    pub(crate) fn uid(&self) -> u64 {
        self.uid.load(Ordering::Relaxed)
    }

    /// A new cookie (`ACCEPT` of a request's id).
    pub(crate) fn set_uid(&self, uid: u64) {
        self.uid.store(uid, Ordering::Relaxed)
    }

    /// The file the id's events go to.
    pub(crate) fn file(&self) -> Arc<UcmaFile> {
        self.file.lock().clone()
    }

    /// Queues `ev` on the id's file; `false` if it could not be (the file
    /// is closed or full). Under the id's `file` lock, so that an event
    /// never lands on a file the id has just left.
    pub(crate) fn push_event(&self, ev: UEvent) -> bool {
        let f = self.file.lock();
        f.push(ev)
    }

    /// Moves the id from `from` to `to` with its unread events, in order
    /// (`MIGRATE_ID`); the new ids of unread requests move with them.
    /// Returns the ids of events `to` could not take, for the caller to
    /// destroy (requests rejected).
    pub(crate) fn migrate(
        self: &Arc<Self>,
        from: &Arc<UcmaFile>,
        to: &Arc<UcmaFile>,
    ) -> Result<KVec<Arc<Ctx>>> {
        let mut children = KVec::new();
        let mut lost = KVec::new();
        {
            let mut f = self.file.lock();
            if !Arc::ptr_eq(&f, from) {
                return Err(EINVAL);
            }
            let moved = from.take(self.handle)?;
            if let Err(e) = to.insert(&moved) {
                // Put back: it was there a moment ago, the insert of a
                // node of an existing key cannot fail for room.
                let _ = from.insert(&moved);
                return Err(e);
            }
            for ev in from.take_events(self)? {
                let child = ev.child.clone();
                if !to.push(ev) {
                    if let Some(c) = child {
                        let _ = lost.push(c, GFP_KERNEL);
                    }
                } else if let Some(c) = child {
                    let _ = children.push(c, GFP_KERNEL);
                }
            }
            *f = to.clone();
        }
        // A request's new id follows its event (its own lock, taken after
        // the listener's is released: one lock class).
        for c in children.iter() {
            *c.file.lock() = to.clone();
        }
        Ok(lost)
    }

    /// Events read.
    pub(crate) fn events_reported(&self) -> u32 {
        self.events_reported.load(Ordering::Relaxed)
    }

    /// One more event read.
    pub(crate) fn count_read(&self) {
        self.events_reported.fetch_add(1, Ordering::Relaxed);
    }

    /// Ends the id: no event of it is routed after, its connection ends
    /// (a reject or a disconnect for the peer) and its rdma_cm id is
    /// destroyed, which waits for a handler running for it elsewhere.
    /// Process context, with no lock of a file held.
    pub(crate) fn destroy(&self) {
        routes::remove(&self.id);
        self.id.destroy();
        let mcs = core::mem::take(&mut *self.mcs.lock());
        for (h, _) in mcs.iter() {
            routes::remove_mc(*h);
        }
    }

    /// Joins the multicast group of `group` (`send_only` or full), for
    /// user space's cookie `uid`; returns the join's handle. The join's
    /// event may come before this returns; it is queued once the join is
    /// known here.
    pub(crate) fn join(&self, group: IpAddr, send_only: bool, uid: u64) -> Result<Arc<Mc>> {
        let mc = Arc::new(
            Mc {
                handle: NEXT_MC.fetch_add(1, Ordering::Relaxed),
                uid,
                events_reported: AtomicU32::new(0),
            },
            GFP_KERNEL,
        )?;
        let node = RBTreeNode::new(mc.handle, mc.clone(), GFP_KERNEL)?;
        routes::add_mc(mc.handle, self.handle)?;
        // Known before the join, so that its event finds it.
        drop(self.mcs.lock().insert(node));
        if let Err(e) = self
            .id
            .join_multicast(group, send_only, u64::from(mc.handle))
        {
            drop(self.mcs.lock().remove(&mc.handle));
            routes::remove_mc(mc.handle);
            return Err(e);
        }
        Ok(mc)
    }

    /// Leaves the join of handle `h` (`LEAVE_MCAST`, or a join whose
    /// response could not be written): no event of it is queued after,
    /// and those unread are dropped. Returns the join.
    pub(crate) fn leave(&self, h: u32) -> Result<Arc<Mc>> {
        let mc = {
            let mut mcs = self.mcs.lock();
            let mc = mcs.remove(&h).ok_or(ENOENT)?;
            routes::remove_mc(h);
            self.file().forget_mc(&mc);
            mc
        };
        // An event of the join still on its way finds it gone.
        let _ = self.id.leave_multicast(u64::from(h));
        Ok(mc)
    }
}

/// The map from rdma_cm ids to their `Ctx`.
pub(crate) mod routes {
    use super::*;

    /// The map, by the address of the rdma_cm id.
    /// The ids by the address of their rdma_cm id, and their handles.
    pub(crate) struct Maps {
        by_id: RBTree<usize, Arc<Ctx>>,
        handles: RBTree<u32, ()>,
        /// Multicast joins: the handle of the id each is of.
        mcs: RBTree<u32, u32>,
    }

    #[pin_data]
    pub(crate) struct Routes {
        #[pin]
        map: Mutex<Maps>,
    }

    static ROUTES: Global<Routes> = Global::new();

    fn key(id: &CmIdCore) -> usize {
        core::ptr::from_ref(id) as usize
    }

    /// Sets the map up (module init).
    pub(crate) fn init() -> Result {
        ROUTES.replace(Some(Arc::pin_init(
            pin_init!(Routes {
                map <- new_mutex!(Maps {
                    by_id: RBTree::new(),
                    handles: RBTree::new(),
                    mcs: RBTree::new(),
                }, "ucma::ROUTES"),
            }),
            GFP_KERNEL,
        )?));
        Ok(())
    }

    /// Drops the map (module exit: no file is open, so it is empty).
    pub(crate) fn exit() {
        drop(ROUTES.replace(None));
    }

    /// Routes the events of `ctx`'s id to it.
    pub(crate) fn add(ctx: &Arc<Ctx>) -> Result {
        let r = ROUTES.get().ok_or(ENODEV)?;
        let node = RBTreeNode::new(key(&ctx.id), ctx.clone(), GFP_KERNEL)?;
        let handle = RBTreeNode::new(ctx.handle, (), GFP_KERNEL)?;
        let mut m = r.map.lock();
        drop(m.by_id.insert(node));
        drop(m.handles.insert(handle));
        Ok(())
    }

    /// The `Ctx` of `id`, if it is routed.
    pub(crate) fn find(id: &CmIdCore) -> Option<Arc<Ctx>> {
        let r = ROUTES.get()?;
        let m = r.map.lock();
        m.by_id.get(&key(id)).cloned()
    }

    /// Whether an id of handle `h` is routed (on some file, or a
    /// request's new id not read yet).
    pub(crate) fn handle_live(h: u32) -> bool {
        ROUTES
            .get()
            .is_some_and(|r| r.map.lock().handles.get(&h).is_some())
    }

    /// Records that join `mc` is of the id of handle `ctx`.
    pub(crate) fn add_mc(mc: u32, ctx: u32) -> Result {
        let r = ROUTES.get().ok_or(ENODEV)?;
        let node = RBTreeNode::new(mc, ctx, GFP_KERNEL)?;
        drop(r.map.lock().mcs.insert(node));
        Ok(())
    }

    /// The handle of the id join `mc` is of, if the join is live.
    pub(crate) fn mc_owner(mc: u32) -> Option<u32> {
        ROUTES.get()?.map.lock().mcs.get(&mc).copied()
    }

    /// Forgets join `mc`.
    pub(crate) fn remove_mc(mc: u32) {
        if let Some(r) = ROUTES.get() {
            let _ = r.map.lock().mcs.remove(&mc);
        }
    }

    /// Stops routing `id`'s events.
    pub(crate) fn remove(id: &CmIdCore) {
        if let Some(r) = ROUTES.get() {
            let mut m = r.map.lock();
            if let Some(ctx) = m.by_id.remove(&key(id)) {
                let _ = m.handles.remove(&ctx.handle);
                drop(m);
                drop(ctx);
            }
        }
    }
}
