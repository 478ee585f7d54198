// SPDX-License-Identifier: GPL-2.0

//! Memory regions (`ib_get_dma_mr`, `ib_alloc_mr`, `ib_map_mr_sg`,
//! `ib_dereg_mr`) and the checked memory access providers use.
//!
//! Four kinds:
//!
//! - a *buffer* MR covers a range of a [`Buffer`] and keeps it alive;
//! - a *fast-registration* MR ([`Mr::alloc_fast_reg`]) gets its pages from
//!   [`MrCore::map_mr_sg`] and becomes valid when a `REG_MR` work request
//!   executes (with a new key byte and access rights); `LOCAL_INV` or a
//!   SEND with invalidate make it invalid again;
//! - a *DMA* MR covers every live [`Buffer`], whatever its owner: the
//!   global key of a PD allocated with `UNSAFE_GLOBAL_RKEY`
//!   ([`crate::verbs::pd::PdFlags`]), as in the C core; an address that no
//!   live buffer holds is refused (`Bounds`), so the key cannot reach other
//!   kernel memory;
//! - a *user* MR ([`Mr::reg_user`]) covers a range of a process's memory:
//!   pinned pages, or a peer memory client's pages (`super::umem`), behind
//!   a gate the client's invalidation closes.
//!
//! Keys are `index << 8 | key`: the index is the MR's slot in its device's
//! table, the low byte changes on every fast registration so a stale key is
//! refused. lkey and rkey are the same number, as in rxe.
//!
//! A provider never touches memory on its own: [`MrCore::copy_in`],
//! [`MrCore::copy_out`] and the SGE helpers [`gather`] and [`scatter`] check
//! the key, the PD, the range and the access rights first, and report a
//! refusal as an [`AccessError`] the provider turns into a completion
//! status.

use core::ptr;

use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::device::Device;
use crate::kshim::errno::eopnotsupp;
use crate::kshim::mem::{self, Buffer, Sge};
pub use crate::kshim::pages::PageSlice;
use crate::kshim::pages::{page_size, SharedPage};
use crate::kshim::sync::SpinLockIrq;
use crate::spec::opcodes::Access;
use crate::verbs::object::{Handle, Life, Object, Use};
use crate::verbs::pd::PdCore;
use crate::verbs::restrack::{Resources, Table};
use crate::verbs::umem::{UserMem, UserMrFlags};

/// Why an access to registered memory was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessError {
    /// No valid MR has this key.
    Key,
    /// The MR belongs to another PD.
    Pd,
    /// The range is not inside the MR.
    Bounds,
    /// The MR does not grant the access.
    Rights,
    /// The MR has memory windows bound to it: it cannot be invalidated
    /// (the C rxe's `EINVAL`; `LOCAL_INV` completes with `LocQpOpErr`).
    Busy,
}

/// A piece of memory an access reaches: `len` bytes at a device address,
/// in a buffer the region holds, or (DMA MR) in whichever live buffer
/// holds them.
enum Piece<'a> {
    Buffer(&'a Arc<Buffer>, u64),
    Live(u64),
    /// Pages of a user region, from a byte offset into it.
    Pages(&'a crate::kshim::pages::PageList, usize),
    /// One page of a fast registration, from a byte offset into it.
    Page(&'a SharedPage, usize),
}

impl Piece<'_> {
    fn write(&self, data: &[u8]) -> core::result::Result<(), AccessError> {
        match self {
            Piece::Buffer(b, a) => b.write_at(*a, data),
            Piece::Live(a) => mem::dma_write(*a, data),
            Piece::Pages(l, o) => l.write(*o, data),
            Piece::Page(p, o) => p.write(*o, data),
        }
        .map_err(|_| AccessError::Bounds)
    }

    fn read(&self, out: &mut [u8]) -> core::result::Result<(), AccessError> {
        match self {
            Piece::Buffer(b, a) => b.read_at(*a, out),
            Piece::Live(a) => mem::dma_read(*a, out),
            Piece::Pages(l, o) => l.read(*o, out),
            Piece::Page(p, o) => p.read(*o, out),
        }
        .map_err(|_| AccessError::Bounds)
    }
}

/// What an MR is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MrKind {
    /// Every address ([`Mr::get_dma`]).
    Dma,
    /// A range of one [`Buffer`].
    Buffer,
    /// Pages set by `map_mr_sg`, valid after `REG_MR`.
    FastReg,
    /// A range of a process's memory ([`Mr::reg_user`]).
    User,
}

