// SPDX-License-Identifier: GPL-2.0

//! An example peer memory client in Rust, on `peer_memory::PeerClient`:
//! the twin of the C example (`../c_client/peer_example_c.c`), with the
//! same user interface (`../peer_example_uapi.h`) on `/dev/peer_example_rust`.
//!
//! Each `mmap` of the device allocates "device memory" (zeroed pages this
//! module owns) and maps it into the caller, `VM_PFNMAP` as a GPU driver's
//! memory is, so that only this client can give its pages to the RDMA
//! core. `acquire` claims a range when it lies inside one of the calling
//! process's mappings. The ioctls set failure modes, invalidate the
//! regions on a range (then poison the memory), read the memory through
//! the module's own view, and report the calls the core made.

#![forbid(unsafe_code)]

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::uaccess::UserSlice;

use peer_memory::{CoreContext, PeerClient, Registration};
use rdma::kshim::chardev::{current_mm_id, CharDevOps, IoctlArg, MiscDev, Vma};
use rdma::kshim::pages::{page_size, SharedPage};

module! {
    type: Example,
    name: "peer_example_rust",
    author: "rdma-rs",
    description: "Example peer memory client in Rust (/dev/peer_example_rust)",
    license: "GPL",
}

const MAX_MAP: u64 = 64 << 20;
const MODE_DECLINE: u32 = 1;
const MODE_FAIL_GET_PAGES: u32 = 2;
const MODE_FAIL_DMA_MAP: u32 = 4;

const fn ioc(dir: u32, nr: u32, size: u32) -> u32 {
    dir << 30 | size << 16 | (b'P' as u32) << 8 | nr
}
const IOC_SET_MODE: u32 = ioc(1, 1, 8);
const IOC_INVALIDATE: u32 = ioc(3, 2, 24);
const IOC_READ: u32 = ioc(1, 3, 24);
const IOC_STATS: u32 = ioc(2, 4, 88);

/// One mapping's memory.
struct Mapping {
    pages: KVVec<SharedPage>,
    mm: usize,
    start: u64,
    end: u64,
    mapped: AtomicBool,
}

impl Mapping {
    fn covers(&self, mm: usize, addr: u64, len: u64) -> bool {
        let Some(end) = addr.checked_add(len) else {
            return false;
        };
        len > 0
            && self.mm == mm
            && self.mapped.load(Ordering::Acquire)
            && addr >= self.start
            && end <= self.end
    }

    /// The pages from the one holding `addr` to the one holding the last
    /// byte of the range.
    fn pages_of(&self, addr: u64, len: u64) -> Result<KVVec<SharedPage>> {
        let ps = page_size() as u64;
        let first = ((addr - self.start) / ps) as usize;
        let last = ((addr + len - 1 - self.start) / ps) as usize;
        let mut v = KVVec::with_capacity(last - first + 1, GFP_KERNEL)?;
        for p in &self.pages[first..=last] {
            v.push(p.clone(), GFP_KERNEL)?;
        }
        Ok(v)
    }

    fn poison(&self, byte: u8) {
        for p in self.pages.iter() {
            let _ = p.fill(0, page_size(), byte);
        }
    }
}

/// A region's context.
struct Ctx {
    map: Arc<Mapping>,
    addr: u64,
    len: u64,
    core: AtomicU64,
    /// `get_pages` ran and `put_pages` did not yet.
    pinned: AtomicBool,
    invalidated: AtomicBool,
}

#[derive(Default)]
struct Counts {
    acquire_yes: AtomicU64,
    acquire_no: AtomicU64,
    get_pages: AtomicU64,
    put_pages: AtomicU64,
    dma_map: AtomicU64,
    dma_unmap: AtomicU64,
    release: AtomicU64,
    invalidations: AtomicU64,
    live: AtomicU64,
}

#[pin_data]
struct Shared {
    mode: AtomicU64,
    counts: Counts,
    #[pin]
    maps: Mutex<KVec<Arc<Mapping>>>,
    #[pin]
    ctxs: Mutex<KVec<Arc<Ctx>>>,
    #[pin]
    reg: Mutex<Option<Registration>>,
}

/// The client the core calls.
struct Client(Arc<Shared>);

impl PeerClient for Client {
    type Context = Arc<Ctx>;
    type Pages = KVVec<SharedPage>;

