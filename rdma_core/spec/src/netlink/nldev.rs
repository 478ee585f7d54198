// SPDX-License-Identifier: GPL-2.0

//! The `RDMA_NL_NLDEV` client of the RDMA netlink family: request decoding
//! and reply building.
//!
//! A message's type carries the client in bits 10 to 15 and the operation
//! in bits 0 to 9 ([`nl_type`], [`nl_client`], [`nl_op`]); for NLDEV the
//! operation is one of [`cmd`], and the payload is attributes of [`attr`]
//! with no fixed header.
//!
//! [`decode`] turns one request message into a [`Request`]: the command
//! (GET and PORT_GET as a single object or as a dump, GET_CHARDEV,
//! SYS_GET, NEWLINK, DELLINK) and the attributes it needs, checked as the
//! kernel's policy checks them (integer sizes, NUL-terminated strings
//! within their maximum length, required attributes present). Every
//! attribute header of the payload is walked, so a malformed one anywhere
//! rejects the request with `EINVAL`; attributes this codec does not read
//! are ignored.
//!
//! The `put_*` functions append one reply message to an [`Out`]: the
//! object (device, port, character device, system settings) comes as a
//! plain structure the caller fills, and the attributes are those the C
//! kernel sends, in its order, so that libibverbs' `ibdev_nl.c` (which
//! requires DEV_NAME, DEV_NODE_TYPE, DEV_INDEX, NODE_GUID and PORT_INDEX
//! in a device, and CHARDEV, CHARDEV_ABI and CHARDEV_NAME in a character
//! device) and iproute2's `rdma` (which validates each attribute's type)
//! read them. A reply goes to the requester's port ID with the request's
//! sequence number ([`ReplyTo`]); a dump's messages carry `NLM_F_MULTI`
//! and end with [`put_done`]; an error, or the acknowledgement a request
//! with `NLM_F_ACK` asks for, is [`put_error`].
//!
//! Each reply message is small (a device is about 200 bytes): a dump
//! sends as many as fit in one datagram of [`DATAGRAM_MAX`] bytes (which
//! every receiver's buffer holds: libmnl's is 8 KiB, libnl's at least a
//! page), then the next datagram.

use super::msg::{flags, msg_type, Message, MsgWriter, NlMsgHdr, Out};
use super::NlError;

/// The RDMA netlink clients (the high bits of a message type).
pub mod client {
    /// The iWARP connection manager.
    pub const IWCM: u16 = 2;
    /// Local services (path resolution).
    pub const LS: u16 = 4;
    /// The device interface: this codec.
    pub const NLDEV: u16 = 5;
    /// One past the last client.
    pub const NUM_CLIENTS: u16 = 6;
}

/// The message type of `op` of `client` (`RDMA_NL_GET_TYPE`).
pub const fn nl_type(client: u16, op: u16) -> u16 {
    (client << 10) + op
}

/// The client of a message type (`RDMA_NL_GET_CLIENT`).
pub const fn nl_client(ty: u16) -> u16 {
    (ty & (((1 << 6) - 1) << 10)) >> 10
}

/// The operation of a message type (`RDMA_NL_GET_OP`).
pub const fn nl_op(ty: u16) -> u16 {
    ty & ((1 << 10) - 1)
}

/// The NLDEV commands (`enum rdma_nldev_command`).
pub mod cmd {
    /// A device, or all of them (dump).
    pub const GET: u16 = 1;
    /// Rename a device, move it to a network namespace, set its DIM.
    pub const SET: u16 = 2;
    /// Add a link (a software device such as rxe on a netdev).
    pub const NEWLINK: u16 = 3;
    /// Remove a link.
    pub const DELLINK: u16 = 4;
    /// A port, or all ports of a device (dump).
    pub const PORT_GET: u16 = 5;
    /// System settings (namespace mode, copy-on-fork).
    pub const SYS_GET: u16 = 6;
    /// Change system settings.
    pub const SYS_SET: u16 = 7;
    /// Resource summary (dump).
    pub const RES_GET: u16 = 9;
    /// QPs (dump).
    pub const RES_QP_GET: u16 = 10;
    /// CM IDs (dump).
    pub const RES_CM_ID_GET: u16 = 11;
    /// CQs (dump).
    pub const RES_CQ_GET: u16 = 12;
    /// MRs (dump).
    pub const RES_MR_GET: u16 = 13;
    /// PDs (dump).
    pub const RES_PD_GET: u16 = 14;
    /// The character device of a client ABI ("uverbs", "umad", ...).
    pub const GET_CHARDEV: u16 = 15;
    /// Set a counter.
    pub const STAT_SET: u16 = 16;
    /// Counters (dump).
    pub const STAT_GET: u16 = 17;
    /// Delete a counter.
    pub const STAT_DEL: u16 = 18;
    /// Raw QP data (dump).
    pub const RES_QP_GET_RAW: u16 = 19;
    /// Raw CQ data (dump).
    pub const RES_CQ_GET_RAW: u16 = 20;
    /// Raw MR data (dump).
    pub const RES_MR_GET_RAW: u16 = 21;
    /// User contexts (dump).
    pub const RES_CTX_GET: u16 = 22;
    /// SRQs (dump).
    pub const RES_SRQ_GET: u16 = 23;
    /// Counter status.
    pub const STAT_GET_STATUS: u16 = 24;
    /// Raw SRQ data (dump).
    pub const RES_SRQ_GET_RAW: u16 = 25;
    /// Add a sub-device.
    pub const NEWDEV: u16 = 26;
    /// Remove a sub-device.
    pub const DELDEV: u16 = 27;
    /// Device events (multicast).
    pub const MONITOR: u16 = 28;
    /// One past the last command.
    pub const NUM_OPS: u16 = 29;
}

