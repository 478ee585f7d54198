// SPDX-License-Identifier: GPL-2.0

//! Where an IO request lies in a server chunk, for the client that writes
//! it and the server that finds it.
//!
//! A session has `queue_depth` chunks of `chunk_size` bytes on the server
//! (`max_io_size + max_hdr_size` of `conn_rsp`); chunk `buf_id` serves the
//! client's request with permit `buf_id`, and the response carries the
//! same number as its message ID. The client RDMA-writes its request into
//! the chunk and announces it with an IO request immediate whose payload
//! is `buf_id << mem_bits | off` (see [`super::imm`]):
//!
//! ```text
//!  0                data_len        off = data_len + usr_len
//!  | data (write)   | user message  | rtrs_msg_rdma_write / _read + desc[] |
//!  | room (read)    |               |                                      |
//! ```
//!
//! - A write (`rtrs_clt_write_req`) puts the data, then the user message,
//!   then `rtrs_msg_rdma_write`, all from offset 0, in one RDMA write.
//! - A read (`rtrs_clt_read_req`) writes only the user message and
//!   `rtrs_msg_rdma_read` with its descriptor, at offset `data_len`: the
//!   bytes before are where the server will assemble the data it sends
//!   back into the client's descriptor.
//!
//! The server (`rtrs_srv_rdma_done`, `process_io_req`, `process_read`,
//! `process_write`) splits the payload, refuses a chunk number at or above
//! the queue depth and an offset at or beyond the chunk size, reads the
//! RTRS message at `off`, and takes `data_len = off - usr_len` after
//! refusing `usr_len > off`.
//!
//! # Stricter than the C
//!
//! [`ChunkGeometry::parse_request`] also requires the whole RTRS message,
//! descriptors included, to lie inside the chunk. The C server only checks
//! `off < max_chunk_size` and then reads up to 24 bytes from `off`, so a
//! client lying about `off` makes it read past the chunk; here that is
//! [`Error::OutsideChunk`]. Likewise [`ChunkGeometry::read_request`]
//! counts the descriptor in the request's size, where the C client counts
//! only the 8-byte header.
//!
//! Every function returns an error rather than an offset outside the chunk
//! and never panics. Offsets and lengths are added in 64 bits, where
//! 32-bit values cannot overflow, and what could (a length from another
//! module, a sum of bit counts) saturates: no input can make an overflow
//! check fire in a build with overflow checks, as the kernel's.
//!
//! This module uses only `core` and its siblings [`super::consts`],
//! [`super::conn`], [`super::error`], [`super::imm`] and [`super::msg`].

use core::ops::Range;

use super::conn::ConnRsp;
use super::consts::{MAX_IMM_PAYL_BITS, MAX_READ_SG_CNT, MIN_CHUNK_SIZE};
use super::error::Error;
use super::imm::{mem_bits, order_bits, IoReq};
use super::msg::{RdmaMsg, SgDesc, RDMA_READ_HDR_LEN, RDMA_WRITE_LEN, SG_DESC_LEN};

/// The shape of a session's chunks: how many, how large, and how the IO
/// request immediate splits between chunk number and offset.
///
/// # Invariants
///
/// `1 <= queue_depth <= MAX_SESS_QUEUE_DEPTH`, `chunk_size >= 1`,
/// `mem_bits == mem_bits(queue_depth)` and `chunk_size <= 2^mem_bits`, so
/// every offset below `chunk_size` and every chunk number below
/// `queue_depth` fit the immediate payload together.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChunkGeometry {
    queue_depth: u32,
    chunk_size: u32,
    mem_bits: u32,
}

/// Where a client's request goes in its chunk, and its immediate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RequestLayout {
    /// The chunk.
    pub buf_id: u32,
    /// Offset in the chunk where the client's RDMA write starts.
    pub rdma_off: u32,
    /// Bytes the RDMA write carries.
    pub rdma_len: u32,
    /// Offset of the RTRS message in the chunk (`data_len + usr_len`).
    pub msg_off: u32,
    /// The immediate of the RDMA write (host order).
    pub imm: u32,
}

