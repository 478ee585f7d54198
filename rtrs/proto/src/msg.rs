// SPDX-License-Identifier: GPL-2.0

//! The RTRS messages after the connection is up: the admin messages sent
//! on the service connection (INFO_REQ, INFO_RSP, RKEY_RSP) and the IO
//! messages a client RDMA-writes at the end of its request in a server
//! chunk (`rtrs_msg_rdma_write`, `rtrs_msg_rdma_read`).
//!
//! # Layout
//!
//! Every message starts with its type, a `__le16` (`struct
//! rtrs_msg_rdma_hdr`, see [`msg_type`]); all fields are little-endian.
//!
//! | message | bytes | fields (offset: field) |
//! | --- | --- | --- |
//! | `rtrs_sg_desc` | 16 | 0: addr (64), 8: key (32), 12: len (32) |
//! | `rtrs_msg_info_req` | 272 | 0: type, 2: pathname\[255\], 257: reserved\[15\] |
//! | `rtrs_msg_info_rsp` | 8 + 16 n | 0: type, 2: sg_cnt, 4: reserved\[4\], 8: desc\[\] |
//! | `rtrs_msg_rkey_rsp` | 8 | 0: type, 2: buf_id, 4: rkey (32) |
//! | `rtrs_msg_rdma_read` | 8 + 16 n | 0: type, 2: usr_len, 4: flags, 6: sg_cnt, 8: desc\[\] |
//! | `rtrs_msg_rdma_write` | 4 | 0: type, 2: usr_len |
//!
//! The descriptor arrays are variable: a parsed message borrows them from
//! the received bytes as an [`SgList`], and a message to send borrows them
//! from a caller's `&[SgDesc]`; nothing is copied or allocated. A count is
//! bounded both by the buffer (the bytes must hold every descriptor the
//! count announces) and by the C's limits ([`MAX_READ_SG_CNT`] for a read,
//! 16 bits for INFO_RSP).
//!
//! Parsing checks the length and the type, as the C receivers do, and the
//! limits above; reserved bytes are ignored and written as zeros, so
//! parse, write and parse again give the same message. Nothing here
//! panics.
//!
//! This module uses only `core` and its siblings [`super::consts`],
//! [`super::error`], [`super::imm`] and `super::le`.

use core::fmt;

use super::consts::{
    MAX_IMM_PAYL_BITS, MAX_INFO_SG_CNT, MAX_READ_SG_CNT, MAX_SESS_QUEUE_DEPTH, NAME_MAX,
    RTRS_MSG_INFO_REQ, RTRS_MSG_INFO_RSP, RTRS_MSG_NEED_INVAL_F, RTRS_MSG_READ, RTRS_MSG_RKEY_RSP,
    RTRS_MSG_WRITE,
};
use super::error::Error;
use super::imm::order_bits;
use super::le::{need, put, u16_at, u32_at, u64_at, zero};

/// Size of `struct rtrs_sg_desc`.
pub const SG_DESC_LEN: usize = 16;
/// Size of `struct rtrs_msg_rdma_hdr`, the type alone.
pub const RDMA_HDR_LEN: usize = 2;
/// Size of `struct rtrs_msg_info_req`.
pub const INFO_REQ_LEN: usize = 272;
/// Size of `struct rtrs_msg_info_rsp` without its descriptors.
pub const INFO_RSP_HDR_LEN: usize = 8;
/// Size of `struct rtrs_msg_rkey_rsp`.
pub const RKEY_RSP_LEN: usize = 8;
/// Size of `struct rtrs_msg_rdma_read` without its descriptors.
pub const RDMA_READ_HDR_LEN: usize = 8;
/// Size of `struct rtrs_msg_rdma_write`.
pub const RDMA_WRITE_LEN: usize = 4;

/// The type of the message at the start of `buf` (the `type` of `struct
/// rtrs_msg_rdma_hdr`), whatever its value.
pub fn msg_type(buf: &[u8]) -> Result<u16, Error> {
    need(buf.len(), RDMA_HDR_LEN)?;
    Ok(u16_at(buf, 0))
}