/// The NLDEV attribute types this codec reads or writes
/// (`enum rdma_nldev_attr`).
pub mod attr {
    /// u32: the device index.
    pub const DEV_INDEX: u16 = 1;
    /// string: the device name.
    pub const DEV_NAME: u16 = 2;
    /// u32: a port number; in a device, the number of ports.
    pub const PORT_INDEX: u16 = 3;
    /// u64: device capability flags.
    pub const CAP_FLAGS: u16 = 4;
    /// string: firmware version.
    pub const FW_VERSION: u16 = 5;
    /// u64: node GUID (host order of the big-endian GUID's value).
    pub const NODE_GUID: u16 = 6;
    /// u64: system image GUID.
    pub const SYS_IMAGE_GUID: u16 = 7;
    /// u64: subnet prefix (InfiniBand ports).
    pub const SUBNET_PREFIX: u16 = 8;
    /// u32: LID (InfiniBand ports).
    pub const LID: u16 = 9;
    /// u32: SM LID (InfiniBand ports).
    pub const SM_LID: u16 = 10;
    /// u8: LMC (InfiniBand ports).
    pub const LMC: u16 = 11;
    /// u8: port state (`IB_PORT_*`: 1 down, 2 init, 3 armed, 4 active).
    pub const PORT_STATE: u16 = 12;
    /// u8: physical port state (5 link up, 3 disabled, ...).
    pub const PORT_PHYS_STATE: u16 = 13;
    /// u8: node type (`RDMA_NODE_*`).
    pub const DEV_NODE_TYPE: u16 = 14;
    /// nested: resource summary (a table of [`RES_SUMMARY_ENTRY`]).
    pub const RES_SUMMARY: u16 = 15;
    /// nested: one kind of object in the summary.
    pub const RES_SUMMARY_ENTRY: u16 = 16;
    /// string: the kind's name ("pd", "qp", ...).
    pub const RES_SUMMARY_ENTRY_NAME: u16 = 17;
    /// u64: how many objects of the kind there are.
    pub const RES_SUMMARY_ENTRY_CURR: u16 = 18;
    /// nested: the QP table of a RES_QP_GET reply.
    pub const RES_QP: u16 = 19;
    /// nested: one QP.
    pub const RES_QP_ENTRY: u16 = 20;
    /// u32: the local QP number.
    pub const RES_LQPN: u16 = 21;
    /// u32: the remote QP number (RC, UC).
    pub const RES_RQPN: u16 = 22;
    /// u32: the receive queue's PSN (RC, UC).
    pub const RES_RQ_PSN: u16 = 23;
    /// u32: the send queue's PSN.
    pub const RES_SQ_PSN: u16 = 24;
    /// u8: the path migration state (RC, UC, XRC).
    pub const RES_PATH_MIG_STATE: u16 = 25;
    /// u8: the QP type (`IB_QPT_*`).
    pub const RES_TYPE: u16 = 26;
    /// u8: the QP state (`IB_QPS_*`).
    pub const RES_STATE: u16 = 27;
    /// u32: the process ID of a user object's creator.
    pub const RES_PID: u16 = 28;
    /// string: the kernel owner's name of a kernel object.
    pub const RES_KERN_NAME: u16 = 29;
    /// nested: the CM ID table of a RES_CM_ID_GET reply.
    pub const RES_CM_ID: u16 = 30;
    /// nested: one CM ID.
    pub const RES_CM_ID_ENTRY: u16 = 31;
    /// nested: the CQ table of a RES_CQ_GET reply.
    pub const RES_CQ: u16 = 35;
    /// nested: one CQ.
    pub const RES_CQ_ENTRY: u16 = 36;
    /// u32: the CQ's size in entries.
    pub const RES_CQE: u16 = 37;
    /// u64: how many objects use the object.
    pub const RES_USECNT: u16 = 38;
    /// u8: a kernel CQ's polling context.
    pub const RES_POLL_CTX: u16 = 39;
    /// nested: the MR table of a RES_MR_GET reply.
    pub const RES_MR: u16 = 40;
    /// nested: one MR.
    pub const RES_MR_ENTRY: u16 = 41;
    /// u32: an MR's rkey.
    pub const RES_RKEY: u16 = 42;
    /// u32: an MR's lkey.
    pub const RES_LKEY: u16 = 43;
    /// u64: an MR's I/O virtual address.
    pub const RES_IOVA: u16 = 44;
    /// u64: an MR's length.
    pub const RES_MRLEN: u16 = 45;
    /// nested: the PD table of a RES_PD_GET reply.
    pub const RES_PD: u16 = 46;
    /// nested: one PD.
    pub const RES_PD_ENTRY: u16 = 47;
    /// u32: a PD's local DMA lkey.
    pub const RES_LOCAL_DMA_LKEY: u16 = 48;
    /// u32: a PD's unsafe global rkey.
    pub const RES_UNSAFE_GLOBAL_RKEY: u16 = 49;
    /// u32: the netdev's ifindex.
    pub const NDEV_INDEX: u16 = 50;
    /// string: the netdev's name.
    pub const NDEV_NAME: u16 = 51;
    /// u32: a PD's number.
    pub const RES_PDN: u16 = 60;
    /// u32: a CQ's number.
    pub const RES_CQN: u16 = 61;
    /// u32: an MR's number.
    pub const RES_MRN: u16 = 62;
    /// u32: a user context's number.
    pub const RES_CTXN: u16 = 64;
    /// string: a link's type ("rxe").
    pub const LINK_TYPE: u16 = 65;
    /// u8: the namespace mode (1: devices shared by all namespaces).
    pub const SYS_NETNS_MODE: u16 = 66;
    /// string: the device protocol ("ib", "roce", "iw", ...).
    pub const DEV_PROTOCOL: u16 = 67;
    /// u32: a network namespace's file descriptor.
    pub const NET_NS_FD: u16 = 68;
    /// string: the client ABI a character device is asked for.
    pub const CHARDEV_TYPE: u16 = 69;
    /// string: the character device's name under `/dev` (no directory).
    pub const CHARDEV_NAME: u16 = 70;
    /// u64: the ABI version of the character device.
    pub const CHARDEV_ABI: u16 = 71;
    /// u64: the character device's `dev_t`, encoded as
    /// [`huge_encode_dev`] does.
    pub const CHARDEV: u16 = 72;
    /// u32 (the header says u64; the kernel and libibverbs use 32 bits):
    /// the provider's `RDMA_DRIVER_*` ID.
    pub const UVERBS_DRIVER_ID: u16 = 73;
    /// u32: in STAT_GET, which objects' counters: [`RES_QP`] (bound QP
    /// counters) or [`RES_MR`] (MR statistics); absent: the port's.
    pub const STAT_RES: u16 = 75;
    /// nested: a table of [`STAT_HWCOUNTER_ENTRY`].
    pub const STAT_HWCOUNTERS: u16 = 80;
    /// nested: one counter.
    pub const STAT_HWCOUNTER_ENTRY: u16 = 81;
    /// string: the counter's name.
    pub const STAT_HWCOUNTER_ENTRY_NAME: u16 = 82;
    /// u64: the counter's value.
    pub const STAT_HWCOUNTER_ENTRY_VALUE: u16 = 83;
    /// nested: a user context table.
    pub const RES_CTX: u16 = 86;
    /// nested: one user context.
    pub const RES_CTX_ENTRY: u16 = 87;
    /// nested: an SRQ table.
    pub const RES_SRQ: u16 = 88;
    /// nested: one SRQ.
    pub const RES_SRQ_ENTRY: u16 = 89;
    /// u32: an SRQ's number.
    pub const RES_SRQN: u16 = 90;
    /// u32: the first QP number of a range.
    pub const MIN_RANGE: u16 = 91;
    /// u32: the last QP number of a range.
    pub const MAX_RANGE: u16 = 92;
    /// u8: adaptive CQ moderation enabled.
    pub const DEV_DIM: u16 = 84;
    /// u8: copy-on-fork supported.
    pub const SYS_COPY_ON_FORK: u16 = 93;
    /// u8: privileged QKEY mode.
    pub const SYS_PRIVILEGED_QKEY_MODE: u16 = 96;
    /// u8: ask for driver-internal objects too (ignored: we have none).
    pub const DRIVER_DETAILS: u16 = 97;
    /// u8: device type (0 for a plain device).
    pub const DEV_TYPE: u16 = 99;
    /// u8: how the device's name was assigned (0 unknown, 1 user).
    pub const NAME_ASSIGN_TYPE: u16 = 101;
    /// u8: monitoring supported.
    pub const SYS_MONITOR_MODE: u16 = 103;
    /// One past the last attribute.
    pub const MAX: u16 = 104;
}

