// SPDX-License-Identifier: GPL-2.0

//! The broker: registered clients in registration order, and the regions
//! built on their memory.
//!
//! Nothing here is generic over the client: a client is an
//! [`ErasedClient`] trait object whose code may live in the client's own
//! module, and every call into it, including the drop of its contexts and
//! pages, happens with its gate (`Registered::client`) open. The
//! unregistration undoes the client's regions, then closes the gate,
//! waiting for the calls in progress: afterwards no object of the client's
//! is left here, and its module may go while memory regions that were
//! built on its memory still exist (they are closed, and their handles in
//! this module hold a reference on `peer_mem` instead).
//!
//! Locks, in the order they nest (an outer one is never taken while an
//! inner one is held):
//!
//! 1. `Broker::clients` (the list): held only to read or change the list,
//!    never while calling a client.
//! 2. `Registered::regions` (a client's table of regions): held only to
//!    look a region up, insert or remove it, or to close the client; never
//!    while calling a client.
//! 3. `Region::state` (one region): held across the client callbacks that
//!    change the region (`dma_unmap`, `put_pages`, `release`) and across
//!    the closing of the memory region's gate, so that an invalidation, a
//!    deregistration and an unregistration run one after the other on a
//!    region. A client must therefore not call the invalidation from
//!    inside a callback, nor hold across it a lock its callbacks take.
//!
//! A region's phases and what each event does to it are
//! `rdma::spec::peer_region` (kernel-independent, host-tested); this file
//! carries the steps out.

use core::any::Any;
use core::sync::atomic::{AtomicUsize, Ordering};

use kernel::prelude::*;
use kernel::rbtree::{RBTree, RBTreeNode};
use kernel::sync::{new_mutex, Arc, Mutex};

use rdma::kshim::errno::eopnotsupp;
use rdma::kshim::gate::Revocable;
use rdma::kshim::global::Global;
use rdma::kshim::kobj::StatsDir;
use rdma::kshim::module_ref::ModuleRef;
use rdma::kshim::pages::{page_size, PageList, SharedPage};
use rdma::spec::peer_region::{step, Event, Phase};
use rdma::verbs::umem::{PeerGrant, PeerInvalidate, PeerRegion, PeerRequest, PeerSource};

use crate::stats::{Roots, Stats};

/// A client's context or pages, type-erased.
pub(crate) type Erased = Arc<dyn Any + Send + Sync>;

/// A client as the broker calls it (see `crate::client::PeerClient` for
/// the meaning of each call).
pub(crate) trait ErasedClient: Send + Sync {
    fn acquire(&self, addr: u64, len: u64) -> Option<Erased>;
    fn get_pages(
        &self,
        ctx: &Erased,
        addr: u64,
        len: u64,
        write: bool,
        core: u64,
    ) -> Result<Erased>;
    fn dma_map(&self, ctx: &Erased, pages: &Erased) -> Result<KVVec<SharedPage>>;
    fn dma_unmap(&self, ctx: &Erased, pages: &Erased);
    fn put_pages(&self, ctx: &Erased, pages: &Erased);
    fn page_size(&self, ctx: &Erased) -> u64;
    fn release(&self, ctx: &Erased);
    fn invalidate_unmaps(&self) -> bool;
    fn needs_dma_device(&self) -> bool;
}

/// The largest page size a client may report (1 GiB).
const MAX_CLIENT_PAGE: u64 = 1 << 30;

/// Whether `cps`, a page size a client reported, is one the core uses: a
/// power of two from the kernel's page size to [`MAX_CLIENT_PAGE`].
pub(crate) fn valid_page_size(cps: u64) -> bool {
    cps >= page_size() as u64 && cps <= MAX_CLIENT_PAGE && cps.is_power_of_two()
}

/// Logs why a client's memory was refused (rate-limited).
pub(crate) fn log_memory_refused(name: &[u8], why: &str) {
    if rdma::kshim::ratelimit::log_allowed() {
        pr_warn!(
            "peer_mem: client \"{}\": memory refused: {}\n",
            core::str::from_utf8(name).unwrap_or("?"),
            why
        );
    }
}

