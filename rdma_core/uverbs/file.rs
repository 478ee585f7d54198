// SPDX-License-Identifier: GPL-2.0

//! One of our devices as uverbs sees it ([`UverbsDev`]: its open files),
//! and an open `/dev/infiniband/uverbsN` ([`UFile`]): its context (made by `GET_CONTEXT`,
//! once) with its asynchronous event file and its objects.
//!
//! The rings of the file's CQs and QPs wait in its mmap table
//! ([`Mmaps`]) under an offset the create command returned, until user
//! space maps them (once each) or their object goes.
//!
//! Lock order: the file's state lock, then its mmap table's lock. `mmap`
//! runs with the process's mmap lock held, which commands take under the
//! state lock (pinning user memory): so `mmap` takes the table's lock
//! alone, never the state lock.
//!
//! The file is disassociated when it is released or its device goes,
//! whichever comes first: every object is destroyed (users before what they
//! use), the event file is closed, and every later command fails with
//! `EIO`. Both paths may race; the state lock makes the second a no-op.

use core::sync::atomic::{AtomicU32, Ordering};

use kernel::error::code::{ENODEV, ENOSPC};
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};

use rdma::device::event::{Element, Event};
use rdma::prelude::Device;

use rdma::kshim::pages::page_size;
use rdma::kshim::pid::Pid;
use rdma::verbs::uring::UserRing;

use crate::event_file::EventQueue;
use crate::objects::{Obj, Objects};

/// The first mmap offset handed out (offset 0 is never one).
const MMAP_BASE: u64 = 1 << 12;

/// The mmap offsets of a file end below this (so that any fits in a
/// 32-bit `off_t` user space).
const MMAP_END: u64 = 1 << 31;

/// The rings of a file waiting to be mapped.
pub(crate) struct Mmaps {
    next: u64,
    pending: KVec<(u64, Arc<UserRing>)>,
}

impl Mmaps {
    fn new() -> Self {
        Mmaps {
            next: MMAP_BASE,
            pending: KVec::new(),
        }
    }
}

/// One of our devices as user space sees it: the device, and its open
/// files (for disassociation when it goes, and for its events).
#[pin_data]
pub(crate) struct UverbsDev {
    /// `N` of `uverbsN`.
    pub(crate) index: u32,
    pub(crate) dev: Arc<Device>,
    /// The module, pinned by every anonymous file made for this device's
    /// files.
    pub(crate) module: &'static ThisModule,
    /// The open files; `None` once the device is gone (no file may join).
    #[pin]
    files: Mutex<Option<KVec<Arc<UFile>>>>,
    /// The number the next context gets (`rdma res`'s `ctxn`), counted
    /// up as the C restrack's cyclic ids are.
    next_ctxn: AtomicU32,
}

impl UverbsDev {
    pub(crate) fn new(
        index: u32,
        dev: Arc<Device>,
        module: &'static ThisModule,
    ) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(UverbsDev {
                index,
                dev,
                module,
                files <- new_mutex!(Some(KVec::new())),
                next_ctxn: AtomicU32::new(0),
            }),
            GFP_KERNEL,
        )
    }

    /// Adds an open file, unless the device is gone (`ENODEV`).
    pub(crate) fn attach(&self, file: &Arc<UFile>) -> Result {
        let mut files = self.files.lock();
        let list = files.as_mut().ok_or(ENODEV)?;
        list.push(file.clone(), GFP_KERNEL)?;
        Ok(())
    }

    /// Takes a released file off the list.
    pub(crate) fn detach(&self, file: &Arc<UFile>) {
        if let Some(list) = self.files.lock().as_mut() {
            rdma::kshim::vec::remove_first(list, |f| Arc::ptr_eq(f, file));
        }
    }

    /// The device is going: no more files, and every open one
    /// disassociated.
    pub(crate) fn disassociate_all(&self) {
        let files = self.files.lock().take();
        for f in files.iter().flatten() {
            f.disassociate();
        }
    }

    /// How many open files have a context (the `ctx` row of `rdma res`).
    pub(crate) fn contexts(&self) -> u64 {
        let mut n = 0;
        self.for_each_context(|_| n += 1);
        n
    }

    /// Calls `f` on the context of every open file that has one. Takes
    /// the list's lock, then each file's (as [`Self::device_event`] does).
    pub(crate) fn for_each_context(&self, mut f: impl FnMut(&UContext)) {
        let files = self.files.lock();
        for file in files.iter().flatten() {
            if let Some(ctx) = file.state.lock().ctx.as_ref() {
                f(ctx);
            }
        }
    }

    /// A number for a new context.
    pub(crate) fn new_ctxn(&self) -> u32 {
        self.next_ctxn.fetch_add(1, Ordering::Relaxed)
    }

    /// A device event, for every open file's context. Object events need
    /// the objects' user handles, which only their files know.
    pub(crate) fn device_event(&self, event: &Event) {
        let files = self.files.lock();
        for f in files.iter().flatten() {
            f.device_event(event);
        }
    }
}

