// SPDX-License-Identifier: GPL-2.0

//! Selftest: a disk of our own through `rdma::kshim::blk`, a RAM disk of
//! [`SIZE`] bytes in a `Buffer`: `/dev/rdmarsblk0`, 4 KiB physical and
//! 512-byte logical blocks, 64 KiB requests at most, a write cache with
//! FUA, discard and write zeroes (both zero the range). Every request is
//! served in `queue_rq` and ended there; one outside the disk ends with
//! `EIO`, an operation it does not know with `EOPNOTSUPP`. `blk.sh`
//! reads and writes it, makes a file system on it and checks what the
//! block layer shows of its limits.

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::kshim::blk::{BlkDisk, BlkLimits, BlkOps, BlkRequest, RqOp};
use rdma::kshim::errno::eopnotsupp;
use rdma::kshim::mem::Buffer;

module! {
    type: BlkTest,
    name: "rdma_blk_test",
    author: "rdma-rs developers",
    description: "Selftest: a RAM disk on rdma::kshim::blk",
    license: "GPL",
}

/// The disk's size.
const SIZE: usize = 32 << 20;

struct RamDisk {
    mem: Arc<Buffer>,
}

impl RamDisk {
    fn serve(&self, rq: &BlkRequest) -> Result {
        // A flush has no range (its sector is all ones).
        match rq.op() {
            RqOp::Flush => return Ok(()),
            RqOp::Other => return Err(eopnotsupp()),
            _ => {}
        }
        let at = usize::try_from(rq.sector())
            .map_err(|_| EIO)?
            .checked_mul(512)
            .ok_or(EIO)?;
        let len = rq.bytes();
        let end = at.checked_add(len as usize).ok_or(EIO)?;
        if end > SIZE {
            return Err(EIO);
        }
        match rq.op() {
            RqOp::Read => rq.copy_in(&self.mem, at, len),
            RqOp::Write => rq.copy_out(&self.mem, at, len),
            RqOp::Discard | RqOp::WriteZeroes | RqOp::SecureErase => {
                self.mem.fill(at, len as usize, 0)
            }
            RqOp::Flush | RqOp::Other => Ok(()),
        }
    }
}

impl BlkOps for RamDisk {
    fn queue_rq(&self, rq: BlkRequest) {
        let r = self.serve(&rq);
        if let Err(e) = r {
            pr_warn!(
                "rdma blk test: {:?} at {} of {} bytes: errno {}\n",
                rq.op(),
                rq.sector(),
                rq.bytes(),
                e.to_errno()
            );
        }
        rq.end(r);
    }
}

struct BlkTest {
    _disk: BlkDisk,
}

impl kernel::Module for BlkTest {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let ops = Arc::new(
            RamDisk {
                mem: Buffer::new(SIZE)?,
            },
            GFP_KERNEL,
        )?;
        let lim = BlkLimits {
            nsectors: (SIZE / 512) as u64,
            logical_block_size: 512,
            physical_block_size: 4096,
            max_hw_sectors: 128,
            max_segments: 32,
            max_discard_sectors: 8192,
            discard_granularity: 4096,
            max_write_zeroes_sectors: 8192,
            max_secure_erase_sectors: 0,
            queue_depth: 16,
            write_cache: true,
            fua: true,
            read_only: false,
        };
        let disk = BlkDisk::add(c_str!("rdmarsblk0"), &lim, module, ops)?;
        pr_info!(
            "rdma blk test: /dev/{} added\n",
            disk.name().to_str().unwrap_or("?")
        );
        Ok(BlkTest { _disk: disk })
    }
}
