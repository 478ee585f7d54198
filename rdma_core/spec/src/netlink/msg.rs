// SPDX-License-Identifier: GPL-2.0

//! Netlink messages and attributes: parsing and building, every length
//! checked.
//!
//! A netlink datagram is a sequence of messages, each a 16-byte
//! [`NlMsgHdr`] (total length, type, flags, sequence number, port ID)
//! followed by its payload, the next message starting at the length
//! rounded up to 4 bytes ([`align4`]). An RDMA message's payload is a
//! sequence of attributes (TLVs): a 4-byte header (length of header and
//! value, type with the [`NLA_F_NESTED`] and [`NLA_F_NET_BYTEORDER`] bits)
//! then the value, again padded to 4 bytes. A nested attribute's value is
//! itself a sequence of attributes.
//!
//! Parsing ([`Messages`], [`Attrs`]) borrows the input: nothing is copied
//! and no slice is taken without its bounds checked first. The last
//! message or attribute of a buffer may omit its padding (the length field
//! counts only the unpadded bytes). Building ([`Out`], [`MsgWriter`])
//! writes into a buffer the caller owns and fails with
//! [`NlError::NoSpace`] (the kernel's `EMSGSIZE`) when it is full; a
//! message not ended is not part of the output, so a dump can stop at the
//! message that does not fit, send what it has and start again with that
//! message.
//!
//! All integers are in the CPU's byte order (netlink is a host-local
//! protocol); 64-bit attribute values are written without the alignment
//! padding attribute the kernel adds on architectures without efficient
//! unaligned access (this project builds for x86-64 and arm64, which have
//! it, and the kernel does not pad there either).

use super::NlError;

/// Length of a message header.
pub const NLMSG_HDRLEN: usize = 16;
/// Length of an attribute header.
pub const NLA_HDRLEN: usize = 4;
/// The attribute type bit of a nested attribute.
pub const NLA_F_NESTED: u16 = 1 << 15;
/// The attribute type bit of a value in network byte order.
pub const NLA_F_NET_BYTEORDER: u16 = 1 << 14;
/// The bits of an attribute's type field that are the type.
pub const NLA_TYPE_MASK: u16 = !(NLA_F_NESTED | NLA_F_NET_BYTEORDER);

/// Control message types (below [`NLMSG_MIN_TYPE`]).
pub mod msg_type {
    /// Nothing; to be ignored.
    pub const NOOP: u16 = 1;
    /// An error or an acknowledgement (`struct nlmsgerr`).
    pub const ERROR: u16 = 2;
    /// The end of a dump.
    pub const DONE: u16 = 3;
    /// Data lost.
    pub const OVERRUN: u16 = 4;
    /// The first type of a protocol's own messages.
    pub const MIN_TYPE: u16 = 0x10;
}

/// Message header flags (`NLM_F_*`).
pub mod flags {
    /// A request.
    pub const REQUEST: u16 = 0x01;
    /// One message of several (a dump), ended by `NLMSG_DONE`.
    pub const MULTI: u16 = 0x02;
    /// Acknowledge the request (with an `NLMSG_ERROR` of error 0).
    pub const ACK: u16 = 0x04;
    /// Echo the request.
    pub const ECHO: u16 = 0x08;
    /// A GET request's "all of them" bits (`NLM_F_ROOT | NLM_F_MATCH`).
    pub const DUMP: u16 = 0x300;
    /// In an `NLMSG_ERROR`: only the request's header is quoted.
    pub const CAPPED: u16 = 0x100;
}

