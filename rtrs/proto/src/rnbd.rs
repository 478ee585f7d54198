// SPDX-License-Identifier: GPL-2.0

//! The RNBD messages (drivers/block/rnbd/rnbd-proto.h), which travel as
//! RTRS user messages.
//!
//! The client sends SESS_INFO, OPEN and CLOSE as the user message of an
//! RTRS read (SESS_INFO and OPEN with a descriptor of the size of their
//! response, into which the server RDMA-writes SESS_INFO_RSP or OPEN_RSP
//! from its chunk's data area), and IO as the user message of the RTRS
//! read or write that moves the block data.
//!
//! # Layout
//!
//! Every message starts with `struct rnbd_msg_hdr`: a `__le16` type and
//! two bytes of padding (ignored). Fields are 32 bits unless said
//! otherwise, and all are little-endian; the C structures are not packed,
//! so their sizes include the tail padding their alignment gives them,
//! and the C sends `sizeof` bytes.
//!
//! | message | bytes | fields (offset: field) |
//! | --- | --- | --- |
//! | SESS_INFO, SESS_INFO_RSP | 36 | 4: ver (8), 5: reserved\[31\] |
//! | OPEN | 264 | 4: access_mode (8), 5: resv1, 6: dev_name\[255\], 261: reserved\[3\] |
//! | CLOSE | 8 | 4: device_id |
//! | OPEN_RSP | 56 | see below |
//! | IO | 32 | 4: device_id, 8: sector (64), 16: rw, 20: bi_size, 24: prio (16), 26: pad\[6\] |
//!
//! OPEN_RSP: 4: device_id (32), 8: nsectors (64); 32 bits each at 16:
//! max_hw_sectors, 20: max_write_zeroes_sectors, 24: max_discard_sectors,
//! 28: discard_granularity, 32: discard_alignment; 16 bits each at 36:
//! physical_block_size, 38: logical_block_size, 40: max_segments, 42:
//! secure_discard; 8 bits each at 44: obsolete_rotational, 45:
//! cache_policy; 46: reserved\[10\].
//!
//! An IO message of a peer at RNBD protocol 1 has no `prio` and is 24
//! bytes; the server reads `prio` only from a message of the full size
//! (`process_rdma`), and so does [`Io::parse`].
//!
//! Parsing checks the length and the type, that names are NUL-terminated
//! and that the access mode is one the server knows; reserved bytes and
//! padding are ignored and written as zeros, so parse, write and parse
//! again give the same message. Nothing here panics.
//!
//! This module uses only `core` and its siblings [`super::error`] and
//! `super::le`.

use core::fmt;

use super::error::Error;
use super::le::{need, put, u16_at, u32_at, u64_at, zero};

/// Major RNBD protocol version (`RNBD_PROTO_VER_MAJOR`): sent in
/// SESS_INFO; each side then uses the smaller of its own and the peer's.
pub const RNBD_PROTO_VER_MAJOR: u8 = 2;
/// Minor RNBD protocol version (`RNBD_PROTO_VER_MINOR`), not sent.
pub const RNBD_PROTO_VER_MINOR: u8 = 0;

/// `RNBD_MSG_SESS_INFO` (`enum rnbd_msg_type`).
pub const RNBD_MSG_SESS_INFO: u16 = 0;
/// `RNBD_MSG_SESS_INFO_RSP`.
pub const RNBD_MSG_SESS_INFO_RSP: u16 = 1;
/// `RNBD_MSG_OPEN`.
pub const RNBD_MSG_OPEN: u16 = 2;
/// `RNBD_MSG_OPEN_RSP`.
pub const RNBD_MSG_OPEN_RSP: u16 = 3;
/// `RNBD_MSG_IO`.
pub const RNBD_MSG_IO: u16 = 4;
/// `RNBD_MSG_CLOSE`.
pub const RNBD_MSG_CLOSE: u16 = 5;

