// SPDX-License-Identifier: GPL-2.0

//! Block devices of our own, for a block driver in another module (an
//! RNBD client's): a blk-mq disk ([`BlkDisk`]) with the queue limits the
//! driver gives it, whose requests reach the driver's [`BlkOps`] as
//! [`BlkRequest`]s, each ended exactly once.
//!
//! C header: [`include/linux/blk-mq.h`](srctree/include/linux/blk-mq.h)
//!
//! 6.12's `kernel::block::mq` has no driver data in its operations, only
//! a successful end of a request, no way to read a request's operation,
//! range or data, and no queue limits but block sizes; the C glue
//! (`blk_glue.c`) has them. The disk's one hardware queue may sleep
//! (`BLK_MQ_F_BLOCKING`): [`BlkOps::queue_rq`] runs in process context.
//!
//! A request's data is copied to and from a [`Buffer`]
//! ([`BlkRequest::copy_out`], [`BlkRequest::copy_in`]).
//!
//! Removing the disk (dropping the [`BlkDisk`]) waits for every request
//! in flight to end: a driver must end each one it was handed, which
//! [`BlkRequest`]'s drop does with `EIO` if the driver did not.

use core::ffi::c_void;
use core::ptr::NonNull;

use kernel::error::from_err_ptr;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::ThisModule;

use crate::kshim::bindings;
use crate::kshim::class::SysDir;
use crate::kshim::mem::Buffer;
use crate::kshim::pages::{PageSlice, SharedPage};

/// What a disk announces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BlkLimits {
    /// Size in 512-byte sectors.
    pub nsectors: u64,
    /// Logical block size (bytes).
    pub logical_block_size: u32,
    /// Physical block size (bytes).
    pub physical_block_size: u32,
    /// Sectors per request at most.
    pub max_hw_sectors: u32,
    /// Segments per request at most.
    pub max_segments: u32,
    /// Sectors per discard at most (0: none).
    pub max_discard_sectors: u32,
    /// Discard granularity (bytes).
    pub discard_granularity: u32,
    /// Sectors per write zeroes at most (0: none).
    pub max_write_zeroes_sectors: u32,
    /// Sectors per secure erase at most (0: none).
    pub max_secure_erase_sectors: u32,
    /// Requests in flight at most.
    pub queue_depth: u32,
    /// A volatile write cache (flushes are sent).
    pub write_cache: bool,
    /// Forced unit access honoured.
    pub fua: bool,
    /// Read-only.
    pub read_only: bool,
}

/// A request's operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RqOp {
    /// Read into the request's pages.
    Read,
    /// Write the request's pages.
    Write,
    /// Flush the volatile cache.
    Flush,
    /// Discard the range.
    Discard,
    /// Erase the range securely.
    SecureErase,
    /// Write zeroes to the range.
    WriteZeroes,
    /// Anything else (ended with `EOPNOTSUPP` by most drivers).
    Other,
}

/// What a disk's driver does with its requests.
pub trait BlkOps: Send + Sync {
    /// A request, started: the driver ends it ([`BlkRequest::end`]) now
    /// or later, from any context. Process context; may sleep.
    fn queue_rq(&self, rq: BlkRequest);
}

/// A request handed to a driver: ended exactly once, by
/// [`BlkRequest::end`] or, failing that, by its drop (`EIO`).
///
/// # Invariants
///
/// `rq` is a started request of a live disk, not ended yet; only this
/// value ends it.
pub struct BlkRequest {
    rq: NonNull<bindings::request>,
}

// SAFETY: a started request may be read and ended from any thread; this
// value is its only owner.
unsafe impl Send for BlkRequest {}