/// A context: what `GET_CONTEXT` made.
pub(crate) struct UContext {
    /// Its number on the device (`rdma res`).
    pub(crate) ctxn: u32,
    /// The thread that made it, which `rdma res` shows as the owner of
    /// the context and of its objects.
    pub(crate) creator: Option<Pid>,
    pub(crate) async_events: Arc<EventQueue>,
    /// The completion channels made in this context whose files are
    /// not released yet (released ones are forgotten at the next
    /// `CREATE_COMP_CHANNEL`).
    /// Each with the descriptor number it was made with.
    pub(crate) channels: KVec<(i32, Arc<EventQueue>)>,
    pub(crate) objects: Objects,
}

/// What a file's lock guards.
pub(crate) struct FileState {
    /// Disassociated: every command fails with `EIO`.
    pub(crate) dead: bool,
    pub(crate) ctx: Option<UContext>,
}

/// An open uverbs file.
#[pin_data]
pub(crate) struct UFile {
    pub(crate) udev: Arc<UverbsDev>,
    #[pin]
    pub(crate) state: Mutex<FileState>,
    #[pin]
    mmaps: Mutex<Mmaps>,
}

impl UFile {
    pub(crate) fn new(udev: Arc<UverbsDev>) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(UFile {
                udev,
                state <- new_mutex!(FileState { dead: false, ctx: None }),
                mmaps <- new_mutex!(Mmaps::new()),
            }),
            GFP_KERNEL,
        )
    }

    /// Offers `ring` for mapping; returns the offset to pass to `mmap`.
    /// Offsets are not reused within a file (`ENOSPC` once they run out).
    pub(crate) fn offer_mmap(&self, ring: &Arc<UserRing>) -> Result<u64> {
        let mut m = self.mmaps.lock();
        let off = m.next;
        let len = ring.map_len() as u64;
        let next = off
            .checked_add(len)
            .filter(|n| *n <= MMAP_END)
            .ok_or(ENOSPC)?;
        m.pending.push((off, ring.clone()), GFP_KERNEL)?;
        m.next = next;
        Ok(off)
    }

    /// Withdraws the offer of `ring` (its object goes unmapped).
    pub(crate) fn withdraw_mmap(&self, ring: &Arc<UserRing>) {
        let mut m = self.mmaps.lock();
        rdma::kshim::vec::retain(&mut m.pending, |(_, r)| !Arc::ptr_eq(r, ring));
    }

    /// Ends the replacement of the ring in `slot` by `new` (a CQ's or an
    /// SRQ's resize), whose outcome is `swapped` (the old ring, or the
    /// error): the offer of the ring that went out of use is withdrawn, and
    /// `slot` holds the ring in use.
    pub(crate) fn replace_ring(
        &self,
        slot: &mut Arc<UserRing>,
        new: Arc<UserRing>,
        swapped: Result<Arc<UserRing>>,
    ) -> Result {
        match swapped {
            Ok(old) => {
                self.withdraw_mmap(&old);
                *slot = new;
                Ok(())
            }
            Err(e) => {
                self.withdraw_mmap(&new);
                Err(e)
            }
        }
    }

    /// The ring offered at `offset` with a mapping of `len` bytes, taken
    /// off the table (a ring is mapped once).
    pub(crate) fn take_mmap(&self, offset: u64, len: u64) -> Option<Arc<UserRing>> {
        let mut m = self.mmaps.lock();
        let i = m
            .pending
            .iter()
            .position(|(o, r)| *o == offset && r.map_len() as u64 == len)?;
        rdma::kshim::vec::remove(&mut m.pending, i).map(|(_, r)| r)
    }

    /// Gives back a ring whose mapping failed.
    pub(crate) fn put_back_mmap(&self, offset: u64, ring: Arc<UserRing>) {
        let mut m = self.mmaps.lock();
        let _ = m.pending.push((offset, ring), GFP_KERNEL);
    }

    /// Maps the ring offered at the mapping's offset over the whole of it.
    pub(crate) fn mmap(&self, vma: &mut rdma::kshim::chardev::Vma) -> Result {
        let offset = vma.pgoff().checked_mul(page_size() as u64).ok_or(EINVAL)?;
        let ring = self.take_mmap(offset, vma.len()).ok_or(EINVAL)?;
        if let Err(e) = vma.map_pages(ring.pages()) {
            self.put_back_mmap(offset, ring);
            return Err(e);
        }
        Ok(())
    }

    /// Destroys the context and its objects, closes its event file; every
    /// later command fails with `EIO`. May sleep.
    pub(crate) fn disassociate(&self) {
        let ctx = {
            let mut st = self.state.lock();
            st.dead = true;
            st.ctx.take()
        };
        // Nothing is mapped from now on; a mapping made before keeps its
        // pages, which no object uses any more.
        rdma::kshim::vec::clear(&mut self.mmaps.lock().pending);
        if let Some(mut ctx) = ctx {
            ctx.objects.destroy_all();
            ctx.async_events.close();
            for (_, ch) in ctx.channels.iter() {
                ch.close();
            }
        }
    }

    /// A device event: port events go to the context's event file with the
    /// port number as element, as in C; the device's fatal error too; an
    /// event of one of this file's QPs or CQs with the object's user
    /// handle, counted for the object's destroy.
    pub(crate) fn device_event(&self, event: &Event) {
        let st = self.state.lock();
        let Some(ctx) = st.ctx.as_ref() else {
            return;
        };
        let kind = event.kind as u32;
        match event.element {
            Element::Port(p) => ctx.async_events.push(u64::from(p), kind, None),
            Element::Device => ctx.async_events.push(0, kind, None),
            Element::Qp(n) => {
                let found = ctx.objects.iter().find_map(|o| match o {
                    Obj::Qp(q) if q.qp.qpn() == n => Some((q.user_handle, &q.async_count)),
                    _ => None,
                });
                if let Some((h, count)) = found {
                    ctx.async_events.push(h, kind, Some(count));
                }
            }
            Element::Srq(n) => {
                let found = ctx.objects.iter().find_map(|o| match o {
                    Obj::Srq(s) if s.srq.num() == n => Some((s.user_handle, &s.async_count)),
                    _ => None,
                });
                if let Some((h, count)) = found {
                    ctx.async_events.push(h, kind, Some(count));
                }
            }
            Element::Cq(n) => {
                let found = ctx.objects.iter().find_map(|o| match o {
                    Obj::Cq(c) if c.cq.num() == n => Some((c.user_handle, &c.async_count)),
                    _ => None,
                });
                if let Some((h, count)) = found {
                    ctx.async_events.push(h, kind, Some(count));
                }
            }
            _ => {}
        }
    }
}