/// Fails unless the message at the start of `buf` has type `want`.
fn expect_type(buf: &[u8], want: u16) -> Result<(), Error> {
    let t = msg_type(buf)?;
    if t != want {
        return Err(Error::BadType(t));
    }
    Ok(())
}

/// `count` descriptors after a `hdr`-byte header, or `None` on overflow.
const fn with_descs(hdr: usize, count: usize) -> Option<usize> {
    match count.checked_mul(SG_DESC_LEN) {
        Some(n) => hdr.checked_add(n),
        None => None,
    }
}

/// `count` descriptors after a `hdr`-byte header, or `usize::MAX` (which
/// no buffer holds) on overflow. A message built or parsed here has at
/// most `u16::MAX` descriptors, so it never overflows.
const fn descs_len(hdr: usize, count: usize) -> usize {
    match with_descs(hdr, count) {
        Some(n) => n,
        None => usize::MAX,
    }
}

// ---------------------------------------------------------------------------
// Descriptors

/// One RDMA buffer (`struct rtrs_sg_desc`): address, rkey and length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SgDesc {
    /// Remote address.
    pub addr: u64,
    /// rkey that grants access to it.
    pub key: u32,
    /// Length in bytes.
    pub len: u32,
}

impl SgDesc {
    /// Parses the descriptor at the start of `buf`.
    pub fn parse(buf: &[u8]) -> Result<SgDesc, Error> {
        need(buf.len(), SG_DESC_LEN)?;
        Ok(SgDesc {
            addr: u64_at(buf, 0),
            key: u32_at(buf, 8),
            len: u32_at(buf, 12),
        })
    }

    /// Writes the descriptor into the first [`SG_DESC_LEN`] bytes of
    /// `out`; returns [`SG_DESC_LEN`].
    pub fn write(&self, out: &mut [u8]) -> Result<usize, Error> {
        need(out.len(), SG_DESC_LEN)?;
        put(out, 0, &self.addr.to_le_bytes());
        put(out, 8, &self.key.to_le_bytes());
        put(out, 12, &self.len.to_le_bytes());
        Ok(SG_DESC_LEN)
    }
}

#[derive(Clone, Copy)]
enum SgRepr<'a> {
    /// Received bytes, a whole number of descriptors.
    Wire(&'a [u8]),
    /// Descriptors to send.
    Descs(&'a [SgDesc]),
}

/// A borrowed array of descriptors: either the bytes of a received message
/// or a caller's slice of [`SgDesc`]. Two lists are equal when they hold
/// the same descriptors, whatever their origin.
#[derive(Clone, Copy)]
pub struct SgList<'a>(SgRepr<'a>);

impl<'a> SgList<'a> {
    /// The list of `descs`.
    pub const fn from_descs(descs: &'a [SgDesc]) -> SgList<'a> {
        SgList(SgRepr::Descs(descs))
    }

    /// The list of the `count` descriptors at the start of `buf`, if `buf`
    /// holds them.
    fn from_wire(buf: &'a [u8], count: usize) -> Option<SgList<'a>> {
        let bytes = buf.get(..with_descs(0, count)?)?;
        Some(SgList(SgRepr::Wire(bytes)))
    }

    /// Number of descriptors.
    pub const fn len(&self) -> usize {
        match self.0 {
            SgRepr::Wire(b) => b.len() / SG_DESC_LEN,
            SgRepr::Descs(d) => d.len(),
        }
    }

    /// Whether there is no descriptor.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Descriptor `i`, if there are that many.
    pub fn get(&self, i: usize) -> Option<SgDesc> {
        match self.0 {
            SgRepr::Wire(b) => {
                let at = i.checked_mul(SG_DESC_LEN)?;
                SgDesc::parse(b.get(at..)?).ok()
            }
            SgRepr::Descs(d) => d.get(i).copied(),
        }
    }

    /// The descriptors, in order.
    pub fn iter(&self) -> SgIter<'a> {
        SgIter {
            list: *self,
            next: 0,
        }
    }

    /// Writes the descriptors at the start of `out`; returns the bytes
    /// written.
    fn write(&self, out: &mut [u8]) -> Result<usize, Error> {
        let len = descs_len(0, self.len());
        need(out.len(), len)?;
        for (d, chunk) in self.iter().zip(out.chunks_mut(SG_DESC_LEN)) {
            d.write(chunk)?;
        }
        Ok(len)
    }
}

impl PartialEq for SgList<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for SgList<'_> {}

impl fmt::Debug for SgList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for SgList<'a> {
    type Item = SgDesc;
    type IntoIter = SgIter<'a>;

