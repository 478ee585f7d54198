// SPDX-License-Identifier: GPL-2.0

//! Pages that memory regions on user and peer memory are made of.
//!
//! - [`SharedPage`]: one `struct page` with a reference held; a peer memory
//!   client written in Rust allocates its "device memory" as these.
//! - [`PageList`]: the pages of a region, in order, from byte
//!   `first_offset` of the first, `len` bytes long, each held by a
//!   reference: the core copies through them with a temporary mapping
//!   (`kmap_local_page`), never through a user address.
//! - [`PinnedPages`]: pages of the current process pinned for a region
//!   (`pin_user_pages_fast`, long term, accounted against
//!   `RLIMIT_MEMLOCK`), unpinned on drop. The limit (and the machine's
//!   memory) is checked before anything is sized by the user's length,
//!   and the page arrays are `kvmalloc`ed, so a region of any size is
//!   either refused with `ENOMEM` or allocated without a high-order
//!   `kmalloc`.
//! - [`PeerSg`]: the `struct sg_table` a C peer memory client fills in its
//!   `get_pages` and maps in its `dma_map` (`peer_abi.rs` passes it).
//!
//! A [`PageList`] holds its own reference on every page, whoever provided
//! the pages: a client that frees its memory early cannot make the core
//! touch freed memory. Whether the core may still *write* a page is the
//! business of the region's gate (`rdma::verbs::umem`), which stops every
//! access when the memory is invalidated.

use core::ptr::NonNull;

use kernel::error::code::{EINVAL, ENOMEM};
use kernel::prelude::*;

use crate::kshim::bindings;

/// The size of a page (a constant: dividing by it has no panic path).
pub const fn page_size() -> usize {
    kernel::page::PAGE_SIZE
}

/// A page with a reference held.
///
/// # Invariants
///
/// `page` is a valid `struct page` on which this value holds one reference
/// (`get_page`), dropped in `drop`.
pub struct SharedPage {
    page: NonNull<bindings::page>,
}

// SAFETY: a page reference may be taken, used and dropped on any thread;
// its bytes are only reached through copies (`write`, `read`).
unsafe impl Send for SharedPage {}
// SAFETY: as above; concurrent copies race as DMA does, on plain bytes.
unsafe impl Sync for SharedPage {}

impl SharedPage {
    /// Allocates a zeroed page. May sleep.
    pub fn alloc() -> Result<SharedPage> {
        // SAFETY: no preconditions; process context (GFP_KERNEL).
        let page = unsafe { bindings::rdma_rs_page_alloc() };
        // INVARIANT: a fresh page comes with one reference, now ours.
        NonNull::new(page)
            .map(|page| SharedPage { page })
            .ok_or(ENOMEM)
    }

    /// Takes a new reference on `page`.
    ///
    /// # Safety
    ///
    /// `page` must be a valid page on which the caller holds a reference
    /// (or a pin) for the duration of the call.
    unsafe fn get(page: NonNull<bindings::page>) -> SharedPage {
        // SAFETY: the page is valid and referenced (caller's guarantee), so
        // another reference may be taken.
        unsafe { bindings::rdma_rs_page_get(page.as_ptr()) };
        // INVARIANT: the reference just taken.
        SharedPage { page }
    }

    /// Adopts a reference the caller took on `page`.
    ///
    /// # Safety
    ///
    /// `page` must be valid with a reference that becomes this value's.
    pub(crate) unsafe fn adopt(page: NonNull<bindings::page>) -> SharedPage {
        // INVARIANT: the caller hands its reference over.
        SharedPage { page }
    }

    /// The raw page, for the C glue of this layer (mapping into a process).
    pub(crate) fn as_raw(&self) -> *mut bindings::page {
        self.page.as_ptr()
    }

    fn range(off: usize, len: usize) -> Result {
        if off <= page_size() && len <= page_size() - off {
            Ok(())
        } else {
            Err(EINVAL)
        }
    }

    /// Copies `data` into the page at `off` (`EINVAL` past its end).
    pub fn write(&self, off: usize, data: &[u8]) -> Result {
        Self::range(off, data.len())?;
        // SAFETY: the page is valid and referenced (type invariant); the
        // range is inside it (checked) and `data` is a separate slice.
        unsafe {
            bindings::rdma_rs_page_write(self.as_raw(), off, data.as_ptr().cast(), data.len())
        };
        Ok(())
    }

    /// Copies bytes at `off` into `out` (`EINVAL` past its end).
    pub fn read(&self, off: usize, out: &mut [u8]) -> Result {
        Self::range(off, out.len())?;
        // SAFETY: as in `write`, with `out` the destination.
        unsafe {
            bindings::rdma_rs_page_read(self.as_raw(), off, out.as_mut_ptr().cast(), out.len())
        };
        Ok(())
    }