/// A piece of a buffer, for [`MrCore::map_mr_sg`].
pub struct BufSlice<'a> {
    /// The buffer.
    pub buf: &'a Arc<Buffer>,
    /// Offset of the first byte.
    pub offset: usize,
    /// Length in bytes.
    pub len: usize,
}

/// Where the I/O virtual addresses of a mapping of pages start: above
/// every kernel address, so that no such address is taken for one.
pub const PAGES_IOVA: u64 = 1 << 56;

/// The memory of a piece of a fast-registration MR.
enum SegMem {
    /// A buffer; `Segment::addr` is the device address of the first byte.
    Buf(Arc<Buffer>),
    /// A page; `Segment::addr` is the offset of the first byte in it.
    Page(SharedPage),
}

/// A contiguous piece of a fast-registration MR.
struct Segment {
    mem: SegMem,
    addr: u64,
    len: u64,
}

struct MrState {
    valid: bool,
    key: u8,
    access: Access,
    iova: u64,
    length: u64,
    /// The fast-registration pages; room for `max_segs` was reserved at
    /// allocation.
    segs: KVec<Segment>,
    /// Empty, with the same room: the next `map_mr_sg` fills it.
    spare: KVec<Segment>,
    /// `map_mr_sg` ran since the last registration.
    mapped: bool,
    /// Memory windows bound to the region (`super::mw`); under this lock
    /// so that a bind and a deregistration or invalidation do not cross.
    windows: u32,
    /// Deregistration has begun: no window binds any more.
    retired: bool,
}

/// The core's memory region.
#[pin_data]
pub struct MrCore {
    pd: Arc<PdCore>,
    /// The index part of the keys; the PD's use, given back at release.
    life: Life<Use<PdCore>>,
    kind: MrKind,
    /// The buffer of a buffer MR (immutable after creation).
    buffer: Option<Arc<Buffer>>,
    /// The memory of a user MR (immutable after creation).
    user: Option<Arc<UserMem>>,
    max_segs: u32,
    #[pin]
    state: SpinLockIrq<MrState>,
}

impl MrCore {
    /// The local key.
    pub fn lkey(&self) -> u32 {
        self.life.num() << 8 | u32::from(self.state.lock().key)
    }

    /// The remote key (the same number as the local key).
    pub fn rkey(&self) -> u32 {
        self.lkey()
    }

    /// The kind of MR.
    pub fn kind(&self) -> MrKind {
        self.kind
    }

    /// The first device address of the region (its I/O virtual address).
    pub fn iova(&self) -> u64 {
        self.state.lock().iova
    }

    /// The length of the region in bytes.
    pub fn length(&self) -> u64 {
        self.state.lock().length
    }

    /// The access rights.
    pub fn access(&self) -> Access {
        self.state.lock().access
    }

    /// Whether the region can be accessed now (a user region's memory
    /// not invalidated by its peer client).
    pub fn is_valid(&self) -> bool {
        self.state.lock().valid && !self.user.as_ref().is_some_and(|u| u.is_invalidated())
    }

    /// The memory of a user region.
    pub fn user_mem(&self) -> Option<&Arc<UserMem>> {
        self.user.as_ref()
    }

    /// The PD of the region.
    pub fn pd(&self) -> &Arc<PdCore> {
        &self.pd
    }