    fn into_iter(self) -> SgIter<'a> {
        self.iter()
    }
}

/// Iterator over the descriptors of an [`SgList`].
#[derive(Clone, Debug)]
pub struct SgIter<'a> {
    list: SgList<'a>,
    next: usize,
}

impl Iterator for SgIter<'_> {
    type Item = SgDesc;

    fn next(&mut self) -> Option<SgDesc> {
        let d = self.list.get(self.next)?;
        // Below the list's length, as `get` found a descriptor there.
        self.next = self.next.saturating_add(1);
        Some(d)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.list.len().saturating_sub(self.next);
        (left, Some(left))
    }
}

impl ExactSizeIterator for SgIter<'_> {}

// ---------------------------------------------------------------------------
// INFO_REQ

/// The client's request for the server's buffers, naming the path
/// (`struct rtrs_msg_info_req`).
///
/// # Invariants
///
/// The name is at most `NAME_MAX - 1` bytes with no NUL, `/` or `.`, and
/// the rest of the field is zero.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct InfoReq {
    pathname: [u8; NAME_MAX],
    len: usize,
}

impl InfoReq {
    /// Checks a path name as the C does: it must fit `NAME_MAX` with its
    /// NUL (`alloc_clt`), and hold no `/` nor `.` (`rtrs_clt_open`,
    /// `process_info_req`); NUL bytes cannot be part of it.
    pub fn check_name(name: &[u8]) -> Result<(), Error> {
        if name.len() >= NAME_MAX || name.iter().any(|c| matches!(*c, 0 | b'/' | b'.')) {
            return Err(Error::BadName);
        }
        Ok(())
    }

    /// The request for path `name` (without NUL); see
    /// [`InfoReq::check_name`].
    pub fn new(name: &[u8]) -> Result<InfoReq, Error> {
        InfoReq::check_name(name)?;
        let mut pathname = [0u8; NAME_MAX];
        put(&mut pathname, 0, name);
        // INVARIANT: `name` passed `check_name`; the rest is zero.
        Ok(InfoReq {
            pathname,
            len: name.len(),
        })
    }

    /// The path name, without its NUL.
    pub fn name(&self) -> &[u8] {
        self.pathname.get(..self.len).unwrap_or(&[])
    }

    /// Parses the request at the start of `buf`.
    ///
    /// Fails if `buf` is shorter than [`INFO_REQ_LEN`] or the type is not
    /// INFO_REQ (`rtrs_srv_info_req_done`), if the name has no NUL in its
    /// `NAME_MAX` bytes (the C server would read past it with `strchr`) or
    /// holds `/` or `.` (`process_info_req`). Bytes after the NUL are
    /// ignored.
    pub fn parse(buf: &[u8]) -> Result<InfoReq, Error> {
        need(buf.len(), INFO_REQ_LEN)?;
        expect_type(buf, RTRS_MSG_INFO_REQ)?;
        let field = buf.get(2..2 + NAME_MAX).ok_or(Error::BadName)?;
        let len = field.iter().position(|c| *c == 0).ok_or(Error::BadName)?;
        InfoReq::new(field.get(..len).ok_or(Error::BadName)?)
    }

    /// Writes the request into the first [`INFO_REQ_LEN`] bytes of `out`,
    /// the name NUL-padded, reserved bytes zero; returns
    /// [`INFO_REQ_LEN`].
    pub fn write(&self, out: &mut [u8]) -> Result<usize, Error> {
        need(out.len(), INFO_REQ_LEN)?;
        zero(out, INFO_REQ_LEN);
        put(out, 0, &RTRS_MSG_INFO_REQ.to_le_bytes());
        put(out, 2, &self.pathname);
        Ok(INFO_REQ_LEN)
    }
}

