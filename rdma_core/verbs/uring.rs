// SPDX-License-Identifier: GPL-2.0

//! Rings shared with user space: the queues of user CQs and QPs, in the
//! layout of the rxe user ABI (`struct rxe_queue_buf` of
//! `rdma_user_rxe.h`: a header with the element size, the index mask and
//! the producer and consumer indices in cache lines of their own, then the
//! slots).
//!
//! A ring is a set of zeroed pages the core reaches page by page (never
//! through a user address) and user space maps once through its uverbs
//! file ([`UserRing::pages`]). Each ring has one producer and one
//! consumer, one in the kernel and one in user space. The kernel keeps its
//! own index privately and only ever publishes it (a release store): it
//! never reads back the index it owns. The other side's index is read with
//! acquire ordering and is untrusted: it is masked into the ring, so any
//! value names a slot and a wild one only confuses the ring's own owner.
//! Slots are copied out once, whole, before anything in them is decoded.
//! The geometry (slots, element and buffer sizes, index masking) is the
//! host-tested [`RingGeometry`].
//!
//! A ring is never resized in place: a resize fills a new ring with the
//! entries still waiting in the old one ([`UserRing::carry_into`]), and
//! its owner swaps the two and has user space map the new one.

use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::kshim::pages::{page_size, SharedPage};
use crate::spec::uverbs::rxe::queue_buf::{
    CONSUMER_INDEX_OFFSET, INDEX_MASK_OFFSET, LOG2_ELEM_SIZE_OFFSET, PRODUCER_INDEX_OFFSET,
};
use crate::spec::uverbs::rxe_ring::RingGeometry;

/// A ring shared with user space.
pub struct UserRing {
    pages: KVVec<SharedPage>,
    /// Slots (a power of two: a full ring keeps one free, so that full and
    /// empty differ), element size, buffer size.
    geo: RingGeometry,
}

impl UserRing {
    /// A ring of at least `num_elem` entries of `elem_size` bytes (rounded
    /// up to a power of two): `EINVAL` for what [`RingGeometry`] refuses
    /// (no entries, too many, too large). May sleep.
    pub fn new(num_elem: u32, elem_size: usize) -> Result<Arc<UserRing>> {
        let geo = RingGeometry::new(num_elem, elem_size, page_size()).map_err(|_| EINVAL)?;
        let npages = geo.buf_size() / page_size();
        let mut pages = KVVec::with_capacity(npages, GFP_KERNEL)?;
        for _ in 0..npages {
            pages.push(SharedPage::alloc()?, GFP_KERNEL)?;
        }
        let ring = UserRing { pages, geo };
        ring.write_at(LOG2_ELEM_SIZE_OFFSET, &geo.log2_elem_size().to_le_bytes())?;
        ring.write_at(INDEX_MASK_OFFSET, &geo.index_mask().to_le_bytes())?;
        Ok(Arc::new(ring, GFP_KERNEL)?)
    }

    /// The pages, in order, for mapping into user space.
    pub fn pages(&self) -> &[SharedPage] {
        &self.pages
    }

    /// The size of the mapping: whole pages.
    pub fn map_len(&self) -> usize {
        self.pages.len() * page_size()
    }

    /// How many entries the ring holds at most.
    pub fn capacity(&self) -> u32 {
        self.geo.capacity()
    }

    /// The size of a slot.
    pub fn elem_size(&self) -> usize {
        self.geo.elem_size()
    }

    /// How many entries lie between `cons` and `prod`.
    pub fn count(&self, prod: u32, cons: u32) -> u32 {
        self.geo.count(prod, cons)
    }

    /// Whether one more entry after `prod` would overrun `cons`.
    pub fn is_full(&self, prod: u32, cons: u32) -> bool {
        self.geo.is_full(prod, cons)
    }