/// `RDMA_NODE_IB_CA`: the node type of an HCA or a RoCE device.
pub const NODE_IB_CA: u8 = 1;
/// `RDMA_DRIVER_RXE` (`enum rdma_driver_id`): librxe's driver ID.
pub const RDMA_DRIVER_RXE: u32 = 14;
/// The ABI version libibverbs expects of "uverbs" (`IB_USER_VERBS_ABI_VERSION`).
pub const UVERBS_ABI_VERSION: u64 = 6;

/// Longest device name (`IB_DEVICE_NAME_MAX` less the NUL).
pub const DEV_NAME_MAX: usize = 63;
/// Longest client ABI name (`RDMA_NLDEV_ATTR_CHARDEV_TYPE_SIZE` less the NUL).
pub const CHARDEV_TYPE_MAX: usize = 15;
/// Longest link type or netdev name (`IFNAMSIZ` less the NUL).
pub const IFNAME_MAX: usize = 15;

/// The size of one reply datagram a dump fills before starting another.
pub const DATAGRAM_MAX: usize = 4096;

/// A `dev_t` as the kernel's `huge_encode_dev` encodes it for
/// [`attr::CHARDEV`] (libibverbs decodes it back).
pub const fn huge_encode_dev(major: u32, minor: u32) -> u64 {
    ((minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)) as u64
}

/// A decoded NLDEV command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmd<'a> {
    /// GET of one device.
    Get {
        /// Its index.
        index: u32,
    },
    /// GET dump: every device.
    GetDump,
    /// PORT_GET of one port.
    PortGet {
        /// The device index.
        index: u32,
        /// The port number.
        port: u32,
    },
    /// PORT_GET dump: every port of a device.
    PortGetDump {
        /// The device index.
        index: u32,
    },
    /// GET_CHARDEV: the character device of a client ABI.
    GetChardev {
        /// The device index, if the ABI is per device.
        index: Option<u32>,
        /// The port, if the ABI is per port (needs `index`).
        port: Option<u32>,
        /// The client ABI's name ("uverbs").
        chardev_type: &'a [u8],
    },
    /// SYS_GET: the system settings.
    SysGet,
    /// NEWLINK: add a link.
    NewLink {
        /// The new device's name.
        name: &'a [u8],
        /// Its type ("rxe").
        link_type: &'a [u8],
        /// The netdev it runs on.
        netdev: &'a [u8],
    },
    /// DELLINK: remove the device with this index.
    DelLink {
        /// The device index.
        index: u32,
    },
    /// RES_GET of one device: its resource summary.
    ResGet {
        /// The device index.
        index: u32,
    },
    /// RES_GET dump: every device's resource summary.
    ResGetDump,
    /// A RES_*_GET dump: the objects of one kind on a device.
    ResDump {
        /// Which objects.
        kind: ResKind,
        /// The device index.
        index: u32,
        /// Only the objects of this port (QPs, CM IDs); `None`: all.
        port: Option<u32>,
    },
    /// STAT_GET of a port's default counters (no [`attr::STAT_RES`]).
    StatGet {
        /// The device index.
        index: u32,
        /// The port.
        port: u32,
    },
    /// STAT_GET dump of the counters bound to objects
    /// ([`attr::STAT_RES`] names which: [`attr::RES_QP`] or
    /// [`attr::RES_MR`]).
    StatGetDump {
        /// The device index.
        index: u32,
        /// The port, if given.
        port: Option<u32>,
        /// The value of [`attr::STAT_RES`].
        res: u32,
    },
}

/// The kinds of objects the RES_*_GET dumps list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResKind {
    /// RES_QP_GET.
    Qp,
    /// RES_CM_ID_GET.
    CmId,
    /// RES_CQ_GET.
    Cq,
    /// RES_MR_GET.
    Mr,
    /// RES_PD_GET.
    Pd,
    /// RES_CTX_GET.
    Ctx,
    /// RES_SRQ_GET.
    Srq,
}

impl ResKind {
    /// The kind a command lists, if it is a RES_*_GET.
    pub const fn of_cmd(op: u16) -> Option<ResKind> {
        Some(match op {
            cmd::RES_QP_GET => ResKind::Qp,
            cmd::RES_CM_ID_GET => ResKind::CmId,
            cmd::RES_CQ_GET => ResKind::Cq,
            cmd::RES_MR_GET => ResKind::Mr,
            cmd::RES_PD_GET => ResKind::Pd,
            cmd::RES_CTX_GET => ResKind::Ctx,
            cmd::RES_SRQ_GET => ResKind::Srq,
            _ => return None,
        })
    }

    /// The command that lists this kind.
    pub const fn cmd(self) -> u16 {
        match self {
            ResKind::Qp => cmd::RES_QP_GET,
            ResKind::CmId => cmd::RES_CM_ID_GET,
            ResKind::Cq => cmd::RES_CQ_GET,
            ResKind::Mr => cmd::RES_MR_GET,
            ResKind::Pd => cmd::RES_PD_GET,
            ResKind::Ctx => cmd::RES_CTX_GET,
            ResKind::Srq => cmd::RES_SRQ_GET,
        }
    }

