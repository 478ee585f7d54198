// SPDX-License-Identifier: GPL-2.0

//! The `write()` ABI of the rdma_cm character device
//! (`/dev/infiniband/rdma_cm`, `include/uapi/rdma/rdma_user_cm.h`, ABI
//! version 4), as a sans-IO codec: what unchanged librdmacm (rdma-core 44)
//! writes once its AF_IB probe has failed, so that it uses the IP commands
//! only, and what it reads back.
//!
//! A `write()` is a header `{u32 cmd; u16 in; u16 out}` followed by `in`
//! bytes of the command's structure; `out` is the size of the response area
//! whose user address the structure carries (`response`). Unlike uverbs,
//! the sizes count bytes and `in` may be shorter than the `write()` (the
//! C `ucma_write` only checks that it is not longer). [`parse`] checks the
//! header against [`CMDS`], the table of the commands this side implements
//! with the least request and response each needs.
//!
//! The structures are declared with the uverbs module's `wire_struct!`
//! (same conventions: native byte order, C field names, layout checked
//! against the C header by a host test). Socket addresses are decoded by
//! [`SockAddr::decode`] (IPv4 `sockaddr_in` or IPv6 `sockaddr_in6`) and
//! encoded by [`SockAddr::encode_in6`] into the 28-byte `sockaddr_in6`
//! slots of the IP commands.

use super::srq_ah::AhAttr;
use super::Wire;

/// `RDMA_USER_CM_ABI_VERSION`: `/sys/class/misc/rdma_cm/abi_version`.
pub const ABI_VERSION: u32 = 4;
/// `RDMA_MAX_PRIVATE_DATA`: the private data area of the structures.
pub const MAX_PRIVATE_DATA: usize = 256;
/// Bytes of the command header.
pub const HDR_LEN: usize = 8;

/// `RDMA_USER_CM_CMD_CREATE_ID`.
pub const CREATE_ID: u32 = 0;
/// `RDMA_USER_CM_CMD_DESTROY_ID`.
pub const DESTROY_ID: u32 = 1;
/// `RDMA_USER_CM_CMD_BIND_IP`.
pub const BIND_IP: u32 = 2;
/// `RDMA_USER_CM_CMD_RESOLVE_IP`.
pub const RESOLVE_IP: u32 = 3;
/// `RDMA_USER_CM_CMD_RESOLVE_ROUTE`.
pub const RESOLVE_ROUTE: u32 = 4;
/// `RDMA_USER_CM_CMD_QUERY_ROUTE`.
pub const QUERY_ROUTE: u32 = 5;
/// `RDMA_USER_CM_CMD_CONNECT`.
pub const CONNECT: u32 = 6;
/// `RDMA_USER_CM_CMD_LISTEN`.
pub const LISTEN: u32 = 7;
/// `RDMA_USER_CM_CMD_ACCEPT`.
pub const ACCEPT: u32 = 8;
/// `RDMA_USER_CM_CMD_REJECT`.
pub const REJECT: u32 = 9;
/// `RDMA_USER_CM_CMD_DISCONNECT`.
pub const DISCONNECT: u32 = 10;
/// `RDMA_USER_CM_CMD_INIT_QP_ATTR`.
pub const INIT_QP_ATTR: u32 = 11;
/// `RDMA_USER_CM_CMD_GET_EVENT`.
pub const GET_EVENT: u32 = 12;
/// `RDMA_USER_CM_CMD_GET_OPTION` (no kernel implements it).
pub const GET_OPTION: u32 = 13;
/// `RDMA_USER_CM_CMD_SET_OPTION`.
pub const SET_OPTION: u32 = 14;
/// `RDMA_USER_CM_CMD_NOTIFY`.
pub const NOTIFY: u32 = 15;
/// `RDMA_USER_CM_CMD_JOIN_IP_MCAST`.
pub const JOIN_IP_MCAST: u32 = 16;
/// `RDMA_USER_CM_CMD_LEAVE_MCAST`.
pub const LEAVE_MCAST: u32 = 17;
/// `RDMA_USER_CM_CMD_MIGRATE_ID`.
pub const MIGRATE_ID: u32 = 18;
/// `RDMA_USER_CM_CMD_QUERY` (AF_IB; not implemented).
pub const QUERY: u32 = 19;
/// `RDMA_USER_CM_CMD_BIND` (AF_IB; not implemented: librdmacm's probe
/// fails and it uses the IP commands).
pub const BIND: u32 = 20;
/// `RDMA_USER_CM_CMD_RESOLVE_ADDR` (AF_IB; not implemented).
pub const RESOLVE_ADDR: u32 = 21;
/// `RDMA_USER_CM_CMD_JOIN_MCAST` (not implemented).
pub const JOIN_MCAST: u32 = 22;

