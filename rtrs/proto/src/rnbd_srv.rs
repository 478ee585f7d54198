// SPDX-License-Identifier: GPL-2.0

//! What an RNBD server decides from a client's messages, before it touches
//! a block device: which block operation an IO message asks for
//! ([`BlockOp::of`]), which path an OPEN's device name stands for under the
//! server's search path ([`full_path`]), and whether an access mode may be
//! granted beside the write opens a device already has ([`admit`]).
//!
//! The reference is Linux 6.12's drivers/block/rnbd (`rnbd_to_bio_flags`,
//! `rnbd_srv_get_full_path`, `rnbd_srv_check_update_open_perm`), with two
//! differences that only ever refuse more: an IO with an operation or flag
//! bits the protocol does not define is refused ([`Error::BadType`]) where
//! the C warns and submits an empty operation, and a name that would climb
//! out of the search path is refused in every spelling the C refuses
//! (`..` anywhere), as is an empty name.

use super::error::Error;
use super::rnbd::{
    rnbd_flags, rnbd_op, AccessMode, RNBD_F_FUA, RNBD_F_SYNC, RNBD_OP_DISCARD, RNBD_OP_FLUSH,
    RNBD_OP_READ, RNBD_OP_SECURE_ERASE, RNBD_OP_WRITE, RNBD_OP_WRITE_ZEROES,
};

/// The longest path the server opens, with its NUL (`PATH_MAX`).
pub const PATH_MAX: usize = 4096;

/// The text in the search path that stands for the session's name.
pub const SESSNAME_MARK: &[u8] = b"%SESSNAME%";

/// The block operation of an IO message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockKind {
    /// Read the sectors into the request's data.
    Read,
    /// Write the request's data to the sectors.
    Write,
    /// Flush the volatile cache (a write with a preflush and no data).
    Flush,
    /// Discard the sectors (no data; `bi_size` bytes).
    Discard,
    /// Erase the sectors securely (no data; `bi_size` bytes).
    SecureErase,
    /// Write zeroes to the sectors (no data; `bi_size` bytes).
    WriteZeroes,
}

impl BlockKind {
    /// True for the operations whose bytes travel in the request's data
    /// area (read and write); the others carry their length in
    /// `bi_size` only.
    pub const fn has_data(self) -> bool {
        matches!(self, BlockKind::Read | BlockKind::Write)
    }

    /// True for the operations that change the device: refused on a
    /// read-only mapping.
    pub const fn writes(self) -> bool {
        !matches!(self, BlockKind::Read)
    }
}

/// A block operation with its flags, as an IO message's `rw` asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockOp {
    /// The operation.
    pub kind: BlockKind,
    /// `RNBD_F_SYNC`: a synchronous request.
    pub sync: bool,
    /// `RNBD_F_FUA`: forced unit access.
    pub fua: bool,
}

impl BlockOp {
    /// The operation that `rw` names: [`Error::BadType`] (with the
    /// operation number) for an operation or a flag the protocol does
    /// not define.
    pub fn of(rw: u32) -> Result<BlockOp, Error> {
        let kind = match rnbd_op(rw) {
            RNBD_OP_READ => BlockKind::Read,
            RNBD_OP_WRITE => BlockKind::Write,
            RNBD_OP_FLUSH => BlockKind::Flush,
            RNBD_OP_DISCARD => BlockKind::Discard,
            RNBD_OP_SECURE_ERASE => BlockKind::SecureErase,
            RNBD_OP_WRITE_ZEROES => BlockKind::WriteZeroes,
            op => return Err(Error::BadType(op as u16)),
        };
        let flags = rnbd_flags(rw);
        if flags & !(RNBD_F_SYNC | RNBD_F_FUA) != 0 {
            return Err(Error::BadType(rnbd_op(rw) as u16));
        }
        Ok(BlockOp {
            kind,
            sync: flags & RNBD_F_SYNC != 0,
            fua: flags & RNBD_F_FUA != 0,
        })
    }
}

/// Sector size of RNBD's `sector` field, whatever the device's block
/// size.
pub const SECTOR: u64 = 512;

