// SPDX-License-Identifier: GPL-2.0

//! Block devices, for a server that exports them (RNBD's): a device opened
//! by path ([`BlockDev::open`]), what it announces ([`BlockDev::info`]),
//! IO on it from and into a [`Buffer`] ([`BlockDev::io`]), and a sysfs
//! link to it from a directory of ours ([`BlockDev::link_from`]).
//!
//! C header: [`include/linux/blkdev.h`](srctree/include/linux/blkdev.h)
//!
//! 6.12's `kernel` crate has no block device handle (`struct file` of
//! `bdev_file_open_by_path`) and no bio; the C glue (`block_glue.c`)
//! builds and submits the bio. An IO's data is the buffer's own memory:
//! the block layer reads or writes it directly, with no copy, as a
//! device's DMA would (a [`Buffer`] is DMA memory, see `kshim::mem`).
//! An IO waits for its completion (`submit_bio_wait`): callers are in
//! process context.

use core::ptr::NonNull;

use kernel::error::{from_err_ptr, to_result};
use kernel::prelude::*;
use kernel::str::CStr;

use crate::kshim::bindings;
use crate::kshim::class::SysDir;
use crate::kshim::mem::Buffer;

/// A block operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BioKind {
    /// Read into the buffer.
    Read,
    /// Write from the buffer.
    Write,
    /// Flush the device's volatile cache (no data).
    Flush,
    /// Discard sectors (no data).
    Discard,
    /// Erase sectors securely (no data).
    SecureErase,
    /// Write zeroes to sectors (no data).
    WriteZeroes,
}

impl BioKind {
    fn raw(self) -> u32 {
        match self {
            BioKind::Read => bindings::rdma_rs_bio_op_RDMA_RS_BIO_READ,
            BioKind::Write => bindings::rdma_rs_bio_op_RDMA_RS_BIO_WRITE,
            BioKind::Flush => bindings::rdma_rs_bio_op_RDMA_RS_BIO_FLUSH,
            BioKind::Discard => bindings::rdma_rs_bio_op_RDMA_RS_BIO_DISCARD,
            BioKind::SecureErase => bindings::rdma_rs_bio_op_RDMA_RS_BIO_SECURE_ERASE,
            BioKind::WriteZeroes => bindings::rdma_rs_bio_op_RDMA_RS_BIO_WRITE_ZEROES,
        }
    }

    /// True for the operations that move data (read, write).
    pub fn has_data(self) -> bool {
        matches!(self, BioKind::Read | BioKind::Write)
    }
}

/// A block operation with its flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BioOp {
    /// The operation.
    pub kind: BioKind,
    /// A synchronous request (`REQ_SYNC`).
    pub sync: bool,
    /// Forced unit access (`REQ_FUA`).
    pub fua: bool,
}

/// The data of an IO: `len` bytes of `buf` from `offset`.
#[derive(Clone, Copy)]
pub struct BioData<'a> {
    /// The buffer.
    pub buf: &'a Buffer,
    /// The first byte.
    pub offset: usize,
    /// How many bytes.
    pub len: u32,
}

/// What a block device announces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlockInfo {
    /// Size in 512-byte sectors.
    pub nsectors: u64,
    /// Logical block size in bytes.
    pub logical_block_size: u32,
    /// Physical block size in bytes.
    pub physical_block_size: u32,
    /// Segments per request at most.
    pub max_segments: u32,
    /// Sectors per request at most.
    pub max_hw_sectors: u32,
    /// Sectors per write-zeroes at most (0: not supported).
    pub max_write_zeroes_sectors: u32,
    /// Sectors per discard at most (0: not supported).
    pub max_discard_sectors: u32,
    /// Discard granularity in bytes.
    pub discard_granularity: u32,
    /// Discard alignment in bytes.
    pub discard_alignment: u32,
    /// Sectors per secure erase at most (0: not supported).
    pub max_secure_erase_sectors: u32,
    /// The device has a volatile write cache.
    pub write_cache: bool,
    /// The device honours forced unit access.
    pub fua: bool,
    /// The device is read-only.
    pub read_only: bool,
}

/// A block device, open for reading or for reading and writing until
/// dropped.
///
/// # Invariants
///
/// `file` came from a successful `rdma_rs_bdev_open` and is closed only in
/// `drop`.
pub struct BlockDev {
    file: NonNull<bindings::file>,
    write: bool,
    /// The device's name (`ram0`), NUL-terminated.
    name: [u8; 32],
}

// SAFETY: an open block device's file may be used and closed from any
// thread; every operation here takes its own references.
unsafe impl Send for BlockDev {}
// SAFETY: IO and queries on one open device may run concurrently (the
// block layer serialises what it must).
unsafe impl Sync for BlockDev {}