/// `RDMA_PS_TCP`: the port space of RC ids.
pub const PS_TCP: u16 = 0x0106;
/// `RDMA_PS_UDP`.
pub const PS_UDP: u16 = 0x0111;
/// `RDMA_PS_IPOIB`.
pub const PS_IPOIB: u16 = 0x0002;
/// `RDMA_PS_IB`.
pub const PS_IB: u16 = 0x013f;

/// `enum rdma_cm_event_type`, as user space numbers the events.
pub mod event {
    /// `RDMA_CM_EVENT_ADDR_RESOLVED`.
    pub const ADDR_RESOLVED: u32 = 0;
    /// `RDMA_CM_EVENT_ADDR_ERROR`.
    pub const ADDR_ERROR: u32 = 1;
    /// `RDMA_CM_EVENT_ROUTE_RESOLVED`.
    pub const ROUTE_RESOLVED: u32 = 2;
    /// `RDMA_CM_EVENT_ROUTE_ERROR`.
    pub const ROUTE_ERROR: u32 = 3;
    /// `RDMA_CM_EVENT_CONNECT_REQUEST`.
    pub const CONNECT_REQUEST: u32 = 4;
    /// `RDMA_CM_EVENT_CONNECT_RESPONSE`.
    pub const CONNECT_RESPONSE: u32 = 5;
    /// `RDMA_CM_EVENT_CONNECT_ERROR`.
    pub const CONNECT_ERROR: u32 = 6;
    /// `RDMA_CM_EVENT_UNREACHABLE`.
    pub const UNREACHABLE: u32 = 7;
    /// `RDMA_CM_EVENT_REJECTED`.
    pub const REJECTED: u32 = 8;
    /// `RDMA_CM_EVENT_ESTABLISHED`.
    pub const ESTABLISHED: u32 = 9;
    /// `RDMA_CM_EVENT_DISCONNECTED`.
    pub const DISCONNECTED: u32 = 10;
    /// `RDMA_CM_EVENT_DEVICE_REMOVAL`.
    pub const DEVICE_REMOVAL: u32 = 11;
    /// `RDMA_CM_EVENT_MULTICAST_JOIN`.
    pub const MULTICAST_JOIN: u32 = 12;
    /// `RDMA_CM_EVENT_MULTICAST_ERROR`.
    pub const MULTICAST_ERROR: u32 = 13;
    /// `RDMA_CM_EVENT_ADDR_CHANGE`.
    pub const ADDR_CHANGE: u32 = 14;
    /// `RDMA_CM_EVENT_TIMEWAIT_EXIT`.
    pub const TIMEWAIT_EXIT: u32 = 15;
}

