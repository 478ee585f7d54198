// SPDX-License-Identifier: GPL-2.0

//! Memory a device reads and writes: [`Buffer`], and scatter/gather entries.
//!
//! A software RDMA device addresses kernel memory by its virtual address (as
//! the C rxe does with `ib_virt_dma_ops`), so a device address is a kernel
//! pointer. Handing a device arbitrary addresses would let safe code write
//! anywhere; instead, ULPs allocate [`Buffer`]s and register memory regions
//! over them (the region keeps the buffer alive), and the core checks every
//! access a provider makes against the region (`rdma::verbs::mr`).
//!
//! A buffer is DMA memory in all but name: the device may write it at any
//! time (a peer's RDMA WRITE), so the CPU never gets a Rust reference into
//! it, only copies in and out ([`Buffer::write`], [`Buffer::read`]), as C code
//! uses `memcpy` on DMA buffers. The device side copies by device address
//! ([`Buffer::write_at`], [`Buffer::read_at`], [`Buffer::atomic_at`]).
//!
//! Every live buffer is also in one map by address, so that a PD's global
//! DMA key (`IB_PD_UNSAFE_GLOBAL_RKEY`, `rdma::verbs::pd`) reaches any
//! buffer, and nothing else: [`dma_write`], [`dma_read`] and [`dma_atomic`]
//! find the buffer that holds an address range and copy under the map's
//! lock, which a buffer takes to leave the map before it is freed.

use core::ptr;

use kernel::error::code::{EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::rbtree::{RBTree, RBTreeNode};
use kernel::sync::Arc;

use crate::kshim::global::Global;
use crate::kshim::sync::SpinLockIrq;

/// A scatter/gather entry (`struct ib_sge`): `length` bytes at device
/// address `addr`, covered by the memory region of local key `lkey`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sge {
    /// Device address of the first byte.
    pub addr: u64,
    /// Length in bytes.
    pub length: u32,
    /// Local key of the memory region that covers the range.
    pub lkey: u32,
}

/// Zero-initialised kernel memory for RDMA, reference counted.
///
/// # Invariants
///
/// - `base`, `len` and `cap` are the parts of a `KVVec<u8>` of `len`
///   initialised bytes, owned by the buffer and freed in `drop`.
/// - From `new` until `drop` has taken it out, `[base, base + len)` is in
///   the live-buffer map.
pub struct Buffer {
    /// The allocation of a `KVVec<u8>` taken apart, so that every access
    /// goes through this pointer of mutable provenance.
    base: *mut u8,
    len: usize,
    cap: usize,
}

// SAFETY: the buffer owns its allocation and only hands out copies; bytes
// are plain data that any thread may copy in or out.
unsafe impl Send for Buffer {}
// SAFETY: as above; concurrent copies are the intended use (DMA memory).
unsafe impl Sync for Buffer {}

impl Drop for Buffer {
    fn drop(&mut self) {
        // Out of the map first: a DMA copy holds its lock while it touches
        // the bytes, so none is in progress once this returns.
        if let Some(map) = LIVE.get() {
            map.lock().remove(&(self.base as usize));
        }
        // SAFETY: the three values came from `KVVec::into_raw_parts` in
        // `Buffer::new` and were not changed since (type invariant).
        drop(unsafe { KVVec::from_raw_parts(self.base, self.len, self.cap) });
    }
}

/// Live buffers by base address: their base pointers and lengths.
type LiveMap = SpinLockIrq<RBTree<usize, (Base, usize)>>;

/// A live buffer's base pointer, as the map keeps it.
#[derive(Clone, Copy)]
struct Base(*mut u8);

// SAFETY: only an address to copy through while the map's lock is held; it
// is never dereferenced without that lock (see `with_live`).
unsafe impl Send for Base {}

/// The live-buffer map, set while `rdma_core` is loaded.
static LIVE: Global<LiveMap> = Global::new();

/// Sets up the live-buffer map (module init).
pub(crate) fn init() -> Result {
    let map = Arc::pin_init(
        crate::new_spinlock_irq!(RBTree::new(), "mem::LIVE"),
        GFP_KERNEL,
    )?;
    drop(LIVE.replace(Some(map)));
    Ok(())
}

/// Drops the live-buffer map (module exit, when no buffer is left).
pub(crate) fn exit() {
    drop(LIVE.replace(None));
}