impl BlockDev {
    /// Opens the block device at `path` for reading, and writing if
    /// `write`. The errno of the open (`ENOENT`, `ENOTBLK`, `EACCES`,
    /// `EROFS`, ...) on failure. Process context; may sleep.
    pub fn open(path: &CStr, write: bool) -> Result<BlockDev> {
        // SAFETY: `path` is NUL-terminated and only read during the call.
        let file = from_err_ptr(unsafe { bindings::rdma_rs_bdev_open(path.as_char_ptr(), write) })?;
        let file = NonNull::new(file).ok_or(ENODEV)?;
        // INVARIANT: opened above, closed in `drop`.
        let mut dev = BlockDev {
            file,
            write,
            name: [0; 32],
        };
        let mut raw = bindings::rdma_rs_bdev_info::default();
        // SAFETY: the file is open (type invariant); `raw` is writable.
        unsafe { bindings::rdma_rs_bdev_info(dev.file.as_ptr(), &mut raw) };
        for (d, s) in dev.name.iter_mut().zip(raw.name.iter()) {
            *d = *s;
        }
        if let Some(last) = dev.name.last_mut() {
            *last = 0;
        }
        Ok(dev)
    }

    /// Whether the device was opened for writing.
    pub fn writable(&self) -> bool {
        self.write
    }

    /// The device's name in `/sys/class/block` (`ram0`).
    pub fn name(&self) -> &[u8] {
        let n = self.name.iter().position(|&b| b == 0).unwrap_or(0);
        &self.name[..n]
    }

    /// What the device announces now.
    pub fn info(&self) -> BlockInfo {
        let mut raw = bindings::rdma_rs_bdev_info::default();
        // SAFETY: the file is open (type invariant); `raw` is writable.
        unsafe { bindings::rdma_rs_bdev_info(self.file.as_ptr(), &mut raw) };
        BlockInfo {
            nsectors: raw.nsectors,
            logical_block_size: raw.logical_block_size,
            physical_block_size: raw.physical_block_size,
            max_segments: raw.max_segments,
            max_hw_sectors: raw.max_hw_sectors,
            max_write_zeroes_sectors: raw.max_write_zeroes_sectors,
            max_discard_sectors: raw.max_discard_sectors,
            discard_granularity: raw.discard_granularity,
            discard_alignment: raw.discard_alignment,
            max_secure_erase_sectors: raw.max_secure_erase_sectors,
            write_cache: raw.write_cache,
            fua: raw.fua,
            read_only: raw.read_only,
        }
    }

    /// Runs `op` at `sector` and waits for it: a read or write on `data`
    /// (required for them, refused for the others: `EINVAL`), any other
    /// operation on `bi_size` bytes. `EBADF` for a write of any kind on a
    /// device opened read-only; `EINVAL` for a range outside the buffer
    /// or data over 1 MiB; else the IO's errno (`EIO`, ...). Process
    /// context; sleeps.
    pub fn io(
        &self,
        op: BioOp,
        sector: u64,
        data: Option<BioData<'_>>,
        bi_size: u32,
        prio: u16,
    ) -> Result {
        if op.kind != BioKind::Read && !self.write {
            return Err(EBADF);
        }
        let (ptr, len) = match (op.kind.has_data(), data) {
            (true, Some(d)) if d.len > 0 => {
                let end = d.offset.checked_add(d.len as usize).ok_or(EINVAL)?;
                if end > d.buf.len() {
                    return Err(EINVAL);
                }
                (d.buf.ptr(d.offset).cast::<core::ffi::c_void>(), d.len)
            }
            (false, None) => (core::ptr::null_mut(), 0),
            _ => return Err(EINVAL),
        };
        let mut flags = 0;
        if op.sync {
            flags |= bindings::rdma_rs_bio_flag_RDMA_RS_BIO_SYNC;
        }
        if op.fua {
            flags |= bindings::rdma_rs_bio_flag_RDMA_RS_BIO_FUA;
        }
        // Why the call is sound:
        // - the file is open (type invariant);
        // - `ptr` and `len` are null and 0, or `len` bytes inside `data`'s
        //   buffer (checked above), which the borrow keeps allocated until
        //   the IO has completed (the call waits for it); the block layer
        //   reads or writes them as a device does DMA memory, which a
        //   buffer is meant for (`kshim::mem`: only copies ever touch it).
        // SAFETY: as listed above.
        let r = unsafe {
            bindings::rdma_rs_bdev_io(
                self.file.as_ptr(),
                op.kind.raw(),
                flags,
                sector,
                ptr,
                len,
                bi_size,
                prio,
            )
        };
        to_result(r)
    }

    /// Makes the link `name` in `dir` to the device's sysfs directory
    /// (`block_dev -> .../block/ram0`). It goes with `dir`. Process context.
    pub fn link_from(&self, dir: &SysDir, name: &CStr) -> Result {
        // Why the call is sound: the file is open (type invariant), `dir`
        // is an open directory (borrowed for the call), `name` is
        // NUL-terminated and copied.
        // SAFETY: as listed above.
        to_result(unsafe {
            bindings::rdma_rs_bdev_link(dir.raw(), name.as_char_ptr(), self.file.as_ptr())
        })
    }
}

impl Drop for BlockDev {
    fn drop(&mut self) {
        // SAFETY: the file is open (type invariant) and closed only here.
        unsafe { bindings::rdma_rs_bdev_close(self.file.as_ptr()) }
    }
}
