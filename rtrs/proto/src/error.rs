// SPDX-License-Identifier: GPL-2.0

//! The one error type of the RTRS and RNBD codecs.
//!
//! Every parser, writer and layout function of this crate fails with an
//! [`Error`] and never panics. The variants say what was wrong with the
//! bytes or values given, with the numbers involved, so that a caller can
//! log them and turn them into the errno the C stack would use
//! (`-ECONNRESET` for a bad connection message, `-EINVAL` for a bad
//! request, and so on); this crate itself knows no errno values but those
//! it carries on the wire.
//!
//! This module uses only `core`.

use core::fmt;

/// Why bytes could not be parsed or a message or value could not be
/// written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The buffer is shorter than the message (or the output buffer
    /// shorter than what is to be written).
    TooShort {
        /// Bytes needed.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
    /// A connection message does not start with `RTRS_MAGIC`.
    BadMagic(u16),
    /// A connection message's protocol version has another major number
    /// than ours (the whole version is given).
    BadVersion(u16),
    /// The message type field does not hold the type expected here (or,
    /// where several are allowed, any of them).
    BadType(u16),
    /// A descriptor count is above what the message may carry.
    TooManySg {
        /// The count on the wire or asked for.
        count: usize,
        /// The most allowed.
        max: usize,
    },
    /// A name field is not NUL-terminated, is empty or too long, or holds
    /// a character the C refuses (`/` or `.` in a path name).
    BadName,
    /// A value does not fit its field.
    TooWide {
        /// The field.
        field: &'static str,
        /// Its width in bits.
        bits: u32,
    },
    /// A value is not below the limit it must respect.
    OutOfRange {
        /// What the value is.
        field: &'static str,
        /// The value.
        value: u64,
        /// The value must be below this.
        limit: u64,
    },
    /// The immediate data's type is none of `enum rtrs_imm_type`.
    BadImmType(u32),
    /// A request's user message is longer than the offset of the RTRS
    /// message that follows it (`usr_len > off`).
    UsrLenTooLong {
        /// The message's `usr_len`.
        usr_len: u16,
        /// The offset of the RTRS message in its chunk.
        off: u32,
    },
    /// A message would end beyond the end of its chunk.
    OutsideChunk {
        /// Where the message would end, from the chunk's start.
        end: u64,
        /// The chunk size.
        chunk_size: u32,
    },
    /// A queue depth is 0 or above `MAX_SESS_QUEUE_DEPTH`.
    BadQueueDepth(u32),
    /// The queue depth and chunk size of a session are not usable: zero,
    /// above the C limits, or too large together for the 28-bit immediate
    /// payload.
    BadGeometry {
        /// Number of chunks.
        queue_depth: u32,
        /// Bytes per chunk.
        chunk_size: u32,
    },
    /// The descriptors of an INFO_RSP do not map the whole queue of
    /// chunks as the client requires.
    BadSgList,
    /// The text written as a multipath policy is none of those the C
    /// accepts (`mpath_policy_store`, rtrs-clt-sysfs.c).
    BadPolicy,
    /// A setting is outside the inclusive range it accepts.
    NotInRange {
        /// The setting.
        field: &'static str,
        /// The value given.
        value: i64,
        /// The smallest value accepted.
        min: i64,
        /// The largest value accepted.
        max: i64,
    },
    /// A permit given back is not taken (a double free).
    NotTaken(u32),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::TooShort { needed, got } => {
                write!(f, "RTRS buffer too short: {got} bytes, {needed} needed")
            }
            Error::BadMagic(m) => write!(f, "bad RTRS magic {m:#06x}"),
            Error::BadVersion(v) => {
                write!(f, "unsupported RTRS version {}.{}", v >> 8, v & 0xff)
            }
            Error::BadType(t) => write!(f, "unexpected RTRS message type {t}"),
            Error::TooManySg { count, max } => {
                write!(f, "{count} RTRS descriptors, at most {max}")
            }
            Error::BadName => write!(f, "bad RTRS path name"),
            Error::TooWide { field, bits } => write!(f, "{field} holds only {bits} bits"),
            Error::OutOfRange {
                field,
                value,
                limit,
            } => write!(f, "{field} {value} out of range, must be below {limit}"),
            Error::BadImmType(t) => write!(f, "unknown RTRS immediate type {t}"),
            Error::UsrLenTooLong { usr_len, off } => {
                write!(f, "RTRS usr_len {usr_len} above message offset {off}")
            }
            Error::OutsideChunk { end, chunk_size } => {
                write!(
                    f,
                    "RTRS message ends at {end}, beyond chunk of {chunk_size}"
                )
            }
            Error::BadQueueDepth(q) => write!(f, "bad RTRS queue depth {q}"),
            Error::BadGeometry {
                queue_depth,
                chunk_size,
            } => write!(
                f,
                "unusable RTRS geometry: {queue_depth} chunks of {chunk_size} bytes"
            ),
            Error::BadSgList => write!(f, "RTRS INFO_RSP does not map the queue"),
            Error::BadPolicy => write!(f, "unknown RTRS multipath policy"),
            Error::NotInRange {
                field,
                value,
                min,
                max,
            } => write!(f, "{field} {value} out of range {min}..={max}"),
            Error::NotTaken(id) => write!(f, "RTRS permit {id} is not taken"),
        }
    }
}