impl BlkRequest {
    /// The operation.
    pub fn op(&self) -> RqOp {
        // SAFETY: a started request (type invariant).
        match unsafe { bindings::rdma_rs_rq_op(self.rq.as_ptr()) } {
            bindings::rdma_rs_rq_op_RDMA_RS_RQ_READ => RqOp::Read,
            bindings::rdma_rs_rq_op_RDMA_RS_RQ_WRITE => RqOp::Write,
            bindings::rdma_rs_rq_op_RDMA_RS_RQ_FLUSH => RqOp::Flush,
            bindings::rdma_rs_rq_op_RDMA_RS_RQ_DISCARD => RqOp::Discard,
            bindings::rdma_rs_rq_op_RDMA_RS_RQ_SECURE_ERASE => RqOp::SecureErase,
            bindings::rdma_rs_rq_op_RDMA_RS_RQ_WRITE_ZEROES => RqOp::WriteZeroes,
            _ => RqOp::Other,
        }
    }

    fn flags(&self) -> u32 {
        // SAFETY: a started request (type invariant).
        unsafe { bindings::rdma_rs_rq_flags(self.rq.as_ptr()) }
    }

    /// `REQ_SYNC`.
    pub fn sync(&self) -> bool {
        self.flags() & bindings::rdma_rs_rq_flag_RDMA_RS_RQ_SYNC != 0
    }

    /// `REQ_FUA`.
    pub fn fua(&self) -> bool {
        self.flags() & bindings::rdma_rs_rq_flag_RDMA_RS_RQ_FUA != 0
    }

    /// The first sector (512 bytes); meaningless for a flush (the block
    /// layer's flush requests have all ones).
    pub fn sector(&self) -> u64 {
        // SAFETY: a started request (type invariant).
        unsafe { bindings::rdma_rs_rq_pos(self.rq.as_ptr()) }
    }

    /// The bytes the request covers.
    pub fn bytes(&self) -> u32 {
        // SAFETY: a started request (type invariant).
        unsafe { bindings::rdma_rs_rq_bytes(self.rq.as_ptr()) }
    }

    /// The request's tag: unique among the disk's requests in flight,
    /// below its queue depth.
    pub fn tag(&self) -> u32 {
        // SAFETY: a started request (type invariant).
        unsafe { bindings::rdma_rs_rq_tag(self.rq.as_ptr()) }
    }

    fn copy(&self, buf: &Buffer, offset: usize, len: u32, to_rq: bool) -> Result {
        let end = offset.checked_add(len as usize).ok_or(EINVAL)?;
        if end > buf.len() {
            return Err(EINVAL);
        }
        // Why the call is sound: the request is started and not ended
        // (type invariant), so its pages are the caller's; `len` bytes at
        // `offset` are inside `buf` (checked above), borrowed for the
        // call; the glue checks `len` against the request's payload.
        // SAFETY: as listed above.
        kernel::error::to_result(unsafe {
            bindings::rdma_rs_rq_copy(
                self.rq.as_ptr(),
                buf.ptr(offset).cast::<c_void>(),
                len,
                to_rq,
            )
        })
    }

    /// Copies a write's data (all [`BlkRequest::bytes`] of it) into
    /// `buf` at `offset`. `EINVAL` if it does not fit or `len` is not
    /// the request's payload.
    pub fn copy_out(&self, buf: &Buffer, offset: usize, len: u32) -> Result {
        self.copy(buf, offset, len, false)
    }

    /// Copies `len` bytes of `buf` at `offset` into a read's pages.
    /// `EINVAL` as [`BlkRequest::copy_out`].
    pub fn copy_in(&self, buf: &Buffer, offset: usize, len: u32) -> Result {
        self.copy(buf, offset, len, true)
    }