    /// The reply's table attribute and the attribute of each entry in it.
    pub const fn table_attrs(self) -> (u16, u16) {
        match self {
            ResKind::Qp => (attr::RES_QP, attr::RES_QP_ENTRY),
            ResKind::CmId => (attr::RES_CM_ID, attr::RES_CM_ID_ENTRY),
            ResKind::Cq => (attr::RES_CQ, attr::RES_CQ_ENTRY),
            ResKind::Mr => (attr::RES_MR, attr::RES_MR_ENTRY),
            ResKind::Pd => (attr::RES_PD, attr::RES_PD_ENTRY),
            ResKind::Ctx => (attr::RES_CTX, attr::RES_CTX_ENTRY),
            ResKind::Srq => (attr::RES_SRQ, attr::RES_SRQ_ENTRY),
        }
    }
}

/// Where a reply goes: the requester's port ID and the request's sequence
/// number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplyTo {
    /// Sequence number.
    pub seq: u32,
    /// Port ID.
    pub pid: u32,
}

/// A decoded request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request<'a> {
    /// The request's header.
    pub hdr: NlMsgHdr,
    /// The command.
    pub cmd: Cmd<'a>,
}

impl Request<'_> {
    /// Where the replies go. `sender` is the port ID the request came from
    /// (the socket's, which the kernel knows; the header's may be 0).
    pub fn reply_to(&self, sender: u32) -> ReplyTo {
        ReplyTo {
            seq: self.hdr.seq,
            pid: sender,
        }
    }

    /// The request asks for an acknowledgement after its reply.
    pub fn wants_ack(&self) -> bool {
        self.hdr.flags & flags::ACK != 0
    }

    /// The command needs `CAP_NET_ADMIN` (`RDMA_NL_ADMIN_PERM`): the
    /// commands that change something.
    pub fn needs_admin(&self) -> bool {
        matches!(self.cmd, Cmd::NewLink { .. } | Cmd::DelLink { .. })
    }

    /// The command is a dump (its replies carry `NLM_F_MULTI` and end with
    /// [`put_done`]; the kernel sends no acknowledgement after a dump).
    pub fn is_dump(&self) -> bool {
        matches!(
            self.cmd,
            Cmd::GetDump
                | Cmd::PortGetDump { .. }
                | Cmd::ResGetDump
                | Cmd::ResDump { .. }
                | Cmd::StatGetDump { .. }
        )
    }
}

/// Whether a message is one the kernel passes to a handler: a request
/// (`NLM_F_REQUEST`) of a non-control type. Others are skipped, with an
/// acknowledgement if they ask for one.
pub fn is_request(hdr: &NlMsgHdr) -> bool {
    hdr.flags & flags::REQUEST != 0 && hdr.ty >= msg_type::MIN_TYPE
}

/// The attributes of an NLDEV request this codec reads, each checked.
#[derive(Default)]
struct Parsed<'a> {
    dev_index: Option<u32>,
    dev_name: Option<&'a [u8]>,
    port_index: Option<u32>,
    chardev_type: Option<&'a [u8]>,
    link_type: Option<&'a [u8]>,
    ndev_name: Option<&'a [u8]>,
    stat_res: Option<u32>,
}

fn parse_attrs<'a>(m: &Message<'a>) -> Result<Parsed<'a>, NlError> {
    let mut p = Parsed::default();
    for a in m.attrs(0) {
        let a = a?;
        match a.ty {
            attr::DEV_INDEX => p.dev_index = Some(a.u32()?),
            attr::DEV_NAME => p.dev_name = Some(a.str_z(DEV_NAME_MAX)?),
            attr::PORT_INDEX => p.port_index = Some(a.u32()?),
            attr::CHARDEV_TYPE => p.chardev_type = Some(a.str_z(CHARDEV_TYPE_MAX)?),
            attr::LINK_TYPE => p.link_type = Some(a.str_z(IFNAME_MAX)?),
            attr::NDEV_NAME => p.ndev_name = Some(a.str_z(IFNAME_MAX)?),
            attr::STAT_RES => p.stat_res = Some(a.u32()?),
            attr::DRIVER_DETAILS => {
                a.u8()?;
            }
            _ => {}
        }
    }
    Ok(p)
}

fn need<T>(v: Option<T>, ty: u16) -> Result<T, NlError> {
    v.ok_or(NlError::Missing { ty })
}

/// Decodes one request message.
///
/// Errors: [`NlError::NotRequest`] for a message the kernel does not
/// dispatch ([`is_request`]); [`NlError::UnknownClient`] for another
/// client's message; [`NlError::UnknownOp`] for an operation past the
/// last command; [`NlError::Unsupported`] for a command this codec does
/// not implement (answered `EOPNOTSUPP`); the attribute errors (answered
/// `EINVAL`, as is a missing required attribute).
pub fn decode<'a>(m: &Message<'a>) -> Result<Request<'a>, NlError> {
    let hdr = m.hdr;
    if !is_request(&hdr) {
        return Err(NlError::NotRequest);
    }
    let c = nl_client(hdr.ty);
    let op = nl_op(hdr.ty);
    if c != client::NLDEV {
        return Err(NlError::UnknownClient(c));
    }
    if op == 0 || op >= cmd::NUM_OPS {
        return Err(NlError::UnknownOp(op));
    }
    let p = parse_attrs(m)?;
    let dump = hdr.flags & flags::DUMP != 0;
    let cmd = match op {
        cmd::GET if dump => Cmd::GetDump,
        cmd::GET => Cmd::Get {
            index: need(p.dev_index, attr::DEV_INDEX)?,
        },
        cmd::PORT_GET if dump => Cmd::PortGetDump {
            index: need(p.dev_index, attr::DEV_INDEX)?,
        },
        cmd::PORT_GET => Cmd::PortGet {
            index: need(p.dev_index, attr::DEV_INDEX)?,
            port: need(p.port_index, attr::PORT_INDEX)?,
        },
        cmd::GET_CHARDEV => {
            if p.port_index.is_some() && p.dev_index.is_none() {
                return Err(NlError::Missing {
                    ty: attr::DEV_INDEX,
                });
            }
            Cmd::GetChardev {
                index: p.dev_index,
                port: p.port_index,
                chardev_type: need(p.chardev_type, attr::CHARDEV_TYPE)?,
            }
        }
        cmd::SYS_GET => Cmd::SysGet,
        cmd::NEWLINK => Cmd::NewLink {
            name: need(p.dev_name, attr::DEV_NAME)?,
            link_type: need(p.link_type, attr::LINK_TYPE)?,
            netdev: need(p.ndev_name, attr::NDEV_NAME)?,
        },
        cmd::DELLINK => Cmd::DelLink {
            index: need(p.dev_index, attr::DEV_INDEX)?,
        },
        cmd::RES_GET if dump => Cmd::ResGetDump,
        cmd::RES_GET => Cmd::ResGet {
            index: need(p.dev_index, attr::DEV_INDEX)?,
        },
        // The single-object form (an object's number given) is left to
        // the dump: iproute2 falls back to it when the doit fails.
        _ if dump && ResKind::of_cmd(op).is_some() => Cmd::ResDump {
            kind: match ResKind::of_cmd(op) {
                Some(k) => k,
                None => return Err(NlError::Unsupported(op)),
            },
            index: need(p.dev_index, attr::DEV_INDEX)?,
            port: p.port_index,
        },
        cmd::STAT_GET if dump => Cmd::StatGetDump {
            index: need(p.dev_index, attr::DEV_INDEX)?,
            port: p.port_index,
            res: need(p.stat_res, attr::STAT_RES)?,
        },
        cmd::STAT_GET if p.stat_res.is_none() => Cmd::StatGet {
            index: need(p.dev_index, attr::DEV_INDEX)?,
            port: need(p.port_index, attr::PORT_INDEX)?,
        },
        _ => return Err(NlError::Unsupported(op)),
    };
    Ok(Request { hdr, cmd })
}