    /// Sets the pages of a fast-registration MR (`ib_map_mr_sg`): the
    /// slices become one virtually contiguous region starting at the first
    /// slice's address. Like the C verb it maps as many slices as the
    /// page rules allow (every slice but the first starts on a `page_size`
    /// boundary, every slice but the last ends on one) and returns how many.
    /// `EINVAL` if the MR is not a fast-registration MR or is valid now, if
    /// `page_size` is not a power of two of at least 4 KiB, or if no slice
    /// can be mapped. Any context but hard IRQ; never sleeps and never
    /// allocates (room for `max_segs` pages is kept twice, the mapping's
    /// and a spare; the previous pages' buffers are let go outside the
    /// lock, where a last reference may free one).
    pub fn map_mr_sg(&self, slices: &[BufSlice<'_>], page_size: u32) -> Result<usize> {
        if self.kind != MrKind::FastReg || !page_size.is_power_of_two() || page_size < 4096 {
            return Err(EINVAL);
        }
        let mask = u64::from(page_size) - 1;
        // How many slices the page rules take, checked before anything
        // changes.
        let mut n = 0;
        let mut total: u64 = 0;
        let mut prev_end = 0u64;
        for (i, s) in slices.iter().enumerate() {
            if i as u32 >= self.max_segs || s.len == 0 {
                break;
            }
            let addr = s.buf.addr(s.offset);
            if !s.buf.contains(addr, s.len as u64) {
                return Err(EINVAL);
            }
            // Every slice but the first starts on a boundary, and the
            // previous one ends on one.
            if i > 0 && (addr & mask != 0 || prev_end & mask != 0) {
                break;
            }
            prev_end = addr + s.len as u64;
            total += s.len as u64;
            n += 1;
        }
        if n == 0 {
            return Err(EINVAL);
        }
        let iova = slices[0].buf.addr(slices[0].offset);
        self.install(
            iova,
            total,
            slices.iter().take(n).map(|s| Segment {
                mem: SegMem::Buf(s.buf.clone()),
                addr: s.buf.addr(s.offset),
                len: s.len as u64,
            }),
        )?;
        Ok(n)
    }

    /// Sets the pages of a fast-registration MR to pieces of pages
    /// (`ib_map_mr_sg` of a scatter list of pages, as a block request's):
    /// the region starts at [`PAGES_IOVA`] plus the first piece's offset
    /// and runs through the pieces in order. Every piece lies in its page,
    /// every piece but the first starts the page and every piece but the
    /// last ends it; maps as many as these rules allow (at most the MR's
    /// `max_segs`) and returns how many; `EINVAL` as
    /// [`MrCore::map_mr_sg`]. Each mapped page gets a reference of the
    /// MR's own, held until the next mapping or the MR's release.
    /// Contexts as [`MrCore::map_mr_sg`].
    pub fn map_mr_pages(&self, slices: &[PageSlice]) -> Result<usize> {
        if self.kind != MrKind::FastReg {
            return Err(EINVAL);
        }
        let ps = page_size();
        let mut n = 0;
        let mut total: u64 = 0;
        let mut prev_end = ps;
        for (i, s) in slices.iter().enumerate() {
            if i as u32 >= self.max_segs || s.len == 0 {
                break;
            }
            if s.offset > ps || s.len > ps - s.offset {
                return Err(EINVAL);
            }
            if i > 0 && (s.offset != 0 || prev_end != ps) {
                break;
            }
            prev_end = s.offset + s.len;
            total += s.len as u64;
            n += 1;
        }
        if n == 0 {
            return Err(EINVAL);
        }
        let iova = PAGES_IOVA + slices[0].offset as u64;
        // A page reference is taken per piece: no sleeping.
        self.install(
            iova,
            total,
            slices.iter().take(n).map(|s| Segment {
                mem: SegMem::Page(s.page.clone()),
                addr: s.offset as u64,
                len: s.len as u64,
            }),
        )?;
        Ok(n)
    }

    /// Makes `segs` the mapping (`EINVAL` while the MR is valid), filled
    /// into the spare's room (no allocation; `GFP_ATOMIC` should the
    /// spare be away). The previous mapping's pieces may hold the last
    /// reference to a buffer or a page: let go after the lock, their room
    /// becoming the spare.
    fn install(&self, iova: u64, total: u64, segs: impl Iterator<Item = Segment>) -> Result {
        let mut old = {
            let mut st = self.state.lock();
            if st.valid {
                return Err(EINVAL);
            }
            let mut fresh = core::mem::take(&mut st.spare);
            for seg in segs {
                fresh.push(seg, GFP_ATOMIC)?;
            }
            st.iova = iova;
            st.length = total;
            st.mapped = true;
            core::mem::replace(&mut st.segs, fresh)
        };
        crate::kshim::vec::clear(&mut old);
        let mut st = self.state.lock();
        if st.spare.capacity() < old.capacity() {
            core::mem::swap(&mut st.spare, &mut old);
        }
        drop(st);
        drop(old);
        Ok(())
    }

    /// Lets go of the pages (and buffers) of a fast-registration MR
    /// invalidated since its last mapping: they are not reachable any
    /// more, and would otherwise stay referenced until the next
    /// `map_mr_sg` or `map_mr_pages` (a block request's pages long after
    /// the request ended). Nothing if the MR is valid or mapped for its
    /// next registration. Contexts as [`MrCore::map_mr_sg`].
    pub fn drop_pages(&self) {
        let mut old = {
            let mut st = self.state.lock();
            if self.kind != MrKind::FastReg || st.valid || st.mapped || st.segs.is_empty() {
                return;
            }
            st.iova = 0;
            st.length = 0;
            core::mem::take(&mut st.segs)
        };
        crate::kshim::vec::clear(&mut old);
        // The room comes back: the next mapping allocates nothing.
        let mut st = self.state.lock();
        if st.segs.is_empty() && st.segs.capacity() < old.capacity() {
            core::mem::swap(&mut st.segs, &mut old);
        }
        drop(st);
        drop(old);
    }

    /// Executes a `REG_MR` work request: the mapped pages become valid under
    /// `key` (whose index part must be this MR's) with `access`. For
    /// providers, in send queue order.
    pub(crate) fn fast_reg(
        &self,
        key: u32,
        access: Access,
    ) -> core::result::Result<(), AccessError> {
        if self.kind != MrKind::FastReg || key >> 8 != self.life.num() || !access.check() {
            return Err(AccessError::Key);
        }
        let mut st = self.state.lock();
        if st.valid || !st.mapped {
            return Err(AccessError::Key);
        }
        st.key = key as u8;
        st.access = access;
        st.valid = true;
        Ok(())
    }

    /// Makes the mapped pages valid under `key` (whose index part must be
    /// this MR's) with `access` at once: what a `REG_MR` work request does
    /// when its send queue reaches it, for a caller that orders the
    /// registration against its own sends itself (the RTRS server
    /// registers a chunk again before it posts the response that gives
    /// the new key out). `EINVAL` as [`MrCore::validate_local`], or if
    /// `access` is not a valid set of rights.
    pub fn register_now(&self, key: u32, access: Access) -> Result {
        self.fast_reg(key, access).map_err(|_| EINVAL)
    }

    /// Makes the mapped pages valid under `key` (whose index part must be
    /// this MR's) at once, for the device's local reads only: the gather
    /// of a send. What a C ULP gets from `ib_dma_map_sg` and its PD's
    /// `local_dma_lkey`, with the pages held by the MR as a registration
    /// holds them. No `REG_MR` is needed because no peer ever learns the
    /// key: an access from the wire asks for remote rights, which the
    /// region does not grant, and so does a local write into it. Undone
    /// by [`MrCore::invalidate`] (no `LOCAL_INV`), which the caller calls
    /// once every work request that reads the pages has completed.
    /// `EINVAL` if this is not a fast-registration MR, if nothing is
    /// mapped or the region is valid already. Contexts as
    /// [`MrCore::map_mr_sg`].
    pub fn validate_local(&self, key: u32) -> Result {
        self.register_now(key, Access::NONE)
    }

    /// Executes a `LOCAL_INV` (or the invalidation of a SEND with
    /// invalidate): the region stops being accessible under `key`.
    /// `Busy` while memory windows are bound to it.
    pub fn invalidate(&self, key: u32) -> core::result::Result<(), AccessError> {
        let mut st = self.state.lock();
        if self.kind != MrKind::FastReg || key >> 8 != self.life.num() || key as u8 != st.key {
            return Err(AccessError::Key);
        }
        if st.windows > 0 {
            return Err(AccessError::Busy);
        }
        st.valid = false;
        st.mapped = false;
        Ok(())
    }

    /// Checks an access of `len` bytes at `iova` under `key` from PD `pd`
    /// and runs `f` on each contiguous piece of memory (pointer, length),
    /// in order. The state lock is held for fast-registration MRs, so the
    /// pages cannot change underneath.
    fn access_with(
        &self,
        key: u32,
        pd: &PdCore,
        iova: u64,
        len: u64,
        need: Access,
        mut f: impl FnMut(Piece<'_>, usize) -> core::result::Result<(), AccessError>,
    ) -> core::result::Result<(), AccessError> {
        if !ptr::eq(&*self.pd, pd) {
            return Err(AccessError::Pd);
        }
        let st = self.state.lock();
        if !st.valid || key as u8 != st.key {
            return Err(AccessError::Key);
        }
        if !st.access.contains(need) {
            return Err(AccessError::Rights);
        }
        if self.kind != MrKind::Dma
            && (iova < st.iova || len > st.length || iova - st.iova > st.length - len)
        {
            return Err(AccessError::Bounds);
        }
        if len == 0 {
            return Ok(());
        }
        match self.kind {
            MrKind::Dma => {
                drop(st);
                f(Piece::Live(iova), len as usize)?;
            }
            MrKind::Buffer => {
                drop(st);
                if let Some(buf) = &self.buffer {
                    f(Piece::Buffer(buf, iova), len as usize)?;
                }
            }
            MrKind::User => {
                let off = (iova - st.iova) as usize;
                drop(st);
                // The gate stays open while `f` copies: an invalidation
                // waits for it, and refuses the accesses after it.
                let user = self.user.as_ref().ok_or(AccessError::Key)?;
                user.with_pages(|l| f(Piece::Pages(l, off), len as usize))
                    .ok_or(AccessError::Key)??;
            }
            MrKind::FastReg => {
                let mut off = iova - st.iova;
                let mut left = len;
                for s in st.segs.iter() {
                    if left == 0 {
                        break;
                    }
                    if off >= s.len {
                        off -= s.len;
                        continue;
                    }
                    let n = core::cmp::min(s.len - off, left);
                    match &s.mem {
                        SegMem::Buf(b) => f(Piece::Buffer(b, s.addr + off), n as usize)?,
                        SegMem::Page(p) => f(Piece::Page(p, (s.addr + off) as usize), n as usize)?,
                    }
                    left -= n;
                    off = 0;
                }
            }
        }
        Ok(())
    }

    /// Counts a memory window bound to the region, if it is valid and not
    /// being deregistered (for `super::mw`, which calls
    /// [`MrCore::put_window`] when the binding goes).
    pub(crate) fn get_window(&self) -> bool {
        let mut st = self.state.lock();
        if !st.valid || st.retired || self.life.is_released() {
            return false;
        }
        st.windows += 1;
        true
    }

    /// A window bound by [`MrCore::get_window`] is no longer.
    pub(crate) fn put_window(&self) {
        let mut st = self.state.lock();
        st.windows = st.windows.saturating_sub(1);
    }

    /// How many memory windows are bound to the region.
    pub fn windows(&self) -> u32 {
        self.state.lock().windows
    }

    /// Checks that `len` bytes at `iova` may be accessed under `key` from
    /// PD `pd` with rights `need`, without touching them.
    pub(crate) fn check(
        &self,
        key: u32,
        pd: &PdCore,
        iova: u64,
        len: u64,
        need: Access,
    ) -> core::result::Result<(), AccessError> {
        self.access_with(key, pd, iova, len, need, |_, _| Ok(()))
    }

    /// Writes `data` into the region at `iova` (the device storing received
    /// data or an RDMA WRITE). `need` is the right the access requires:
    /// `LOCAL_WRITE` for local scatter, `REMOTE_WRITE` for a peer's WRITE.
    pub(crate) fn copy_in(
        &self,
        key: u32,
        pd: &PdCore,
        iova: u64,
        data: &[u8],
        need: Access,
    ) -> core::result::Result<(), AccessError> {
        let mut done = 0;
        self.access_with(key, pd, iova, data.len() as u64, need, |p, n| {
            p.write(&data[done..done + n])?;
            done += n;
            Ok(())
        })
    }

    /// Reads `out.len()` bytes of the region at `iova` (the device
    /// gathering data to send, or serving a peer's RDMA READ with
    /// `REMOTE_READ`).
    pub(crate) fn copy_out(
        &self,
        key: u32,
        pd: &PdCore,
        iova: u64,
        out: &mut [u8],
        need: Access,
    ) -> core::result::Result<(), AccessError> {
        let mut done = 0;
        self.access_with(key, pd, iova, out.len() as u64, need, |p, n| {
            p.read(&mut out[done..done + n])?;
            done += n;
            Ok(())
        })
    }

    /// Runs `f` on the 8 bytes at `iova` for an atomic operation, atomic
    /// with respect to every other atomic on those bytes (`f` may run more
    /// than once if one races it).
    /// `iova` must be 8-byte aligned (`Bounds` otherwise).
    pub(crate) fn atomic(
        &self,
        key: u32,
        pd: &PdCore,
        iova: u64,
        f: impl Fn(u64) -> u64,
    ) -> core::result::Result<u64, AccessError> {
        self.atomic_with(key, pd, iova, Access::REMOTE_ATOMIC, f)
    }

    /// An atomic through a memory window, which checked the rights itself.
    pub(crate) fn atomic_unchecked_rights(
        &self,
        key: u32,
        pd: &PdCore,
        iova: u64,
        f: impl Fn(u64) -> u64,
    ) -> core::result::Result<u64, AccessError> {
        self.atomic_with(key, pd, iova, Access::NONE, f)
    }

    pub(crate) fn atomic_with(
        &self,
        key: u32,
        pd: &PdCore,
        iova: u64,
        need: Access,
        f: impl Fn(u64) -> u64,
    ) -> core::result::Result<u64, AccessError> {
        if iova % 8 != 0 {
            return Err(AccessError::Bounds);
        }
        let mut result: Option<Result<u64>> = None;
        self.access_with(key, pd, iova, 8, need, |p, n| {
            if n == 8 {
                // Atomic in itself (see `Buffer::atomic_at`): atomics
                // through other regions on the same bytes are serialised
                // with this one. A user region's gate is held meanwhile.
                result = Some(match p {
                    Piece::Buffer(b, a) => b.atomic_at(a, &f),
                    Piece::Live(a) => mem::dma_atomic(a, &f),
                    Piece::Pages(l, o) => l.atomic(o, &f),
                    Piece::Page(pg, o) => pg.atomic(o, &f),
                });
            }
            Ok(())
        })?;
        match result {
            Some(Ok(v)) => Ok(v),
            _ => Err(AccessError::Bounds),
        }
    }
}

impl Object for MrCore {
    type Deps = Use<PdCore>;

    fn device(&self) -> &Arc<Device> {
        self.pd.device()
    }

    fn table<'a>(&self, res: &'a Resources) -> &'a Table<Self> {
        &res.mr
    }