    /// Sets `len` bytes at `off` to `byte` (`EINVAL` past its end).
    pub fn fill(&self, off: usize, len: usize, byte: u8) -> Result {
        Self::range(off, len)?;
        // SAFETY: the page is valid and referenced; the range is inside it.
        unsafe { bindings::rdma_rs_page_fill(self.as_raw(), off, i32::from(byte), len) };
        Ok(())
    }

    /// Reads the 4 bytes at `off` (4-byte aligned) with acquire ordering:
    /// what another CPU wrote before its release store of them is seen by
    /// the caller's later reads (an index of a ring shared with user
    /// space). The value is whatever the other side put there.
    pub fn load_acquire_u32(&self, off: usize) -> Result<u32> {
        if off % 4 != 0 {
            return Err(EINVAL);
        }
        Self::range(off, 4)?;
        // SAFETY: the page is valid and referenced (type invariant); `off`
        // is an aligned word inside it (checked).
        Ok(unsafe { bindings::rdma_rs_page_load_acquire32(self.as_raw(), off) })
    }

    /// Writes the 4 bytes at `off` (4-byte aligned) with release ordering:
    /// the caller's earlier writes are seen by whoever acquires this value.
    pub fn store_release_u32(&self, off: usize, v: u32) -> Result {
        if off % 4 != 0 {
            return Err(EINVAL);
        }
        Self::range(off, 4)?;
        // SAFETY: as in `load_acquire_u32`.
        unsafe { bindings::rdma_rs_page_store_release32(self.as_raw(), off, v) };
        Ok(())
    }

    /// Replaces the 8 bytes at `off` (8-byte aligned) by `f` of their
    /// value, atomically with respect to other atomics on them; returns
    /// the old value.
    pub fn atomic(&self, off: usize, f: &dyn Fn(u64) -> u64) -> Result<u64> {
        if off % 8 != 0 {
            return Err(EINVAL);
        }
        Self::range(off, 8)?;
        // SAFETY: the page is valid; `off` is an aligned word inside it.
        let mut old = unsafe { bindings::rdma_rs_page_read64(self.as_raw(), off) };
        loop {
            // SAFETY: as above.
            let seen = unsafe { bindings::rdma_rs_page_cmpxchg64(self.as_raw(), off, old, f(old)) };
            if seen == old {
                return Ok(old);
            }
            old = seen;
        }
    }
}

impl Clone for SharedPage {
    fn clone(&self) -> Self {
        // SAFETY: this value holds a reference on the page.
        unsafe { SharedPage::get(self.page) }
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        // SAFETY: the reference this value holds (type invariant).
        unsafe { bindings::rdma_rs_page_put(self.as_raw()) };
    }
}

/// A piece of one page: `len` bytes from byte `offset`, the page held by
/// a reference of the piece's own (a block request's data, mapped by a
/// fast-registration MR without a copy).
pub struct PageSlice {
    /// The page.
    pub page: SharedPage,
    /// Offset of the first byte in the page.
    pub offset: usize,
    /// Length in bytes.
    pub len: usize,
}

impl PageSlice {
    /// Another piece of the same bytes, with a reference of its own.
    pub fn share(&self) -> PageSlice {
        PageSlice {
            page: self.page.clone(),
            offset: self.offset,
            len: self.len,
        }
    }
}

/// The pages of a region: `len` bytes from byte `first_offset` of the
/// first page, every page but possibly the first and last wholly in it.
pub struct PageList {
    /// Sized by the region: `kvmalloc`ed, whoever filled it.
    pages: KVVec<SharedPage>,
    first_offset: usize,
    len: usize,
}

/// The most pages one region may have: its page array stays below what
/// `kvmalloc` accepts (`INT_MAX` bytes).
const MAX_PAGES: usize = (i32::MAX as usize) / core::mem::size_of::<SharedPage>();

impl PageList {
    /// A list over `pages`, the region starting `first_offset` bytes into
    /// the first and `len` long (`EINVAL` if the pages do not cover it).
    pub fn new(pages: KVVec<SharedPage>, first_offset: usize, len: usize) -> Result<PageList> {
        Self::over(pages, first_offset, len)
    }

    fn over(pages: KVVec<SharedPage>, first_offset: usize, len: usize) -> Result<PageList> {
        let ps = page_size();
        let need = first_offset
            .checked_add(len)
            .map(|end| end.div_ceil(ps))
            .ok_or(EINVAL)?;
        if len == 0 || first_offset >= ps || pages.len() < need {
            return Err(EINVAL);
        }
        Ok(PageList {
            pages,
            first_offset,
            len,
        })
    }

