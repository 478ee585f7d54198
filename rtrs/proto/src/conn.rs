// SPDX-License-Identifier: GPL-2.0

//! The connection messages: `struct rtrs_msg_conn_req`, the private data of
//! the client's `rdma_connect`, and `struct rtrs_msg_conn_rsp`, the private
//! data of the server's `rdma_accept` or `rdma_reject`.
//!
//! # Where `conn_req` sits
//!
//! On an rdma_cm ID bound to an IP address (RoCE, or IPoIB addressing),
//! the rdma_cm puts its own 36-byte header (`struct cma_hdr`, in this
//! project `rdma_spec::cm_msg::CmaHeader`) at the start of the CM REQ's
//! private data and the consumer's private data after it
//! (`cma_user_data_offset` and `cma_connect_ib` in
//! drivers/infiniband/core/cma.c). So `conn_req` occupies bytes
//! [`CONN_REQ_OFFSET_IP`]`..92` of the REQ's 92 bytes of private data and
//! fills them exactly; that is why the C says its size is at most 56. The
//! listener's rdma_cm strips the header again: the server's connect request
//! event shows `conn_req` at offset 0.
//!
//! On an `AF_IB` ID the rdma_cm adds no header and `conn_req` starts the
//! private data. There the rdma_cm still writes `CMA_VERSION` (0) into
//! byte 0 (`cma_format_hdr`), and the listening side reads bytes 0 and 1
//! as a `cma_hdr`'s version and IP version to tell an IP request from an
//! `AF_IB` one (`cma_save_ip_info`, through `cma_get_net_dev`): which is
//! why `conn_req` begins with two bytes the sender leaves zero
//! (`__cma_version`, `__ip_version`).
//!
//! `conn_rsp` travels with no rdma_cm header, at offset 0 of the REP's
//! private data (or the REJ's, when the server rejects).
//!
//! # Layout
//!
//! All multi-byte fields little-endian. `conn_req`, 56 bytes:
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 1 | `__cma_version` (0) |
//! | 1 | 1 | `__ip_version` (0) |
//! | 2 | 2 | `magic` |
//! | 4 | 2 | `version` |
//! | 6 | 2 | `cid` |
//! | 8 | 2 | `cid_num` |
//! | 10 | 2 | `recon_cnt` |
//! | 12 | 16 | `sess_uuid` |
//! | 28 | 16 | `paths_uuid` |
//! | 44 | 1 | `first_conn` (bit 0), `reserved_bits` (bits 1-7) |
//! | 45 | 11 | `reserved` |
//!
//! `conn_rsp`, 56 bytes:
//!
//! | offset | size | field |
//! | --- | --- | --- |
//! | 0 | 2 | `magic` |
//! | 2 | 2 | `version` |
//! | 4 | 2 | `errno` (signed) |
//! | 6 | 2 | `queue_depth` |
//! | 8 | 4 | `max_io_size` |
//! | 12 | 4 | `max_hdr_size` |
//! | 16 | 4 | `flags` |
//! | 20 | 36 | `reserved` |
//!
//! `first_conn` is a one-bit C bit-field; the little-endian ABIs the kernel
//! RTRS runs on (x86-64, arm64) put the first bit-field of a byte in its
//! least significant bit, so that is where it is here.
//!
//! Parsing checks what both C sides check: the length, the magic and the
//! major version (the minor is free). Reserved bytes are ignored when
//! parsing and written as zeros, so parse, write and parse again give the
//! same message. Nothing here panics.
//!
//! This module uses only `core` and its siblings [`super::consts`],
//! [`super::error`] and `super::le`.

use super::consts::{
    version_compatible, MAX_CON_NUM, RTRS_MAGIC, RTRS_MSG_NEW_RKEY_F, RTRS_PROTO_VER,
};
use super::error::Error;
use super::le::{need, put, u16_at, u32_at, zero};