/// `RDMA_OPTION_ID`: options of the id.
pub const OPTION_ID: u32 = 0;
/// `RDMA_OPTION_IB`: options of the IB path.
pub const OPTION_IB: u32 = 1;
/// `RDMA_OPTION_ID_TOS`.
pub const OPTION_ID_TOS: u32 = 0;
/// `RDMA_OPTION_ID_REUSEADDR`.
pub const OPTION_ID_REUSEADDR: u32 = 1;
/// `RDMA_OPTION_ID_AFONLY`.
pub const OPTION_ID_AFONLY: u32 = 2;
/// `RDMA_OPTION_ID_ACK_TIMEOUT`.
pub const OPTION_ID_ACK_TIMEOUT: u32 = 3;

/// `AF_INET`.
pub const AF_INET: u16 = 2;
/// `AF_INET6`.
pub const AF_INET6: u16 = 10;

/// A byte area larger than `Default` covers (private data, the event's
/// parameter union).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Area<const N: usize>(pub [u8; N]);

impl<const N: usize> Default for Area<N> {
    fn default() -> Self {
        Area([0; N])
    }
}

impl<const N: usize> Wire for Area<N> {
    const SIZE: usize = N;
    fn read_from(b: &[u8]) -> Self {
        Area(<[u8; N]>::read_from(b))
    }
    fn write_to(&self, b: &mut [u8]) {
        self.0.write_to(b)
    }
}

wire_struct! {
    /// An IPv6 socket address, the address slot of the IP commands (an
    /// IPv4 `sockaddr_in` is written into its first 16 bytes).
    pub struct SockaddrIn6 = "sockaddr_in6" {
        sin6_family: u16,
        /// Big-endian, as on the wire.
        sin6_port: [u8; 2],
        sin6_flowinfo: u32,
        sin6_addr: [u8; 16],
        sin6_scope_id: u32,
    }
}

wire_struct! {
    /// `CREATE_ID` request.
    pub struct CreateId = "rdma_ucm_create_id" {
        /// User space's cookie for the id, returned in its events.
        uid: u64,
        /// User address of the response.
        response: u64,
        /// The port space (`RDMA_PS_*`).
        ps: u16,
        /// The verbs QP type (`IBV_QPT_*`).
        qp_type: u8,
        reserved: [u8; 5],
    }
}

wire_struct! {
    /// `CREATE_ID` (and `JOIN_*_MCAST`) response.
    pub struct CreateIdResp = "rdma_ucm_create_id_resp" {
        /// The kernel's handle of the id.
        id: u32,
    }
}

wire_struct! {
    /// `DESTROY_ID` (and `LEAVE_MCAST`) request.
    pub struct DestroyId = "rdma_ucm_destroy_id" {
        /// User address of the response.
        response: u64,
        id: u32,
        reserved: u32,
    }
}

wire_struct! {
    /// `DESTROY_ID` response: events of the id user space has read.
    pub struct DestroyIdResp = "rdma_ucm_destroy_id_resp" {
        events_reported: u32,
    }
}

wire_struct! {
    /// `BIND_IP` request.
    pub struct BindIp = "rdma_ucm_bind_ip" {
        /// Unused (no response).
        response: u64,
        addr: SockaddrIn6,
        id: u32,
    }
}

wire_struct! {
    /// `RESOLVE_IP` request.
    pub struct ResolveIp = "rdma_ucm_resolve_ip" {
        /// All zero: no source address given.
        src_addr: SockaddrIn6,
        dst_addr: SockaddrIn6,
        id: u32,
        timeout_ms: u32,
    }
}

wire_struct! {
    /// `RESOLVE_ROUTE` request.
    pub struct ResolveRoute = "rdma_ucm_resolve_route" {
        id: u32,
        timeout_ms: u32,
    }
}

wire_struct! {
    /// `QUERY_ROUTE` (and `QUERY`) request.
    pub struct Query = "rdma_ucm_query" {
        /// User address of the response.
        response: u64,
        id: u32,
        option: u32,
    }
}