    fn life(&self) -> &Life<Use<PdCore>> {
        &self.life
    }

    /// `EINVAL` while memory windows are bound (as the C rxe); else no
    /// window binds any more.
    fn may_destroy(&self) -> Result {
        let mut st = self.state.lock();
        if st.windows > 0 {
            return Err(EINVAL);
        }
        st.retired = true;
        Ok(())
    }

    /// No access passes once released; the pages go. Windows still bound
    /// (the handle was dropped with them) refuse every access from now on
    /// and hold only the core object until they are unbound.
    fn on_release(&self) {
        let segs = {
            let mut st = self.state.lock();
            st.valid = false;
            core::mem::take(&mut st.segs)
        };
        drop(segs);
        // A user region's memory goes back (unpinned, or to its peer
        // client) once no access is inside.
        if let Some(u) = &self.user {
            u.release();
        }
    }
}

/// A memory region, owned by a ULP. Dropping it deregisters it, even with
/// memory windows bound to it (which [`Mr::dereg`] refuses): they stay
/// bound but refuse every access.
pub type Mr = Handle<MrCore>;

impl Handle<MrCore> {
    fn create(
        pd: &Arc<PdCore>,
        kind: MrKind,
        (buffer, user): (Option<Arc<Buffer>>, Option<Arc<UserMem>>),
        iova: u64,
        length: u64,
        access: Access,
        max_segs: u32,
    ) -> Result<Mr> {
        crate::kshim::verb::might_sleep();
        if !access.check() {
            return Err(EINVAL);
        }
        let dev = pd.device();
        let _usage = dev.try_get().ok_or(ENODEV)?;
        let segs = KVec::with_capacity(max_segs as usize, GFP_KERNEL)?;
        let spare = KVec::with_capacity(max_segs as usize, GFP_KERNEL)?;
        let pd_use = Use::take(pd)?;
        let index = dev.res.mr.reserve()?;
        let number = index.num();
        let state = MrState {
            valid: kind != MrKind::FastReg,
            key: crate::kshim::random::u8(),
            access,
            iova,
            length,
            segs,
            spare,
            mapped: false,
            windows: 0,
            retired: false,
        };
        let core = Arc::pin_init(
            pin_init!(MrCore {
                pd: pd.clone(),
                life: Life::new(number, pd_use),
                kind,
                buffer,
                user,
                max_segs,
                state <- crate::new_spinlock_irq!(state, "MrCore::state"),
            }),
            GFP_KERNEL,
        )?;
        index.publish(core.clone());
        Ok(Handle::new(core))
    }

