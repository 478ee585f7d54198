// SPDX-License-Identifier: GPL-2.0

//! The numbers of the RTRS protocol: version, magic, message types, flags,
//! immediate data types and widths, size limits and defaults, and the
//! heartbeat and reconnect timing of a path.
//!
//! Each constant carries the name of its C counterpart in Linux 6.12
//! (drivers/infiniband/ulp/rtrs/rtrs-pri.h unless said otherwise); where
//! the C has only a literal, the function that holds it is named instead.
//! Values a peer learns from the wire (queue depth, chunk and header sizes)
//! are defaults here, not fixed truths: the session's own values come from
//! its `conn_rsp`.
//!
//! This module uses only `core`.

// ---------------------------------------------------------------------------
// Version and magic

/// Major protocol version (`RTRS_PROTO_VER_MAJOR`). Both sides refuse a
/// connection message whose major version differs from theirs.
pub const RTRS_PROTO_VER_MAJOR: u8 = 2;
/// Minor protocol version (`RTRS_PROTO_VER_MINOR`). Not checked by either
/// side.
pub const RTRS_PROTO_VER_MINOR: u8 = 0;
/// The version word sent in `conn_req` and `conn_rsp` (`RTRS_PROTO_VER`):
/// major in the high byte, minor in the low byte.
pub const RTRS_PROTO_VER: u16 = ((RTRS_PROTO_VER_MAJOR as u16) << 8) | RTRS_PROTO_VER_MINOR as u16;
/// The magic number that starts the RTRS part of `conn_req` and `conn_rsp`
/// (`RTRS_MAGIC`).
pub const RTRS_MAGIC: u16 = 0x1bbd;

/// The major number of a version word (`version >> 8`).
pub const fn version_major(version: u16) -> u8 {
    (version >> 8) as u8
}

/// The minor number of a version word (its low byte).
pub const fn version_minor(version: u16) -> u8 {
    (version & 0xff) as u8
}

/// Whether a peer's version word is one we talk to: same major, any minor,
/// as `rtrs_rdma_connect` (server) and `rtrs_rdma_conn_established`
/// (client) check it.
pub const fn version_compatible(version: u16) -> bool {
    version_major(version) == RTRS_PROTO_VER_MAJOR
}

// ---------------------------------------------------------------------------
// Message types and flags

/// `RTRS_MSG_INFO_REQ`: the client asks for the server's buffers.
pub const RTRS_MSG_INFO_REQ: u16 = 0;
/// `RTRS_MSG_INFO_RSP`: the server describes its buffers.
pub const RTRS_MSG_INFO_RSP: u16 = 1;
/// `RTRS_MSG_WRITE`: an IO request carrying data to the server.
pub const RTRS_MSG_WRITE: u16 = 2;
/// `RTRS_MSG_READ`: an IO request asking the server for data.
pub const RTRS_MSG_READ: u16 = 3;
/// `RTRS_MSG_RKEY_RSP`: the server's new rkey for one buffer.
pub const RTRS_MSG_RKEY_RSP: u16 = 4;

/// The type of an RTRS message (`enum rtrs_msg_types`), carried as the
/// first `__le16` of every message but the connection messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum MsgType {
    /// [`RTRS_MSG_INFO_REQ`].
    InfoReq = RTRS_MSG_INFO_REQ,
    /// [`RTRS_MSG_INFO_RSP`].
    InfoRsp = RTRS_MSG_INFO_RSP,
    /// [`RTRS_MSG_WRITE`].
    Write = RTRS_MSG_WRITE,
    /// [`RTRS_MSG_READ`].
    Read = RTRS_MSG_READ,
    /// [`RTRS_MSG_RKEY_RSP`].
    RkeyRsp = RTRS_MSG_RKEY_RSP,
}

impl MsgType {
    /// The type with this wire value, if any.
    pub const fn from_u16(v: u16) -> Option<MsgType> {
        match v {
            RTRS_MSG_INFO_REQ => Some(MsgType::InfoReq),
            RTRS_MSG_INFO_RSP => Some(MsgType::InfoRsp),
            RTRS_MSG_WRITE => Some(MsgType::Write),
            RTRS_MSG_READ => Some(MsgType::Read),
            RTRS_MSG_RKEY_RSP => Some(MsgType::RkeyRsp),
            _ => None,
        }
    }