/// A device, as GET reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevInfo<'a> {
    /// Device index (what requests name it by).
    pub index: u32,
    /// Device name ("rxe0"; no NUL).
    pub name: &'a [u8],
    /// Number of ports (the last port number).
    pub port_count: u32,
    /// Device capability flags (`IB_DEVICE_*`).
    pub cap_flags: u64,
    /// Firmware version; empty: none (the attribute is left out).
    pub fw_version: &'a [u8],
    /// Node GUID, as the value of the big-endian GUID (`be64_to_cpu`).
    pub node_guid: u64,
    /// System image GUID, likewise.
    pub sys_image_guid: u64,
    /// Node type ([`NODE_IB_CA`] for rxe).
    pub node_type: u8,
    /// Adaptive CQ moderation enabled.
    pub dim: bool,
    /// How the name was assigned (0 unknown, 1 by the user).
    pub name_assign_type: u8,
    /// Protocol of the first port: "roce" for rxe ("ib", "iw", "opa",
    /// "usnic" for others); empty: left out.
    pub protocol: &'a [u8],
}

/// A port, as PORT_GET reports it (RoCE: no LID, SM or subnet prefix).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortInfo<'a> {
    /// The device's index.
    pub dev_index: u32,
    /// The device's name.
    pub dev_name: &'a [u8],
    /// Port number (from 1).
    pub port: u32,
    /// Port state (`IB_PORT_*`: 1 down, 2 init, 3 armed, 4 active).
    pub state: u8,
    /// Physical state (3 disabled, 5 link up, ...).
    pub phys_state: u8,
    /// The netdev's ifindex and name, if it is in the requester's
    /// namespace.
    pub netdev: Option<(u32, &'a [u8])>,
}

/// A character device, as GET_CHARDEV reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChardevInfo<'a> {
    /// Its name under `/dev/infiniband`, as the kernel names the device
    /// ("uverbs0").
    pub name: &'a [u8],
    /// Major number.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
    /// ABI version ([`UVERBS_ABI_VERSION`] for "uverbs").
    pub abi: u64,
    /// The provider's driver ID ([`RDMA_DRIVER_RXE`]), sent for "uverbs".
    pub driver_id: Option<u32>,
}

/// The system settings, as SYS_GET reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SysInfo {
    /// Devices are shared by all network namespaces (mode 1), not
    /// exclusive to one (mode 0).
    pub netns_shared: bool,
    /// Non-privileged users may use privileged QKEYs.
    pub privileged_qkey: bool,
    /// Device monitoring (the MONITOR multicast group) is available.
    pub monitor: bool,
    /// Pinned pages are copied on fork, so `ibv_fork_init` is not needed.
    pub copy_on_fork: bool,
}

fn flags_for(multi: bool) -> u16 {
    if multi {
        flags::MULTI
    } else {
        0
    }
}

fn begin<'o, 'b>(
    out: &'o mut Out<'b>,
    op: u16,
    to: ReplyTo,
    multi: bool,
) -> Result<MsgWriter<'o, 'b>, NlError> {
    out.begin(nl_type(client::NLDEV, op), flags_for(multi), to.seq, to.pid)
}

/// Appends a GET reply for `dev` (`multi`: as part of a dump).
pub fn put_dev(
    out: &mut Out<'_>,
    to: ReplyTo,
    multi: bool,
    dev: &DevInfo<'_>,
) -> Result<(), NlError> {
    let mut w = begin(out, cmd::GET, to, multi)?;
    w.put_u32(attr::DEV_INDEX, dev.index)?;
    w.put_str(attr::DEV_NAME, dev.name)?;
    w.put_u32(attr::PORT_INDEX, dev.port_count)?;
    w.put_u64(attr::CAP_FLAGS, dev.cap_flags)?;
    if !dev.fw_version.is_empty() {
        w.put_str(attr::FW_VERSION, dev.fw_version)?;
    }
    w.put_u64(attr::NODE_GUID, dev.node_guid)?;
    w.put_u64(attr::SYS_IMAGE_GUID, dev.sys_image_guid)?;
    w.put_u8(attr::DEV_NODE_TYPE, dev.node_type)?;
    w.put_u8(attr::DEV_DIM, u8::from(dev.dim))?;
    w.put_u8(attr::NAME_ASSIGN_TYPE, dev.name_assign_type)?;
    if !dev.protocol.is_empty() {
        w.put_str(attr::DEV_PROTOCOL, dev.protocol)?;
    }
    w.end();
    Ok(())
}

/// Appends a PORT_GET reply for `port` (`multi`: as part of a dump).
pub fn put_port(
    out: &mut Out<'_>,
    to: ReplyTo,
    multi: bool,
    port: &PortInfo<'_>,
) -> Result<(), NlError> {
    let mut w = begin(out, cmd::PORT_GET, to, multi)?;
    w.put_u32(attr::DEV_INDEX, port.dev_index)?;
    w.put_str(attr::DEV_NAME, port.dev_name)?;
    w.put_u32(attr::PORT_INDEX, port.port)?;
    w.put_u8(attr::PORT_STATE, port.state)?;
    w.put_u8(attr::PORT_PHYS_STATE, port.phys_state)?;
    if let Some((ifindex, name)) = port.netdev {
        w.put_u32(attr::NDEV_INDEX, ifindex)?;
        w.put_str(attr::NDEV_NAME, name)?;
    }
    w.end();
    Ok(())
}