    /// Appends the request's data to `out` as pieces of pages, one page
    /// each, in order, each holding a reference of its own on its page
    /// (so the pages outlive the request if a piece does). `E2BIG`
    /// (nothing appended) if they need more than `out`'s spare room: no
    /// allocation here.
    pub fn pages(&self, out: &mut KVec<PageSlice>) -> Result {
        const STEP: usize = 16;
        let start = out.len();
        let mut skip = 0u32;
        loop {
            let mut raw = [bindings::rdma_rs_rq_piece {
                page: core::ptr::null_mut(),
                offset: 0,
                len: 0,
            }; STEP];
            // Why the call is sound: the request is started and not ended
            // (type invariant), so its pages are the caller's; `raw` has
            // room for the `STEP` pieces the glue may fill, and each
            // piece filled comes with a page reference taken for us.
            // SAFETY: as listed above.
            let n = unsafe {
                bindings::rdma_rs_rq_pieces(self.rq.as_ptr(), skip, raw.as_mut_ptr(), STEP as u32)
            };
            let n = (n.max(0) as usize).min(STEP);
            let mut full = false;
            for r in raw.iter().take(n) {
                let Some(page) = NonNull::new(r.page) else {
                    continue;
                };
                // SAFETY: the glue took this reference for us (above); it
                // becomes the piece's.
                let page = unsafe { SharedPage::adopt(page) };
                let piece = PageSlice {
                    page,
                    offset: r.offset as usize,
                    len: r.len as usize,
                };
                if full || out.len() == out.capacity() {
                    // Dropped: its reference goes.
                    full = true;
                    drop(piece);
                    continue;
                }
                out.push(piece, GFP_ATOMIC).map_err(|_| E2BIG)?;
            }
            if full {
                while out.len() > start {
                    drop(crate::kshim::vec::pop(out));
                }
                return Err(E2BIG);
            }
            if n < STEP {
                return Ok(());
            }
            skip += STEP as u32;
        }
    }

    /// Ends the request: `Ok` or the error it failed with. Any context.
    pub fn end(self, r: Result) {
        let err = match r {
            Ok(()) => 0,
            Err(e) => e.to_errno(),
        };
        let rq = self.rq;
        core::mem::forget(self);
        // SAFETY: started and not ended (type invariant); `self` is
        // forgotten, so nothing ends it again.
        unsafe { bindings::rdma_rs_rq_end(rq.as_ptr(), err) }
    }
}

impl Drop for BlkRequest {
    fn drop(&mut self) {
        // SAFETY: started and not ended (type invariant); dropped once.
        unsafe { bindings::rdma_rs_rq_end(self.rq.as_ptr(), EIO.to_errno()) }
    }
}

/// A disk of ours, `/dev/<name>`, until dropped.
///
/// # Invariants
///
/// `raw` came from a successful `rdma_rs_blk_add` with the address of
/// `_ops`' content as context, and is removed only in `drop`, before
/// `_ops` is freed (field order).
pub struct BlkDisk {
    raw: NonNull<bindings::rdma_rs_blk>,
    _ops: KBox<Arc<dyn BlkOps>>,
}

// SAFETY: the disk is removed through this handle only, from any thread
// in process context; the ops are `Send + Sync`.
unsafe impl Send for BlkDisk {}
// SAFETY: `&BlkDisk` only reads the name and sets the capacity, which
// the block layer serialises.
unsafe impl Sync for BlkDisk {}