/// `len` rounded up to a multiple of 4, or `None` if that overflows.
pub const fn align4(len: usize) -> Option<usize> {
    match len.checked_add(3) {
        Some(l) => Some(l & !3),
        None => None,
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    let s = b.get(at..at.checked_add(2)?)?;
    Some(u16::from_ne_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at.checked_add(4)?)?;
    Some(u32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

/// A message header (`struct nlmsghdr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct NlMsgHdr {
    /// Length of the message, header included, without trailing padding.
    pub len: u32,
    /// Message type: a control type or the protocol's (for RDMA, client
    /// and operation, see [`super::nldev::nl_type`]).
    pub ty: u16,
    /// `NLM_F_*` ([`flags`]).
    pub flags: u16,
    /// Sequence number, echoed in replies.
    pub seq: u32,
    /// Port ID: the sender's in a request, the destination's in a reply.
    pub pid: u32,
}

impl NlMsgHdr {
    /// Reads a header from the start of `b`.
    pub fn decode(b: &[u8]) -> Result<Self, NlError> {
        let too_short = NlError::Truncated {
            needed: NLMSG_HDRLEN,
            got: b.len(),
        };
        Ok(NlMsgHdr {
            len: u32_at(b, 0).ok_or(too_short)?,
            ty: u16_at(b, 4).ok_or(too_short)?,
            flags: u16_at(b, 6).ok_or(too_short)?,
            seq: u32_at(b, 8).ok_or(too_short)?,
            pid: u32_at(b, 12).ok_or(too_short)?,
        })
    }

    /// The header's 16 bytes.
    pub fn encode(&self) -> [u8; NLMSG_HDRLEN] {
        let mut o = [0u8; NLMSG_HDRLEN];
        o[0..4].copy_from_slice(&self.len.to_ne_bytes());
        o[4..6].copy_from_slice(&self.ty.to_ne_bytes());
        o[6..8].copy_from_slice(&self.flags.to_ne_bytes());
        o[8..12].copy_from_slice(&self.seq.to_ne_bytes());
        o[12..16].copy_from_slice(&self.pid.to_ne_bytes());
        o
    }
}

/// One message of a datagram: its header and its payload (the bytes after
/// the header up to `hdr.len`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message<'a> {
    /// The header.
    pub hdr: NlMsgHdr,
    /// The payload: `hdr.len - 16` bytes.
    pub payload: &'a [u8],
}

impl<'a> Message<'a> {
    /// The payload's attributes, starting `fixed` bytes into it (0 for
    /// RDMA, whose messages have no fixed header).
    pub fn attrs(&self, fixed: usize) -> Attrs<'a> {
        Attrs::new(self.payload.get(fixed..).unwrap_or(&[]))
    }
}

/// The messages of a datagram, in order. Yields an error (and then
/// nothing) if a header is cut short or its length is smaller than a
/// header or larger than what is left.
#[derive(Clone, Debug)]
pub struct Messages<'a> {
    rest: &'a [u8],
    failed: bool,
}

impl<'a> Messages<'a> {
    /// The messages of `datagram`.
    pub fn new(datagram: &'a [u8]) -> Self {
        Messages {
            rest: datagram,
            failed: false,
        }
    }
}

impl<'a> Iterator for Messages<'a> {
    type Item = Result<Message<'a>, NlError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.rest.is_empty() {
            return None;
        }
        let r = (|| {
            let hdr = NlMsgHdr::decode(self.rest)?;
            let len = hdr.len as usize;
            if len < NLMSG_HDRLEN || len > self.rest.len() {
                return Err(NlError::BadMsgLen {
                    len: hdr.len,
                    left: self.rest.len(),
                });
            }
            let payload = self.rest.get(NLMSG_HDRLEN..len).ok_or(NlError::BadMsgLen {
                len: hdr.len,
                left: self.rest.len(),
            })?;
            // The next message starts at the aligned length; a last
            // message may lack its padding.
            let next = align4(len).unwrap_or(len).min(self.rest.len());
            self.rest = self.rest.get(next..).unwrap_or(&[]);
            Ok(Message { hdr, payload })
        })();
        if r.is_err() {
            self.failed = true;
        }
        Some(r)
    }
}

/// One attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr<'a> {
    /// The type, without the flag bits.
    pub ty: u16,
    /// [`NLA_F_NESTED`] was set.
    pub nested_flag: bool,
    /// [`NLA_F_NET_BYTEORDER`] was set.
    pub net_byteorder: bool,
    /// The value (the attribute's length minus its header).
    pub value: &'a [u8],
}

