// SPDX-License-Identifier: GPL-2.0

//! A server path's chunk memory: the chunks clients write their requests
//! into, one buffer of `queue_depth * chunk_size` bytes under one memory
//! region (`always_invalidate=N`: the client keeps the one rkey, a single
//! descriptor in INFO_RSP), or with `always_invalidate` a fast-registration
//! MR per chunk, registered again under a new key after every request (a
//! descriptor per chunk), and the RKEY_RSP each chunk's response sends.

use core::sync::atomic::{AtomicU32, Ordering};

use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::kshim::mem::Buffer;
use rdma::spec::opcodes::Access;
use rdma::verbs::mr::{BufSlice, Mr};
use rdma::verbs::pd::Pd;

use crate::proto::chunk::ChunkGeometry;
use crate::proto::msg::SgDesc;
use crate::srv::info::Info;
use crate::srv::Params;

/// A path's chunks.
pub(crate) struct Chunks {
    pub(crate) params: Params,
    pub(crate) geometry: ChunkGeometry,
    /// Every chunk, one after another.
    pub(crate) buf: Arc<Buffer>,
    pub(crate) mr: Mr,
    /// With `always_invalidate`: a fast-registration MR per chunk, and
    /// the key each is registered under now.
    pub(crate) mrs: KVec<Mr>,
    pub(crate) keys: KVec<AtomicU32>,
    /// With `always_invalidate`: per chunk, the RKEY_RSP its response
    /// sends.
    pub(crate) rkey_buf: Arc<Buffer>,
    pub(crate) rkey_mr: Mr,
}

impl Chunks {
    /// The chunks of a path with `params` in `pd`, and the path's info
    /// buffer, which is registered between the chunks' MR and the
    /// per-chunk ones (the order the keys were always given out in).
    pub(crate) fn new(pd: &Pd, params: Params) -> Result<(Chunks, Info)> {
        let geometry =
            ChunkGeometry::server(params.queue_depth, params.chunk_size).map_err(|_| EINVAL)?;
        let len = (params.queue_depth * params.chunk_size) as usize;
        let buf = Buffer::new(len)?;
        let mr = Mr::reg_buffer(
            pd.core(),
            &buf,
            0,
            len,
            Access::LOCAL_WRITE | Access::REMOTE_WRITE,
        )?;
        let info = Info::new(pd, params.queue_depth)?;
        let (mrs, keys) = if params.always_invalidate {
            Self::fast_regs(pd, &buf, &params)?
        } else {
            (KVec::new(), KVec::new())
        };
        let rkey_len = 8 * params.queue_depth as usize;
        let rkey_buf = Buffer::new(rkey_len)?;
        let rkey_mr = Mr::reg_buffer(pd.core(), &rkey_buf, 0, rkey_len, Access::LOCAL_WRITE)?;
        let chunks = Chunks {
            params,
            geometry,
            buf,
            mr,
            mrs,
            keys,
            rkey_buf,
            rkey_mr,
        };
        Ok((chunks, info))
    }

    /// A fast-registration MR per chunk, each mapping its chunk, and the
    /// key each is to be registered under first.
    fn fast_regs(
        pd: &Pd,
        chunks: &Arc<Buffer>,
        params: &Params,
    ) -> Result<(KVec<Mr>, KVec<AtomicU32>)> {
        let qd = params.queue_depth as usize;
        let size = params.chunk_size as usize;
        let mut mrs = KVec::with_capacity(qd, GFP_KERNEL)?;
        let mut keys = KVec::with_capacity(qd, GFP_KERNEL)?;
        for i in 0..qd {
            let mr = Mr::alloc_fast_reg(pd.core(), 1)?;
            mr.map_mr_sg(
                &[BufSlice {
                    buf: chunks,
                    offset: i * size,
                    len: size,
                }],
                size as u32,
            )?;
            keys.push(AtomicU32::new(next_key(mr.rkey())), GFP_KERNEL)?;
            mrs.push(mr, GFP_KERNEL)?;
        }
        Ok((mrs, keys))
    }

    /// A request arrived in the chunk `payload` names (`always_invalidate`):
    /// the chunk's key stops working now, before the request is handled,
    /// so the client cannot write the chunk again until the response gives
    /// it the next key. The core invalidates at once, where the kernel's
    /// server posts a `LOCAL_INV` and handles the request on its
    /// completion: the same order, since the chunk's registration under
    /// this key was executed before the response that gave the key out
    /// was sent. `EINVAL` if the chunk's MR is not under its key (its
    /// registration failed: the path closes).
    pub(crate) fn invalidate(&self, payload: u32) -> Result {
        let req = self.geometry.locate(payload).map_err(|_| EINVAL)?;
        let i = req.buf_id as usize;
        let key = self.keys.get(i).ok_or(EINVAL)?.load(Ordering::Acquire);
        let mr = self.mrs.get(i).ok_or(EINVAL)?;
        mr.invalidate(key).map_err(|_| EINVAL)
    }

    /// Maps chunk `i`'s MR again (after its invalidation) and registers
    /// it at once under the next key, which it returns (the response that
    /// gives it out is posted after: the client cannot use it sooner).
    /// The kernel's server posts a `REG_MR` before the response instead.
    pub(crate) fn register_again(&self, i: usize) -> Result<u32> {
        let size = self.params.chunk_size as usize;
        let mr = self.mrs.get(i).ok_or(EINVAL)?;
        mr.map_mr_sg(
            &[BufSlice {
                buf: &self.buf,
                offset: i * size,
                len: size,
            }],
            size as u32,
        )?;
        let key = next_key(mr.rkey());
        self.keys[i].store(key, Ordering::Release);
        mr.register_now(key, Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
        Ok(key)
    }

    /// The descriptors INFO_RSP announces: with `always_invalidate` one per
    /// chunk under the key it is registered with (before INFO_RSP goes, on
    /// the same QP: in order), else one for all the chunks.
    pub(crate) fn descs(&self) -> Result<KVec<SgDesc>> {
        let qd = self.params.queue_depth;
        let size = self.params.chunk_size;
        let mut descs = KVec::with_capacity(qd as usize, GFP_KERNEL)?;
        if self.params.always_invalidate {
            for (i, k) in self.keys.iter().enumerate() {
                descs.push(
                    SgDesc {
                        addr: self.buf.addr(i * size as usize),
                        key: k.load(Ordering::Acquire),
                        len: size,
                    },
                    GFP_KERNEL,
                )?;
            }
        } else {
            descs.push(
                SgDesc {
                    addr: self.buf.addr(0),
                    key: self.mr.rkey(),
                    len: qd * size,
                },
                GFP_KERNEL,
            )?;
        }
        Ok(descs)
    }
}

/// The key after `key`: the same MR, the next key byte.
fn next_key(key: u32) -> u32 {
    (key & !0xff) | (key.wrapping_add(1) & 0xff)
}