/// Appends a GET_CHARDEV reply.
pub fn put_chardev(out: &mut Out<'_>, to: ReplyTo, cdev: &ChardevInfo<'_>) -> Result<(), NlError> {
    let mut w = begin(out, cmd::GET_CHARDEV, to, false)?;
    if let Some(id) = cdev.driver_id {
        w.put_u32(attr::UVERBS_DRIVER_ID, id)?;
    }
    w.put_u64(attr::CHARDEV, huge_encode_dev(cdev.major, cdev.minor))?;
    w.put_u64(attr::CHARDEV_ABI, cdev.abi)?;
    w.put_str(attr::CHARDEV_NAME, cdev.name)?;
    w.end();
    Ok(())
}

/// Appends a SYS_GET reply.
pub fn put_sys(out: &mut Out<'_>, to: ReplyTo, sys: &SysInfo) -> Result<(), NlError> {
    let mut w = begin(out, cmd::SYS_GET, to, false)?;
    w.put_u8(attr::SYS_NETNS_MODE, u8::from(sys.netns_shared))?;
    w.put_u8(
        attr::SYS_PRIVILEGED_QKEY_MODE,
        u8::from(sys.privileged_qkey),
    )?;
    w.put_u8(attr::SYS_MONITOR_MODE, u8::from(sys.monitor))?;
    w.put_u8(attr::SYS_COPY_ON_FORK, u8::from(sys.copy_on_fork))?;
    w.end();
    Ok(())
}

/// A device's resource summary, as RES_GET reports it: how many objects
/// of each kind it has. A kind the stack does not count is `None` and
/// left out of the table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResSummary {
    /// Protection domains.
    pub pd: u64,
    /// Completion queues.
    pub cq: u64,
    /// Queue pairs.
    pub qp: u64,
    /// Connection manager IDs bound to the device.
    pub cm_id: Option<u64>,
    /// Memory regions.
    pub mr: u64,
    /// User contexts.
    pub ctx: Option<u64>,
    /// Shared receive queues.
    pub srq: u64,
}

impl ResSummary {
    /// The table's rows, in the C kernel's order (`enum
    /// rdma_restrack_type`).
    pub fn rows(&self) -> [(&'static [u8], Option<u64>); 7] {
        [
            (b"pd", Some(self.pd)),
            (b"cq", Some(self.cq)),
            (b"qp", Some(self.qp)),
            (b"cm_id", self.cm_id),
            (b"mr", Some(self.mr)),
            (b"ctx", self.ctx),
            (b"srq", Some(self.srq)),
        ]
    }
}

/// A device as the RES_* and STAT_GET replies name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DevHandle<'a> {
    /// The device index.
    pub index: u32,
    /// The device name.
    pub name: &'a [u8],
}

fn put_handle(w: &mut MsgWriter<'_, '_>, dev: DevHandle<'_>) -> Result<(), NlError> {
    w.put_u32(attr::DEV_INDEX, dev.index)?;
    w.put_str(attr::DEV_NAME, dev.name)
}

/// Appends a RES_GET reply (`multi`: as part of a dump): the device and
/// its summary table, an entry (name, current count) per kind.
pub fn put_res_summary(
    out: &mut Out<'_>,
    to: ReplyTo,
    multi: bool,
    dev: DevHandle<'_>,
    sum: &ResSummary,
) -> Result<(), NlError> {
    let mut w = begin(out, cmd::RES_GET, to, multi)?;
    put_handle(&mut w, dev)?;
    let table = w.begin_nest_plain(attr::RES_SUMMARY)?;
    for (name, curr) in sum.rows() {
        let Some(curr) = curr else { continue };
        let e = w.begin_nest_plain(attr::RES_SUMMARY_ENTRY)?;
        w.put_str(attr::RES_SUMMARY_ENTRY_NAME, name)?;
        w.put_u64(attr::RES_SUMMARY_ENTRY_CURR, curr)?;
        w.end_nest(e)?;
    }
    w.end_nest(table)?;
    w.end();
    Ok(())
}

/// Who made an object: a user process or a kernel user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner<'a> {
    /// A user process: its PID in the requester's namespace, if known
    /// (0 or gone: left out).
    User {
        /// The PID.
        pid: Option<u32>,
    },
    /// A kernel user, by name; empty: left out.
    Kernel {
        /// The name ("ib_core", "rtrs", ...).
        name: &'a [u8],
    },
}

impl Owner<'_> {
    fn is_user(&self) -> bool {
        matches!(self, Owner::User { .. })
    }

    fn put(&self, w: &mut MsgWriter<'_, '_>) -> Result<(), NlError> {
        match *self {
            Owner::User { pid: Some(pid) } if pid != 0 => w.put_u32(attr::RES_PID, pid),
            Owner::Kernel { name } if !name.is_empty() => w.put_str(attr::RES_KERN_NAME, name),
            _ => Ok(()),
        }
    }
}

/// `IB_QPT_RC`, `IB_QPT_UC`, `IB_QPT_XRC_INI`, `IB_QPT_XRC_TGT`.
const QPT_RC: u8 = 2;
const QPT_UC: u8 = 3;
const QPT_XRC_INI: u8 = 9;
const QPT_XRC_TGT: u8 = 10;

/// A QP, as RES_QP_GET reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpEntry<'a> {
    /// Its port, once it has one (from the modify to INIT on); `None`
    /// before (the attribute is left out).
    pub port: Option<u32>,
    /// The QP number.
    pub lqpn: u32,
    /// Its PD's number (sent for user QPs only, as the kernel does).
    pub pdn: u32,
    /// The remote QP number (sent for RC and UC).
    pub rqpn: u32,
    /// The receive PSN (sent for RC and UC).
    pub rq_psn: u32,
    /// The send PSN.
    pub sq_psn: u32,
    /// Path migration state (`IB_MIG_*`, 0 migrated; sent for RC, UC,
    /// XRC).
    pub path_mig_state: u8,
    /// The type (`IB_QPT_*`).
    pub qp_type: u8,
    /// The state (`IB_QPS_*`).
    pub state: u8,
    /// Who made it.
    pub owner: Owner<'a>,
}

impl QpEntry<'_> {
    /// Whether a RES_QP_GET for `port` lists this QP: all QPs when no
    /// port is asked for, else the QPs on that port.
    pub fn on_port(&self, port: Option<u32>) -> bool {
        match port {
            None | Some(0) => true,
            Some(p) => self.port == Some(p),
        }
    }

    fn put(&self, w: &mut MsgWriter<'_, '_>) -> Result<(), NlError> {
        if let Some(port) = self.port {
            w.put_u32(attr::PORT_INDEX, port)?;
        }
        w.put_u32(attr::RES_LQPN, self.lqpn)?;
        if self.owner.is_user() {
            w.put_u32(attr::RES_PDN, self.pdn)?;
        }
        self.owner.put(w)?;
        let connected = matches!(self.qp_type, QPT_RC | QPT_UC);
        if connected {
            w.put_u32(attr::RES_RQPN, self.rqpn)?;
            w.put_u32(attr::RES_RQ_PSN, self.rq_psn)?;
        }
        w.put_u32(attr::RES_SQ_PSN, self.sq_psn)?;
        if connected || matches!(self.qp_type, QPT_XRC_INI | QPT_XRC_TGT) {
            w.put_u8(attr::RES_PATH_MIG_STATE, self.path_mig_state)?;
        }
        w.put_u8(attr::RES_TYPE, self.qp_type)?;
        w.put_u8(attr::RES_STATE, self.state)
    }
}