impl<'a> Attr<'a> {
    fn exact<const N: usize>(&self) -> Result<[u8; N], NlError> {
        let mut o = [0u8; N];
        if self.value.len() != N {
            return Err(NlError::BadAttrLen {
                ty: self.ty,
                len: self.value.len(),
            });
        }
        o.copy_from_slice(self.value);
        Ok(o)
    }

    /// The value as a `u8` (exactly 1 byte).
    pub fn u8(&self) -> Result<u8, NlError> {
        Ok(self.exact::<1>()?[0])
    }

    /// The value as a `u16` (exactly 2 bytes).
    pub fn u16(&self) -> Result<u16, NlError> {
        Ok(u16::from_ne_bytes(self.exact()?))
    }

    /// The value as a `u32` (exactly 4 bytes).
    pub fn u32(&self) -> Result<u32, NlError> {
        Ok(u32::from_ne_bytes(self.exact()?))
    }

    /// The value as a `u64` (exactly 8 bytes).
    pub fn u64(&self) -> Result<u64, NlError> {
        Ok(u64::from_ne_bytes(self.exact()?))
    }

    /// The value as a NUL-terminated string of at most `max` bytes
    /// before the NUL: the bytes before the first NUL. No NUL, or a
    /// longer string, is an error (the kernel's `NLA_NUL_STRING` policy).
    pub fn str_z(&self, max: usize) -> Result<&'a [u8], NlError> {
        let bad = NlError::BadString { ty: self.ty };
        let nul = self.value.iter().position(|b| *b == 0).ok_or(bad)?;
        if nul > max {
            return Err(bad);
        }
        self.value.get(..nul).ok_or(bad)
    }

    /// The attributes nested in the value.
    pub fn nested(&self) -> Attrs<'a> {
        Attrs::new(self.value)
    }
}

/// The attributes of a payload, in order. Yields an error (and then
/// nothing) if a header is cut short or its length is smaller than a
/// header or larger than what is left. Trailing bytes shorter than an
/// attribute header are ignored, as the kernel does.
#[derive(Clone, Debug)]
pub struct Attrs<'a> {
    rest: &'a [u8],
    failed: bool,
}

impl<'a> Attrs<'a> {
    /// The attributes of `payload`.
    pub fn new(payload: &'a [u8]) -> Self {
        Attrs {
            rest: payload,
            failed: false,
        }
    }

    /// The first attribute of type `ty`, if any; errors of the walk up to
    /// it are returned.
    pub fn find(self, ty: u16) -> Result<Option<Attr<'a>>, NlError> {
        for a in self {
            let a = a?;
            if a.ty == ty {
                return Ok(Some(a));
            }
        }
        Ok(None)
    }
}

impl<'a> Iterator for Attrs<'a> {
    type Item = Result<Attr<'a>, NlError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.rest.len() < NLA_HDRLEN {
            return None;
        }
        let r = (|| {
            let bad = NlError::BadAttrHeader {
                left: self.rest.len(),
            };
            let len = usize::from(u16_at(self.rest, 0).ok_or(bad)?);
            let raw_ty = u16_at(self.rest, 2).ok_or(bad)?;
            if len < NLA_HDRLEN || len > self.rest.len() {
                return Err(bad);
            }
            let value = self.rest.get(NLA_HDRLEN..len).ok_or(bad)?;
            let next = align4(len).unwrap_or(len).min(self.rest.len());
            self.rest = self.rest.get(next..).unwrap_or(&[]);
            Ok(Attr {
                ty: raw_ty & NLA_TYPE_MASK,
                nested_flag: raw_ty & NLA_F_NESTED != 0,
                net_byteorder: raw_ty & NLA_F_NET_BYTEORDER != 0,
                value,
            })
        })();
        if r.is_err() {
            self.failed = true;
        }
        Some(r)
    }
}

