// SPDX-License-Identifier: GPL-2.0

//! A client's statistics and their sysfs files.
//!
//! Each client has one directory, `<name>/`, in
//! `/sys/kernel/infiniband/memory_peers/` (the path of the Peer-Direct
//! proposal) and in `/sys/kernel/mm/memory_peers/` (the path the
//! out-of-tree stacks later used), with the same files:
//!
//! - `version`: the client's version string;
//! - `num_alloc_mrs`, `num_dealloc_mrs`: regions built on its memory, and
//!   released;
//! - `num_reg_pages`, `num_reg_bytes`: pages and bytes of those regions
//!   when built; `num_dereg_pages`, `num_dereg_bytes`: when their pages
//!   went back to the client (at deregistration, or at invalidation);
//! - `num_free_callbacks`: invalidations the client made;
//! - `num_refused_dma_only`: registrations refused (`EOPNOTSUPP`) because
//!   the client mapped its memory for DMA only (no `struct page` in its
//!   table), which a software device cannot reach;
//! - `num_refused_no_dma_device`: registrations refused (`EOPNOTSUPP`)
//!   before `get_pages` because the client needs a DMA device (it did not
//!   register with `PEER_MEM_CPU_PAGES`) and the device has none.
//!
//! The directories go with the client's registration.

use core::fmt::Write;
use core::sync::atomic::{AtomicU64, Ordering};

use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::kshim::kobj::{KobjDir, KobjShow, StatsDir};
use rdma::kshim::sysfs::Page;

/// The files of a client's directory, in [`Stats::show`]'s order.
pub(crate) const FILES: &[&CStr] = &[
    c_str!("version"),
    c_str!("num_alloc_mrs"),
    c_str!("num_dealloc_mrs"),
    c_str!("num_reg_pages"),
    c_str!("num_dereg_pages"),
    c_str!("num_reg_bytes"),
    c_str!("num_dereg_bytes"),
    c_str!("num_free_callbacks"),
    c_str!("num_refused_dma_only"),
    c_str!("num_refused_no_dma_device"),
];

/// One client's counters.
pub(crate) struct Stats {
    version: [u8; 16],
    pub(crate) alloc_mrs: AtomicU64,
    pub(crate) dealloc_mrs: AtomicU64,
    pub(crate) reg_pages: AtomicU64,
    pub(crate) dereg_pages: AtomicU64,
    pub(crate) reg_bytes: AtomicU64,
    pub(crate) dereg_bytes: AtomicU64,
    pub(crate) free_callbacks: AtomicU64,
    pub(crate) refused_dma_only: AtomicU64,
    pub(crate) refused_no_dma_device: AtomicU64,
}

impl Stats {
    pub(crate) fn new(version: &[u8]) -> Stats {
        let mut v = [0u8; 16];
        let n = core::cmp::min(version.len(), 15);
        v[..n].copy_from_slice(&version[..n]);
        Stats {
            version: v,
            alloc_mrs: AtomicU64::new(0),
            dealloc_mrs: AtomicU64::new(0),
            reg_pages: AtomicU64::new(0),
            dereg_pages: AtomicU64::new(0),
            reg_bytes: AtomicU64::new(0),
            dereg_bytes: AtomicU64::new(0),
            free_callbacks: AtomicU64::new(0),
            refused_dma_only: AtomicU64::new(0),
            refused_no_dma_device: AtomicU64::new(0),
        }
    }

    /// A region was built: `pages` pages, `bytes` bytes.
    pub(crate) fn built(&self, pages: u64, bytes: u64) {
        self.alloc_mrs.fetch_add(1, Ordering::Relaxed);
        self.reg_pages.fetch_add(pages, Ordering::Relaxed);
        self.reg_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// A region's pages went back to the client.
    pub(crate) fn unpinned(&self, pages: u64, bytes: u64) {
        self.dereg_pages.fetch_add(pages, Ordering::Relaxed);
        self.dereg_bytes.fetch_add(bytes, Ordering::Relaxed);
    }
}

impl KobjShow for Stats {
    fn show(&self, attr: usize, out: &mut Page) -> Result {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let r = match attr {
            0 => {
                let len = self.version.iter().position(|&c| c == 0).unwrap_or(16);
                let v = core::str::from_utf8(&self.version[..len]).unwrap_or("");
                writeln!(out, "{}", v)
            }
            1 => writeln!(out, "{}", n(&self.alloc_mrs)),
            2 => writeln!(out, "{}", n(&self.dealloc_mrs)),
            3 => writeln!(out, "{}", n(&self.reg_pages)),
            4 => writeln!(out, "{}", n(&self.dereg_pages)),
            5 => writeln!(out, "{}", n(&self.reg_bytes)),
            6 => writeln!(out, "{}", n(&self.dereg_bytes)),
            7 => writeln!(out, "{}", n(&self.free_callbacks)),
            8 => writeln!(out, "{}", n(&self.refused_dma_only)),
            9 => writeln!(out, "{}", n(&self.refused_no_dma_device)),
            _ => return Err(EINVAL),
        };
        r.map_err(|_| EINVAL)
    }
}

/// The two roots, `/sys/kernel/infiniband/memory_peers` and
/// `/sys/kernel/mm/memory_peers`.
pub(crate) struct Roots {
    ib_peers: KobjDir,
    mm_peers: KobjDir,
    // Dropped last: the parent of `ib_peers`.
    _ib: KobjDir,
}

impl Roots {
    pub(crate) fn new() -> Result<Roots> {
        let ib = KobjDir::new_root(rdma::kshim::kobj::SysRoot::Kernel, c_str!("infiniband"))?;
        let ib_peers = ib.child(c_str!("memory_peers"))?;
        let mm_peers = KobjDir::new_root(rdma::kshim::kobj::SysRoot::Mm, c_str!("memory_peers"))?;
        Ok(Roots {
            ib_peers,
            mm_peers,
            _ib: ib,
        })
    }

    /// A client's two directories.
    pub(crate) fn add(&self, name: &CStr, stats: Arc<Stats>) -> Result<(StatsDir, StatsDir)> {
        let a = StatsDir::new(&self.ib_peers, name, FILES, stats.clone())?;
        let b = StatsDir::new(&self.mm_peers, name, FILES, stats)?;
        Ok((a, b))
    }
}