    /// The length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a list is never empty.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The number of pages.
    pub fn pages(&self) -> usize {
        self.pages.len()
    }

    /// Calls `f(page, offset in page, offset in the range, length)` for
    /// each page piece of `[off, off + len)` (`EINVAL` past the end).
    fn walk(
        &self,
        off: usize,
        len: usize,
        mut f: impl FnMut(&SharedPage, usize, usize, usize) -> Result,
    ) -> Result {
        if off > self.len || len > self.len - off {
            return Err(EINVAL);
        }
        let ps = page_size();
        let mut at = self.first_offset + off;
        let mut done = 0;
        while done < len {
            let page = self.pages.get(at / ps).ok_or(EINVAL)?;
            let in_page = at % ps;
            let n = core::cmp::min(ps - in_page, len - done);
            f(page, in_page, done, n)?;
            done += n;
            at += n;
        }
        Ok(())
    }

    /// Copies `data` into the region at byte `off`.
    pub fn write(&self, off: usize, data: &[u8]) -> Result {
        self.walk(off, data.len(), |p, po, d, n| p.write(po, &data[d..d + n]))
    }

    /// Copies the region's bytes at `off` into `out`.
    pub fn read(&self, off: usize, out: &mut [u8]) -> Result {
        self.walk(off, out.len(), |p, po, d, n| p.read(po, &mut out[d..d + n]))
    }

    /// An atomic on the aligned 8 bytes at `off` (see
    /// [`SharedPage::atomic`]); `EINVAL` unless they lie in one page. Not
    /// generic, so that the C glue it calls stays inside this module.
    pub fn atomic(&self, off: usize, f: &dyn Fn(u64) -> u64) -> Result<u64> {
        if off > self.len || 8 > self.len - off {
            return Err(EINVAL);
        }
        let at = self.first_offset + off;
        let ps = page_size();
        self.pages
            .as_slice()
            .get(at / ps)
            .ok_or(EINVAL)?
            .atomic(at % ps, f)
    }
}

/// Pages of the current process pinned for a memory region.
///
/// # Invariants
///
/// `pages` holds `pages.len()` pages pinned by `rdma_rs_pin_user`, which
/// returned `mm` (a grabbed `mm_struct`); both are given back in `drop`.
pub struct PinnedPages {
    pages: KVVec<*mut bindings::page>,
    mm: *mut core::ffi::c_void,
    write: bool,
}

// SAFETY: pinned pages and a grabbed mm may be released from any thread
// (in process context, which `drop` documents).
unsafe impl Send for PinnedPages {}
// SAFETY: shared references give nothing but the page count.
unsafe impl Sync for PinnedPages {}

impl PinnedPages {
    /// Pins the pages of the current process that hold `[addr, addr +
    /// len)`, writable if `write` (then a read-only mapping is refused).
    /// `EFAULT` if some page is not mapped or cannot be pinned (`VM_IO` or
    /// `VM_PFNMAP` mappings, device memory), `ENOMEM` past
    /// `RLIMIT_MEMLOCK`, `EINVAL` for an empty or wrapping range. Returns
    /// the pins and the list the region reads and writes through. Process
    /// context.
    pub fn pin(addr: u64, len: u64, write: bool) -> Result<(PinnedPages, PageList)> {
        let ps = page_size() as u64;
        let end = addr.checked_add(len).ok_or(EINVAL)?;
        if len == 0 || end.checked_add(ps - 1).is_none() {
            return Err(EINVAL);
        }
        let first = addr & !(ps - 1);
        let npages = usize::try_from((end.div_ceil(ps) * ps - first) / ps).map_err(|_| EINVAL)?;
        // Refused before anything is sized by the caller's length: past
        // the memory limit, or past the machine's memory.
        // SAFETY: no preconditions; reads the current task's mm and limits.
        let ok = unsafe { bindings::rdma_rs_pin_check(npages as _) };
        if ok < 0 {
            return Err(Error::from_errno(ok as i32));
        }
        if npages > MAX_PAGES {
            return Err(ENOMEM);
        }
        let mut raw: KVVec<*mut bindings::page> =
            KVVec::from_elem(core::ptr::null_mut(), npages, GFP_KERNEL)?;
        let mut mm: *mut core::ffi::c_void = core::ptr::null_mut();
        // SAFETY: `raw` has room for `npages` pointers; `mm` is a valid
        // place for the returned mm. Process context (caller's duty, and
        // GUP may sleep).
        let got = unsafe {
            bindings::rdma_rs_pin_user(first, npages as _, write, raw.as_mut_ptr(), &mut mm)
        };
        if got < 0 {
            return Err(Error::from_errno(got as i32));
        }
        // INVARIANT: all `npages` pinned, with the mm grabbed.
        let pinned = PinnedPages {
            pages: raw,
            mm,
            write,
        };
        let mut refs = KVVec::with_capacity(npages, GFP_KERNEL)?;
        for p in pinned.pages.iter() {
            let Some(page) = NonNull::new(*p) else {
                return Err(EINVAL);
            };
            // SAFETY: the page is pinned by `pinned`, alive here.
            refs.push(unsafe { SharedPage::get(page) }, GFP_KERNEL)?;
        }
        let list = PageList::over(refs, (addr - first) as usize, len as usize)?;
        Ok((pinned, list))
    }
}