wire_struct! {
    /// A path record as user space gets it (`ib_user_path_rec`); the
    /// big-endian fields are raw bytes.
    pub struct UserPathRec = "ib_user_path_rec" {
        dgid: [u8; 16],
        sgid: [u8; 16],
        dlid: [u8; 2],
        slid: [u8; 2],
        raw_traffic: u32,
        flow_label: [u8; 4],
        reversible: u32,
        mtu: u32,
        pkey: [u8; 2],
        hop_limit: u8,
        traffic_class: u8,
        numb_path: u8,
        sl: u8,
        mtu_selector: u8,
        rate_selector: u8,
        rate: u8,
        packet_life_time_selector: u8,
        packet_life_time: u8,
        preference: u8,
    }
}

wire_struct! {
    /// `QUERY_ROUTE` response.
    pub struct QueryRouteResp = "rdma_ucm_query_route_resp" {
        /// The device's node GUID (raw, big-endian); 0 with no device.
        node_guid: [u8; 8],
        ib_route: [UserPathRec; 2],
        src_addr: SockaddrIn6,
        dst_addr: SockaddrIn6,
        num_paths: u32,
        port_num: u8,
        reserved: [u8; 3],
        /// The device's index (as RDMA netlink numbers it).
        ibdev_index: u32,
        reserved1: u32,
    }
}

wire_struct! {
    /// The connection parameters of `CONNECT`, `ACCEPT` and the events.
    pub struct ConnParam = "rdma_ucm_conn_param" {
        qp_num: u32,
        qkey: u32,
        private_data: Area<MAX_PRIVATE_DATA>,
        private_data_len: u8,
        srq: u8,
        responder_resources: u8,
        initiator_depth: u8,
        flow_control: u8,
        retry_count: u8,
        rnr_retry_count: u8,
        /// Zero in the `ACCEPT` the active side sends after the
        /// connect response: the parameters are absent.
        valid: u8,
    }
}

wire_struct! {
    /// The UD parameters of the events of UD ids and multicast.
    pub struct UdParam = "rdma_ucm_ud_param" {
        qp_num: u32,
        qkey: u32,
        ah_attr: AhAttr,
        private_data: Area<MAX_PRIVATE_DATA>,
        private_data_len: u8,
        reserved: [u8; 7],
    }
}

wire_struct! {
    /// Enhanced connection establishment options.
    pub struct Ece = "rdma_ucm_ece" {
        vendor_id: u32,
        attr_mod: u32,
    }
}

wire_struct! {
    /// `CONNECT` request.
    pub struct Connect = "rdma_ucm_connect" {
        conn_param: ConnParam,
        id: u32,
        reserved: u32,
        ece: Ece,
    }
}

wire_struct! {
    /// `LISTEN` request.
    pub struct Listen = "rdma_ucm_listen" {
        id: u32,
        backlog: u32,
    }
}

wire_struct! {
    /// `ACCEPT` request.
    pub struct Accept = "rdma_ucm_accept" {
        /// The new id's cookie (its events carry it from now on).
        uid: u64,
        conn_param: ConnParam,
        id: u32,
        reserved: u32,
        ece: Ece,
    }
}

wire_struct! {
    /// `REJECT` request.
    pub struct Reject = "rdma_ucm_reject" {
        id: u32,
        private_data_len: u8,
        /// 0: consumer defined; else the IB CM's reason.
        reason: u8,
        reserved: [u8; 2],
        private_data: Area<MAX_PRIVATE_DATA>,
    }
}

wire_struct! {
    /// `DISCONNECT` request.
    pub struct Disconnect = "rdma_ucm_disconnect" {
        id: u32,
    }
}

wire_struct! {
    /// `INIT_QP_ATTR` request.
    pub struct InitQpAttr = "rdma_ucm_init_qp_attr" {
        /// User address of the response ([`QpAttr`]).
        response: u64,
        id: u32,
        qp_state: u32,
    }
}