/// Runs `f` with a raw pointer to `len` bytes at device address `addr`,
/// with the map locked, if a live buffer holds the whole range.
fn with_live<R>(addr: u64, len: usize, f: impl FnOnce(*mut u8) -> R) -> Result<R> {
    let map = LIVE.get().ok_or(ENODEV)?;
    let mut map = map.lock();
    let Ok(addr_us) = usize::try_from(addr) else {
        return Err(EINVAL);
    };
    // The buffer with the highest base at or below `addr`.
    let found = match map.cursor_lower_bound(&addr_us.saturating_add(1)) {
        Some(c) => c.peek_prev().map(|(b, v)| (*b, *v)),
        None => map.cursor_back().map(|c| {
            let (b, v) = c.current();
            (*b, *v)
        }),
    };
    match found {
        Some((base, (ptr, blen)))
            if addr_us >= base && len <= blen && addr_us - base <= blen - len =>
        {
            Ok(f(ptr.0.wrapping_add(addr_us - base)))
        }
        _ => Err(EINVAL),
    }
}

/// Copies `data` to device address `addr`, which must lie in a live
/// [`Buffer`] (`EINVAL` otherwise). Any context.
pub fn dma_write(addr: u64, data: &[u8]) -> Result {
    with_live(addr, data.len(), |p| {
        // SAFETY: `p` is valid for `data.len()` bytes: they are inside a
        // buffer in the map, which cannot be freed while the map is locked
        // (`Buffer::drop` takes the lock first); `data` is a separate slice.
        unsafe { ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) }
    })
}

/// Copies from device address `addr`, which must lie in a live [`Buffer`]
/// (`EINVAL` otherwise), into `out`. Any context.
pub fn dma_read(addr: u64, out: &mut [u8]) -> Result {
    with_live(addr, out.len(), |p| {
        // SAFETY: as in `dma_write`, with `out` the destination.
        unsafe { ptr::copy_nonoverlapping(p, out.as_mut_ptr(), out.len()) }
    })
}

/// Replaces the 8 bytes at device address `addr` (8-byte aligned, in a
/// live [`Buffer`]; `EINVAL` otherwise) by `f` of their value, and returns
/// the old value, atomically with respect to every other atomic on those
/// bytes (whichever MR, QP or device it comes through). Any context.
pub fn dma_atomic(addr: u64, f: impl Fn(u64) -> u64) -> Result<u64> {
    if addr % 8 != 0 {
        return Err(EINVAL);
    }
    with_live(addr, 8, |p| {
        // SAFETY: `p` is valid for 8 bytes as in `dma_write`, and 8-byte
        // aligned: `addr` is, and every buffer's base is at least 8-byte
        // aligned (kvmalloc).
        unsafe { rmw_u64(p, f) }
    })
}

/// Replaces the `u64` at `p` by `f` of it in one atomic step (a
/// compare-and-exchange loop, `f` called again if another CPU changed the
/// value meanwhile), and returns the old value. Atomic as an HCA's atomics
/// are: with respect to other atomics, not to plain copies.
///
/// # Safety
///
/// `p` must be valid for reads and writes of 8 bytes and 8-byte aligned.
unsafe fn rmw_u64(p: *mut u8, f: impl Fn(u64) -> u64) -> u64 {
    // SAFETY: the caller's guarantee: valid and aligned for a `u64`. Every
    // atomic access to these bytes goes through here; plain copies (a
    // peer's WRITE) may race it, as they race a device's atomics.
    let word = unsafe { core::sync::atomic::AtomicU64::from_ptr(p.cast::<u64>()) };
    let mut old = word.load(core::sync::atomic::Ordering::Relaxed);
    loop {
        match word.compare_exchange_weak(
            old,
            f(old),
            core::sync::atomic::Ordering::AcqRel,
            core::sync::atomic::Ordering::Relaxed,
        ) {
            Ok(v) => return v,
            Err(now) => old = now,
        }
    }
}