impl fmt::Debug for InfoReq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InfoReq")
            .field("name", &self.name().escape_ascii())
            .finish()
    }
}

// ---------------------------------------------------------------------------
// INFO_RSP

/// The server's description of the session's chunks (`struct
/// rtrs_msg_info_rsp`): the memory regions that hold them, in chunk
/// order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InfoRsp<'a> {
    descs: SgList<'a>,
}

impl<'a> InfoRsp<'a> {
    /// The response carrying `descs`; fails if there are more than
    /// [`MAX_INFO_SG_CNT`] (what the 16-bit count holds).
    pub fn new(descs: &'a [SgDesc]) -> Result<InfoRsp<'a>, Error> {
        if descs.len() > MAX_INFO_SG_CNT {
            return Err(Error::TooManySg {
                count: descs.len(),
                max: MAX_INFO_SG_CNT,
            });
        }
        Ok(InfoRsp {
            descs: SgList::from_descs(descs),
        })
    }

    /// Parses the response at the start of `buf`.
    ///
    /// Fails, as `rtrs_clt_info_rsp_done` does, if `buf` is shorter than
    /// the header, the type is not INFO_RSP, or `buf` is shorter than the
    /// `sg_cnt` descriptors the header announces. The descriptors are
    /// borrowed from `buf`.
    pub fn parse(buf: &'a [u8]) -> Result<InfoRsp<'a>, Error> {
        need(buf.len(), INFO_RSP_HDR_LEN)?;
        expect_type(buf, RTRS_MSG_INFO_RSP)?;
        let count = usize::from(u16_at(buf, 2));
        let descs = SgList::from_wire(buf.get(INFO_RSP_HDR_LEN..).unwrap_or(&[]), count).ok_or(
            Error::TooShort {
                needed: descs_len(INFO_RSP_HDR_LEN, count),
                got: buf.len(),
            },
        )?;
        Ok(InfoRsp { descs })
    }

    /// The descriptors.
    pub const fn descs(&self) -> SgList<'a> {
        self.descs
    }

    /// Bytes of the message: header and descriptors.
    pub const fn len(&self) -> usize {
        descs_len(INFO_RSP_HDR_LEN, self.descs.len())
    }

    /// Whether the message carries no descriptor (which the client
    /// refuses, see [`InfoRsp::rbufs`]).
    pub const fn is_empty(&self) -> bool {
        self.descs.is_empty()
    }

    /// Writes the response at the start of `out`, reserved bytes zero;
    /// returns [`InfoRsp::len`]. Fails, leaving `out` untouched, if `out`
    /// is shorter.
    pub fn write(&self, out: &mut [u8]) -> Result<usize, Error> {
        let len = self.len();
        need(out.len(), len)?;
        zero(out, INFO_RSP_HDR_LEN);
        put(out, 0, &RTRS_MSG_INFO_RSP.to_le_bytes());
        // At most u16::MAX descriptors: by `new`, or by the parsed count.
        let count = u16::try_from(self.descs.len()).unwrap_or(u16::MAX);
        put(out, 2, &count.to_le_bytes());
        let tail = out.get_mut(INFO_RSP_HDR_LEN..).unwrap_or(&mut []);
        self.descs.write(tail)?;
        Ok(len)
    }

    /// The remote address and rkey of each of the session's
    /// `queue_depth` chunks of `chunk_size` bytes, as the client maps them
    /// (`process_info_rsp`).
    ///
    /// Fails with [`Error::BadGeometry`] if `queue_depth` or `chunk_size`
    /// is zero or `queue_depth` above `MAX_SESS_QUEUE_DEPTH`, or if the C's
    /// check that the descriptor count and the chunk size fit the 28-bit
    /// immediate payload together fails; with [`Error::BadSgList`] unless
    /// the count is non-zero and divides `queue_depth`, every length is a
    /// non-zero multiple of `chunk_size`, and the descriptors cover the
    /// `queue_depth` chunks exactly.
    pub fn rbufs(&self, queue_depth: u32, chunk_size: u32) -> Result<Rbufs<'a>, Error> {
        let geometry = Error::BadGeometry {
            queue_depth,
            chunk_size,
        };
        if queue_depth == 0 || queue_depth > MAX_SESS_QUEUE_DEPTH || chunk_size == 0 {
            return Err(geometry);
        }
        // At most u16::MAX descriptors, by `new` or `parse`.
        let sg_cnt = u32::try_from(self.descs.len()).unwrap_or(u32::MAX);
        if queue_depth.checked_rem(sg_cnt) != Some(0) {
            return Err(Error::BadSgList);
        }
        // At most 32 + 32 bits: the sum never saturates.
        if order_bits(sg_cnt).saturating_add(order_bits(chunk_size)) > MAX_IMM_PAYL_BITS {
            return Err(geometry);
        }
        let chunk = u64::from(chunk_size);
        let queue = u64::from(queue_depth);
        // Chunks mapped by the descriptors so far: below `queue` before
        // each one, so the sum (of two numbers below 2^32) never
        // saturates.
        let mut mapped: u64 = 0;
        for d in self.descs.iter() {
            let len = u64::from(d.len);
            // A descriptor after the queue is covered, of length 0 or not
            // a whole number of chunks.
            if mapped >= queue || len == 0 || len.checked_rem(chunk) != Some(0) {
                return Err(Error::BadSgList);
            }
            mapped = mapped.saturating_add(len / chunk);
        }
        if mapped != queue {
            return Err(Error::BadSgList);
        }
        Ok(Rbufs {
            descs: self.descs,
            chunk_size,
            left: queue_depth,
            desc: 0,
            off: 0,
        })
    }
}