/// Size of `struct rtrs_msg_conn_req`.
pub const CONN_REQ_LEN: usize = 56;
/// Size of `struct rtrs_msg_conn_rsp`.
pub const CONN_RSP_LEN: usize = 56;
/// Offset of `conn_req` in the private data of a CM REQ sent from an
/// rdma_cm ID bound to an IP address: the size of the rdma_cm header
/// (`sizeof(struct cma_hdr)`, `rdma_spec::cm_msg::CMA_HDR_LEN`).
pub const CONN_REQ_OFFSET_IP: usize = 36;
/// Offset of `conn_req` in the private data of a CM REQ sent from an
/// `AF_IB` rdma_cm ID: none.
pub const CONN_REQ_OFFSET_IB: usize = 0;

/// A 16-byte UUID (`uuid_t`), as its bytes in wire order.
pub type Uuid = [u8; 16];

/// The client's connection request (`struct rtrs_msg_conn_req`), one per
/// connection (QP) of a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnReq {
    /// The sender's protocol version word (`RTRS_PROTO_VER` when we
    /// send).
    pub version: u16,
    /// This connection's ID in its path, `0..cid_num`; 0 is the service
    /// connection.
    pub cid: u16,
    /// Connections of the path.
    pub cid_num: u16,
    /// How many times the client has reconnected the path.
    pub recon_cnt: u16,
    /// The path's UUID.
    pub sess_uuid: Uuid,
    /// The session's UUID, common to its paths.
    pub paths_uuid: Uuid,
    /// Whether this opens a new session on the client (`FIRST_CONN`):
    /// the server may then replace a session with the same paths UUID.
    pub first_conn: bool,
}

impl ConnReq {
    /// A request at our protocol version.
    pub const fn new(
        cid: u16,
        cid_num: u16,
        recon_cnt: u16,
        sess_uuid: Uuid,
        paths_uuid: Uuid,
        first_conn: bool,
    ) -> ConnReq {
        ConnReq {
            version: RTRS_PROTO_VER,
            cid,
            cid_num,
            recon_cnt,
            sess_uuid,
            paths_uuid,
            first_conn,
        }
    }

    /// Parses the request at the start of `buf` (the private data of a
    /// connect request event).
    ///
    /// Fails if `buf` is shorter than [`CONN_REQ_LEN`], the magic is not
    /// `RTRS_MAGIC` or the major version is not ours, as the server's
    /// `rtrs_rdma_connect` does. Bytes 0 and 1 and the reserved bits are
    /// not looked at.
    pub fn parse(buf: &[u8]) -> Result<ConnReq, Error> {
        need(buf.len(), CONN_REQ_LEN)?;
        let magic = u16_at(buf, 2);
        if magic != RTRS_MAGIC {
            return Err(Error::BadMagic(magic));
        }
        let version = u16_at(buf, 4);
        if !version_compatible(version) {
            return Err(Error::BadVersion(version));
        }
        Ok(ConnReq {
            version,
            cid: u16_at(buf, 6),
            cid_num: u16_at(buf, 8),
            recon_cnt: u16_at(buf, 10),
            sess_uuid: super::le::bytes(buf, 12),
            paths_uuid: super::le::bytes(buf, 28),
            first_conn: buf.get(44).is_some_and(|b| b & 1 != 0),
        })
    }

    /// Writes the request into the first [`CONN_REQ_LEN`] bytes of `out`,
    /// the two leading bytes and everything reserved zero; returns
    /// [`CONN_REQ_LEN`].
    ///
    /// `version` is written as it is, even with another major number (a
    /// test may want to send one); fails only if `out` is too short,
    /// leaving it untouched.
    pub fn write(&self, out: &mut [u8]) -> Result<usize, Error> {
        need(out.len(), CONN_REQ_LEN)?;
        zero(out, CONN_REQ_LEN);
        put(out, 2, &RTRS_MAGIC.to_le_bytes());
        put(out, 4, &self.version.to_le_bytes());
        put(out, 6, &self.cid.to_le_bytes());
        put(out, 8, &self.cid_num.to_le_bytes());
        put(out, 10, &self.recon_cnt.to_le_bytes());
        put(out, 12, &self.sess_uuid);
        put(out, 28, &self.paths_uuid);
        put(out, 44, &[u8::from(self.first_conn)]);
        Ok(CONN_REQ_LEN)
    }

