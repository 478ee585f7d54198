// SPDX-License-Identifier: GPL-2.0

//! The RDMA netlink family (`NETLINK_RDMA`, protocol 20) as a sans-IO
//! codec: what unchanged user space (libibverbs 44's device discovery,
//! iproute2's `rdma` tool) sends to the kernel's RDMA netlink socket, and
//! what it expects back.
//!
//! - [`msg`]: netlink message headers and attributes (TLVs, 4-byte
//!   alignment, nesting): parsing that checks every length, and building
//!   into a caller's buffer.
//! - [`nldev`]: the `RDMA_NL_NLDEV` client: the message type encoding
//!   (client and operation), the command and attribute numbers of
//!   `include/uapi/rdma/rdma_netlink.h` (checked against the header by the
//!   host test `spec/tests/netlink_layout.rs`), request decoding and reply
//!   building for the commands device discovery and `rdma dev`/`rdma link`
//!   use, from plain structures the caller fills (no kernel types).
//!
//! Nothing here does I/O: the kernel side (`kshim::netlink`) hands a
//! request datagram's bytes to its handler, which walks them with
//! [`msg::Messages`], decodes each with [`nldev::decode`] and sends the
//! reply datagrams it builds with the `nldev::put_*` functions.
//!
//! Parsing never panics and never slices out of range; the fuzz target
//! `tools/wirefuzz` runs arbitrary bytes through [`nldev::decode`] and
//! checks that what is built parses back.
//!
//! This module uses only `core`.

pub mod msg;
pub mod nldev;

/// Why netlink bytes were rejected, or a reply could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NlError {
    /// Fewer bytes than a header.
    Truncated {
        /// Bytes needed.
        needed: usize,
        /// Bytes given.
        got: usize,
    },
    /// A message's length is below a header's or beyond the datagram.
    BadMsgLen {
        /// The length field.
        len: u32,
        /// Bytes left in the datagram.
        left: usize,
    },
    /// An attribute's length is below a header's or beyond its payload.
    BadAttrHeader {
        /// Bytes left in the payload.
        left: usize,
    },
    /// An integer attribute's value is not of its type's size.
    BadAttrLen {
        /// The attribute type.
        ty: u16,
        /// The value's length.
        len: usize,
    },
    /// A string attribute has no NUL, is too long, or (when building)
    /// holds a NUL.
    BadString {
        /// The attribute type.
        ty: u16,
    },
    /// A required attribute is missing.
    Missing {
        /// The attribute type.
        ty: u16,
    },
    /// The message is not an RDMA netlink request (control type, or not
    /// flagged `NLM_F_REQUEST`): the kernel ignores it.
    NotRequest,
    /// The message's client is not `RDMA_NL_NLDEV`.
    UnknownClient(u16),
    /// The operation is not one of the NLDEV commands.
    UnknownOp(u16),
    /// A known NLDEV command this codec does not implement.
    Unsupported(u16),
    /// The output buffer is full.
    NoSpace,
}

/// `EPERM`.
pub const EPERM: i32 = 1;
/// `ENOENT`.
pub const ENOENT: i32 = 2;
/// `ENODEV`.
pub const ENODEV: i32 = 19;
/// `EINVAL`.
pub const EINVAL: i32 = 22;
/// `EMSGSIZE`.
pub const EMSGSIZE: i32 = 90;
/// `EOPNOTSUPP`.
pub const EOPNOTSUPP: i32 = 95;

impl NlError {
    /// The errno (positive) the kernel answers a request with for this
    /// error, as the C RDMA netlink does for the same fault: `EINVAL` for
    /// malformed requests and unknown operations, `EOPNOTSUPP` for
    /// commands without a handler, `EMSGSIZE` when a reply does not fit.
    pub fn errno(&self) -> i32 {
        match self {
            NlError::Unsupported(_) => EOPNOTSUPP,
            NlError::NoSpace => EMSGSIZE,
            _ => EINVAL,
        }
    }
}