/// One chunk of the server as the client sees it (`struct rtrs_rbuf`):
/// where to RDMA-write a request into it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Rbuf {
    /// Remote address of the chunk's first byte.
    pub addr: u64,
    /// rkey of the memory region that holds it.
    pub rkey: u32,
}

/// Iterator over the chunks an INFO_RSP describes, from chunk 0 (see
/// [`InfoRsp::rbufs`]).
#[derive(Clone, Debug)]
pub struct Rbufs<'a> {
    descs: SgList<'a>,
    chunk_size: u32,
    left: u32,
    desc: usize,
    off: u64,
}

impl Iterator for Rbufs<'_> {
    type Item = Rbuf;

    fn next(&mut self) -> Option<Rbuf> {
        if self.left == 0 {
            return None;
        }
        let d = self.descs.get(self.desc)?;
        let rbuf = Rbuf {
            addr: d.addr.wrapping_add(self.off),
            rkey: d.key,
        };
        self.left -= 1;
        // Below 2^32 + 2^32: `off` is below the descriptor's length.
        self.off = self.off.saturating_add(u64::from(self.chunk_size));
        if self.off >= u64::from(d.len) {
            // Below the list's length, as `get` found a descriptor there.
            self.desc = self.desc.saturating_add(1);
            self.off = 0;
        }
        Some(rbuf)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.left as usize;
        (left, Some(left))
    }
}

impl ExactSizeIterator for Rbufs<'_> {}

// ---------------------------------------------------------------------------
// RKEY_RSP

/// The server's new rkey for one chunk after an IO, when it runs with
/// `always_invalidate` (`struct rtrs_msg_rkey_rsp`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RkeyRsp {
    /// The chunk (and message ID of the IO).
    pub buf_id: u16,
    /// Its new rkey.
    pub rkey: u32,
}

impl RkeyRsp {
    /// Parses the message at the start of `buf`; fails if `buf` is shorter
    /// than [`RKEY_RSP_LEN`] or the type is not RKEY_RSP
    /// (`rtrs_clt_rkey_rsp_done`).
    pub fn parse(buf: &[u8]) -> Result<RkeyRsp, Error> {
        need(buf.len(), RKEY_RSP_LEN)?;
        expect_type(buf, RTRS_MSG_RKEY_RSP)?;
        Ok(RkeyRsp {
            buf_id: u16_at(buf, 2),
            rkey: u32_at(buf, 4),
        })
    }

