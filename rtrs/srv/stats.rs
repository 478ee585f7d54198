// SPDX-License-Identifier: GPL-2.0

//! A server path's request counters (sysfs `stats/rdma`).

use core::sync::atomic::{AtomicU64, Ordering};

use crate::dir::Dir;

/// A path's request counters: requests and their bytes each way, the
/// bytes as the kernel's server counts them (the offset of the RTRS
/// message in the chunk: the data area and the user message).
#[derive(Default)]
pub(crate) struct Stats {
    pub(crate) reads: AtomicU64,
    pub(crate) read_bytes: AtomicU64,
    pub(crate) writes: AtomicU64,
    pub(crate) write_bytes: AtomicU64,
}

impl Stats {
    /// A request of `bytes` arrived.
    pub(crate) fn count(&self, dir: Dir, bytes: u64) {
        let (n, b) = match dir {
            Dir::Read => (&self.reads, &self.read_bytes),
            Dir::Write => (&self.writes, &self.write_bytes),
        };
        n.fetch_add(1, Ordering::Relaxed);
        b.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Every counter back to 0.
    pub(crate) fn reset(&self) {
        for c in [
            &self.reads,
            &self.read_bytes,
            &self.writes,
            &self.write_bytes,
        ] {
            c.store(0, Ordering::Relaxed);
        }
    }
}