impl Buffer {
    /// Allocates `len` zeroed bytes (`kvmalloc`: large buffers come from
    /// vmalloc). `EINVAL` for an empty or over-4-GiB buffer.
    pub fn new(len: usize) -> Result<Arc<Buffer>> {
        if len == 0 || len > u32::MAX as usize {
            return Err(EINVAL);
        }
        let map = LIVE.get().ok_or(ENODEV)?;
        let (base, len, cap) = KVVec::from_elem(0u8, len, GFP_KERNEL)?.into_raw_parts();
        let buffer = Buffer { base, len, cap };
        let node = RBTreeNode::new(base as usize, (Base(base), len), GFP_KERNEL)?;
        let buffer = Arc::new(buffer, GFP_KERNEL)?;
        // INVARIANT: in the map from here until `drop`.
        drop(map.lock().insert(node));
        Ok(buffer)
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: buffers are never empty.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The device address of byte `offset`.
    pub fn addr(&self, offset: usize) -> u64 {
        self.base as u64 + offset as u64
    }

    /// Whether `[addr, addr + len)` lies inside the buffer.
    pub fn contains(&self, addr: u64, len: u64) -> bool {
        let start = self.addr(0);
        addr >= start && len <= self.len() as u64 && addr - start <= self.len() as u64 - len
    }

    /// An SGE for `len` bytes at `offset`, with key `lkey` (`EINVAL` when
    /// the range is not inside the buffer).
    pub fn sge(&self, offset: usize, len: u32, lkey: u32) -> Result<Sge> {
        self.check(offset, len as usize)?;
        Ok(Sge {
            addr: self.addr(offset),
            length: len,
            lkey,
        })
    }

    fn check(&self, offset: usize, len: usize) -> Result {
        if offset <= self.len() && len <= self.len() - offset {
            Ok(())
        } else {
            Err(EINVAL)
        }
    }

    /// Copies `data` into the buffer at `offset`.
    pub fn write(&self, offset: usize, data: &[u8]) -> Result {
        self.check(offset, data.len())?;
        // SAFETY: the range is inside the allocation (checked above) and
        // `data` is a separate Rust slice, so they do not overlap.
        unsafe { ptr::copy_nonoverlapping(data.as_ptr(), self.ptr(offset), data.len()) };
        Ok(())
    }

    /// Copies bytes at `offset` out into `out`.
    pub fn read(&self, offset: usize, out: &mut [u8]) -> Result {
        self.check(offset, out.len())?;
        // SAFETY: as in `write`.
        unsafe { ptr::copy_nonoverlapping(self.ptr(offset), out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// Sets `len` bytes at `offset` to `byte`.
    pub fn fill(&self, offset: usize, len: usize, byte: u8) -> Result {
        self.check(offset, len)?;
        // SAFETY: the range is inside the allocation (checked above).
        unsafe { ptr::write_bytes(self.ptr(offset), byte, len) };
        Ok(())
    }

    /// A raw pointer to byte `offset`, for the core's copy paths (and the
    /// block layer's IO, `kshim::block`).
    pub(crate) fn ptr(&self, offset: usize) -> *mut u8 {
        self.base.wrapping_add(offset)
    }

    /// Copies `data` into the buffer at device address `addr` (`EINVAL`
    /// when the range is not inside the buffer).
    pub fn write_at(&self, addr: u64, data: &[u8]) -> Result {
        self.write(self.offset_of(addr, data.len())?, data)
    }

    /// Copies bytes at device address `addr` out into `out` (`EINVAL` when
    /// the range is not inside the buffer).
    pub fn read_at(&self, addr: u64, out: &mut [u8]) -> Result {
        self.read(self.offset_of(addr, out.len())?, out)
    }

    /// Replaces the 8 bytes at device address `addr` (8-byte aligned,
    /// inside the buffer; `EINVAL` otherwise) by `f` of their value, and
    /// returns the old value, atomically with respect to every other
    /// atomic on those bytes (`f` may run more than once). Any context.
    pub fn atomic_at(&self, addr: u64, f: impl Fn(u64) -> u64) -> Result<u64> {
        if addr % 8 != 0 {
            return Err(EINVAL);
        }
        let off = self.offset_of(addr, 8)?;
        // SAFETY: the 8 bytes at `off` are inside the allocation (checked
        // by `offset_of`) and 8-byte aligned: `addr` is, and the base is at
        // least 8-byte aligned (kvmalloc).
        Ok(unsafe { rmw_u64(self.ptr(off), f) })
    }

    /// The offset of device address `addr`, when `len` bytes there are
    /// inside the buffer.
    fn offset_of(&self, addr: u64, len: usize) -> Result<usize> {
        if self.contains(addr, len as u64) {
            Ok((addr - self.addr(0)) as usize)
        } else {
            Err(EINVAL)
        }
    }
}