    /// The server's sanity checks on the connection numbers
    /// (`rtrs_rdma_connect`): at most [`MAX_CON_NUM`] connections and
    /// `cid < cid_num`.
    pub fn check(&self) -> Result<(), Error> {
        if self.cid_num > MAX_CON_NUM {
            return Err(Error::OutOfRange {
                field: "cid_num",
                value: self.cid_num.into(),
                limit: u64::from(MAX_CON_NUM) + 1,
            });
        }
        if self.cid >= self.cid_num {
            return Err(Error::OutOfRange {
                field: "cid",
                value: self.cid.into(),
                limit: self.cid_num.into(),
            });
        }
        Ok(())
    }
}

/// The server's connection response (`struct rtrs_msg_conn_rsp`): the
/// session's parameters when it accepts, an errno when it rejects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnRsp {
    /// The sender's protocol version word.
    pub version: u16,
    /// 0 on accept; a negative errno on reject (the C writes the `int`
    /// errno into the `__le16`, so it travels as 16-bit two's complement:
    /// `-EBUSY` is `0xfff0`).
    pub errno: i16,
    /// Chunks (requests in flight) of the session.
    pub queue_depth: u16,
    /// Largest IO in bytes: the chunk size minus `max_hdr_size`.
    pub max_io_size: u32,
    /// Bytes of a chunk reserved for the user message and the RTRS
    /// message.
    pub max_hdr_size: u32,
    /// `RTRS_MSG_NEW_RKEY_F` or 0.
    pub flags: u32,
}

impl ConnRsp {
    /// The response of a server accepting a connection, at our version
    /// (`rtrs_rdma_do_accept`).
    pub const fn accept(
        queue_depth: u16,
        max_io_size: u32,
        max_hdr_size: u32,
        flags: u32,
    ) -> ConnRsp {
        ConnRsp {
            version: RTRS_PROTO_VER,
            errno: 0,
            queue_depth,
            max_io_size,
            max_hdr_size,
            flags,
        }
    }

    /// The response of a server rejecting a connection with `errno`
    /// (negative), at our version, everything else zero
    /// (`rtrs_rdma_do_reject`).
    pub const fn reject(errno: i16) -> ConnRsp {
        ConnRsp {
            version: RTRS_PROTO_VER,
            errno,
            queue_depth: 0,
            max_io_size: 0,
            max_hdr_size: 0,
            flags: 0,
        }
    }

    /// Parses the response at the start of `buf` (the private data of an
    /// established event).
    ///
    /// Fails if `buf` is shorter than [`CONN_RSP_LEN`], the magic is not
    /// `RTRS_MAGIC` or the major version is not ours, as the client's
    /// `rtrs_rdma_conn_established` does. A non-zero `errno` parses: the
    /// client then refuses the connection, which is the caller's
    /// decision.
    pub fn parse(buf: &[u8]) -> Result<ConnRsp, Error> {
        need(buf.len(), CONN_RSP_LEN)?;
        let magic = u16_at(buf, 0);
        if magic != RTRS_MAGIC {
            return Err(Error::BadMagic(magic));
        }
        let version = u16_at(buf, 2);
        if !version_compatible(version) {
            return Err(Error::BadVersion(version));
        }
        Ok(ConnRsp {
            version,
            errno: i16::from_le_bytes(super::le::bytes(buf, 4)),
            queue_depth: u16_at(buf, 6),
            max_io_size: u32_at(buf, 8),
            max_hdr_size: u32_at(buf, 12),
            flags: u32_at(buf, 16),
        })
    }