/// Size of `struct rnbd_msg_hdr`.
pub const HDR_LEN: usize = 4;
/// Size of `struct rnbd_msg_sess_info` and `struct rnbd_msg_sess_info_rsp`.
pub const SESS_INFO_LEN: usize = 36;
/// Size of `struct rnbd_msg_open`.
pub const OPEN_LEN: usize = 264;
/// Size of `struct rnbd_msg_close`.
pub const CLOSE_LEN: usize = 8;
/// Size of `struct rnbd_msg_open_rsp`.
pub const OPEN_RSP_LEN: usize = 56;
/// Size of `struct rnbd_msg_io` (26 bytes of fields and 6 of tail
/// padding, as it holds a `__le64`).
pub const IO_LEN: usize = 32;
/// Size of an IO message without `prio` (RNBD protocol 1).
pub const IO_LEN_V1: usize = 24;
/// Length of the device name field of OPEN (`NAME_MAX`).
pub const DEV_NAME_LEN: usize = 255;

/// Bits of `rw` that hold the operation (`RNBD_OP_BITS`).
pub const RNBD_OP_BITS: u32 = 8;
/// Mask of the operation in `rw` (`RNBD_OP_MASK`).
pub const RNBD_OP_MASK: u32 = (1 << RNBD_OP_BITS) - 1;
/// Operation: read (`RNBD_OP_READ`).
pub const RNBD_OP_READ: u32 = 0;
/// Operation: write (`RNBD_OP_WRITE`).
pub const RNBD_OP_WRITE: u32 = 1;
/// Operation: flush the volatile write cache (`RNBD_OP_FLUSH`).
pub const RNBD_OP_FLUSH: u32 = 2;
/// Operation: discard (`RNBD_OP_DISCARD`).
pub const RNBD_OP_DISCARD: u32 = 3;
/// Operation: secure erase (`RNBD_OP_SECURE_ERASE`).
pub const RNBD_OP_SECURE_ERASE: u32 = 4;
/// Operation: write zeroes (`RNBD_OP_WRITE_ZEROES`).
pub const RNBD_OP_WRITE_ZEROES: u32 = 5;
/// Flag: synchronous request (`RNBD_F_SYNC`).
pub const RNBD_F_SYNC: u32 = 1 << RNBD_OP_BITS;
/// Flag: forced unit access (`RNBD_F_FUA`).
pub const RNBD_F_FUA: u32 = 1 << (RNBD_OP_BITS + 1);

/// Cache policy bit of OPEN_RSP: the device supports FUA (`RNBD_FUA`).
pub const RNBD_FUA: u8 = 1 << 0;
/// Cache policy bit of OPEN_RSP: the device has a volatile write cache
/// (`RNBD_WRITEBACK`).
pub const RNBD_WRITEBACK: u8 = 1 << 1;

/// The operation of an IO's `rw` (`rnbd_op`).
pub const fn rnbd_op(rw: u32) -> u32 {
    rw & RNBD_OP_MASK
}

/// The flags of an IO's `rw` (`rnbd_flags`).
pub const fn rnbd_flags(rw: u32) -> u32 {
    rw & !RNBD_OP_MASK
}

/// How a client opens a device (`enum rnbd_access_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum AccessMode {
    /// Read-only, any number of times (`RNBD_ACCESS_RO`).
    Ro = 0,
    /// Read-write, once (`RNBD_ACCESS_RW`).
    Rw = 1,
    /// Read-write a second time, for migration
    /// (`RNBD_ACCESS_MIGRATION`).
    Migration = 2,
}

impl AccessMode {
    /// The mode with this wire value, if any.
    pub const fn from_u8(v: u8) -> Option<AccessMode> {
        match v {
            0 => Some(AccessMode::Ro),
            1 => Some(AccessMode::Rw),
            2 => Some(AccessMode::Migration),
            _ => None,
        }
    }
}

/// The type of the RNBD message at the start of `buf`, whatever its value.
pub fn msg_type(buf: &[u8]) -> Result<u16, Error> {
    need(buf.len(), 2)?;
    Ok(u16_at(buf, 0))
}

/// Checks the length and type of a message of `len` bytes.
fn check(buf: &[u8], len: usize, want: u16) -> Result<(), Error> {
    need(buf.len(), len)?;
    let t = u16_at(buf, 0);
    if t != want {
        return Err(Error::BadType(t));
    }
    Ok(())
}

/// Zeroes `len` bytes of `out` and writes the header of type `t`.
fn start(out: &mut [u8], len: usize, t: u16) -> Result<(), Error> {
    need(out.len(), len)?;
    zero(out, len);
    put(out, 0, &t.to_le_bytes());
    Ok(())
}

/// The client's first message: its protocol version (`struct
/// rnbd_msg_sess_info`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SessInfo {
    /// The client's major version.
    pub ver: u8,
}