    /// The wire value.
    pub const fn to_u16(self) -> u16 {
        self as u16
    }
}

/// `RTRS_MSG_NEED_INVAL_F` (`enum rtrs_msg_flags`), in the `flags` of an
/// RDMA read request: the client asks the server to invalidate the rkey
/// of its descriptor with the response (SEND_WITH_INV).
pub const RTRS_MSG_NEED_INVAL_F: u16 = 1 << 0;
/// `RTRS_MSG_NEW_RKEY_F` (`enum rtrs_msg_flags`), in the `flags` of
/// `conn_rsp`: the server runs with `always_invalidate` and answers every
/// IO with an RKEY_RSP carrying the chunk's new rkey.
pub const RTRS_MSG_NEW_RKEY_F: u32 = 1 << 1;

/// The value of `conn_req.first_conn` on a client's first connection of a
/// new session (`FIRST_CONN`, rtrs-clt.c).
pub const FIRST_CONN: u8 = 0x01;

// ---------------------------------------------------------------------------
// Immediate data

/// Bits of the immediate data that hold its type (`MAX_IMM_TYPE_BITS`).
pub const MAX_IMM_TYPE_BITS: u32 = 4;
/// Mask of the type, once shifted down (`MAX_IMM_TYPE_MASK`).
pub const MAX_IMM_TYPE_MASK: u32 = (1 << MAX_IMM_TYPE_BITS) - 1;
/// Bits of the immediate data that hold its payload, below the type
/// (`MAX_IMM_PAYL_BITS`).
pub const MAX_IMM_PAYL_BITS: u32 = 28;
/// Mask of the payload (`MAX_IMM_PAYL_MASK`).
pub const MAX_IMM_PAYL_MASK: u32 = (1 << MAX_IMM_PAYL_BITS) - 1;

/// Immediate type of an IO request, client to server (`RTRS_IO_REQ_IMM`).
pub const RTRS_IO_REQ_IMM: u32 = 0;
/// Immediate type of an IO response, server to client
/// (`RTRS_IO_RSP_IMM`).
pub const RTRS_IO_RSP_IMM: u32 = 1;
/// Immediate type of an IO response that follows a SEND_WITH_INV of the
/// client's rkey (`RTRS_IO_RSP_W_INV_IMM`).
pub const RTRS_IO_RSP_W_INV_IMM: u32 = 2;
/// Immediate type of a heartbeat (`RTRS_HB_MSG_IMM`).
pub const RTRS_HB_MSG_IMM: u32 = 8;
/// Immediate type of a heartbeat acknowledgement (`RTRS_HB_ACK_IMM`).
pub const RTRS_HB_ACK_IMM: u32 = 9;
/// One past the last immediate type (`RTRS_LAST_IMM`).
pub const RTRS_LAST_IMM: u32 = 10;

/// Bits of an IO response payload that hold the errno's magnitude (the
/// `0x1ff` of `rtrs_to_io_rsp_imm`).
pub const IO_RSP_ERRNO_BITS: u32 = 9;
/// Bits of an IO response payload that hold the message ID, below the
/// errno (the `19` and `0x7ffff` of `rtrs_to_io_rsp_imm`).
pub const IO_RSP_MSG_ID_BITS: u32 = 19;

// ---------------------------------------------------------------------------
// Sizes and limits

/// Length of the path name field of INFO_REQ (`NAME_MAX`,
/// include/uapi/linux/limits.h); the name is at most one less, followed
/// by a NUL.
pub const NAME_MAX: usize = 255;
/// Most descriptors in an RDMA read request. The client sends 0 (no data)
/// or 1 (one fast-registered MR covering all pages, `rtrs_clt_read_req`)
/// and the server drops any other count (`process_read`).
pub const MAX_READ_SG_CNT: usize = 1;
/// Most descriptors in an INFO_RSP: one per chunk at most, since the
/// client requires the count to divide the queue depth
/// (`process_info_rsp`).
pub const MAX_INFO_SG_CNT: usize = MAX_SESS_QUEUE_DEPTH as usize;
/// Most chunks (requests in flight) in a session (`MAX_SESS_QUEUE_DEPTH`):
/// `conn_rsp.queue_depth` is 16 bits.
pub const MAX_SESS_QUEUE_DEPTH: u32 = 65535;
/// Most connections a path may ask for (the `4096` sanity check of
/// `rtrs_rdma_connect`, rtrs-srv.c).
pub const MAX_CON_NUM: u16 = 4096;
/// Most paths in a session (`MAX_PATHS_NUM`).
pub const MAX_PATHS_NUM: u32 = 128;
/// Smallest chunk a server accepts as `max_chunk_size` (`MIN_CHUNK_SIZE`;
/// it must also be a power of two, `check_module_params` in
/// rtrs-srv.c).
pub const MIN_CHUNK_SIZE: u32 = 8192;
/// Most pages of one client fast-registration MR, so the largest IO is
/// 128 * 4 KiB (`RTRS_MAX_SEGMENTS`, rtrs-clt.c).
pub const RTRS_MAX_SEGMENTS: u32 = 128;