/// An IO request as the server finds it in a chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoRequest<'a> {
    /// The chunk, and the message ID of the response.
    pub buf_id: u32,
    /// Offset of the RTRS message in the chunk.
    pub msg_off: u32,
    /// The RTRS message.
    pub msg: RdmaMsg<'a>,
}

impl IoRequest<'_> {
    /// Length of the user message, which ends at `msg_off`.
    pub const fn usr_len(&self) -> u32 {
        self.msg.usr_len() as u32
    }

    /// Length of the data area at the start of the chunk: the written
    /// data of a write, the room for the data of a read.
    pub const fn data_len(&self) -> u32 {
        // `usr_len <= msg_off`, checked by `parse_request`.
        self.msg_off.saturating_sub(self.usr_len())
    }

    /// The data area's bytes in the chunk.
    pub const fn data_range(&self) -> Range<usize> {
        0..self.data_len() as usize
    }

    /// The user message's bytes in the chunk.
    pub const fn usr_range(&self) -> Range<usize> {
        self.data_len() as usize..self.msg_off as usize
    }
}

impl ChunkGeometry {
    /// The geometry of `queue_depth` chunks of `chunk_size` bytes.
    ///
    /// Fails with [`Error::BadQueueDepth`] unless `1 <= queue_depth <=
    /// MAX_SESS_QUEUE_DEPTH`, and with [`Error::BadGeometry`] if
    /// `chunk_size` is 0 or if chunk numbers and offsets do not fit the
    /// 28-bit payload together (`order_bits(queue_depth) +
    /// order_bits(chunk_size) > 28`, the check of `check_module_params` in
    /// rtrs-srv.c).
    pub const fn new(queue_depth: u32, chunk_size: u32) -> Result<ChunkGeometry, Error> {
        let mem_bits = match mem_bits(queue_depth) {
            Ok(m) => m,
            Err(e) => return Err(e),
        };
        // At most 32 + 32 bits: the sum never saturates.
        let bits = order_bits(queue_depth).saturating_add(order_bits(chunk_size));
        if chunk_size == 0 || bits > MAX_IMM_PAYL_BITS {
            return Err(Error::BadGeometry {
                queue_depth,
                chunk_size,
            });
        }
        // INVARIANT: order_bits(chunk_size) <= 28 - order_bits(queue_depth)
        // = mem_bits, so chunk_size <= 2^mem_bits.
        Ok(ChunkGeometry {
            queue_depth,
            chunk_size,
            mem_bits,
        })
    }

    /// The geometry a C server accepts for its module parameters
    /// (`check_module_params`): that of [`ChunkGeometry::new`], with a
    /// chunk size that is a power of two of at least `MIN_CHUNK_SIZE`.
    pub const fn server(queue_depth: u32, chunk_size: u32) -> Result<ChunkGeometry, Error> {
        if chunk_size < MIN_CHUNK_SIZE || !chunk_size.is_power_of_two() {
            return Err(Error::BadGeometry {
                queue_depth,
                chunk_size,
            });
        }
        ChunkGeometry::new(queue_depth, chunk_size)
    }

    /// The geometry a client learns from the server's `conn_rsp`: its
    /// queue depth, and `max_io_size + max_hdr_size` as chunk size
    /// (`rtrs_rdma_conn_established`). A sum that overflows is
    /// [`Error::BadGeometry`].
    pub const fn from_conn_rsp(rsp: &ConnRsp) -> Result<ChunkGeometry, Error> {
        match rsp.chunk_size() {
            Some(chunk_size) => ChunkGeometry::new(rsp.queue_depth as u32, chunk_size),
            None => Err(Error::BadGeometry {
                queue_depth: rsp.queue_depth as u32,
                chunk_size: u32::MAX,
            }),
        }
    }

    /// Number of chunks.
    pub const fn queue_depth(&self) -> u32 {
        self.queue_depth
    }