wire_struct! {
    /// QP attributes for user space to apply (`ib_uverbs_qp_attr`), the
    /// `INIT_QP_ATTR` response.
    pub struct QpAttr = "ib_uverbs_qp_attr" {
        /// `IB_QP_*` bits of the attributes that are set.
        qp_attr_mask: u32,
        qp_state: u32,
        cur_qp_state: u32,
        path_mtu: u32,
        path_mig_state: u32,
        qkey: u32,
        rq_psn: u32,
        sq_psn: u32,
        dest_qp_num: u32,
        qp_access_flags: u32,
        ah_attr: AhAttr,
        alt_ah_attr: AhAttr,
        max_send_wr: u32,
        max_recv_wr: u32,
        max_send_sge: u32,
        max_recv_sge: u32,
        max_inline_data: u32,
        pkey_index: u16,
        alt_pkey_index: u16,
        en_sqd_async_notify: u8,
        sq_draining: u8,
        max_rd_atomic: u8,
        max_dest_rd_atomic: u8,
        min_rnr_timer: u8,
        port_num: u8,
        timeout: u8,
        retry_cnt: u8,
        rnr_retry: u8,
        alt_port_num: u8,
        alt_timeout: u8,
        reserved: [u8; 5],
    }
}

wire_struct! {
    /// `NOTIFY` request.
    pub struct Notify = "rdma_ucm_notify" {
        id: u32,
        /// An `IBV_EVENT_*`.
        event: u32,
    }
}

wire_struct! {
    /// `JOIN_IP_MCAST` request.
    pub struct JoinIpMcast = "rdma_ucm_join_ip_mcast" {
        /// User address of the response ([`CreateIdResp`]).
        response: u64,
        uid: u64,
        addr: SockaddrIn6,
        id: u32,
    }
}

/// Bytes of a `sockaddr_storage`.
pub const SOCKADDR_STORAGE_LEN: usize = 128;

wire_struct! {
    /// `JOIN_MCAST` request (any family; librdmacm sends it only with
    /// AF_IB support, else `JOIN_IP_MCAST`).
    pub struct JoinMcast = "rdma_ucm_join_mcast" {
        /// User address of the response ([`CreateIdResp`]).
        response: u64,
        uid: u64,
        id: u32,
        /// Bytes of `addr` used: those of its family's address.
        addr_size: u16,
        /// A [`join_flags`] value.
        join_flags: u16,
        addr: Area<SOCKADDR_STORAGE_LEN>,
    }
}

/// `join_flags` of [`JoinMcast`] (`RDMA_MC_JOIN_FLAG_*`).
pub mod join_flags {
    /// A full member: sends and receives.
    pub const FULLMEMBER: u16 = 0;
    /// A send-only full member.
    pub const SENDONLY_FULLMEMBER: u16 = 1;
}

/// Bytes of a `sockaddr_in`.
pub const SOCKADDR_IN_LEN: u16 = 16;
/// Bytes of a `sockaddr_in6`.
pub const SOCKADDR_IN6_LEN: u16 = 28;

wire_struct! {
    /// `GET_EVENT` request.
    pub struct GetEvent = "rdma_ucm_get_event" {
        /// User address of the response ([`EventResp`]).
        response: u64,
    }
}

/// Bytes of the parameter union of [`EventResp`] (the larger member,
/// [`UdParam`]).
pub const EVENT_PARAM_LEN: usize = 304;

wire_struct! {
    /// `GET_EVENT` response.
    pub struct EventResp = "rdma_ucm_event_resp" {
        /// The id's cookie (for a connection request: the listener's).
        uid: u64,
        /// The id's handle (for a connection request: the new id's).
        id: u32,
        /// An [`event`] number.
        event: u32,
        /// 0, a negative errno, or a REJ's reason.
        status: u32,
        /// A [`ConnParam`] or a [`UdParam`].
        param: Area<EVENT_PARAM_LEN>,
        reserved: u32,
        ece: Ece,
    }
}

