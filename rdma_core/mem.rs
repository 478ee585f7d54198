// SPDX-License-Identifier: GPL-2.0

//! Memory a device reads and writes: [`Buffer`], and scatter/gather entries.
//!
//! A software RDMA device addresses kernel memory by its virtual address (as
//! the C rxe does with `ib_virt_dma_ops`), so a device address is a kernel
//! pointer. Handing a device arbitrary addresses would let safe code write
//! anywhere; instead, ULPs allocate [`Buffer`]s and register memory regions
//! over them (the region keeps the buffer alive), and the core checks every
//! access a provider makes against the region (`rdma::mr`).
//!
//! A buffer is DMA memory in all but name: the device may write it at any
//! time (a peer's RDMA WRITE), so the CPU never gets a Rust reference into
//! it, only copies in and out ([`Buffer::write`], [`Buffer::read`]), as C code
//! uses `memcpy` on DMA buffers.

use core::ptr;

use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::sync::Arc;

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
        // SAFETY: the three values came from `KVVec::into_raw_parts` in
        // `Buffer::new` and were not changed since.
        drop(unsafe { KVVec::from_raw_parts(self.base, self.len, self.cap) });
    }
}

impl Buffer {
    /// Allocates `len` zeroed bytes (`kvmalloc`: large buffers come from
    /// vmalloc). `EINVAL` for an empty or over-4-GiB buffer.
    pub fn new(len: usize) -> Result<Arc<Buffer>> {
        if len == 0 || len > u32::MAX as usize {
            return Err(EINVAL);
        }
        let (base, len, cap) = KVVec::from_elem(0u8, len, GFP_KERNEL)?.into_raw_parts();
        Ok(Arc::new(Buffer { base, len, cap }, GFP_KERNEL)?)
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

    /// A raw pointer to byte `offset`, for the core's copy paths.
    fn ptr(&self, offset: usize) -> *mut u8 {
        self.base.wrapping_add(offset)
    }

    /// A raw pointer to the byte at device address `addr`, which the caller
    /// has checked with [`Buffer::contains`].
    pub(crate) fn ptr_at(&self, addr: u64) -> *mut u8 {
        self.ptr((addr - self.addr(0)) as usize)
    }
}