    /// Bytes per chunk.
    pub const fn chunk_size(&self) -> u32 {
        self.chunk_size
    }

    /// Bits of the IO request payload that hold the offset.
    pub const fn mem_bits(&self) -> u32 {
        self.mem_bits
    }

    const fn check_buf_id(&self, buf_id: u32) -> Result<(), Error> {
        if buf_id >= self.queue_depth {
            return Err(Error::OutOfRange {
                field: "buf_id",
                value: buf_id as u64,
                limit: self.queue_depth as u64,
            });
        }
        Ok(())
    }

    /// The layout of a request whose RDMA write covers
    /// `[rdma_off, msg_off + msg_len)` of chunk `buf_id`, with `rdma_off
    /// <= msg_off`. A sum that overflows is outside the chunk.
    const fn layout(
        &self,
        buf_id: u32,
        rdma_off: u64,
        msg_off: u64,
        msg_len: u64,
    ) -> Result<RequestLayout, Error> {
        if let Err(e) = self.check_buf_id(buf_id) {
            return Err(e);
        }
        let end = msg_off.saturating_add(msg_len);
        if end > self.chunk_size as u64 {
            return Err(Error::OutsideChunk {
                end,
                chunk_size: self.chunk_size,
            });
        }
        // Both below chunk_size, a u32: the casts keep the values.
        let msg_off = msg_off as u32;
        let req = IoReq {
            buf_id,
            off: msg_off,
        };
        match req.to_imm(self.mem_bits) {
            Ok(imm) => Ok(RequestLayout {
                buf_id,
                rdma_off: rdma_off as u32,
                rdma_len: end.saturating_sub(rdma_off) as u32,
                msg_off,
                imm,
            }),
            Err(e) => Err(e),
        }
    }

    /// Where a client puts a write of `data_len` bytes with a user message
    /// of `usr_len` bytes in chunk `buf_id` (`rtrs_clt_write_req`): all of
    /// it from offset 0, the RTRS message at `data_len + usr_len`.
    ///
    /// Fails if `buf_id` is not below the queue depth, or the whole does
    /// not fit the chunk ([`Error::OutsideChunk`], where the C returns
    /// `-EMSGSIZE`).
    pub const fn write_request(
        &self,
        buf_id: u32,
        data_len: u32,
        usr_len: u16,
    ) -> Result<RequestLayout, Error> {
        let msg_off = data_len as u64 + usr_len as u64;
        self.layout(buf_id, 0, msg_off, RDMA_WRITE_LEN as u64)
    }

    /// Where a client puts a read of `data_len` bytes with a user message
    /// of `usr_len` bytes and `sg_cnt` descriptors in chunk `buf_id`
    /// (`rtrs_clt_read_req`): the user message and RTRS message from
    /// offset `data_len`.
    ///
    /// Fails if `sg_cnt` is above [`MAX_READ_SG_CNT`], `buf_id` is not
    /// below the queue depth, or the data area, the user message and the
    /// RTRS message with its descriptors do not fit the chunk.
    pub const fn read_request(
        &self,
        buf_id: u32,
        data_len: u32,
        usr_len: u16,
        sg_cnt: usize,
    ) -> Result<RequestLayout, Error> {
        if sg_cnt > MAX_READ_SG_CNT {
            return Err(Error::TooManySg {
                count: sg_cnt,
                max: MAX_READ_SG_CNT,
            });
        }
        let msg_off = data_len as u64 + usr_len as u64;
        let msg_len = (RDMA_READ_HDR_LEN + sg_cnt * SG_DESC_LEN) as u64;
        self.layout(buf_id, data_len as u64, msg_off, msg_len)
    }