    /// The errno of a rejection's private data, read as the client's
    /// `rtrs_rdma_conn_rejected` reads it: only the length is checked (not
    /// the magic nor the version), and the field is signed.
    pub fn reject_errno(buf: &[u8]) -> Result<i16, Error> {
        need(buf.len(), CONN_RSP_LEN)?;
        Ok(i16::from_le_bytes(super::le::bytes(buf, 4)))
    }

    /// Writes the response into the first [`CONN_RSP_LEN`] bytes of
    /// `out`, reserved bytes zero; returns [`CONN_RSP_LEN`]. Fails only if
    /// `out` is too short, leaving it untouched.
    pub fn write(&self, out: &mut [u8]) -> Result<usize, Error> {
        need(out.len(), CONN_RSP_LEN)?;
        zero(out, CONN_RSP_LEN);
        put(out, 0, &RTRS_MAGIC.to_le_bytes());
        put(out, 2, &self.version.to_le_bytes());
        put(out, 4, &self.errno.to_le_bytes());
        put(out, 6, &self.queue_depth.to_le_bytes());
        put(out, 8, &self.max_io_size.to_le_bytes());
        put(out, 12, &self.max_hdr_size.to_le_bytes());
        put(out, 16, &self.flags.to_le_bytes());
        Ok(CONN_RSP_LEN)
    }

    /// The chunk size the client derives, `max_io_size + max_hdr_size`
    /// (`rtrs_rdma_conn_established`), or `None` if the sum overflows.
    pub const fn chunk_size(&self) -> Option<u32> {
        self.max_io_size.checked_add(self.max_hdr_size)
    }

    /// Whether the server sends an RKEY_RSP with every IO response
    /// (`RTRS_MSG_NEW_RKEY_F`).
    pub const fn new_rkey(&self) -> bool {
        self.flags & RTRS_MSG_NEW_RKEY_F != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn req_round_trip() {
        let r = ConnReq::new(3, 4, 1, [1; 16], [2; 16], true);
        let mut b = [0xaau8; 60];
        assert_eq!(r.write(&mut b), Ok(CONN_REQ_LEN));
        assert_eq!(b[56..], [0xaa; 4]);
        assert_eq!(ConnReq::parse(&b), Ok(r));
        assert_eq!(r.check(), Ok(()));
    }

    #[test]
    fn req_checks() {
        let mut r = ConnReq::new(4, 4, 0, [0; 16], [0; 16], false);
        assert!(matches!(
            r.check(),
            Err(Error::OutOfRange { field: "cid", .. })
        ));
        r.cid_num = 4097;
        assert!(matches!(
            r.check(),
            Err(Error::OutOfRange {
                field: "cid_num",
                ..
            })
        ));
        r.cid_num = 4096;
        assert_eq!(r.check(), Ok(()));
    }

    #[test]
    fn rsp_round_trip() {
        let r = ConnRsp::accept(512, 126976, 4096, RTRS_MSG_NEW_RKEY_F);
        let mut b = [0u8; CONN_RSP_LEN];
        assert_eq!(r.write(&mut b), Ok(CONN_RSP_LEN));
        assert_eq!(ConnRsp::parse(&b), Ok(r));
        assert_eq!(r.chunk_size(), Some(128 << 10));
        assert!(r.new_rkey());
        let j = ConnRsp::reject(-16);
        j.write(&mut b).unwrap();
        assert_eq!(ConnRsp::parse(&b), Ok(j));
        assert_eq!(ConnRsp::reject_errno(&b), Ok(-16));
        assert_eq!(&b[4..6], &[0xf0, 0xff]);
    }

    #[test]
    fn short_output_untouched() {
        let mut b = [0x55u8; 55];
        assert_eq!(
            ConnReq::new(0, 1, 0, [0; 16], [0; 16], false).write(&mut b),
            Err(Error::TooShort {
                needed: 56,
                got: 55
            })
        );
        assert_eq!(
            ConnRsp::reject(-1).write(&mut b).unwrap_err(),
            Error::TooShort {
                needed: 56,
                got: 55
            }
        );
        assert!(b.iter().all(|x| *x == 0x55));
    }
}
