// SPDX-License-Identifier: GPL-2.0

//! The framing of one `write()` to the uverbs device.
//!
//! A legacy command is a [`CmdHdr`] (command number, then the whole
//! write's length in 4-byte words, header included, and the response
//! area's length in 4-byte words), then the core request; if the command
//! has a response, the core request starts with the response's user
//! address. If the command takes driver data (udata), the bytes after the
//! core request are the driver's input, and the response area after the
//! core response is the driver's output.
//!
//! An extended command sets [`FLAG_EXTENDED`] in the command word and
//! counts in 8-byte words, headers excluded: the [`CmdHdr`], then an
//! [`ExCmdHdr`] (response address, driver input and output words, a
//! reserved word that must be zero), then the core request
//! (`in_words * 8` bytes) and the driver input (`provider_in_words * 8`
//! bytes); the response area is the core response (`out_words * 8` bytes)
//! followed by the driver output (`provider_out_words * 8` bytes).
//!
//! [`parse`] checks all of this, in the order and with the errnos of the
//! C uverbs, and returns the [`Request`]: slices of the buffer and user
//! address ranges, never a length taken on trust. [`declared_len`] reads
//! only the headers, so a dispatcher can bound its copy from user space
//! before copying the whole buffer.
//!
//! Unlike the C uverbs, a legacy `DESTROY_CQ` of 16 bytes (sent by
//! rdma-core 18 and 19) is rejected: rdma-core 44 sends 24.

use super::cmd::{lookup, CmdSpec, FLAG_EXTENDED};
use super::{AbiError, Wire, WireStruct};

wire_struct! {
    /// The header every command starts with.
    pub struct CmdHdr = "ib_uverbs_cmd_hdr" {
        /// The command number, with [`FLAG_EXTENDED`] for an extended
        /// command.
        command: u32,
        /// Legacy: the write's length in 4-byte words, this header
        /// included. Extended: the core request in 8-byte words.
        in_words: u16,
        /// Legacy: the response area in 4-byte words. Extended: the core
        /// response in 8-byte words.
        out_words: u16,
    }
}

wire_struct! {
    /// The second header of an extended command.
    pub struct ExCmdHdr = "ib_uverbs_ex_cmd_hdr" {
        /// User address of the response area (0: no response).
        response: u64,
        /// Driver input, in 8-byte words.
        provider_in_words: u16,
        /// Driver output, in 8-byte words.
        provider_out_words: u16,
        /// Must be zero.
        cmd_hdr_reserved: u32,
    }
}

/// Length of [`CmdHdr`].
pub const HDR_LEN: usize = 8;
/// Length of [`ExCmdHdr`].
pub const EX_HDR_LEN: usize = 16;

/// The largest `write()` the framing can accept: an extended command
/// with every word count at its maximum. A dispatcher may refuse larger
/// writes before reading anything.
pub const MAX_WRITE_LEN: usize = HDR_LEN + EX_HDR_LEN + 2 * (u16::MAX as usize) * 8;

/// A range of user memory the kernel writes a response to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserOut {
    /// The user address.
    pub addr: u64,
    /// Its length in bytes; `addr + len` does not wrap.
    pub len: usize,
}

impl UserOut {
    /// A range, unless it wraps around the address space.
    fn new(addr: u64, len: usize) -> Result<Self, AbiError> {
        let l = u64::try_from(len).map_err(|_| AbiError::AddressOverflow)?;
        addr.checked_add(l).ok_or(AbiError::AddressOverflow)?;
        Ok(UserOut { addr, len })
    }
}

/// A `write()` buffer, split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request<'a> {
    /// The command's table entry.
    pub spec: &'static CmdSpec,
    /// The core request: at least `spec.req_size` bytes (legacy commands
    /// with driver data: exactly that; others: everything but the
    /// driver data).
    pub core_in: &'a [u8],
    /// The driver input (empty if none).
    pub driver_in: &'a [u8],
    /// Where the core response goes (`None`: the command has no response,
    /// or an extended command gave no response address). At least
    /// `spec.resp_size` bytes when present.
    pub core_out: Option<UserOut>,
    /// Where the driver output goes (`None`: no driver output area).
    pub driver_out: Option<UserOut>,
}

impl<'a> Request<'a> {
    /// Decodes the core request as `T` the way the C uverbs reads a
    /// request: a shorter core request is read as if zero-extended; bytes
    /// beyond `T` must be zero ([`AbiError::NonZeroTail`], `EOPNOTSUPP`).
    /// Not for `POST_SEND`, whose work requests follow its header: see
    /// [`Request::core_head`].
    pub fn core<T: WireStruct>(&self) -> Result<T, AbiError> {
        if let Some(tail) = self.core_in.get(T::SIZE..) {
            if tail.iter().any(|b| *b != 0) {
                return Err(AbiError::NonZeroTail);
            }
        }
        Ok(T::read_from(self.core_in))
    }

    /// Decodes the start of the core request as `T`, whatever follows it.
    pub fn core_head<T: WireStruct>(&self) -> Result<T, AbiError> {
        T::decode(self.core_in)
    }
}

/// Reads the headers from the start of `head` (the first [`HDR_LEN`]
/// bytes of a write, [`HDR_LEN`] + [`EX_HDR_LEN`] for an extended
/// command) and returns the length the whole write must have.
pub fn declared_len(head: &[u8]) -> Result<usize, AbiError> {
    let hdr = CmdHdr::decode(head)?;
    if hdr.command & FLAG_EXTENDED == 0 {
        return Ok(usize::from(hdr.in_words) * 4);
    }
    let ex =
        ExCmdHdr::decode(head.get(HDR_LEN..).unwrap_or(&[])).map_err(|_| AbiError::TooShort {
            needed: HDR_LEN + EX_HDR_LEN,
            got: head.len(),
        })?;
    Ok(HDR_LEN + EX_HDR_LEN + (usize::from(hdr.in_words) + usize::from(ex.provider_in_words)) * 8)
}