    /// The chunk and offset of an IO request payload, checked as the
    /// server checks them (`rtrs_srv_rdma_done`): the chunk number below
    /// the queue depth, the offset below the chunk size.
    pub const fn locate(&self, payload: u32) -> Result<IoReq, Error> {
        let req = IoReq::from_payload(payload, self.mem_bits);
        if let Err(e) = self.check_buf_id(req.buf_id) {
            return Err(e);
        }
        if req.off >= self.chunk_size {
            return Err(Error::OutOfRange {
                field: "off",
                value: req.off as u64,
                limit: self.chunk_size as u64,
            });
        }
        Ok(req)
    }

    /// The request in `chunk` (the bytes of chunk `req.buf_id`) whose RTRS
    /// message is at `req.off`.
    ///
    /// Fails if `req` is outside the geometry (as [`ChunkGeometry::locate`]
    /// checks it), if the message at `req.off` is neither a write nor a
    /// read ([`Error::BadType`]) or is malformed (see
    /// [`RdmaMsg::parse`]), if it does not end inside the chunk
    /// ([`Error::OutsideChunk`]), or if its `usr_len` is above `req.off`
    /// ([`Error::UsrLenTooLong`]). A `chunk` shorter than the chunk size
    /// is fine as long as it holds the message; if it does not,
    /// [`Error::TooShort`]. Bytes of `chunk` beyond the chunk size are
    /// never read.
    pub fn parse_request<'a>(&self, chunk: &'a [u8], req: IoReq) -> Result<IoRequest<'a>, Error> {
        self.check_buf_id(req.buf_id)?;
        if req.off >= self.chunk_size {
            return Err(Error::OutOfRange {
                field: "off",
                value: req.off.into(),
                limit: self.chunk_size.into(),
            });
        }
        let off = req.off as usize;
        let bound = chunk.len().min(self.chunk_size as usize);
        let window = chunk.get(off..bound).unwrap_or(&[]);
        let msg = RdmaMsg::parse(window).map_err(|e| match e {
            Error::TooShort { needed, .. } => {
                let end = (off as u64).saturating_add(needed as u64);
                if end > self.chunk_size.into() {
                    Error::OutsideChunk {
                        end,
                        chunk_size: self.chunk_size,
                    }
                } else {
                    Error::TooShort {
                        needed: off.saturating_add(needed),
                        got: chunk.len(),
                    }
                }
            }
            e => e,
        })?;
        if u32::from(msg.usr_len()) > req.off {
            return Err(Error::UsrLenTooLong {
                usr_len: msg.usr_len(),
                off: req.off,
            });
        }
        Ok(IoRequest {
            buf_id: req.buf_id,
            msg_off: req.off,
            msg,
        })
    }

    /// The length of the server's RDMA write of read data into the
    /// client's descriptor, checked as `rdma_write_sg` does: not 0 and not
    /// above the chunk size (the data is sent from the chunk's start).
    /// Either fails with [`Error::OutOfRange`].
    pub const fn read_response_len(&self, desc: &SgDesc) -> Result<u32, Error> {
        if desc.len == 0 || desc.len > self.chunk_size {
            return Err(Error::OutOfRange {
                field: "read length",
                value: desc.len as u64,
                limit: self.chunk_size as u64 + 1,
            });
        }
        Ok(desc.len)
    }
}

#[cfg(test)]
mod tests {
    use super::super::consts::{DEFAULT_MAX_CHUNK_SIZE, DEFAULT_SESS_QUEUE_DEPTH};
    use super::*;

    #[test]
    fn default_geometry() {
        let g = ChunkGeometry::server(DEFAULT_SESS_QUEUE_DEPTH, DEFAULT_MAX_CHUNK_SIZE).unwrap();
        assert_eq!(g.mem_bits(), 19);
        let l = g.write_request(511, 4096, 32).unwrap();
        assert_eq!(l.msg_off, 4128);
        assert_eq!(l.rdma_off, 0);
        assert_eq!(l.rdma_len, 4132);
        assert_eq!(l.imm, (511 << 19) | 4128);
        assert_eq!(
            g.locate(l.imm),
            Ok(IoReq {
                buf_id: 511,
                off: 4128
            })
        );
    }
}