impl SessInfo {
    /// Parses the message at the start of `buf`.
    pub fn parse(buf: &[u8]) -> Result<SessInfo, Error> {
        check(buf, SESS_INFO_LEN, RNBD_MSG_SESS_INFO)?;
        Ok(SessInfo {
            ver: buf.get(4).copied().unwrap_or(0),
        })
    }

    /// Writes the message into the first [`SESS_INFO_LEN`] bytes of
    /// `out`; returns [`SESS_INFO_LEN`].
    pub fn write(&self, out: &mut [u8]) -> Result<usize, Error> {
        start(out, SESS_INFO_LEN, RNBD_MSG_SESS_INFO)?;
        put(out, 4, &[self.ver]);
        Ok(SESS_INFO_LEN)
    }
}

/// The server's answer to SESS_INFO: the version both will use (`struct
/// rnbd_msg_sess_info_rsp`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SessInfoRsp {
    /// The smaller of the two major versions.
    pub ver: u8,
}

impl SessInfoRsp {
    /// Parses the message at the start of `buf`.
    pub fn parse(buf: &[u8]) -> Result<SessInfoRsp, Error> {
        check(buf, SESS_INFO_LEN, RNBD_MSG_SESS_INFO_RSP)?;
        Ok(SessInfoRsp {
            ver: buf.get(4).copied().unwrap_or(0),
        })
    }

    /// Writes the message into the first [`SESS_INFO_LEN`] bytes of
    /// `out`; returns [`SESS_INFO_LEN`].
    pub fn write(&self, out: &mut [u8]) -> Result<usize, Error> {
        start(out, SESS_INFO_LEN, RNBD_MSG_SESS_INFO_RSP)?;
        put(out, 4, &[self.ver]);
        Ok(SESS_INFO_LEN)
    }
}

/// A request to map a remote device (`struct rnbd_msg_open`).
///
/// # Invariants
///
/// The name is at most `DEV_NAME_LEN - 1` bytes with no NUL, and the rest
/// of the field is zero.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Open {
    /// How to open it.
    pub access_mode: AccessMode,
    dev_name: [u8; DEV_NAME_LEN],
    len: usize,
}

impl Open {
    /// The request to open `dev_name` (without NUL; at most 254 bytes,
    /// no NUL inside) in `access_mode`.
    pub fn new(access_mode: AccessMode, dev_name: &[u8]) -> Result<Open, Error> {
        if dev_name.len() >= DEV_NAME_LEN || dev_name.contains(&0) {
            return Err(Error::BadName);
        }
        let mut field = [0u8; DEV_NAME_LEN];
        put(&mut field, 0, dev_name);
        // INVARIANT: checked just above; the rest is zero.
        Ok(Open {
            access_mode,
            dev_name: field,
            len: dev_name.len(),
        })
    }

    /// The device name, without its NUL.
    pub fn dev_name(&self) -> &[u8] {
        self.dev_name.get(..self.len).unwrap_or(&[])
    }

    /// Parses the message at the start of `buf`. Fails if the name has no
    /// NUL in its field (the C server handles it as a C string), or the
    /// access mode is unknown (the server answers `-EINVAL`).
    pub fn parse(buf: &[u8]) -> Result<Open, Error> {
        check(buf, OPEN_LEN, RNBD_MSG_OPEN)?;
        let mode = buf.get(4).copied().unwrap_or(0);
        let access_mode = AccessMode::from_u8(mode).ok_or(Error::OutOfRange {
            field: "access_mode",
            value: mode.into(),
            limit: 3,
        })?;
        let field = buf.get(6..6 + DEV_NAME_LEN).ok_or(Error::BadName)?;
        let len = field.iter().position(|c| *c == 0).ok_or(Error::BadName)?;
        Open::new(access_mode, field.get(..len).ok_or(Error::BadName)?)
    }

    /// Writes the message into the first [`OPEN_LEN`] bytes of `out`, the
    /// name NUL-padded; returns [`OPEN_LEN`].
    pub fn write(&self, out: &mut [u8]) -> Result<usize, Error> {
        start(out, OPEN_LEN, RNBD_MSG_OPEN)?;
        put(out, 4, &[self.access_mode as u8]);
        put(out, 6, &self.dev_name);
        Ok(OPEN_LEN)
    }
}