    /// Registers `len` bytes of `buf` from `offset` with `access`
    /// (`EINVAL` for a range outside the buffer or bad access flags). The
    /// region's I/O virtual address is the device address of the first
    /// byte. May sleep.
    pub fn reg_buffer(
        pd: &Arc<PdCore>,
        buf: &Arc<Buffer>,
        offset: usize,
        len: usize,
        access: Access,
    ) -> Result<Mr> {
        if len == 0 || !buf.contains(buf.addr(offset), len as u64) {
            return Err(EINVAL);
        }
        let iova = buf.addr(offset);
        Mr::create(
            pd,
            MrKind::Buffer,
            (Some(buf.clone()), None),
            iova,
            len as u64,
            access,
            0,
        )
    }

    /// Allocates a fast-registration MR of up to `max_num_sg` pieces
    /// (`ib_alloc_mr` with `IB_MR_TYPE_MEM_REG`). `EOPNOTSUPP` unless the
    /// device has the memory management extensions; `EINVAL` above its
    /// page list limit. May sleep.
    pub fn alloc_fast_reg(pd: &Arc<PdCore>, max_num_sg: u32) -> Result<Mr> {
        let attr = pd.device().attr();
        if !attr
            .cap_flags
            .contains(crate::device::DeviceCaps::MEM_MGT_EXTENSIONS)
        {
            return Err(eopnotsupp());
        }
        if max_num_sg == 0 || max_num_sg > attr.max_fast_reg_page_list_len {
            return Err(EINVAL);
        }
        Mr::create(
            pd,
            MrKind::FastReg,
            (None, None),
            0,
            0,
            Access::NONE,
            max_num_sg,
        )
    }