/// Splits one `write()` buffer (all `count` bytes of it) into a
/// [`Request`], checking every length against the header and the
/// command table.
pub fn parse(buf: &[u8]) -> Result<Request<'_>, AbiError> {
    let hdr = CmdHdr::decode(buf)?;
    let spec = lookup(hdr.command)?;
    let body = buf.get(HDR_LEN..).unwrap_or(&[]);
    if spec.extended {
        parse_ex(hdr, spec, body, buf.len())
    } else {
        parse_legacy(hdr, spec, body, buf.len())
    }
}

/// `b` cut at `at`, if `at` is within it.
fn split(b: &[u8], at: usize) -> Option<(&[u8], &[u8])> {
    Some((b.get(..at)?, b.get(at..)?))
}

/// The legacy framing: 4-byte words, header included.
fn parse_legacy<'a>(
    hdr: CmdHdr,
    spec: &'static CmdSpec,
    body: &'a [u8],
    count: usize,
) -> Result<Request<'a>, AbiError> {
    let declared = usize::from(hdr.in_words) * 4;
    if declared != count {
        return Err(AbiError::LengthMismatch {
            declared,
            got: count,
        });
    }
    if body.len() < spec.req_size {
        return Err(AbiError::RequestTooSmall {
            needed: spec.req_size,
            got: body.len(),
        });
    }
    let out_len = usize::from(hdr.out_words) * 4;
    if out_len < spec.resp_size {
        return Err(AbiError::ResponseTooSmall {
            needed: spec.resp_size,
            got: out_len,
        });
    }
    let (core_in, driver_in) = if spec.has_udata {
        split(body, spec.req_size).ok_or(AbiError::RequestTooSmall {
            needed: spec.req_size,
            got: body.len(),
        })?
    } else {
        (body, &[][..])
    };
    let (core_out, driver_out) = if spec.has_resp {
        // The table gives every command with a response a request that
        // starts with the response address, so `core_in` holds 8 bytes.
        if core_in.len() < 8 {
            return Err(AbiError::RequestTooSmall {
                needed: 8,
                got: core_in.len(),
            });
        }
        let response = u64::read_from(core_in);
        if spec.has_udata {
            let core = UserOut::new(response, spec.resp_size)?;
            let driver_len = out_len - spec.resp_size;
            let driver = if driver_len == 0 {
                None
            } else {
                let at = response
                    .checked_add(spec.resp_size as u64)
                    .ok_or(AbiError::AddressOverflow)?;
                Some(UserOut::new(at, driver_len)?)
            };
            (Some(core), driver)
        } else {
            (Some(UserOut::new(response, out_len)?), None)
        }
    } else {
        (None, None)
    };
    Ok(Request {
        spec,
        core_in,
        driver_in,
        core_out,
        driver_out,
    })
}

/// The extended framing: 8-byte words, headers excluded.
fn parse_ex<'a>(
    hdr: CmdHdr,
    spec: &'static CmdSpec,
    body: &'a [u8],
    count: usize,
) -> Result<Request<'a>, AbiError> {
    let ex = ExCmdHdr::decode(body).map_err(|_| AbiError::TooShort {
        needed: HDR_LEN + EX_HDR_LEN,
        got: count,
    })?;
    let rest = body.get(EX_HDR_LEN..).unwrap_or(&[]);
    let in_len = usize::from(hdr.in_words) * 8;
    let driver_in_len = usize::from(ex.provider_in_words) * 8;
    let declared = HDR_LEN + EX_HDR_LEN + in_len + driver_in_len;
    if declared != count {
        return Err(AbiError::LengthMismatch {
            declared,
            got: count,
        });
    }
    if in_len < spec.req_size {
        return Err(AbiError::RequestTooSmall {
            needed: spec.req_size,
            got: in_len,
        });
    }
    if ex.cmd_hdr_reserved != 0 {
        return Err(AbiError::ReservedNotZero);
    }
    let out_len = usize::from(hdr.out_words) * 8;
    let driver_out_len = usize::from(ex.provider_out_words) * 8;
    let (core_out, driver_out) = if ex.response != 0 {
        if out_len == 0 && driver_out_len == 0 {
            return Err(AbiError::ResponseWithoutWords);
        }
        if out_len < spec.resp_size {
            return Err(AbiError::ResponseTooSmall {
                needed: spec.resp_size,
                got: out_len,
            });
        }
        let core = UserOut::new(ex.response, out_len)?;
        let driver = if driver_out_len == 0 {
            None
        } else {
            let at = ex
                .response
                .checked_add(out_len as u64)
                .ok_or(AbiError::AddressOverflow)?;
            Some(UserOut::new(at, driver_out_len)?)
        };
        (Some(core), driver)
    } else {
        if out_len != 0 || driver_out_len != 0 {
            return Err(AbiError::WordsWithoutResponse);
        }
        (None, None)
    };
    let (core_in, driver_in) = split(rest, in_len).ok_or(AbiError::LengthMismatch {
        declared,
        got: count,
    })?;
    Ok(Request {
        spec,
        core_in,
        driver_in,
        core_out,
        driver_out,
    })
}