wire_struct! {
    /// `SET_OPTION` request.
    pub struct SetOption = "rdma_ucm_set_option" {
        /// User address of the value.
        optval: u64,
        id: u32,
        level: u32,
        optname: u32,
        optlen: u32,
    }
}

wire_struct! {
    /// `MIGRATE_ID` request, written to the file the id moves to.
    pub struct MigrateId = "rdma_ucm_migrate_id" {
        /// User address of the response.
        response: u64,
        id: u32,
        /// The descriptor of the file the id is on now.
        fd: u32,
    }
}

wire_struct! {
    /// `MIGRATE_ID` response: events of the id user space has read.
    pub struct MigrateResp = "rdma_ucm_migrate_resp" {
        events_reported: u32,
    }
}

/// What a command needs: its least request (`in`) and response (`out`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmdSpec {
    /// The command number.
    pub cmd: u32,
    /// Least bytes of request: a shorter `in` is `EINVAL`.
    pub min_in: usize,
    /// Least bytes of response area: a smaller `out` is `ENOSPC`.
    pub min_out: usize,
}

/// Bytes of [`Connect`] and [`Accept`] without their `ece` (the structure
/// of kernels before 5.8, which the C kernel still takes).
pub const CONNECT_MIN: usize = Connect::SIZE - Ece::SIZE;
/// See [`CONNECT_MIN`].
pub const ACCEPT_MIN: usize = Accept::SIZE - Ece::SIZE;

/// How many command numbers the ABI has (`JOIN_MCAST` is the last).
pub const NUM_CMDS: u32 = 23;

/// The least response area of `GET_EVENT`: up to its `reserved` word (the
/// C ucma takes that from old 32-bit user space and writes what fits).
pub const EVENT_RESP_MIN: usize = 20 + EVENT_PARAM_LEN;
/// The least response area of `QUERY_ROUTE`: up to `ibdev_index`, which
/// older user space lacks.
pub const QUERY_ROUTE_RESP_MIN: usize = QueryRouteResp::SIZE - 8;

/// The commands implemented here.
pub const CMDS: &[CmdSpec] = &[
    CmdSpec {
        cmd: CREATE_ID,
        min_in: CreateId::SIZE,
        min_out: CreateIdResp::SIZE,
    },
    CmdSpec {
        cmd: DESTROY_ID,
        min_in: DestroyId::SIZE,
        min_out: DestroyIdResp::SIZE,
    },
    CmdSpec {
        cmd: BIND_IP,
        min_in: BindIp::SIZE,
        min_out: 0,
    },
    CmdSpec {
        cmd: RESOLVE_IP,
        min_in: ResolveIp::SIZE,
        min_out: 0,
    },
    CmdSpec {
        cmd: RESOLVE_ROUTE,
        min_in: ResolveRoute::SIZE,
        min_out: 0,
    },
    CmdSpec {
        cmd: QUERY_ROUTE,
        min_in: Query::SIZE,
        min_out: QUERY_ROUTE_RESP_MIN,
    },
    CmdSpec {
        cmd: CONNECT,
        min_in: CONNECT_MIN,
        min_out: 0,
    },
    CmdSpec {
        cmd: LISTEN,
        min_in: Listen::SIZE,
        min_out: 0,
    },
    CmdSpec {
        cmd: ACCEPT,
        min_in: ACCEPT_MIN,
        min_out: 0,
    },
    CmdSpec {
        cmd: REJECT,
        min_in: Reject::SIZE,
        min_out: 0,
    },
    CmdSpec {
        cmd: DISCONNECT,
        min_in: Disconnect::SIZE,
        min_out: 0,
    },
    CmdSpec {
        cmd: INIT_QP_ATTR,
        min_in: InitQpAttr::SIZE,
        min_out: QpAttr::SIZE,
    },
    CmdSpec {
        cmd: GET_EVENT,
        min_in: GetEvent::SIZE,
        min_out: EVENT_RESP_MIN,
    },
    CmdSpec {
        cmd: SET_OPTION,
        min_in: SetOption::SIZE,
        min_out: 0,
    },
    CmdSpec {
        cmd: NOTIFY,
        min_in: Notify::SIZE,
        min_out: 0,
    },
    CmdSpec {
        cmd: JOIN_IP_MCAST,
        min_in: JoinIpMcast::SIZE,
        min_out: CreateIdResp::SIZE,
    },
    CmdSpec {
        cmd: LEAVE_MCAST,
        min_in: DestroyId::SIZE,
        min_out: DestroyIdResp::SIZE,
    },
    CmdSpec {
        cmd: JOIN_MCAST,
        min_in: JoinMcast::SIZE,
        min_out: CreateIdResp::SIZE,
    },
    CmdSpec {
        cmd: MIGRATE_ID,
        min_in: MigrateId::SIZE,
        min_out: MigrateResp::SIZE,
    },
];