    /// A DMA MR (`ib_get_dma_mr`): every live [`Buffer`], for a PD's
    /// global key ([`crate::verbs::pd::PdFlags::UNSAFE_GLOBAL_RKEY`]). May
    /// sleep.
    pub(crate) fn dma(pd: &Arc<PdCore>, access: Access) -> Result<Mr> {
        Mr::create(pd, MrKind::Dma, (None, None), 0, u64::MAX, access, 0)
    }

    /// Registers `[addr, addr + len)` of the current process
    /// (`ib_umem_get` and `reg_user_mr`): the pages are pinned (writable
    /// if `access` grants any write), or, as `flags` allow, given by a peer
    /// memory client (`super::umem`). The region's I/O virtual address is
    /// `addr`. `EINVAL` for an empty or wrapping range or bad access flags,
    /// `EFAULT` if the range is not mapped (or not pinnable, and no client
    /// claims it), `ENOMEM` past `RLIMIT_MEMLOCK`, a client's error.
    /// Process context: the current process's; may sleep.
    pub fn reg_user(
        pd: &Arc<PdCore>,
        addr: u64,
        len: u64,
        access: Access,
        flags: UserMrFlags,
    ) -> Result<Mr> {
        Mr::reg_user_at(pd, addr, len, addr, access, flags)
    }