/// A registered client, as the broker lists it.
struct Slot {
    handle: usize,
    reg: Arc<Registered>,
    _dirs: (StatsDir, StatsDir),
}

fn until_nul(b: &[u8]) -> &[u8] {
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    &b[..n]
}

/// The broker, one per loaded `peer_mem`.
#[pin_data]
pub(crate) struct Broker {
    #[pin]
    clients: Mutex<KVec<Slot>>,
    next_handle: AtomicUsize,
    roots: Roots,
}

static BROKER: Global<Broker> = Global::new();

/// Sets the broker up (module init).
pub(crate) fn init() -> Result {
    let roots = Roots::new()?;
    let b = Arc::pin_init(
        pin_init!(Broker {
            clients <- new_mutex!(KVec::new(), "peer_mem::Broker::clients"),
            next_handle: AtomicUsize::new(1),
            roots,
        }),
        GFP_KERNEL,
    )?;
    drop(BROKER.replace(Some(b)));
    Ok(())
}

/// Drops the broker (module exit: no client is left, each holding a
/// reference on this module).
pub(crate) fn exit() {
    drop(BROKER.replace(None));
}

/// The broker as the core's [`PeerSource`].
pub(crate) struct Source;

impl PeerSource for Source {
    fn acquire(&self, req: &PeerRequest<'_>) -> Result<Option<PeerGrant>> {
        let Some(b) = BROKER.get() else {
            return Ok(None);
        };
        // A snapshot: no lock is held while clients are asked.
        let mut order = KVec::new();
        for s in b.clients.lock().iter() {
            order.push(s.reg.clone(), GFP_KERNEL)?;
        }
        for reg in order.iter() {
            if let Some(r) = reg.try_build(req)? {
                return Ok(Some(r));
            }
        }
        Ok(None)
    }
}

/// Checks a client's name: 1 to 63 printable ASCII bytes, no `/`.
fn valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.len() < 64 && name.iter().all(|&c| c.is_ascii_graphic() && c != b'/')
}

fn log_refused(name: &[u8], why: &str) {
    if rdma::kshim::ratelimit::log_allowed() {
        pr_warn!(
            "peer_mem: client \"{}\" refused: {}\n",
            core::str::from_utf8(name).unwrap_or("?"),
            why
        );
    }
}

/// Registers a client; returns its handle and its registration.
pub(crate) fn register(
    client: Arc<dyn ErasedClient>,
    name: &[u8],
    version: &[u8],
    requires_invalidation: bool,
) -> Result<(usize, Arc<Registered>)> {
    let b = BROKER.get().ok_or(ENODEV)?;
    if !valid_name(name) {
        log_refused(name, "bad name (EINVAL)");
        return Err(EINVAL);
    }
    let counts = Arc::new(Stats::new(version), GFP_KERNEL)?;
    let unmaps = client.invalidate_unmaps();
    let reg_counts = counts.clone();
    let mut cname = [0u8; 64];
    cname[..name.len()].copy_from_slice(name);
    let reg = Arc::pin_init(
        pin_init!(Registered {
            client <- Revocable::new(client),
            name: cname,
            unmaps,
            requires_invalidation,
            regions <- new_mutex!(
                Regions {
                    map: RBTree::new(),
                    next: 1,
                    closing: false,
                },
                "peer_mem::Registered::regions"
            ),
            stats: reg_counts,
        }),
        GFP_KERNEL,
    )?;
    let mut clients = b.clients.lock();
    if clients.iter().any(|s| s.reg.name() == name) {
        drop(clients);
        log_refused(name, "name already registered (EEXIST)");
        return Err(EEXIST);
    }
    let cstr = CStr::from_bytes_with_nul(&cname[..=name.len()])?;
    let dirs = b.roots.add(cstr, counts)?;
    let handle = b.next_handle.fetch_add(1, Ordering::Relaxed);
    clients.push(
        Slot {
            handle,
            reg: reg.clone(),
            _dirs: dirs,
        },
        GFP_KERNEL,
    )?;
    Ok((handle, reg))
}

