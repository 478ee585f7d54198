// SPDX-License-Identifier: GPL-2.0

//! The peer memory client API for clients written in Rust: the
//! [`PeerClient`] trait, the safe counterpart of `struct
//! peer_memory_client` (`include/rdma/peer_mem.h`), and its
//! [`Registration`].
//!
//! The core calls a client in this order for each memory region it builds
//! on the client's memory, all in process context:
//!
//! 1. [`PeerClient::acquire`], in the registering process: is the range
//!    the client's? Its answer is the region's context.
//! 2. [`PeerClient::get_pages`], which pins the memory and learns the
//!    region's [`CoreContext`], the number the client invalidates it by.
//! 3. [`PeerClient::page_size`] and [`PeerClient::dma_map`]: the pages the
//!    device reaches.
//! 4. At deregistration: [`PeerClient::dma_unmap`], [`PeerClient::put_pages`]
//!    (unless the memory was invalidated, see below), then
//!    [`PeerClient::release`].
//!
//! The client may invalidate a region at any time with
//! [`Registration::invalidate`]: when the call returns, no access reaches
//! the memory any more, and `dma_unmap` and `put_pages` have run (a client
//! whose [`PeerClient::invalidate_unmaps`] is true gets its pages back
//! instead, and tears its mapping down itself). `release` follows when the
//! region is deregistered. A client must not hold, while it calls
//! `invalidate`, a lock that its callbacks take, nor call it from inside a
//! callback.

use kernel::prelude::*;
use kernel::sync::{Arc, UniqueArc};

use rdma::kshim::pages::SharedPage;

use crate::registry::{self, Erased, ErasedClient, Registered};

/// The number by which the core knows a region, given to
/// [`PeerClient::get_pages`] and passed back to [`Registration::invalidate`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreContext(pub u64);

/// A peer memory client.
pub trait PeerClient: Send + Sync + 'static {
    /// The client's state for one region.
    type Context: Send + Sync + 'static;
    /// What [`PeerClient::get_pages`] pinned, until `put_pages`.
    type Pages: Send + Sync + 'static;

    /// Whether `[addr, addr + len)` of the current process is the
    /// client's; `Some` with the region's context if so.
    fn acquire(&self, addr: u64, len: u64) -> Option<Self::Context>;

    /// Pins the pages of the range; `core` names the region for
    /// invalidation.
    fn get_pages(
        &self,
        ctx: &Self::Context,
        addr: u64,
        len: u64,
        write: bool,
        core: CoreContext,
    ) -> Result<Self::Pages>;

    /// The pages the device reaches, in order, from the page holding
    /// `addr` rounded down to [`PeerClient::page_size`] to the end of the
    /// range rounded up to it.
    fn dma_map(&self, ctx: &Self::Context, pages: &Self::Pages) -> Result<KVVec<SharedPage>>;

    /// Undoes `dma_map`.
    fn dma_unmap(&self, _ctx: &Self::Context, _pages: &Self::Pages) {}

    /// Undoes `get_pages` (the core drops `pages` afterwards).
    fn put_pages(&self, ctx: &Self::Context, pages: &Self::Pages);

    /// The size of the client's pages: a power of two, at least the
    /// kernel's page size.
    fn page_size(&self, _ctx: &Self::Context) -> u64 {
        rdma::kshim::pages::page_size() as u64
    }

    /// The core is done with the region (it drops `ctx` afterwards).
    fn release(&self, _ctx: &Self::Context) {}

    /// Whether the client's own invalidation tears its mapping down
    /// (`PEER_MEM_INVALIDATE_UNMAPS`): then the core never calls
    /// `dma_unmap` or `put_pages` for invalidated memory, and only drops
    /// the `Pages`.
    fn invalidate_unmaps(&self) -> bool {
        false
    }

    /// Whether the client's `dma_map` needs a DMA device: then its memory
    /// is refused (`EOPNOTSUPP`) on devices without one, before
    /// `get_pages`. A Rust client hands over pages and needs none.
    fn needs_dma_device(&self) -> bool {
        false
    }
}

/// A [`PeerClient`] as the broker calls it.
pub(crate) struct Erase<C: PeerClient>(pub(crate) C);