    fn acquire(&self, addr: u64, len: u64) -> Option<Arc<Ctx>> {
        let s = &self.0;
        let mm = current_mm_id();
        let found = if s.mode.load(Ordering::Relaxed) as u32 & MODE_DECLINE != 0 {
            None
        } else {
            s.maps
                .lock()
                .iter()
                .find(|m| m.covers(mm, addr, len))
                .cloned()
        };
        let Some(map) = found else {
            s.counts.acquire_no.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let ctx = Arc::new(
            Ctx {
                map,
                addr,
                len,
                core: AtomicU64::new(0),
                pinned: AtomicBool::new(false),
                invalidated: AtomicBool::new(false),
            },
            GFP_KERNEL,
        )
        .ok()?;
        s.ctxs.lock().push(ctx.clone(), GFP_KERNEL).ok()?;
        s.counts.acquire_yes.fetch_add(1, Ordering::Relaxed);
        s.counts.live.fetch_add(1, Ordering::Relaxed);
        Some(ctx)
    }

    fn get_pages(
        &self,
        ctx: &Arc<Ctx>,
        addr: u64,
        len: u64,
        _write: bool,
        core: CoreContext,
    ) -> Result<KVVec<SharedPage>> {
        if self.0.mode.load(Ordering::Relaxed) as u32 & MODE_FAIL_GET_PAGES != 0 {
            return Err(ENOMEM);
        }
        let pages = ctx.map.pages_of(addr, len)?;
        ctx.core.store(core.0, Ordering::Release);
        ctx.pinned.store(true, Ordering::Release);
        self.0.counts.get_pages.fetch_add(1, Ordering::Relaxed);
        Ok(pages)
    }

    fn dma_map(&self, _ctx: &Arc<Ctx>, pages: &KVVec<SharedPage>) -> Result<KVVec<SharedPage>> {
        if self.0.mode.load(Ordering::Relaxed) as u32 & MODE_FAIL_DMA_MAP != 0 {
            return Err(EIO);
        }
        let mut v = KVVec::with_capacity(pages.len(), GFP_KERNEL)?;
        for p in pages.iter() {
            v.push(p.clone(), GFP_KERNEL)?;
        }
        self.0.counts.dma_map.fetch_add(1, Ordering::Relaxed);
        Ok(v)
    }

    fn dma_unmap(&self, _ctx: &Arc<Ctx>, _pages: &KVVec<SharedPage>) {
        self.0.counts.dma_unmap.fetch_add(1, Ordering::Relaxed);
    }

    fn put_pages(&self, ctx: &Arc<Ctx>, _pages: &KVVec<SharedPage>) {
        ctx.pinned.store(false, Ordering::Release);
        self.0.counts.put_pages.fetch_add(1, Ordering::Relaxed);
    }

    fn release(&self, ctx: &Arc<Ctx>) {
        let s = &self.0;
        rdma::kshim::vec::retain(&mut s.ctxs.lock(), |c| !Arc::ptr_eq(c, ctx));
        s.counts.release.fetch_add(1, Ordering::Relaxed);
        s.counts.live.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Shared {
    fn invalidate(&self, arg: usize) -> Result<isize> {
        let mut a = IoctlArg::<24>::read(arg)?;
        let (addr, len, poison) = (a.u64(0), a.u64(8), a.u32(16));
        let mm = current_mm_id();
        let end = addr.checked_add(len).ok_or(EINVAL)?;
        // The regions to invalidate, marked under the lock; the core is
        // called without it (its invalidation may call back into us).
        let mut todo = KVec::new();
        for c in self.ctxs.lock().iter() {
            let overlaps = len == 0 || (c.addr < end && addr < c.addr + c.len);
            if c.map.mm == mm
                && overlaps
                && c.pinned.load(Ordering::Acquire)
                && !c.invalidated.swap(true, Ordering::AcqRel)
            {
                todo.push(c.clone(), GFP_KERNEL)?;
            }
        }
        let mut done = 0u32;
        {
            let reg = self.reg.lock();
            if let Some(r) = reg.as_ref() {
                for c in todo.iter() {
                    if r.invalidate(CoreContext(c.core.load(Ordering::Acquire)))
                        .is_ok()
                    {
                        done += 1;
                    }
                    self.counts.invalidations.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        if poison != 0 {
            for m in self.maps.lock().iter() {
                let hit = m.mm == mm && (len == 0 || (m.start < end && addr < m.end));
                if hit {
                    m.poison(poison as u8);
                }
            }
        }
        a.set_u32(20, done);
        a.write_back()?;
        Ok(0)
    }

    fn read(&self, arg: usize) -> Result<isize> {
        let a = IoctlArg::<24>::read(arg)?;
        let (addr, len, buf) = (a.u64(0), a.u64(8), a.u64(16));
        let mm = current_mm_id();
        let map = self
            .maps
            .lock()
            .iter()
            .find(|m| m.covers(mm, addr, len))
            .cloned()
            .ok_or(EINVAL)?;
        let ps = page_size() as u64;
        let mut w = UserSlice::new(buf as usize, len as usize).writer();
        let mut chunk = KVec::from_elem(0u8, page_size(), GFP_KERNEL)?;
        let mut at = addr;
        while at < addr + len {
            let off = at - map.start;
            let in_page = (off % ps) as usize;
            let n = core::cmp::min(ps - off % ps, addr + len - at) as usize;
            map.pages[(off / ps) as usize].read(in_page, &mut chunk[..n])?;
            w.write_slice(&chunk[..n])?;
            at += n as u64;
        }
        Ok(0)
    }

    fn stats(&self, arg: usize) -> Result<isize> {
        let c = &self.counts;
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let vals = [
            n(&c.acquire_yes),
            n(&c.acquire_no),
            n(&c.get_pages),
            n(&c.put_pages),
            n(&c.dma_map),
            n(&c.dma_unmap),
            n(&c.release),
            n(&c.invalidations),
            0, // unmap_after_inval: this client does not unmap itself
            n(&c.live),
        ];
        let mut a = IoctlArg::<88>::zeroed(arg);
        for (i, v) in vals.iter().enumerate() {
            a.set_u64(i * 8, *v);
        }
        a.write_back()?;
        Ok(0)
    }
}

/// The device's operations.
struct Dev(Arc<Shared>);

impl CharDevOps for Dev {
    type File = ();

    fn open(&self) -> Result<()> {
        Ok(())
    }

    fn ioctl(&self, _file: &(), cmd: u32, arg: usize) -> Result<isize> {
        match cmd {
            IOC_SET_MODE => {
                let a = IoctlArg::<8>::read(arg)?;
                self.0.mode.store(u64::from(a.u32(0)), Ordering::Relaxed);
                Ok(0)
            }
            IOC_INVALIDATE => self.0.invalidate(arg),
            IOC_READ => self.0.read(arg),
            IOC_STATS => self.0.stats(arg),
            _ => Err(ENOTTY),
        }
    }

    fn mmap(&self, _file: &(), vma: &mut Vma) -> Result {
        let ps = page_size() as u64;
        let len = vma.len();
        if !vma.is_shared() || len == 0 || len > MAX_MAP || len % ps != 0 || vma.pgoff() != 0 {
            return Err(EINVAL);
        }
        let n = (len / ps) as usize;
        let mut pages = KVVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            pages.push(SharedPage::alloc()?, GFP_KERNEL)?;
        }
        vma.map_pages(&pages)?;
        let map = Arc::new(
            Mapping {
                pages,
                mm: current_mm_id(),
                start: vma.start(),
                end: vma.end(),
                mapped: AtomicBool::new(true),
            },
            GFP_KERNEL,
        )?;
        self.0.maps.lock().push(map.clone(), GFP_KERNEL)?;
        let shared = self.0.clone();
        vma.on_close(KBox::new(
            move || {
                map.mapped.store(false, Ordering::Release);
                rdma::kshim::vec::retain(&mut shared.maps.lock(), |m| !Arc::ptr_eq(m, &map));
            },
            GFP_KERNEL,
        )?);
        Ok(())
    }
}

struct Example {
    shared: Arc<Shared>,
    _dev: Pin<KBox<MiscDev<Dev>>>,
}

impl kernel::Module for Example {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let shared = Arc::pin_init(
            pin_init!(Shared {
                mode: AtomicU64::new(0),
                counts: Counts::default(),
                maps <- new_mutex!(KVec::new(), "peer_example_rust::maps"),
                ctxs <- new_mutex!(KVec::new(), "peer_example_rust::ctxs"),
                reg <- new_mutex!(None, "peer_example_rust::reg"),
            }),
            GFP_KERNEL,
        )?;
        let reg = Registration::new(
            Client(shared.clone()),
            c_str!("peer_example_rust"),
            c_str!("1.0"),
            true,
        )?;
        *shared.reg.lock() = Some(reg);
        let dev = match Arc::new(Dev(shared.clone()), GFP_KERNEL)
            .map_err(Error::from)
            .and_then(|d| MiscDev::register(c_str!("peer_example_rust"), d, module))
        {
            Ok(d) => d,
            Err(e) => {
                drop(shared.reg.lock().take());
                return Err(e);
            }
        };
        Ok(Example { shared, _dev: dev })
    }
}

impl Drop for Example {
    fn drop(&mut self) {
        // Unregistration: the core invalidates and releases the regions
        // still on this client's memory, then calls it no more.
        let reg = self.shared.reg.lock().take();
        drop(reg);
    }
}