/// Takes the client of `handle` off the list, undoes its regions and
/// closes it: when this returns, the core makes no call into the client.
/// `EINVAL` for an unknown handle. Process context.
pub(crate) fn unregister(handle: usize) -> Result {
    let b = BROKER.get().ok_or(EINVAL)?;
    let slot = {
        let mut clients = b.clients.lock();
        let i = clients
            .iter()
            .position(|s| s.handle == handle)
            .ok_or(EINVAL)?;
        rdma::kshim::vec::remove(&mut clients, i).ok_or(EINVAL)?
    };
    slot.reg.undo_all();
    slot.reg.close();
    // The sysfs directories go with the slot.
    drop(slot);
    Ok(())
}

/// The client of `handle`, for its invalidation.
pub(crate) fn find(handle: usize) -> Result<Arc<Registered>> {
    let b = BROKER.get().ok_or(EINVAL)?;
    let clients = b.clients.lock();
    clients
        .iter()
        .find(|s| s.handle == handle)
        .map(|s| s.reg.clone())
        .ok_or(EINVAL)
}

/// A client's regions, by core context.
struct Regions {
    map: RBTree<u32, Arc<Region>>,
    next: u32,
    /// The client is being unregistered: no region is added any more.
    closing: bool,
}

/// A region's node in its client's table.
type RegionNode = RBTreeNode<u32, Arc<Region>>;

/// A registered client.
#[pin_data]
pub(crate) struct Registered {
    #[pin]
    client: Revocable<Arc<dyn ErasedClient>>,
    name: [u8; 64],
    unmaps: bool,
    requires_invalidation: bool,
    #[pin]
    regions: Mutex<Regions>,
    stats: Arc<Stats>,
}

/// A region's state: its phase (`rdma::spec::peer_region`, host-tested)
/// and what the client gave for it.
struct RegionState {
    phase: Phase,
    /// The client's context, until `release`.
    ctx: Option<Erased>,
    /// The client's pages, until they go back.
    pages: Option<Erased>,
    /// Pages of the region, for the statistics.
    npages: u64,
    /// The memory region's gate, once armed.
    target: Option<Arc<dyn PeerInvalidate>>,
}

/// A region built on a client's memory.
#[pin_data]
struct Region {
    owner: Arc<Registered>,
    core: u32,
    bytes: u64,
    #[pin]
    state: Mutex<RegionState>,
}

impl Region {
    /// Takes the region through `event` (`rdma::spec::peer_region::step`)
    /// and carries out what the step says, in its order. With the state
    /// locked and the client's gate open.
    fn on(&self, client: &dyn ErasedClient, st: &mut RegionState, event: Event) {
        let (next, a) = step(st.phase, event, self.owner.unmaps);
        st.phase = next;
        if a.close_gate {
            if let Some(t) = st.target.take() {
                t.invalidate();
            }
        }
        if a.unmap {
            if let (Some(ctx), Some(pages)) = (&st.ctx, st.pages.take()) {
                client.dma_unmap(ctx, &pages);
                client.put_pages(ctx, &pages);
            }
        }
        if a.count_unpinned {
            self.owner.stats.unpinned(st.npages, self.bytes);
        }
        if a.release {
            if let Some(ctx) = st.ctx.take() {
                client.release(&ctx);
            }
        }
        if a.drop_kept {
            drop(st.pages.take());
        }
        if a.count_dealloc {
            self.owner.stats.dealloc_mrs.fetch_add(1, Ordering::Relaxed);
        }
        if next == Phase::Gone {
            st.target = None;
        }
    }
}

impl Registered {
    fn name(&self) -> &[u8] {
        until_nul(&self.name)
    }

    /// The client invalidates region `core`: when this returns, no access
    /// reaches its memory.
    pub(crate) fn invalidate(&self, core: u64) -> Result {
        let key = u32::try_from(core).map_err(|_| EINVAL)?;
        let region = self.regions.lock().map.get(&key).cloned().ok_or(EINVAL)?;
        self.stats.free_callbacks.fetch_add(1, Ordering::Relaxed);
        let Some(client) = self.client.access() else {
            return Ok(());
        };
        let mut st = region.state.lock();
        region.on(&**client, &mut st, Event::ClientInvalidate);
        Ok(())
    }