fn ctx_of<T: 'static>(e: &Erased) -> Option<&T> {
    (**e).downcast_ref::<T>()
}

impl<C: PeerClient> ErasedClient for Erase<C> {
    fn acquire(&self, addr: u64, len: u64) -> Option<Erased> {
        // The room first: once the client has claimed the range, nothing
        // may fail before its context is the core's.
        let slot = UniqueArc::<C::Context>::new_uninit(GFP_KERNEL).ok()?;
        let ctx = self.0.acquire(addr, len)?;
        let a: Arc<C::Context> = slot.write(ctx).into();
        Some(a)
    }

    fn get_pages(
        &self,
        ctx: &Erased,
        addr: u64,
        len: u64,
        write: bool,
        core: u64,
    ) -> Result<Erased> {
        let ctx = ctx_of::<C::Context>(ctx).ok_or(EINVAL)?;
        let slot = UniqueArc::<C::Pages>::new_uninit(GFP_KERNEL)?;
        let pages = self.0.get_pages(ctx, addr, len, write, CoreContext(core))?;
        let a: Arc<C::Pages> = slot.write(pages).into();
        Ok(a)
    }

    fn dma_map(&self, ctx: &Erased, pages: &Erased) -> Result<KVVec<SharedPage>> {
        match (ctx_of::<C::Context>(ctx), ctx_of::<C::Pages>(pages)) {
            (Some(c), Some(p)) => self.0.dma_map(c, p),
            _ => Err(EINVAL),
        }
    }

    fn dma_unmap(&self, ctx: &Erased, pages: &Erased) {
        if let (Some(c), Some(p)) = (ctx_of::<C::Context>(ctx), ctx_of::<C::Pages>(pages)) {
            self.0.dma_unmap(c, p);
        }
    }

    fn put_pages(&self, ctx: &Erased, pages: &Erased) {
        if let (Some(c), Some(p)) = (ctx_of::<C::Context>(ctx), ctx_of::<C::Pages>(pages)) {
            self.0.put_pages(c, p);
        }
    }

    fn page_size(&self, ctx: &Erased) -> u64 {
        ctx_of::<C::Context>(ctx).map_or(0, |c| self.0.page_size(c))
    }

    fn release(&self, ctx: &Erased) {
        if let Some(c) = ctx_of::<C::Context>(ctx) {
            self.0.release(c);
        }
    }

    fn invalidate_unmaps(&self) -> bool {
        self.0.invalidate_unmaps()
    }

    fn needs_dma_device(&self) -> bool {
        self.0.needs_dma_device()
    }
}

/// A registered Rust client. Dropping it unregisters the client: the
/// regions still on its memory are invalidated and released first, and no
/// callback runs once the drop returns.
pub struct Registration {
    handle: usize,
    reg: Arc<Registered>,
    invalidates: bool,
}

impl Registration {
    /// Registers `client` under `name` (unique among clients, 1 to 63
    /// printable bytes; `EEXIST`, `EINVAL`) with `version`. A client that
    /// `requires_invalidation` is only used by devices that honour it.
    /// Process context.
    pub fn new<C: PeerClient>(
        client: C,
        name: &CStr,
        version: &CStr,
        requires_invalidation: bool,
    ) -> Result<Self> {
        let erased: Arc<dyn ErasedClient> = Arc::new(Erase(client), GFP_KERNEL)?;
        let (handle, reg) = registry::register(
            erased,
            name.as_bytes(),
            version.as_bytes(),
            requires_invalidation,
        )?;
        Ok(Registration {
            handle,
            reg,
            invalidates: requires_invalidation,
        })
    }

    /// Invalidates the region the core knows as `core`: when this
    /// returns, no access reaches its memory (`EINVAL` for an unknown
    /// one, or for a client registered without `requires_invalidation`,
    /// which the core gives no way to invalidate, as in C). Process
    /// context.
    pub fn invalidate(&self, core: CoreContext) -> Result {
        if !self.invalidates {
            return Err(EINVAL);
        }
        self.reg.invalidate(core.0)
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        // Unknown only if already unregistered, which only this drop does.
        let _ = registry::unregister(self.handle);
    }
}