    /// Copies the entries waiting between the consumer index `cons` and
    /// the producer index `prod` into the fresh ring `new`, in order from
    /// its slot 0, and publishes `new`'s producer index, which it returns.
    /// `EINVAL` when more wait than `room` or than `new` holds, or the
    /// element sizes differ: `new` is then left partly written and must be
    /// dropped. The caller keeps its own side still (holds its lock); the
    /// index of user space's side it reads once, untrusted (the count is
    /// bounded by the ring either way).
    pub fn carry_into(&self, cons: u32, prod: u32, new: &UserRing, room: u32) -> Result<u32> {
        let carry = self
            .geo
            .carry_into(prod, cons, &new.geo, room)
            .map_err(|_| EINVAL)?;
        let mut chunk = [0u8; 64];
        let step = chunk.len();
        for (from, to) in carry.moves() {
            let (src, dst) = (self.geo.slot_offset(from), new.geo.slot_offset(to));
            let mut done = 0;
            while done < self.elem_size() {
                let n = step.min(self.elem_size() - done);
                let part = chunk.get_mut(..n).ok_or(EINVAL)?;
                self.read_at(src + done, part)?;
                new.write_at(dst + done, part)?;
                done += n;
            }
        }
        new.publish_producer(carry.producer());
        Ok(carry.producer())
    }

    /// The producer index as the other side last published it (untrusted).
    pub fn producer(&self) -> u32 {
        self.load(PRODUCER_INDEX_OFFSET)
    }

    /// The consumer index as the other side last published it (untrusted).
    pub fn consumer(&self) -> u32 {
        self.load(CONSUMER_INDEX_OFFSET)
    }

    /// Publishes the kernel's producer index: slots written before are
    /// seen by a reader that acquires it.
    pub fn publish_producer(&self, v: u32) {
        self.store(PRODUCER_INDEX_OFFSET, v & self.geo.index_mask());
    }

    /// Publishes the kernel's consumer index.
    pub fn publish_consumer(&self, v: u32) {
        self.store(CONSUMER_INDEX_OFFSET, v & self.geo.index_mask());
    }

    /// Copies slot `index` (masked) into `out` (at most a slot).
    pub fn read_slot(&self, index: u32, out: &mut [u8]) -> Result {
        if out.len() > self.elem_size() {
            return Err(EINVAL);
        }
        self.read_at(self.geo.slot_offset(index), out)
    }

    /// Writes `data` (at most a slot) to slot `index` (masked).
    pub fn write_slot(&self, index: u32, data: &[u8]) -> Result {
        if data.len() > self.elem_size() {
            return Err(EINVAL);
        }
        self.write_at(self.geo.slot_offset(index), data)
    }

    fn load(&self, off: usize) -> u32 {
        // The header lies in the first page, which every ring has.
        self.pages
            .first()
            .and_then(|p| p.load_acquire_u32(off).ok())
            .unwrap_or(0)
    }

    fn store(&self, off: usize, v: u32) {
        if let Some(p) = self.pages.first() {
            let _ = p.store_release_u32(off, v);
        }
    }

    /// Calls `f(page, offset in page, range in the buffer)` for each page
    /// piece of `len` bytes from `off`.
    fn pieces(
        &self,
        off: usize,
        len: usize,
        mut f: impl FnMut(&SharedPage, usize, core::ops::Range<usize>) -> Result,
    ) -> Result {
        let end = off.checked_add(len).ok_or(EINVAL)?;
        if end > self.map_len() {
            return Err(EINVAL);
        }
        let mut at = off;
        while at < end {
            let page = self.pages.get(at / page_size()).ok_or(EINVAL)?;
            let in_page = at % page_size();
            let n = (page_size() - in_page).min(end - at);
            f(page, in_page, (at - off)..(at - off + n))?;
            at += n;
        }
        Ok(())
    }

    fn read_at(&self, off: usize, out: &mut [u8]) -> Result {
        self.pieces(off, out.len(), |p, o, r| {
            p.read(o, out.get_mut(r).ok_or(EINVAL)?)
        })
    }

    fn write_at(&self, off: usize, data: &[u8]) -> Result {
        self.pieces(off, data.len(), |p, o, r| {
            p.write(o, data.get(r).ok_or(EINVAL)?)
        })
    }
}