    /// Closes the client's gate: waits for calls in progress; none
    /// follows, and the client object is dropped here.
    pub(crate) fn close(&self) {
        drop(self.client.revoke());
    }

    /// Undoes every region (unregistration). Takes them out of the table
    /// one at a time, so that nothing is allocated and none is missed
    /// (no region is added once `closing` is set).
    fn undo_all(&self) {
        self.regions.lock().closing = true;
        let client = self.client.access();
        loop {
            let next = {
                let mut r = self.regions.lock();
                let k = r.map.iter().next().map(|(k, _)| *k);
                k.and_then(|k| r.map.remove(&k))
            };
            let Some(region) = next else {
                break;
            };
            if let Some(client) = &client {
                let mut st = region.state.lock();
                region.on(&***client, &mut st, Event::Release);
            }
        }
    }

    /// A new region's number, the region (being built) and its node for
    /// the table.
    fn prepare(self: &Arc<Self>, bytes: u64) -> Result<(Arc<Region>, RegionNode)> {
        let core = {
            let mut r = self.regions.lock();
            let mut n = r.next;
            while n == 0 || r.map.get(&n).is_some() {
                n = n.wrapping_add(1);
            }
            r.next = n.wrapping_add(1);
            n
        };
        let region = Arc::pin_init(
            pin_init!(Region {
                owner: self.clone(),
                core,
                bytes,
                state <- new_mutex!(
                    RegionState {
                        phase: Phase::Building { pending: false },
                        ctx: None,
                        pages: None,
                        npages: 0,
                        target: None,
                    },
                    "peer_mem::Region::state"
                ),
            }),
            GFP_KERNEL,
        )?;
        let node = RBTreeNode::new(core, region.clone(), GFP_KERNEL)?;
        Ok((region, node))
    }

    /// `dma_map` and the page list of a region (undoing `dma_map` on
    /// failure).
    fn map(
        &self,
        client: &dyn ErasedClient,
        ctx: &Erased,
        pages: &Erased,
        req: &PeerRequest<'_>,
    ) -> Result<PageList> {
        let ps = page_size() as u64;
        let cps = client.page_size(ctx);
        if !valid_page_size(cps) {
            log_memory_refused(self.name(), "absurd page size (EINVAL)");
            return Err(EINVAL);
        }
        let start = req.addr & !(cps - 1);
        let first = req.addr & !(ps - 1);
        let mapped = client.dma_map(ctx, pages).inspect_err(|e| {
            if *e == eopnotsupp() {
                // The client's table held DMA addresses without pages
                // (its dma_map was undone).
                self.stats.refused_dma_only.fetch_add(1, Ordering::Relaxed);
                log_memory_refused(
                    self.name(),
                    "mapped for DMA only: DMA addresses without pages (EOPNOTSUPP); \
                     a software device reaches memory through its pages",
                );
            }
        })?;
        let skip = ((first - start) / ps) as usize;
        let built = (|| {
            let mut list = KVVec::with_capacity(mapped.len().saturating_sub(skip), GFP_KERNEL)?;
            for p in mapped.iter().skip(skip) {
                list.push(p.clone(), GFP_KERNEL)?;
            }
            PageList::new(list, (req.addr - first) as usize, req.len as usize)
        })();
        if built.is_err() {
            client.dma_unmap(ctx, pages);
        }
        built
    }