impl Drop for PinnedPages {
    fn drop(&mut self) {
        // SAFETY: the pages and the mm of `rdma_rs_pin_user` (type
        // invariant), given back once; pages written by the device are
        // marked dirty.
        unsafe {
            bindings::rdma_rs_unpin_user(
                self.mm,
                self.pages.as_mut_ptr(),
                self.pages.len() as _,
                self.write,
            )
        };
    }
}

/// The scatter/gather table a C peer memory client fills.
///
/// # Invariants
///
/// `sgt` is a zeroed `struct sg_table` allocated by `rdma_rs_sgt_alloc`,
/// freed in `drop`; its entries, if any, are the client's (allocated in its
/// `get_pages`, freed in its `put_pages`).
pub struct PeerSg {
    sgt: NonNull<bindings::sg_table>,
}

// SAFETY: the table is plain memory handed to one client call at a time.
unsafe impl Send for PeerSg {}
// SAFETY: shared references only read the entries (`collect`).
unsafe impl Sync for PeerSg {}

impl PeerSg {
    /// An empty table.
    pub fn new() -> Result<PeerSg> {
        // SAFETY: no preconditions.
        let sgt = unsafe { bindings::rdma_rs_sgt_alloc() };
        NonNull::new(sgt).map(|sgt| PeerSg { sgt }).ok_or(ENOMEM)
    }

    /// The table, for a client callback.
    pub(crate) fn as_raw(&self) -> *mut bindings::sg_table {
        self.sgt.as_ptr()
    }

    /// The pages of the first `nmap` entries, with a reference on each:
    /// at most `max` pages, each entry whole pages with a `struct page`
    /// (`EOPNOTSUPP` for an entry without a page, as a client that maps
    /// for DMA only leaves them; `EINVAL` for another shape, `E2BIG` past
    /// `max`).
    pub fn collect(&self, nmap: u32, max: usize) -> Result<KVVec<SharedPage>> {
        if max > MAX_PAGES {
            return Err(ENOMEM);
        }
        // The scratch array is sized by the region: `kvmalloc`.
        let mut raw: KVVec<*mut bindings::page> =
            KVVec::from_elem(core::ptr::null_mut(), max, GFP_KERNEL)?;
        // SAFETY: the table is valid (type invariant) and filled by the
        // client; `raw` has room for `max` pointers.
        let n = unsafe {
            bindings::rdma_rs_sgt_collect(self.as_raw(), nmap, raw.as_mut_ptr(), max as _)
        };
        if n < 0 {
            // -EOPNOTSUPP (no page), -EINVAL (an entry of another
            // shape) or -E2BIG (past `max`).
            return Err(Error::from_errno(n as i32));
        }
        let mut pages = KVVec::with_capacity(n as usize, GFP_KERNEL)?;
        let mut err: Option<Error> = None;
        for p in raw.iter().take(n as usize) {
            match NonNull::new(*p) {
                Some(page) => {
                    // SAFETY: `rdma_rs_sgt_collect` took a reference on
                    // each of the `n` pages; it becomes the `SharedPage`'s.
                    let sp = unsafe { SharedPage::adopt(page) };
                    if pages.push(sp, GFP_KERNEL).is_err() {
                        err = Some(ENOMEM);
                    }
                }
                None => err = Some(EINVAL),
            }
        }
        match err {
            None => Ok(pages),
            Some(e) => Err(e),
        }
    }
}

impl Drop for PeerSg {
    fn drop(&mut self) {
        // SAFETY: allocated by `rdma_rs_sgt_alloc` (type invariant); the
        // entries are the client's to free, not ours.
        unsafe { bindings::rdma_rs_sgt_free(self.as_raw()) };
    }
}

/// An identity of the current process's address space (0 for a kernel
/// thread): a client compares it with the one its memory was mapped by.
pub fn current_mm_id() -> usize {
    // SAFETY: reads `current->mm`, always valid to read.
    unsafe { bindings::rdma_rs_current_mm() as usize }
}