/// A buffer messages are built into: one datagram's worth.
#[derive(Debug)]
pub struct Out<'b> {
    buf: &'b mut [u8],
    len: usize,
}

impl<'b> Out<'b> {
    /// An empty output over `buf`.
    pub fn new(buf: &'b mut [u8]) -> Self {
        Out { buf, len: 0 }
    }

    /// Bytes of ended messages.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No message was ended yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The ended messages, each padded to 4 bytes.
    pub fn bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }

    /// Forgets every message (after they were sent).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Starts a message with this header (its length is set by
    /// [`MsgWriter::end`]).
    pub fn begin(
        &mut self,
        ty: u16,
        flags: u16,
        seq: u32,
        pid: u32,
    ) -> Result<MsgWriter<'_, 'b>, NlError> {
        let start = self.len;
        let hdr = NlMsgHdr {
            len: 0,
            ty,
            flags,
            seq,
            pid,
        };
        let mut w = MsgWriter {
            out: self,
            start,
            pos: start,
        };
        w.put_raw(&hdr.encode())?;
        Ok(w)
    }
}

/// An open nest: where its header is.
#[derive(Debug)]
#[must_use = "a nest is closed with MsgWriter::end_nest"]
pub struct Nest(usize);

/// A message being built. Dropped without [`MsgWriter::end`], it is not
/// part of the output.
#[derive(Debug)]
pub struct MsgWriter<'o, 'b> {
    out: &'o mut Out<'b>,
    start: usize,
    pos: usize,
}

impl MsgWriter<'_, '_> {
    fn put_raw(&mut self, bytes: &[u8]) -> Result<(), NlError> {
        let end = self.pos.checked_add(bytes.len()).ok_or(NlError::NoSpace)?;
        let padded = align4(end).ok_or(NlError::NoSpace)?;
        let room = self.out.buf.len();
        if padded > room {
            return Err(NlError::NoSpace);
        }
        let dst = self
            .out
            .buf
            .get_mut(self.pos..end)
            .ok_or(NlError::NoSpace)?;
        dst.copy_from_slice(bytes);
        if let Some(pad) = self.out.buf.get_mut(end..padded) {
            pad.fill(0);
        }
        self.pos = padded;
        Ok(())
    }

    fn set_u16(&mut self, at: usize, v: u16) {
        if let Some(d) = self.out.buf.get_mut(at..at.saturating_add(2)) {
            d.copy_from_slice(&v.to_ne_bytes());
        }
    }

    /// Appends an attribute with this value (padded to 4 bytes).
    pub fn put(&mut self, ty: u16, value: &[u8]) -> Result<(), NlError> {
        let len = NLA_HDRLEN
            .checked_add(value.len())
            .filter(|l| *l <= usize::from(u16::MAX))
            .ok_or(NlError::NoSpace)?;
        let save = self.pos;
        let mut hdr = [0u8; NLA_HDRLEN];
        hdr[0..2].copy_from_slice(&(len as u16).to_ne_bytes());
        hdr[2..4].copy_from_slice(&(ty & NLA_TYPE_MASK).to_ne_bytes());
        // Header and value written as one block so that the value is not
        // padded after the header.
        let end = self.pos.checked_add(len).ok_or(NlError::NoSpace)?;
        let padded = align4(end).ok_or(NlError::NoSpace)?;
        if padded > self.out.buf.len() {
            return Err(NlError::NoSpace);
        }
        self.put_raw(&hdr).inspect_err(|_| self.pos = save)?;
        self.pos = save + NLA_HDRLEN;
        self.put_raw(value).inspect_err(|_| self.pos = save)?;
        Ok(())
    }

    /// Appends a `u8` attribute.
    pub fn put_u8(&mut self, ty: u16, v: u8) -> Result<(), NlError> {
        self.put(ty, &[v])
    }

    /// Appends a `u32` attribute.
    pub fn put_u32(&mut self, ty: u16, v: u32) -> Result<(), NlError> {
        self.put(ty, &v.to_ne_bytes())
    }