    /// [`Mr::reg_user`] with the I/O virtual address `iova` for the
    /// region's first byte (`ibv_reg_mr_iova`): accesses name
    /// `[iova, iova + len)`, which reaches `[addr, addr + len)`. `EINVAL`
    /// also if the I/O range wraps.
    pub fn reg_user_at(
        pd: &Arc<PdCore>,
        addr: u64,
        len: u64,
        iova: u64,
        access: Access,
        flags: UserMrFlags,
    ) -> Result<Mr> {
        crate::kshim::verb::might_sleep();
        if len == 0
            || addr.checked_add(len).is_none()
            || iova.checked_add(len).is_none()
            || !access.check()
        {
            return Err(EINVAL);
        }
        let dev = pd.device();
        let _usage = dev.try_get().ok_or(ENODEV)?;
        let write = access.contains(Access::LOCAL_WRITE)
            || access.contains(Access::REMOTE_WRITE)
            || access.contains(Access::REMOTE_ATOMIC);
        let user = UserMem::get(dev, addr, len, write, flags)?;
        let mr = Mr::create(
            pd,
            MrKind::User,
            (None, Some(user.clone())),
            iova,
            len,
            access,
            0,
        );
        match &mr {
            Ok(m) => user.set_lkey(m.lkey()),
            // The pages go back now: the region never existed.
            Err(_) => user.release(),
        }
        mr
    }