/// A CQ, as RES_CQ_GET reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqEntry<'a> {
    /// The CQ number.
    pub cqn: u32,
    /// Its size in entries.
    pub cqe: u32,
    /// How many QPs and SRQs use it.
    pub users: u64,
    /// A kernel CQ's polling context (`IB_POLL_*`: 0 softirq, 1
    /// workqueue, 2 unbound workqueue, 3 direct); sent for kernel CQs
    /// that have one.
    pub poll_ctx: Option<u8>,
    /// Adaptive moderation on.
    pub dim: bool,
    /// The user context's number (sent for user CQs).
    pub ctxn: u32,
    /// Who made it.
    pub owner: Owner<'a>,
}

impl CqEntry<'_> {
    fn put(&self, w: &mut MsgWriter<'_, '_>) -> Result<(), NlError> {
        w.put_u32(attr::RES_CQE, self.cqe)?;
        w.put_u64(attr::RES_USECNT, self.users)?;
        if let (false, Some(ctx)) = (self.owner.is_user(), self.poll_ctx) {
            w.put_u8(attr::RES_POLL_CTX, ctx)?;
        }
        w.put_u8(attr::DEV_DIM, u8::from(self.dim))?;
        w.put_u32(attr::RES_CQN, self.cqn)?;
        if self.owner.is_user() {
            w.put_u32(attr::RES_CTXN, self.ctxn)?;
        }
        self.owner.put(w)
    }
}

/// An MR, as RES_MR_GET reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MrEntry<'a> {
    /// The MR number.
    pub mrn: u32,
    /// Its keys, sent only to a requester with `CAP_NET_ADMIN`.
    pub keys: Option<(u32, u32)>,
    /// Its length in bytes.
    pub length: u64,
    /// Its PD's number (sent for user MRs).
    pub pdn: u32,
    /// Who made it.
    pub owner: Owner<'a>,
}

impl MrEntry<'_> {
    fn put(&self, w: &mut MsgWriter<'_, '_>) -> Result<(), NlError> {
        if let Some((rkey, lkey)) = self.keys {
            w.put_u32(attr::RES_RKEY, rkey)?;
            w.put_u32(attr::RES_LKEY, lkey)?;
        }
        w.put_u64(attr::RES_MRLEN, self.length)?;
        w.put_u32(attr::RES_MRN, self.mrn)?;
        if self.owner.is_user() {
            w.put_u32(attr::RES_PDN, self.pdn)?;
        }
        self.owner.put(w)
    }
}

/// A PD, as RES_PD_GET reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PdEntry<'a> {
    /// The PD number.
    pub pdn: u32,
    /// The unsafe global rkey if the PD has one, sent only to a
    /// requester with `CAP_NET_ADMIN` (as is the local DMA lkey, 0: we
    /// have none).
    pub keys: Option<Option<u32>>,
    /// How many objects use it.
    pub users: u64,
    /// The user context's number (sent for user PDs).
    pub ctxn: u32,
    /// Who made it.
    pub owner: Owner<'a>,
}

impl PdEntry<'_> {
    fn put(&self, w: &mut MsgWriter<'_, '_>) -> Result<(), NlError> {
        if let Some(global) = self.keys {
            w.put_u32(attr::RES_LOCAL_DMA_LKEY, 0)?;
            if let Some(rkey) = global {
                w.put_u32(attr::RES_UNSAFE_GLOBAL_RKEY, rkey)?;
            }
        }
        w.put_u64(attr::RES_USECNT, self.users)?;
        w.put_u32(attr::RES_PDN, self.pdn)?;
        if self.owner.is_user() {
            w.put_u32(attr::RES_CTXN, self.ctxn)?;
        }
        self.owner.put(w)
    }
}

/// An SRQ, as RES_SRQ_GET reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SrqEntry<'a> {
    /// The SRQ number.
    pub srqn: u32,
    /// Its type (`IB_SRQT_*`: 0 basic).
    pub srq_type: u8,
    /// Its PD's number.
    pub pdn: u32,
    /// The numbers of the QPs that use it, ascending (sent as ranges).
    pub qpns: &'a [u32],
    /// Who made it.
    pub owner: Owner<'a>,
}

impl SrqEntry<'_> {
    fn put(&self, w: &mut MsgWriter<'_, '_>) -> Result<(), NlError> {
        w.put_u32(attr::RES_SRQN, self.srqn)?;
        w.put_u8(attr::RES_TYPE, self.srq_type)?;
        w.put_u32(attr::RES_PDN, self.pdn)?;
        // The QPs as a table of runs of consecutive numbers: one number
        // alone as an LQPN, a longer run as MIN_RANGE and MAX_RANGE (the
        // table is there, empty, for an SRQ no QP uses).
        let table = w.begin_nest_plain(attr::RES_QP)?;
        for (first, last) in qpn_runs(self.qpns) {
            let e = w.begin_nest_plain(attr::RES_QP_ENTRY)?;
            if first == last {
                w.put_u32(attr::RES_LQPN, first)?;
            } else {
                w.put_u32(attr::MIN_RANGE, first)?;
                w.put_u32(attr::MAX_RANGE, last)?;
            }
            w.end_nest(e)?;
        }
        w.end_nest(table)?;
        self.owner.put(w)
    }
}

/// The runs of consecutive numbers in `qpns` (ascending), as (first,
/// last) pairs; a number not above the one before starts a new run.
pub fn qpn_runs(qpns: &[u32]) -> impl Iterator<Item = (u32, u32)> + '_ {
    let mut i = 0;
    core::iter::from_fn(move || {
        let first = *qpns.get(i)?;
        let mut last = first;
        i += 1;
        while let Some(&n) = qpns.get(i) {
            if last.checked_add(1) != Some(n) {
                break;
            }
            last = n;
            i += 1;
        }
        Some((first, last))
    })
}

/// A user context, as RES_CTX_GET reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtxEntry<'a> {
    /// The context number.
    pub ctxn: u32,
    /// Who made it.
    pub owner: Owner<'a>,
}