impl fmt::Debug for Open {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Open")
            .field("access_mode", &self.access_mode)
            .field("dev_name", &self.dev_name().escape_ascii())
            .finish()
    }
}

/// A request to unmap a device (`struct rnbd_msg_close`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Close {
    /// The server's ID of the device.
    pub device_id: u32,
}

impl Close {
    /// Parses the message at the start of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Close, Error> {
        check(buf, CLOSE_LEN, RNBD_MSG_CLOSE)?;
        Ok(Close {
            device_id: u32_at(buf, 4),
        })
    }

    /// Writes the message into the first [`CLOSE_LEN`] bytes of `out`;
    /// returns [`CLOSE_LEN`].
    pub fn write(&self, out: &mut [u8]) -> Result<usize, Error> {
        start(out, CLOSE_LEN, RNBD_MSG_CLOSE)?;
        put(out, 4, &self.device_id.to_le_bytes());
        Ok(CLOSE_LEN)
    }
}

/// The server's answer to OPEN: the device's ID and limits (`struct
/// rnbd_msg_open_rsp`). Sizes in sectors are in 512-byte units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct OpenRsp {
    /// The server's ID of the device, for IO and CLOSE.
    pub device_id: u32,
    /// Capacity.
    pub nsectors: u64,
    /// Largest request.
    pub max_hw_sectors: u32,
    /// Largest WRITE ZEROES.
    pub max_write_zeroes_sectors: u32,
    /// Largest discard.
    pub max_discard_sectors: u32,
    /// Discard allocation unit, bytes.
    pub discard_granularity: u32,
    /// Discard alignment offset, bytes.
    pub discard_alignment: u32,
    /// Physical block size, bytes.
    pub physical_block_size: u16,
    /// Logical block size, bytes (the client refuses 0).
    pub logical_block_size: u16,
    /// Most segments per request.
    pub max_segments: u16,
    /// Non-zero if secure discard is supported (the server puts the low
    /// 16 bits of its maximum secure erase size here).
    pub secure_discard: u16,
    /// Unused (`obsolete_rotational`), kept for the round trip.
    pub obsolete_rotational: u8,
    /// `RNBD_WRITEBACK` and `RNBD_FUA` bits.
    pub cache_policy: u8,
}

impl OpenRsp {
    /// Parses the message at the start of `buf`.
    pub fn parse(buf: &[u8]) -> Result<OpenRsp, Error> {
        check(buf, OPEN_RSP_LEN, RNBD_MSG_OPEN_RSP)?;
        Ok(OpenRsp {
            device_id: u32_at(buf, 4),
            nsectors: u64_at(buf, 8),
            max_hw_sectors: u32_at(buf, 16),
            max_write_zeroes_sectors: u32_at(buf, 20),
            max_discard_sectors: u32_at(buf, 24),
            discard_granularity: u32_at(buf, 28),
            discard_alignment: u32_at(buf, 32),
            physical_block_size: u16_at(buf, 36),
            logical_block_size: u16_at(buf, 38),
            max_segments: u16_at(buf, 40),
            secure_discard: u16_at(buf, 42),
            obsolete_rotational: buf.get(44).copied().unwrap_or(0),
            cache_policy: buf.get(45).copied().unwrap_or(0),
        })
    }

    /// Writes the message into the first [`OPEN_RSP_LEN`] bytes of `out`;
    /// returns [`OPEN_RSP_LEN`].
    pub fn write(&self, out: &mut [u8]) -> Result<usize, Error> {
        start(out, OPEN_RSP_LEN, RNBD_MSG_OPEN_RSP)?;
        put(out, 4, &self.device_id.to_le_bytes());
        put(out, 8, &self.nsectors.to_le_bytes());
        put(out, 16, &self.max_hw_sectors.to_le_bytes());
        put(out, 20, &self.max_write_zeroes_sectors.to_le_bytes());
        put(out, 24, &self.max_discard_sectors.to_le_bytes());
        put(out, 28, &self.discard_granularity.to_le_bytes());
        put(out, 32, &self.discard_alignment.to_le_bytes());
        put(out, 36, &self.physical_block_size.to_le_bytes());
        put(out, 38, &self.logical_block_size.to_le_bytes());
        put(out, 40, &self.max_segments.to_le_bytes());
        put(out, 42, &self.secure_discard.to_le_bytes());
        put(out, 44, &[self.obsolete_rotational, self.cache_policy]);
        Ok(OPEN_RSP_LEN)
    }
}

