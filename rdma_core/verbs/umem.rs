// SPDX-License-Identifier: GPL-2.0

//! Memory regions on user memory (`ib_umem`): the pages of a process's
//! address range, pinned, or given by a peer memory client.
//!
//! [`Mr::reg_user`](crate::verbs::mr::Mr) registers `[addr, addr + len)`
//! of the *current* process (a ULP calls it from the process's context, as
//! a user verbs command would run). The access rights decide whether the
//! pages are pinned writable. When the caller allows peer memory
//! ([`UserMrFlags::ALLOW_PEER`]) and pinning fails (a GPU's memory is not
//! pinnable), or first with [`UserMrFlags::PEER_FIRST`], the core asks the
//! peer memory broker ([`PeerSource`], installed by the `peer_mem` module),
//! which asks its clients in registration order.
//!
//! Every access a provider makes to such a region goes through the
//! region's gate ([`UserMem`]): a copy in progress holds it open. A peer
//! client's invalidation ([`PeerInvalidate::invalidate`]) closes it and
//! waits for the copies inside; when it returns, no access reaches the
//! memory any more: later ones fail as an invalid key would (a remote
//! access error for a peer, a local protection error for local work
//! requests), and the provider is told ([`DeviceOps::mr_invalidated`]).
//!
//! [`DeviceOps::mr_invalidated`]: crate::device::DeviceOps::mr_invalidated

use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use kernel::prelude::*;
use kernel::sync::Arc;

use crate::device::Device;
use crate::kshim::gate::Revocable;
use crate::kshim::global::Global;
use crate::kshim::module_ref::ModuleRef;
use crate::kshim::pages::{PageList, PinnedPages};
use crate::kshim::sync::SpinLockIrq;

/// How a user memory registration may get its pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserMrFlags(pub u32);

impl UserMrFlags {
    /// Pinning only.
    pub const NONE: Self = Self(0);
    /// Ask the peer memory clients when pinning fails.
    pub const ALLOW_PEER: Self = Self(1);
    /// Ask the peer memory clients before pinning (with `ALLOW_PEER`).
    pub const PEER_FIRST: Self = Self(2);

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }
}

impl core::ops::BitOr for UserMrFlags {
    type Output = Self;
    fn bitor(self, o: Self) -> Self {
        Self(self.0 | o.0)
    }
}

/// What a registration asks the peer memory broker.
pub struct PeerRequest<'a> {
    /// The range, in the current process.
    pub addr: u64,
    /// Its length (non-zero, not wrapping).
    pub len: u64,
    /// Whether the device will write it.
    pub write: bool,
    /// The device of the region.
    pub device: &'a Arc<Device>,
    /// Whether the device honours invalidation
    /// ([`crate::device::DeviceOps::peer_invalidate`]): a client that
    /// requires it is not asked otherwise.
    pub can_invalidate: bool,
}

/// A region a peer memory client provides. Dropping the last reference
/// gives the memory back to the client (`dma_unmap`, `put_pages` unless
/// invalidation did, `release`). Process context.
pub trait PeerRegion: Send + Sync {
    /// Connects the client's invalidation to `target`; if the client
    /// invalidated the memory already, `target` is invalidated now.
    fn arm(&self, target: Arc<dyn PeerInvalidate>);
    /// The name of the client.
    fn client_name(&self) -> &[u8];
}

/// A region the broker built: its pages, the region, and a reference on
/// the broker's module (whose code the region's drop runs).
pub struct PeerGrant {
    /// The pages the memory region reads and writes through.
    pub pages: PageList,
    /// The region; its last reference's drop gives the memory back.
    pub region: Arc<dyn PeerRegion>,
    /// Keeps the broker's module loaded while the region exists.
    pub module: ModuleRef,
}

/// What a peer client's invalidation reaches: the region's gate.
pub trait PeerInvalidate: Send + Sync {
    /// Stops every access to the memory; when it returns, none is in
    /// progress and none will happen. Process context; may wait.
    fn invalidate(&self);
}