    /// Deregisters the region (`ib_dereg_mr`, [`Handle::destroy`]):
    /// `EINVAL`, with the handle back, while memory windows are bound to
    /// it, as in the C rxe. May sleep.
    pub fn dereg(self) -> core::result::Result<(), (Mr, Error)> {
        self.destroy()
    }
}

impl Device {
    /// The MR that `key` names (index part), if any. The key byte is checked
    /// on access. Any context.
    pub(crate) fn mr_by_key(&self, key: u32) -> Option<Arc<MrCore>> {
        self.res.mr.get(key >> 8)
    }
}

/// Walks `sges` from byte `offset` of the list and calls `f` with
/// (SGE, offset within it, length) for `len` bytes. `Bounds` if the list
/// is shorter.
fn walk_sges(
    sges: &[Sge],
    mut offset: u64,
    len: u64,
    mut f: impl FnMut(&Sge, u64, u64) -> core::result::Result<(), AccessError>,
) -> core::result::Result<(), AccessError> {
    let mut left = len;
    for sge in sges {
        if left == 0 {
            break;
        }
        let l = u64::from(sge.length);
        if offset >= l {
            offset -= l;
            continue;
        }
        let n = core::cmp::min(l - offset, left);
        f(sge, offset, n)?;
        left -= n;
        offset = 0;
    }
    if left == 0 {
        Ok(())
    } else {
        Err(AccessError::Bounds)
    }
}

/// Copies `out.len()` bytes from the memory an SGE list describes, starting
/// `offset` bytes into the list: the device gathering what it sends. Each
/// SGE's key must be a valid MR of `pd` covering it.
pub(crate) fn gather(
    dev: &Device,
    pd: &PdCore,
    sges: &[Sge],
    offset: u64,
    out: &mut [u8],
) -> core::result::Result<(), AccessError> {
    let mut done = 0usize;
    walk_sges(sges, offset, out.len() as u64, |sge, off, n| {
        let mr = dev.mr_by_key(sge.lkey).ok_or(AccessError::Key)?;
        let n = n as usize;
        mr.copy_out(
            sge.lkey,
            pd,
            sge.addr + off,
            &mut out[done..done + n],
            Access::NONE,
        )?;
        done += n;
        Ok(())
    })
}

/// Copies `data` into the memory an SGE list describes, starting `offset`
/// bytes into the list: the device placing received data. Each SGE's MR
/// must grant local write.
pub(crate) fn scatter(
    dev: &Device,
    pd: &PdCore,
    sges: &[Sge],
    offset: u64,
    data: &[u8],
) -> core::result::Result<(), AccessError> {
    let mut done = 0usize;
    walk_sges(sges, offset, data.len() as u64, |sge, off, n| {
        let mr = dev.mr_by_key(sge.lkey).ok_or(AccessError::Key)?;
        let n = n as usize;
        mr.copy_in(
            sge.lkey,
            pd,
            sge.addr + off,
            &data[done..done + n],
            Access::LOCAL_WRITE,
        )?;
        done += n;
        Ok(())
    })
}

/// Checks every SGE of a list against its MR (key, PD, range and `need`,
/// which is `LOCAL_WRITE` for a list the device will write), touching no
/// memory: a provider checks before it starts moving data.
pub fn check_sges(
    dev: &Device,
    pd: &PdCore,
    sges: &[Sge],
    need: Access,
) -> core::result::Result<(), AccessError> {
    for sge in sges {
        let mr = dev.mr_by_key(sge.lkey).ok_or(AccessError::Key)?;
        mr.check(sge.lkey, pd, sge.addr, u64::from(sge.length), need)?;
    }
    Ok(())
}

/// The total length of an SGE list (`EINVAL` past 4 GiB).
pub fn sge_len(sges: &[Sge]) -> Result<u32> {
    sges.iter()
        .try_fold(0u32, |acc, s| acc.checked_add(s.length))
        .ok_or(EINVAL)
}