    /// Builds a region on `req` if the client claims it.
    fn try_build(self: &Arc<Self>, req: &PeerRequest<'_>) -> Result<Option<PeerGrant>> {
        if self.requires_invalidation && !req.can_invalidate {
            return Ok(None);
        }
        let Some(client) = self.client.access() else {
            return Ok(None);
        };
        let client: &dyn ErasedClient = &**client;
        let Some(ctx) = client.acquire(req.addr, req.len) else {
            return Ok(None);
        };
        // No device of rdma-rs has a DMA device (the providers are
        // software): a client that needs one would be handed NULL.
        if client.needs_dma_device() {
            client.release(&ctx);
            self.stats
                .refused_no_dma_device
                .fetch_add(1, Ordering::Relaxed);
            log_memory_refused(
                self.name(),
                "needs a DMA device (EOPNOTSUPP), which software devices have not",
            );
            return Err(eopnotsupp());
        }
        // What may fail for want of memory first, while giving the context
        // back is all there is to undo.
        let prepared = (|| {
            let module = ModuleRef::get(&crate::THIS_MODULE).ok_or(ENODEV)?;
            let (region, node) = self.prepare(req.len)?;
            let handle = Arc::new(RegionHandle { region }, GFP_KERNEL)?;
            Ok::<_, Error>((handle, node, module))
        })();
        let (handle, node, module) = match prepared {
            Ok(p) => p,
            Err(e) => {
                client.release(&ctx);
                return Err(e);
            }
        };
        // In the table before `get_pages` gives the client the number: an
        // invalidation that comes before the region is live is recorded.
        let listed = {
            let mut r = self.regions.lock();
            if r.closing {
                false
            } else {
                drop(r.map.insert(node));
                true
            }
        };
        if !listed {
            client.release(&ctx);
            return Ok(None);
        }
        let core = handle.region.core;
        // From here, dropping `handle` takes the region out of the table.
        // The region's lock is held while it is built: an invalidation by
        // the client (who learns the number in `get_pages`) waits for the
        // build to end, so that it finds the pages mapped and gives them
        // back before it returns, and an unmapping client cannot tear its
        // table down while the core still reads it.
        let mut st = handle.region.state.lock();
        let pages = match client.get_pages(&ctx, req.addr, req.len, req.write, core.into()) {
            Ok(p) => p,
            Err(e) => {
                drop(st);
                client.release(&ctx);
                return Err(e);
            }
        };
        let list = match self.map(client, &ctx, &pages, req) {
            Ok(l) => l,
            Err(e) => {
                drop(st);
                client.put_pages(&ctx, &pages);
                client.release(&ctx);
                drop(pages);
                return Err(e);
            }
        };
        let npages = list.pages() as u64;
        self.stats.built(npages, req.len);
        st.ctx = Some(ctx);
        st.pages = Some(pages);
        st.npages = npages;
        handle.region.on(client, &mut st, Event::Built);
        drop(st);
        if self.regions.lock().closing {
            // The client is being unregistered and may have missed this
            // region: undone here, through the access this call holds.
            let mut st = handle.region.state.lock();
            handle.region.on(client, &mut st, Event::Release);
            return Ok(None);
        }
        Ok(Some(PeerGrant {
            pages: list,
            region: handle as Arc<dyn PeerRegion>,
            module,
        }))
    }
}

/// A region as the memory region holds it; its drop is the
/// deregistration. The memory region also holds the reference on
/// `peer_mem` that came with it ([`PeerGrant`]), dropped after this (the
/// client's module may go: nothing of it is left here once it
/// unregistered).
struct RegionHandle {
    region: Arc<Region>,
}

impl PeerRegion for RegionHandle {
    fn arm(&self, target: Arc<dyn PeerInvalidate>) {
        let mut st = self.region.state.lock();
        if st.phase == Phase::Live {
            st.target = Some(target);
        } else {
            // Invalidated (or the client left) before the memory region
            // existed: it starts closed.
            drop(st);
            target.invalidate();
        }
    }

    fn client_name(&self) -> &[u8] {
        self.region.owner.name()
    }
}

impl Drop for RegionHandle {
    fn drop(&mut self) {
        let owner = &self.region.owner;
        if let Some(client) = owner.client.access() {
            let mut st = self.region.state.lock();
            self.region.on(&**client, &mut st, Event::Release);
        }
        let node = owner.regions.lock().map.remove_node(&self.region.core);
        drop(node);
    }
}