    /// Appends a `u64` attribute (no alignment padding attribute).
    pub fn put_u64(&mut self, ty: u16, v: u64) -> Result<(), NlError> {
        self.put(ty, &v.to_ne_bytes())
    }

    /// Appends a string attribute: `s` (which must hold no NUL) and a
    /// terminating NUL.
    pub fn put_str(&mut self, ty: u16, s: &[u8]) -> Result<(), NlError> {
        if s.contains(&0) {
            return Err(NlError::BadString { ty });
        }
        let save = self.pos;
        let len = NLA_HDRLEN
            .checked_add(s.len())
            .and_then(|l| l.checked_add(1))
            .filter(|l| *l <= usize::from(u16::MAX))
            .ok_or(NlError::NoSpace)?;
        let mut hdr = [0u8; NLA_HDRLEN];
        hdr[0..2].copy_from_slice(&(len as u16).to_ne_bytes());
        hdr[2..4].copy_from_slice(&(ty & NLA_TYPE_MASK).to_ne_bytes());
        let end = self.pos.checked_add(len).ok_or(NlError::NoSpace)?;
        if align4(end).ok_or(NlError::NoSpace)? > self.out.buf.len() {
            return Err(NlError::NoSpace);
        }
        let r = (|| {
            self.put_raw(&hdr)?;
            self.pos = save + NLA_HDRLEN;
            self.put_raw(s)?;
            self.pos = save + NLA_HDRLEN + s.len();
            self.put_raw(&[0])
        })();
        if r.is_err() {
            self.pos = save;
        }
        r
    }

    /// Opens a nested attribute of type `ty` (written with
    /// [`NLA_F_NESTED`]); attributes put until [`MsgWriter::end_nest`]
    /// are inside it.
    pub fn begin_nest(&mut self, ty: u16) -> Result<Nest, NlError> {
        let at = self.pos;
        let mut hdr = [0u8; NLA_HDRLEN];
        hdr[2..4].copy_from_slice(&((ty & NLA_TYPE_MASK) | NLA_F_NESTED).to_ne_bytes());
        self.put_raw(&hdr)?;
        Ok(Nest(at))
    }

    /// Opens a nested attribute of type `ty` without [`NLA_F_NESTED`]
    /// (the kernel's `nla_nest_start_noflag`, which the RDMA resource
    /// tables use).
    pub fn begin_nest_plain(&mut self, ty: u16) -> Result<Nest, NlError> {
        let at = self.pos;
        let mut hdr = [0u8; NLA_HDRLEN];
        hdr[2..4].copy_from_slice(&(ty & NLA_TYPE_MASK).to_ne_bytes());
        self.put_raw(&hdr)?;
        Ok(Nest(at))
    }

    /// Drops an open nest and everything put in it since
    /// ([`MsgWriter::begin_nest`] or [`MsgWriter::begin_nest_plain`]).
    pub fn cancel_nest(&mut self, nest: Nest) {
        if nest.0 >= self.start && nest.0 <= self.pos {
            self.pos = nest.0;
        }
    }

    /// Closes a nest: sets its length.
    pub fn end_nest(&mut self, nest: Nest) -> Result<(), NlError> {
        let len = self.pos.checked_sub(nest.0).ok_or(NlError::NoSpace)?;
        let len = u16::try_from(len).map_err(|_| NlError::NoSpace)?;
        self.set_u16(nest.0, len);
        Ok(())
    }

    /// Appends raw payload bytes (for payloads that are not attributes,
    /// such as an error's quoted header).
    pub fn put_bytes(&mut self, b: &[u8]) -> Result<(), NlError> {
        self.put_raw(b)
    }

    /// Ends the message: sets its length and makes it part of the output.
    /// Returns the message's length.
    pub fn end(self) -> usize {
        let len = self.pos - self.start;
        if let Some(d) = self.out.buf.get_mut(self.start..self.start + 4) {
            d.copy_from_slice(&(len as u32).to_ne_bytes());
        }
        self.out.len = self.pos;
        len
    }
}