impl ResEntry for CtxEntry<'_> {
    const KIND: ResKind = ResKind::Ctx;
    fn put_attrs(&self, w: &mut MsgWriter<'_, '_>) -> Result<(), NlError> {
        w.put_u32(attr::RES_CTXN, self.ctxn)?;
        self.owner.put(w)
    }
}

/// An object a RES_*_GET table lists.
pub trait ResEntry {
    /// The kind of the table it goes in.
    const KIND: ResKind;
    /// Appends the entry's attributes.
    fn put_attrs(&self, w: &mut MsgWriter<'_, '_>) -> Result<(), NlError>;
}

impl ResEntry for QpEntry<'_> {
    const KIND: ResKind = ResKind::Qp;
    fn put_attrs(&self, w: &mut MsgWriter<'_, '_>) -> Result<(), NlError> {
        self.put(w)
    }
}

impl ResEntry for CqEntry<'_> {
    const KIND: ResKind = ResKind::Cq;
    fn put_attrs(&self, w: &mut MsgWriter<'_, '_>) -> Result<(), NlError> {
        self.put(w)
    }
}

impl ResEntry for MrEntry<'_> {
    const KIND: ResKind = ResKind::Mr;
    fn put_attrs(&self, w: &mut MsgWriter<'_, '_>) -> Result<(), NlError> {
        self.put(w)
    }
}

impl ResEntry for PdEntry<'_> {
    const KIND: ResKind = ResKind::Pd;
    fn put_attrs(&self, w: &mut MsgWriter<'_, '_>) -> Result<(), NlError> {
        self.put(w)
    }
}

impl ResEntry for SrqEntry<'_> {
    const KIND: ResKind = ResKind::Srq;
    fn put_attrs(&self, w: &mut MsgWriter<'_, '_>) -> Result<(), NlError> {
        self.put(w)
    }
}

/// Appends one message of a RES_*_GET dump: the device, then a table
/// holding as many of `entries` (from the first) as fit. Returns how many
/// went in; the caller sends the datagram and calls again with the rest.
///
/// No entries: nothing is appended (`Ok(0)`), as the kernel sends no
/// table message for a device without such objects. Not even the first
/// entry fits: [`NlError::NoSpace`] and nothing appended.
pub fn put_res_table<E: ResEntry>(
    out: &mut Out<'_>,
    to: ReplyTo,
    dev: DevHandle<'_>,
    entries: &[E],
) -> Result<usize, NlError> {
    if entries.is_empty() {
        return Ok(0);
    }
    let (table_ty, entry_ty) = E::KIND.table_attrs();
    let mut w = begin(out, E::KIND.cmd(), to, true)?;
    put_handle(&mut w, dev)?;
    let table = w.begin_nest_plain(table_ty)?;
    let mut n = 0;
    for e in entries {
        let nest = match w.begin_nest_plain(entry_ty) {
            Ok(nest) => nest,
            Err(NlError::NoSpace) => break,
            Err(err) => return Err(err),
        };
        match e.put_attrs(&mut w) {
            Ok(()) => {
                w.end_nest(nest)?;
                n += 1;
            }
            Err(NlError::NoSpace) => {
                w.cancel_nest(nest);
                break;
            }
            Err(err) => return Err(err),
        }
    }
    if n == 0 {
        return Err(NlError::NoSpace);
    }
    w.end_nest(table)?;
    w.end();
    Ok(n)
}

/// A port's counters, as STAT_GET reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HwCounter<'a> {
    /// Its name (the file name under `hw_counters/`).
    pub name: &'a [u8],
    /// Its value.
    pub value: u64,
}

/// Appends a STAT_GET reply for a port's default counters: the device,
/// the port, and the table of counters in order.
pub fn put_stat(
    out: &mut Out<'_>,
    to: ReplyTo,
    dev: DevHandle<'_>,
    port: u32,
    counters: &[HwCounter<'_>],
) -> Result<(), NlError> {
    let mut w = begin(out, cmd::STAT_GET, to, false)?;
    put_handle(&mut w, dev)?;
    w.put_u32(attr::PORT_INDEX, port)?;
    let table = w.begin_nest(attr::STAT_HWCOUNTERS)?;
    for c in counters {
        let e = w.begin_nest(attr::STAT_HWCOUNTER_ENTRY)?;
        w.put_str(attr::STAT_HWCOUNTER_ENTRY_NAME, c.name)?;
        w.put_u64(attr::STAT_HWCOUNTER_ENTRY_VALUE, c.value)?;
        w.end_nest(e)?;
    }
    w.end_nest(table)?;
    w.end();
    Ok(())
}

/// Appends the `NLMSG_DONE` that ends a dump.
pub fn put_done(out: &mut Out<'_>, to: ReplyTo) -> Result<(), NlError> {
    let mut w = out.begin(msg_type::DONE, flags::MULTI, to.seq, to.pid)?;
    w.put_bytes(&0i32.to_ne_bytes())?;
    w.end();
    Ok(())
}

/// Appends an `NLMSG_ERROR` answering `req` (the request's header) from
/// port `sender`: `errno` (positive) for an error, 0 for an
/// acknowledgement. Only the request's header is quoted
/// (`NLM_F_CAPPED`), as the kernel does for a socket with
/// `NETLINK_CAP_ACK`; no extended-ack attributes.
pub fn put_error(
    out: &mut Out<'_>,
    req: &NlMsgHdr,
    sender: u32,
    errno: i32,
) -> Result<(), NlError> {
    let mut w = out.begin(msg_type::ERROR, flags::CAPPED, req.seq, sender)?;
    w.put_bytes(&errno.wrapping_neg().to_ne_bytes())?;
    w.put_bytes(&req.encode())?;
    w.end();
    Ok(())
}

/// An `NLMSG_ERROR` message, decoded (for tests and tools).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorMsg {
    /// The error (negative errno, 0 for an acknowledgement).
    pub error: i32,
    /// The quoted request header.
    pub request: NlMsgHdr,
}

/// Decodes the payload of an `NLMSG_ERROR`.
pub fn decode_error(m: &Message<'_>) -> Result<ErrorMsg, NlError> {
    if m.hdr.ty != msg_type::ERROR {
        return Err(NlError::NotRequest);
    }
    let e = m.payload.get(..4).ok_or(NlError::Truncated {
        needed: 4,
        got: m.payload.len(),
    })?;
    let error = i32::from_ne_bytes([e[0], e[1], e[2], e[3]]);
    let request = NlMsgHdr::decode(m.payload.get(4..).unwrap_or(&[]))?;
    Ok(ErrorMsg { error, request })
}