// ---------------------------------------------------------------------------
// Defaults

/// Queue depth of the service connection (cid 0) and the cap on the
/// signalling interval (`SERVICE_CON_QUEUE_DEPTH`).
pub const SERVICE_CON_QUEUE_DEPTH: u32 = 512;
/// The server's default number of chunks per session
/// (`DEFAULT_SESS_QUEUE_DEPTH`, rtrs-srv.c, module parameter
/// `sess_queue_depth`).
pub const DEFAULT_SESS_QUEUE_DEPTH: u32 = 512;
/// The server's default chunk size, 128 KiB (`DEFAULT_MAX_CHUNK_SIZE`,
/// rtrs-srv.c, module parameter `max_chunk_size`).
pub const DEFAULT_MAX_CHUNK_SIZE: u32 = 128 << 10;
/// The part of a chunk the server reserves for the user message and the
/// RTRS message (`MAX_HDR_SIZE`, rtrs-srv.c). The C defines it as
/// `PAGE_SIZE`, so this is the value of 4 KiB-page machines; the server
/// sends its own in `conn_rsp.max_hdr_size`, and `conn_rsp.max_io_size`
/// is the chunk size minus it.
pub const MAX_HDR_SIZE: u32 = 4096;
/// Interval between heartbeats, in milliseconds (`RTRS_HB_INTERVAL_MS`).
pub const RTRS_HB_INTERVAL_MS: u32 = 5000;
/// Heartbeat periods without traffic from the peer after which a path is
/// declared dead (`RTRS_HB_MISSED_MAX`).
pub const RTRS_HB_MISSED_MAX: u32 = 5;
/// The client's timeout for address and route resolution and for
/// connecting, in milliseconds (`RTRS_CONNECT_TIMEOUT_MS`, rtrs-clt.c).
pub const RTRS_CONNECT_TIMEOUT_MS: u32 = 30000;
/// What the client's reconnect work sleeps before each reconnect attempt,
/// in milliseconds, on top of the reconnect delay, to give the server time
/// to clean up the old connection (`RTRS_RECONNECT_BACKOFF`, rtrs-clt.c).
pub const RTRS_RECONNECT_BACKOFF_MS: u32 = 1000;
/// The bound of the random jitter added to the reconnect delay
/// (`RTRS_RECONNECT_SEED`, rtrs-clt.c): `rtrs_clt_err_recovery_work` adds
/// `get_random_u32_below(RTRS_RECONNECT_SEED)`, 0 to 7, to a delay in
/// milliseconds, so the jitter is that many milliseconds (the C comment
/// speaks of seconds, the code does not).
pub const RTRS_RECONNECT_SEED: u32 = 8;
/// The smallest `max_reconnect_attempts` the client's sysfs accepts, which
/// means reconnect forever (`MIN_MAX_RECONN_ATT`, rtrs-clt-sysfs.c).
pub const MIN_MAX_RECONN_ATT: i32 = -1;
/// The largest `max_reconnect_attempts` the client's sysfs accepts
/// (`MAX_MAX_RECONN_ATT`, rtrs-clt-sysfs.c).
pub const MAX_MAX_RECONN_ATT: i32 = 9999;
/// The TCP port space port an RNBD server listens on by default
/// (`RTRS_PORT`, drivers/block/rnbd/rnbd-proto.h).
pub const RTRS_PORT: u16 = 1234;