/// A block IO (`struct rnbd_msg_io`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Io {
    /// The server's ID of the device.
    pub device_id: u32,
    /// First sector (512-byte units).
    pub sector: u64,
    /// Operation and flags (`RNBD_OP_*`, `RNBD_F_*`).
    pub rw: u32,
    /// Bytes of the IO (for a discard or write zeroes, which carry no
    /// data, the only length there is).
    pub bi_size: u32,
    /// I/O priority (0 from a protocol 1 peer).
    pub prio: u16,
}

impl Io {
    /// Parses the message at the start of `buf`: at least [`IO_LEN_V1`]
    /// bytes; `prio` is read only if `buf` holds all [`IO_LEN`], as the
    /// server does, and is 0 otherwise.
    pub fn parse(buf: &[u8]) -> Result<Io, Error> {
        check(buf, IO_LEN_V1, RNBD_MSG_IO)?;
        Ok(Io {
            device_id: u32_at(buf, 4),
            sector: u64_at(buf, 8),
            rw: u32_at(buf, 16),
            bi_size: u32_at(buf, 20),
            prio: if buf.len() >= IO_LEN {
                u16_at(buf, 24)
            } else {
                0
            },
        })
    }

    /// Writes the message into the first [`IO_LEN`] bytes of `out`,
    /// padding zero; returns [`IO_LEN`].
    pub fn write(&self, out: &mut [u8]) -> Result<usize, Error> {
        start(out, IO_LEN, RNBD_MSG_IO)?;
        put(out, 4, &self.device_id.to_le_bytes());
        put(out, 8, &self.sector.to_le_bytes());
        put(out, 16, &self.rw.to_le_bytes());
        put(out, 20, &self.bi_size.to_le_bytes());
        put(out, 24, &self.prio.to_le_bytes());
        Ok(IO_LEN)
    }

    /// The operation (`rnbd_op`).
    pub const fn op(&self) -> u32 {
        rnbd_op(self.rw)
    }

    /// The flags (`rnbd_flags`).
    pub const fn flags(&self) -> u32 {
        rnbd_flags(self.rw)
    }
}

/// Any RNBD message, by its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[expect(
    clippy::large_enum_variant,
    reason = "OPEN's name makes it 264 bytes; a parsed message is a short-lived Copy value"
)]
pub enum RnbdMsg {
    /// SESS_INFO.
    SessInfo(SessInfo),
    /// SESS_INFO_RSP.
    SessInfoRsp(SessInfoRsp),
    /// OPEN.
    Open(Open),
    /// OPEN_RSP.
    OpenRsp(OpenRsp),
    /// IO.
    Io(Io),
    /// CLOSE.
    Close(Close),
}

impl RnbdMsg {
    /// Parses the message at the start of `buf` by its type; an unknown
    /// type is [`Error::BadType`] (the server answers `-EINVAL`).
    pub fn parse(buf: &[u8]) -> Result<RnbdMsg, Error> {
        match msg_type(buf)? {
            RNBD_MSG_SESS_INFO => SessInfo::parse(buf).map(RnbdMsg::SessInfo),
            RNBD_MSG_SESS_INFO_RSP => SessInfoRsp::parse(buf).map(RnbdMsg::SessInfoRsp),
            RNBD_MSG_OPEN => Open::parse(buf).map(RnbdMsg::Open),
            RNBD_MSG_OPEN_RSP => OpenRsp::parse(buf).map(RnbdMsg::OpenRsp),
            RNBD_MSG_IO => Io::parse(buf).map(RnbdMsg::Io),
            RNBD_MSG_CLOSE => Close::parse(buf).map(RnbdMsg::Close),
            t => Err(Error::BadType(t)),
        }
    }

    /// Writes the message at the start of `out`; returns its length.
    pub fn write(&self, out: &mut [u8]) -> Result<usize, Error> {
        match self {
            RnbdMsg::SessInfo(m) => m.write(out),
            RnbdMsg::SessInfoRsp(m) => m.write(out),
            RnbdMsg::Open(m) => m.write(out),
            RnbdMsg::OpenRsp(m) => m.write(out),
            RnbdMsg::Io(m) => m.write(out),
            RnbdMsg::Close(m) => m.write(out),
        }
    }
}