/// One parsed `write()`: the command, its request bytes (exactly `in`
/// of them), and the size of its response area.
#[derive(Debug, PartialEq, Eq)]
pub struct Request<'a> {
    /// The command's entry of [`CMDS`].
    pub spec: CmdSpec,
    /// The request (`in` bytes).
    pub input: &'a [u8],
    /// The response area's size (`out`).
    pub out_len: usize,
}

/// Why a `write()` of the rdma_cm device was refused, and its errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UcmaError {
    /// Shorter than a header, or `in` runs past the buffer: `EINVAL`.
    Framing,
    /// Not a command implemented here: `ENOSYS` for a number of the ABI
    /// ([`NUM_CMDS`]), `EINVAL` past it, as the C ucma answers (librdmacm's
    /// AF_IB probe, `BIND`, wants an error).
    Unknown(u32),
    /// `in` is smaller than the command's request: `EINVAL`.
    ShortRequest,
    /// `out` is smaller than the command's response: `ENOSPC`.
    ShortResponse,
    /// A socket address of an unsupported family: `EAFNOSUPPORT`.
    Family(u16),
}

/// Splits one `write()` buffer (the bytes user space wrote, copied in).
pub fn parse(buf: &[u8]) -> Result<Request<'_>, UcmaError> {
    if buf.len() < HDR_LEN {
        return Err(UcmaError::Framing);
    }
    let cmd = u32::read_from(buf);
    let in_len = usize::from(u16::read_from(&buf[4..]));
    let out_len = usize::from(u16::read_from(&buf[6..]));
    if HDR_LEN + in_len > buf.len() {
        return Err(UcmaError::Framing);
    }
    let spec = *CMDS
        .iter()
        .find(|s| s.cmd == cmd)
        .ok_or(UcmaError::Unknown(cmd))?;
    if in_len < spec.min_in {
        return Err(UcmaError::ShortRequest);
    }
    if out_len < spec.min_out {
        return Err(UcmaError::ShortResponse);
    }
    Ok(Request {
        spec,
        input: &buf[HDR_LEN..HDR_LEN + in_len],
        out_len,
    })
}

/// Decodes a request structure of a parsed command, zero-filling what a
/// shorter (older) request leaves out ([`CONNECT_MIN`]).
pub fn decode<T: Wire>(input: &[u8]) -> T {
    T::read_from(input)
}

/// An IP socket address of a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SockAddr {
    /// IPv4 (4 bytes) or IPv6 (16) address, IPv4 as 4 bytes.
    pub ip: IpBytes,
    /// The port, host order.
    pub port: u16,
}

/// An address of either family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpBytes {
    /// IPv4.
    V4([u8; 4]),
    /// IPv6.
    V6([u8; 16]),
}