    /// Writes the message into the first [`RKEY_RSP_LEN`] bytes of `out`;
    /// returns [`RKEY_RSP_LEN`].
    pub fn write(&self, out: &mut [u8]) -> Result<usize, Error> {
        need(out.len(), RKEY_RSP_LEN)?;
        put(out, 0, &RTRS_MSG_RKEY_RSP.to_le_bytes());
        put(out, 2, &self.buf_id.to_le_bytes());
        put(out, 4, &self.rkey.to_le_bytes());
        Ok(RKEY_RSP_LEN)
    }
}

// ---------------------------------------------------------------------------
// IO requests

/// The RTRS part of a write request (`struct rtrs_msg_rdma_write`), after
/// the data and the user message in the chunk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RdmaWrite {
    /// Length of the user message just before this one.
    pub usr_len: u16,
}

impl RdmaWrite {
    /// Parses the message at the start of `buf`; fails if `buf` is shorter
    /// than [`RDMA_WRITE_LEN`] or the type is not WRITE.
    pub fn parse(buf: &[u8]) -> Result<RdmaWrite, Error> {
        need(buf.len(), RDMA_WRITE_LEN)?;
        expect_type(buf, RTRS_MSG_WRITE)?;
        Ok(RdmaWrite {
            usr_len: u16_at(buf, 2),
        })
    }

    /// Writes the message into the first [`RDMA_WRITE_LEN`] bytes of
    /// `out`; returns [`RDMA_WRITE_LEN`].
    pub fn write(&self, out: &mut [u8]) -> Result<usize, Error> {
        need(out.len(), RDMA_WRITE_LEN)?;
        put(out, 0, &RTRS_MSG_WRITE.to_le_bytes());
        put(out, 2, &self.usr_len.to_le_bytes());
        Ok(RDMA_WRITE_LEN)
    }
}

/// The RTRS part of a read request (`struct rtrs_msg_rdma_read`), after
/// the user message in the chunk: where the server is to RDMA-write the
/// data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RdmaRead<'a> {
    /// Length of the user message just before this one.
    pub usr_len: u16,
    /// `RTRS_MSG_NEED_INVAL_F` or 0 (other bits are kept as received).
    pub flags: u16,
    descs: SgList<'a>,
}