/// The peer memory broker.
pub trait PeerSource: Send + Sync {
    /// Asks the clients, in registration order, whether the range is
    /// theirs; the first that claims it builds the region. `Ok(None)` if
    /// none does; an error from the client that claimed it.
    fn acquire(&self, req: &PeerRequest<'_>) -> Result<Option<PeerGrant>>;
}

/// The installed broker, behind a gate: removing it waits for the
/// requests in progress, so that the broker's module may go.
#[pin_data]
pub struct PeerSlot {
    #[pin]
    source: Revocable<Arc<dyn PeerSource>>,
}

static PEER: Global<PeerSlot> = Global::new();

/// Installs the peer memory broker (`peer_mem` at init), or removes it
/// (`None`, at its exit: waits for the requests in progress). Process
/// context.
pub fn set_peer_source(source: Option<Arc<dyn PeerSource>>) -> Result {
    let new = match source {
        Some(s) => Some(Arc::pin_init(
            pin_init!(PeerSlot {
                source <- Revocable::new(s),
            }),
            GFP_KERNEL,
        )?),
        None => None,
    };
    if let Some(old) = PEER.replace(new) {
        drop(old.source.revoke());
    }
    Ok(())
}

/// Where a user region's pages come from; given back at release.
pub(crate) enum Source {
    Pinned(#[allow(dead_code)] PinnedPages),
    /// The region, then the reference on the broker's module, dropped in
    /// that order: the region's drop runs the broker's code, and the
    /// module may only go once that has returned.
    Peer(Arc<dyn PeerRegion>, #[allow(dead_code)] ModuleRef),
}

/// The kind of memory behind a user memory region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserKind {
    /// Pinned pages of the process.
    Pinned,
    /// A peer memory client's pages.
    Peer,
}

/// The memory of a user memory region: its pages behind a gate.
#[pin_data]
pub struct UserMem {
    #[pin]
    pages: Revocable<PageList>,
    #[pin]
    source: SpinLockIrq<Option<Source>>,
    kind: UserKind,
    /// The client's name, for a peer region (NUL padded).
    peer: [u8; 64],
    invalidated: AtomicBool,
    device: Arc<Device>,
    /// The region's key, once it exists (for the provider's notice).
    lkey: AtomicU32,
}

impl UserMem {
    /// Pins or asks the peer clients for `[addr, addr + len)` of the
    /// current process (see the module doc).
    pub(crate) fn get(
        dev: &Arc<Device>,
        addr: u64,
        len: u64,
        write: bool,
        flags: UserMrFlags,
    ) -> Result<Arc<UserMem>> {
        crate::kshim::verb::might_sleep();
        let peer_ok = flags.contains(UserMrFlags::ALLOW_PEER);
        let try_peer = || -> Result<Option<(PageList, Source, [u8; 64])>> {
            let Some(slot) = PEER.get() else {
                return Ok(None);
            };
            let Some(source) = slot.source.access() else {
                return Ok(None);
            };
            let req = PeerRequest {
                addr,
                len,
                write,
                device: dev,
                can_invalidate: dev.peer_invalidate(),
            };
            let Some(grant) = source.acquire(&req)? else {
                return Ok(None);
            };
            let (pages, region) = (grant.pages, grant.region);
            let mut name = [0u8; 64];
            let n = region.client_name();
            let l = core::cmp::min(n.len(), 63);
            name[..l].copy_from_slice(&n[..l]);
            Ok(Some((pages, Source::Peer(region, grant.module), name)))
        };
        if flags.0 & !(UserMrFlags::ALLOW_PEER.0 | UserMrFlags::PEER_FIRST.0) != 0 {
            return Err(EINVAL);
        }
        let mut found = None;
        // With PEER_FIRST the clients are asked once, before pinning.
        let first = peer_ok && flags.contains(UserMrFlags::PEER_FIRST);
        if first {
            found = try_peer()?;
        }
        let (pages, source, peer, kind) = match found {
            Some((p, s, n)) => (p, s, n, UserKind::Peer),
            None => match PinnedPages::pin(addr, len, write) {
                Ok((pins, list)) => (list, Source::Pinned(pins), [0; 64], UserKind::Pinned),
                Err(e) if peer_ok && !first && e != EINVAL => match try_peer()? {
                    Some((p, s, n)) => (p, s, n, UserKind::Peer),
                    None => return Err(e),
                },
                Err(e) => return Err(e),
            },
        };
        let mem = Arc::pin_init(
            pin_init!(UserMem {
                pages <- Revocable::new(pages),
                source <- crate::new_spinlock_irq!(Some(source), "UserMem::source"),
                kind,
                peer,
                invalidated: AtomicBool::new(false),
                device: dev.clone(),
                lkey: AtomicU32::new(0),
            }),
            GFP_KERNEL,
        )?;
        // Armed before any memory region reaches the pages: an
        // invalidation from here on closes the gate (one that came already
        // closes it now), so no access can follow it.
        mem.arm();
        Ok(mem)
    }

    /// The key of the region built on this memory, for the provider's
    /// notice of an invalidation.
    pub(crate) fn set_lkey(&self, lkey: u32) {
        self.lkey.store(lkey, Ordering::Release);
    }

    /// Connects a peer region's invalidation to this memory's gate.
    fn arm(self: &Arc<Self>) {
        let me: Arc<dyn PeerInvalidate> = self.clone();
        // Called without the spinlock: arming takes the region's mutex.
        let region = match &*self.source.lock() {
            Some(Source::Peer(r, _)) => Some(r.clone()),
            _ => None,
        };
        if let Some(r) = region {
            r.arm(me);
        }
    }

    /// The kind of memory.
    pub fn kind(&self) -> UserKind {
        self.kind
    }

    /// The peer client's name, empty for pinned memory.
    pub fn peer_name(&self) -> &[u8] {
        let n = self.peer.iter().position(|&c| c == 0).unwrap_or(64);
        &self.peer[..n]
    }

    /// Whether the memory was invalidated.
    pub fn is_invalidated(&self) -> bool {
        self.invalidated.load(Ordering::Acquire)
    }

    /// Runs `f` on the pages, if the memory is still accessible (the gate
    /// stays open meanwhile). Any context.
    pub(crate) fn with_pages<R>(&self, f: impl FnOnce(&PageList) -> R) -> Option<R> {
        let g = self.pages.access()?;
        Some(f(&g))
    }

    /// The release of the region: no access any more, then the memory
    /// goes back (unpinned, or to its client). Process context.
    pub(crate) fn release(&self) {
        drop(self.pages.revoke());
        let source = self.source.lock().take();
        drop(source);
    }
}

impl PeerInvalidate for UserMem {
    fn invalidate(&self) {
        // The gate closes and the copies inside finish: from here on no
        // access reaches the pages.
        let pages = self.pages.revoke();
        if pages.is_some() && !self.invalidated.swap(true, Ordering::AcqRel) {
            if let Ok(ops) = self.device.ops() {
                ops.mr_invalidated(self.lkey.load(Ordering::Acquire));
            }
        }
        drop(pages);
    }
}