impl SockAddr {
    /// Decodes a `sockaddr_in` or `sockaddr_in6` from an address slot;
    /// `Ok(None)` for an all-zero family (no address given).
    pub fn decode(s: &SockaddrIn6) -> Result<Option<SockAddr>, UcmaError> {
        let port = u16::from_be_bytes(s.sin6_port);
        match s.sin6_family {
            0 => Ok(None),
            AF_INET => {
                // sockaddr_in: the address follows the port (the slot's
                // flowinfo word).
                let ip = s.sin6_flowinfo.to_ne_bytes();
                Ok(Some(SockAddr {
                    ip: IpBytes::V4(ip),
                    port,
                }))
            }
            AF_INET6 => Ok(Some(SockAddr {
                ip: IpBytes::V6(s.sin6_addr),
                port,
            })),
            f => Err(UcmaError::Family(f)),
        }
    }

    /// The address in a slot: a `sockaddr_in` for IPv4, zero beyond.
    pub fn encode_in6(&self) -> SockaddrIn6 {
        match self.ip {
            IpBytes::V4(a) => SockaddrIn6 {
                sin6_family: AF_INET,
                sin6_port: self.port.to_be_bytes(),
                sin6_flowinfo: u32::from_ne_bytes(a),
                ..SockaddrIn6::default()
            },
            IpBytes::V6(a) => SockaddrIn6 {
                sin6_family: AF_INET6,
                sin6_port: self.port.to_be_bytes(),
                sin6_addr: a,
                ..SockaddrIn6::default()
            },
        }
    }
}

impl ConnParam {
    /// The private data user space gave (at most the area).
    pub fn data(&self) -> &[u8] {
        let n = usize::from(self.private_data_len).min(MAX_PRIVATE_DATA);
        &self.private_data.0[..n]
    }

    /// Parameters carrying `data` (cut at 255 bytes, what the length
    /// byte holds).
    pub fn with_data(data: &[u8]) -> ConnParam {
        let n = data.len().min(usize::from(u8::MAX));
        let mut p = ConnParam::default();
        p.private_data.0[..n].copy_from_slice(&data[..n]);
        p.private_data_len = n as u8;
        p
    }
}

impl Reject {
    /// The private data user space gave (at most the area).
    pub fn data(&self) -> &[u8] {
        let n = usize::from(self.private_data_len).min(MAX_PRIVATE_DATA);
        &self.private_data.0[..n]
    }
}

impl SockAddr {
    /// The address of a `JOIN_MCAST`: `addr_size` must be the size of
    /// its family's `sockaddr` (16 or 28), as the C ucma checks; another
    /// family (AF_IB included) is [`UcmaError::Family`].
    pub fn decode_sized(addr: &[u8], addr_size: u16) -> Result<Option<SockAddr>, UcmaError> {
        let slot = SockaddrIn6::read_from(addr);
        let want = match slot.sin6_family {
            AF_INET => SOCKADDR_IN_LEN,
            AF_INET6 => SOCKADDR_IN6_LEN,
            f => return Err(UcmaError::Family(f)),
        };
        if addr_size != want {
            return Err(UcmaError::ShortRequest);
        }
        SockAddr::decode(&slot)
    }
}

impl EventResp {
    /// An event with UD parameters `p` in the union.
    pub fn with_ud(uid: u64, id: u32, event: u32, status: i32, p: &UdParam) -> EventResp {
        EventResp::with_param(uid, id, event, status, p)
    }

    /// An event with connection parameters `p` in the union.
    pub fn with_conn(uid: u64, id: u32, event: u32, status: i32, p: &ConnParam) -> EventResp {
        EventResp::with_param(uid, id, event, status, p)
    }

    /// An event with `p` (a member of the union) in the union.
    fn with_param<T: Wire>(uid: u64, id: u32, event: u32, status: i32, p: &T) -> EventResp {
        let mut param = Area([0u8; EVENT_PARAM_LEN]);
        p.write_to(&mut param.0);
        EventResp {
            uid,
            id,
            event,
            status: status as u32,
            param,
            reserved: 0,
            ece: Ece::default(),
        }
    }
}