/// Checks an IO of kind `kind` at `sector` for `bi_size` bytes, whose
/// request carries `data_len` bytes of data area, against a device of
/// `nsectors` sectors and logical blocks of `lbs` bytes: a read or write
/// moves exactly its data area, neither empty; a discard, secure erase
/// or write zeroes covers at least one block and no data; every range is
/// whole logical blocks inside the device. A flush carries nothing and
/// has no range. [`Error::OutOfRange`] names what is wrong.
pub fn check_io(
    kind: BlockKind,
    sector: u64,
    bi_size: u32,
    data_len: usize,
    nsectors: u64,
    lbs: u32,
) -> Result<(), Error> {
    let bad = |field: &'static str, value: u64, limit: u64| {
        Err(Error::OutOfRange {
            field,
            value,
            limit,
        })
    };
    if kind == BlockKind::Flush {
        return if data_len == 0 {
            Ok(())
        } else {
            bad("flush data", data_len as u64, 1)
        };
    }
    if kind.has_data() {
        if data_len as u64 != u64::from(bi_size) {
            return bad(
                "data area vs bi_size",
                data_len as u64,
                u64::from(bi_size).saturating_add(1),
            );
        }
    } else if data_len != 0 {
        return bad("data of a dataless operation", data_len as u64, 1);
    }
    let lbs = u64::from(lbs.max(SECTOR as u32));
    let size = u64::from(bi_size);
    if size == 0 || size / lbs * lbs != size {
        return bad("bi_size in logical blocks", size, lbs);
    }
    // Block sizes are powers of two from 512 up, so a block is a whole
    // number of sectors.
    let per_block = lbs / SECTOR;
    if sector / per_block * per_block != sector {
        return bad("sector in logical blocks", sector, per_block);
    }
    let end = sector.checked_add(size / SECTOR);
    match end {
        Some(end) if end <= nsectors => Ok(()),
        _ => bad(
            "end sector",
            end.unwrap_or(u64::MAX),
            nsectors.saturating_add(1),
        ),
    }
}

/// The I/O priority to give a bio for an IO message's `prio`: as sent
/// when its class (the top three bits) is one the block layer knows
/// (none, real-time, best-effort, idle), else 0. Schedulers index tables
/// by the class, so a class from the wire is never passed on unchecked.
pub const fn sane_prio(prio: u16) -> u16 {
    if prio >> 13 <= 3 {
        prio
    } else {
        0
    }
}

/// Writes into `out` the path of device `name` (an OPEN's device name,
/// without its NUL) under `search` (the server's `dev_search_path`) for
/// the session `sess`: `search/name`, or, when `search` holds
/// [`SESSNAME_MARK`], the part of `search` before it, then `/sess/name`;
/// runs of `/` are made one. Returns the length written; `out` then holds
/// the path and a NUL after it.
///
/// [`Error::BadName`] for an empty name, a name holding `..` or a NUL,
/// and [`Error::OutOfRange`] for a path that does not fit [`PATH_MAX`]
/// or `out` with its NUL (never a path cut short).
pub fn full_path(search: &[u8], sess: &[u8], name: &[u8], out: &mut [u8]) -> Result<usize, Error> {
    if name.is_empty() || name.contains(&0) || name.windows(2).any(|w| w == b"..") {
        return Err(Error::BadName);
    }
    let mark = search
        .windows(SESSNAME_MARK.len())
        .position(|w| w == SESSNAME_MARK);
    if out.is_empty() {
        return Err(Error::OutOfRange {
            field: "path length with its NUL",
            value: 1,
            limit: 1,
        });
    }
    let mut w = Writer { out, len: 0 };
    match mark {
        Some(at) => {
            w.push(&search[..at])?;
            w.push(b"/")?;
            w.push(sess)?;
        }
        None => w.push(search)?,
    }
    w.push(b"/")?;
    w.push(name)?;
    let len = w.len;
    w.out[len] = 0;
    Ok(len)
}

/// Appends to a path, making each run of `/` one.
struct Writer<'a> {
    out: &'a mut [u8],
    len: usize,
}

impl Writer<'_> {
    fn push(&mut self, part: &[u8]) -> Result<(), Error> {
        for &b in part {
            if b == b'/' && self.len > 0 && self.out[self.len - 1] == b'/' {
                continue;
            }
            // Room for this byte and the NUL after the path.
            let limit = core::cmp::min(self.out.len(), PATH_MAX);
            if self.len + 1 >= limit {
                return Err(Error::OutOfRange {
                    field: "path length with its NUL",
                    value: self.len as u64 + 2,
                    limit: limit as u64 + 1,
                });
            }
            self.out[self.len] = b;
            self.len += 1;
        }
        Ok(())
    }
}

/// Whether a device already opened for writing `writers` times may be
/// opened in `mode`: the new count of write opens, or
/// [`Error::BadType`] (with the mode) when the mode is refused: a second
/// read-write open, or a third with migration (a migrating client may
/// join one read-write client).
pub fn admit(writers: u32, mode: AccessMode) -> Result<u32, Error> {
    match mode {
        AccessMode::Ro => Ok(writers),
        AccessMode::Rw if writers == 0 => Ok(1),
        AccessMode::Migration if writers < 2 => Ok(writers + 1),
        _ => Err(Error::BadType(mode as u16)),
    }
}

/// The name of an access mode in sysfs (`ro`, `rw`, `migration`).
pub const fn mode_name(mode: AccessMode) -> &'static str {
    match mode {
        AccessMode::Ro => "ro",
        AccessMode::Rw => "rw",
        AccessMode::Migration => "migration",
    }
}