impl<'a> RdmaRead<'a> {
    /// A read request for `descs` (none, when there is no data, or one);
    /// fails with [`Error::TooManySg`] for more than [`MAX_READ_SG_CNT`].
    pub fn new(usr_len: u16, flags: u16, descs: &'a [SgDesc]) -> Result<RdmaRead<'a>, Error> {
        if descs.len() > MAX_READ_SG_CNT {
            return Err(Error::TooManySg {
                count: descs.len(),
                max: MAX_READ_SG_CNT,
            });
        }
        Ok(RdmaRead {
            usr_len,
            flags,
            descs: SgList::from_descs(descs),
        })
    }

    /// Parses the message at the start of `buf`.
    ///
    /// Fails if `buf` is shorter than the header, the type is not READ,
    /// `sg_cnt` is above [`MAX_READ_SG_CNT`] (`process_read` drops such
    /// requests) or `buf` is shorter than the descriptors. The
    /// descriptors are borrowed from `buf`.
    pub fn parse(buf: &'a [u8]) -> Result<RdmaRead<'a>, Error> {
        need(buf.len(), RDMA_READ_HDR_LEN)?;
        expect_type(buf, RTRS_MSG_READ)?;
        let count = usize::from(u16_at(buf, 6));
        if count > MAX_READ_SG_CNT {
            return Err(Error::TooManySg {
                count,
                max: MAX_READ_SG_CNT,
            });
        }
        let descs = SgList::from_wire(buf.get(RDMA_READ_HDR_LEN..).unwrap_or(&[]), count).ok_or(
            Error::TooShort {
                needed: descs_len(RDMA_READ_HDR_LEN, count),
                got: buf.len(),
            },
        )?;
        Ok(RdmaRead {
            usr_len: u16_at(buf, 2),
            flags: u16_at(buf, 4),
            descs,
        })
    }

    /// The descriptors.
    pub const fn descs(&self) -> SgList<'a> {
        self.descs
    }

    /// Whether the client asks for its rkey to be invalidated with the
    /// response (`RTRS_MSG_NEED_INVAL_F`).
    pub const fn need_inval(&self) -> bool {
        self.flags & RTRS_MSG_NEED_INVAL_F != 0
    }

    /// Bytes of the message: header and descriptors.
    pub const fn len(&self) -> usize {
        descs_len(RDMA_READ_HDR_LEN, self.descs.len())
    }

    /// Whether the request carries no descriptor (no data to read).
    pub const fn is_empty(&self) -> bool {
        self.descs.is_empty()
    }

    /// Writes the message at the start of `out`; returns
    /// [`RdmaRead::len`]. Fails, leaving `out` untouched, if `out` is
    /// shorter.
    pub fn write(&self, out: &mut [u8]) -> Result<usize, Error> {
        let len = self.len();
        need(out.len(), len)?;
        put(out, 0, &RTRS_MSG_READ.to_le_bytes());
        put(out, 2, &self.usr_len.to_le_bytes());
        put(out, 4, &self.flags.to_le_bytes());
        // At most MAX_READ_SG_CNT descriptors, by `new` or `parse`.
        let count = u16::try_from(self.descs.len()).unwrap_or(u16::MAX);
        put(out, 6, &count.to_le_bytes());
        let tail = out.get_mut(RDMA_READ_HDR_LEN..).unwrap_or(&mut []);
        self.descs.write(tail)?;
        Ok(len)
    }
}

/// The RTRS message of an IO request, as the server finds it in a chunk
/// (`process_io_req`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RdmaMsg<'a> {
    /// A write: the data precedes the user message.
    Write(RdmaWrite),
    /// A read: the server is to send data back.
    Read(RdmaRead<'a>),
}

impl<'a> RdmaMsg<'a> {
    /// Parses the message at the start of `buf` by its type; any type but
    /// WRITE and READ fails with [`Error::BadType`].
    pub fn parse(buf: &'a [u8]) -> Result<RdmaMsg<'a>, Error> {
        match msg_type(buf)? {
            RTRS_MSG_WRITE => RdmaWrite::parse(buf).map(RdmaMsg::Write),
            RTRS_MSG_READ => RdmaRead::parse(buf).map(RdmaMsg::Read),
            t => Err(Error::BadType(t)),
        }
    }

    /// The length of the user message before this one.
    pub const fn usr_len(&self) -> u16 {
        match self {
            RdmaMsg::Write(w) => w.usr_len,
            RdmaMsg::Read(r) => r.usr_len,
        }
    }

    /// Bytes of the message.
    pub const fn len(&self) -> usize {
        match self {
            RdmaMsg::Write(_) => RDMA_WRITE_LEN,
            RdmaMsg::Read(r) => r.len(),
        }
    }

    /// Always false: a message has at least its type. (For clippy's
    /// `len_without_is_empty`.)
    pub const fn is_empty(&self) -> bool {
        false
    }

    /// Writes the message at the start of `out`; returns its length.
    pub fn write(&self, out: &mut [u8]) -> Result<usize, Error> {
        match self {
            RdmaMsg::Write(w) => w.write(out),
            RdmaMsg::Read(r) => r.write(out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sg_list_equality_across_origins() {
        let d = [SgDesc {
            addr: 0x1122_3344_5566_7788,
            key: 0x99aa_bbcc,
            len: 4096,
        }];
        let mut b = [0u8; 24];
        let r = RdmaRead::new(32, RTRS_MSG_NEED_INVAL_F, &d).unwrap();
        assert_eq!(r.write(&mut b), Ok(24));
        let p = RdmaRead::parse(&b).unwrap();
        assert_eq!(p, r);
        assert!(p.need_inval());
        assert_eq!(p.descs().get(0), Some(d[0]));
        assert_eq!(p.descs().get(1), None);
        assert_eq!(p.descs().iter().len(), 1);
    }

    #[test]
    fn info_req_names() {
        assert_eq!(InfoReq::new(b"a/b"), Err(Error::BadName));
        assert_eq!(InfoReq::new(b"a.b"), Err(Error::BadName));
        assert_eq!(InfoReq::new(b"a\0b"), Err(Error::BadName));
        assert_eq!(InfoReq::new(&[b'x'; 255]), Err(Error::BadName));
        let r = InfoReq::new(&[b'x'; 254]).unwrap();
        let mut b = [0u8; INFO_REQ_LEN];
        r.write(&mut b).unwrap();
        assert_eq!(InfoReq::parse(&b), Ok(r));
        b[256] = b'x';
        assert_eq!(InfoReq::parse(&b), Err(Error::BadName));
    }

    #[test]
    fn rbufs_one_mr_per_chunk_and_one_for_all() {
        let per_chunk: [SgDesc; 4] = core::array::from_fn(|i| SgDesc {
            addr: 0x1000_0000 + (i as u64) * 0x10_0000,
            key: 100 + i as u32,
            len: 8192,
        });
        let rsp = InfoRsp::new(&per_chunk).unwrap();
        let got: [Rbuf; 4] = {
            let mut it = rsp.rbufs(4, 8192).unwrap();
            core::array::from_fn(|_| it.next().unwrap())
        };
        for (i, r) in got.iter().enumerate() {
            assert_eq!(r.addr, per_chunk[i].addr);
            assert_eq!(r.rkey, per_chunk[i].key);
        }
        let one = [SgDesc {
            addr: 0x4000,
            key: 7,
            len: 4 * 8192,
        }];
        let rsp = InfoRsp::new(&one).unwrap();
        let mut it = rsp.rbufs(4, 8192).unwrap();
        for i in 0..4u64 {
            assert_eq!(
                it.next(),
                Some(Rbuf {
                    addr: 0x4000 + i * 8192,
                    rkey: 7
                })
            );
        }
        assert_eq!(it.next(), None);
    }

    #[test]
    fn rbufs_refusals() {
        fn check(descs: &[SgDesc], queue_depth: u32, chunk_size: u32) -> Result<(), Error> {
            InfoRsp::new(descs)?
                .rbufs(queue_depth, chunk_size)
                .map(|_| ())
        }
        let d = |len| SgDesc {
            addr: 0,
            key: 0,
            len,
        };
        assert_eq!(check(&[], 4, 8192), Err(Error::BadSgList));
        // 3 does not divide 4.
        let three = [d(8192), d(8192), d(16384)];
        assert_eq!(check(&three, 4, 8192), Err(Error::BadSgList));
        // Not a multiple of the chunk, zero.
        assert_eq!(check(&[d(8192), d(8000)], 2, 8192), Err(Error::BadSgList));
        assert_eq!(check(&[d(16384), d(0)], 2, 8192), Err(Error::BadSgList));
        // Too little, too much.
        assert_eq!(check(&[d(8192), d(8192)], 4, 8192), Err(Error::BadSgList));
        assert_eq!(check(&[d(16384), d(16384)], 2, 8192), Err(Error::BadSgList));
        assert_eq!(check(&[d(16384)], 1, 8192), Err(Error::BadSgList));
        let bad = |q, c| {
            Err(Error::BadGeometry {
                queue_depth: q,
                chunk_size: c,
            })
        };
        assert_eq!(check(&[d(8192)], 0, 8192), bad(0, 8192));
        assert_eq!(check(&[d(8192)], 1, 0), bad(1, 0));
        // 2 descriptors (1 bit) and 2^28-byte chunks (28 bits).
        assert_eq!(
            check(&[d(1 << 28), d(1 << 28)], 2, 1 << 28),
            bad(2, 1 << 28)
        );
        assert_eq!(check(&[d(1 << 28)], 1, 1 << 28), Ok(()));
    }
}