impl BlkDisk {
    /// Adds the disk `/dev/<name>` with `lim`, its requests going to
    /// `ops`; opening it holds `owner` (the driver's module). `EINVAL` for
    /// a name of 32 bytes or more or a queue depth of 0. Process context.
    pub fn add(
        name: &CStr,
        lim: &BlkLimits,
        owner: &'static ThisModule,
        ops: Arc<dyn BlkOps>,
    ) -> Result<BlkDisk> {
        let raw_lim = bindings::rdma_rs_blk_limits {
            nsectors: lim.nsectors,
            logical_block_size: lim.logical_block_size,
            physical_block_size: lim.physical_block_size,
            max_hw_sectors: lim.max_hw_sectors,
            max_segments: lim.max_segments,
            max_discard_sectors: lim.max_discard_sectors,
            discard_granularity: lim.discard_granularity,
            max_write_zeroes_sectors: lim.max_write_zeroes_sectors,
            max_secure_erase_sectors: lim.max_secure_erase_sectors,
            queue_depth: lim.queue_depth,
            write_cache: lim.write_cache,
            fua: lim.fua,
            read_only: lim.read_only,
        };
        let ops = KBox::new(ops, GFP_KERNEL)?;
        let ctx = core::ptr::from_ref::<Arc<dyn BlkOps>>(&ops).cast::<c_void>();
        // Why the call is sound:
        // - `name` is NUL-terminated and copied; `raw_lim` is read during
        //   the call only;
        // - `owner` is the caller's module, loaded while the disk exists
        //   (the module drops the disk before it goes);
        // - `ctx` is only handed to `rdma_rs_blk_queue_rq` while the disk
        //   exists, and the disk is removed (waiting for its requests)
        //   before `ops` is freed.
        // SAFETY: as listed above.
        let raw = unsafe {
            bindings::rdma_rs_blk_add(
                name.as_char_ptr(),
                &raw_lim,
                owner.as_ptr().cast::<bindings::module>(),
                ctx,
            )
        };
        let raw = NonNull::new(from_err_ptr(raw)?).ok_or(ENOMEM)?;
        // INVARIANT: added above with `ops`' content as context.
        Ok(BlkDisk { raw, _ops: ops })
    }

    /// The disk's name.
    pub fn name(&self) -> &CStr {
        // SAFETY: the disk is live (type invariant); its name is a
        // NUL-terminated array in the gendisk, which outlives `self`'s
        // borrow.
        unsafe { CStr::from_char_ptr(bindings::rdma_rs_blk_name(self.raw.as_ptr())) }
    }

    /// How many times the disk is open now (it may change at once: a
    /// hint for refusing an unmap, not a lock).
    pub fn openers(&self) -> u32 {
        // SAFETY: the disk is live (type invariant).
        unsafe { bindings::rdma_rs_blk_openers(self.raw.as_ptr()) }
    }

    /// Makes the link `name` in `dir` to the disk's sysfs directory
    /// (`block -> .../block/<disk>`). It goes with `dir`. Process context.
    pub fn link_from(&self, dir: &SysDir, name: &CStr) -> Result {
        // Why the call is sound: the disk is live (type invariant), `dir`
        // is an open directory (borrowed for the call), `name` is
        // NUL-terminated and copied.
        // SAFETY: as listed above.
        kernel::error::to_result(unsafe {
            bindings::rdma_rs_blk_link(dir.raw(), name.as_char_ptr(), self.raw.as_ptr())
        })
    }

    /// Sets the size (sectors), telling user space.
    pub fn set_capacity(&self, nsectors: u64) {
        // SAFETY: the disk is live (type invariant).
        unsafe { bindings::rdma_rs_blk_set_capacity(self.raw.as_ptr(), nsectors) }
    }
}

impl Drop for BlkDisk {
    fn drop(&mut self) {
        // Waits for the requests in flight, then frees the disk; `_ops`
        // goes after this (field order).
        // SAFETY: live (type invariant), removed only here.
        unsafe { bindings::rdma_rs_blk_del(self.raw.as_ptr()) }
    }
}

/// A request of a disk, from `blk_glue.c`.
///
/// # Safety
///
/// `ctx` must be the context of a live [`BlkDisk`] and `rq` one of its
/// requests, started and handed over once.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_blk_queue_rq(
    ctx: *const c_void,
    rq: *mut bindings::request,
) {
    // SAFETY: per the function's contract `ctx` points at the live ops of
    // a disk (type invariant of `BlkDisk`).
    let ops = unsafe { &*ctx.cast::<Arc<dyn BlkOps>>() };
    let Some(rq) = NonNull::new(rq) else {
        return;
    };
    // INVARIANT: started, handed over once (the function's contract).
    ops.queue_rq(BlkRequest { rq });
}
