// SPDX-License-Identifier: GPL-2.0

//! The command numbers of the `write()` ABI and the table a dispatcher
//! validates a command against before touching anything: for each command
//! this ABI implements, the size of its core request and response, whether
//! the request starts with a response address, and whether driver data
//! (udata) follows the core request and response.
//!
//! The table holds the commands unchanged libibverbs 44 sends to an rxe
//! device; every other number is [`AbiError::UnknownCommand`]
//! (`EOPNOTSUPP`), which libibverbs treats as "not supported".

use super::cq::{
    CreateCompChannel, CreateCompChannelResp, CreateCq, CreateCqResp, DestroyCq, DestroyCqResp,
    ExCreateCq, ExCreateCqResp, ReqNotifyCq, ResizeCq, ResizeCqResp,
};
use super::device::{
    ExQueryDevice, GetContext, GetContextResp, QueryDevice, QueryDeviceResp, QueryPort,
    QueryPortResp, EX_QUERY_DEVICE_RESP_MIN,
};
use super::pd_mr::{
    AllocMw, AllocMwResp, AllocPd, AllocPdResp, DeallocMw, DeallocPd, DeregMr, RegMr, RegMrResp,
};
use super::qp::{
    AttachMcast, CreateQp, CreateQpResp, DestroyQp, DestroyQpResp, DetachMcast, ExCreateQpResp,
    ModifyQp, PostSend, PostSendResp, QueryQp, QueryQpResp, EX_CREATE_QP_MIN,
};
use super::srq_ah::{
    CreateAh, CreateAhResp, CreateSrq, CreateSrqResp, DestroyAh, DestroySrq, DestroySrqResp,
    ModifySrq, QuerySrq, QuerySrqResp,
};
use super::{AbiError, Wire};

/// The uverbs ABI version (`/sys/class/infiniband_verbs/abi_version`).
pub const ABI_VERSION: u32 = 6;
/// The flag of the command word that marks an extended command.
pub const FLAG_EXTENDED: u32 = 0x8000_0000;
/// The bits of the command word that hold the command number.
pub const COMMAND_MASK: u32 = 0xff;

/// `IB_USER_VERBS_CMD_GET_CONTEXT`.
pub const GET_CONTEXT: u32 = 0;
/// `IB_USER_VERBS_CMD_QUERY_DEVICE` (and the extended one).
pub const QUERY_DEVICE: u32 = 1;
/// `IB_USER_VERBS_CMD_QUERY_PORT`.
pub const QUERY_PORT: u32 = 2;
/// `IB_USER_VERBS_CMD_ALLOC_PD`.
pub const ALLOC_PD: u32 = 3;
/// `IB_USER_VERBS_CMD_DEALLOC_PD`.
pub const DEALLOC_PD: u32 = 4;
/// `IB_USER_VERBS_CMD_CREATE_AH`.
pub const CREATE_AH: u32 = 5;
/// `IB_USER_VERBS_CMD_MODIFY_AH` (not implemented).
pub const MODIFY_AH: u32 = 6;
/// `IB_USER_VERBS_CMD_QUERY_AH` (not implemented).
pub const QUERY_AH: u32 = 7;
/// `IB_USER_VERBS_CMD_DESTROY_AH`.
pub const DESTROY_AH: u32 = 8;
/// `IB_USER_VERBS_CMD_REG_MR`.
pub const REG_MR: u32 = 9;
/// `IB_USER_VERBS_CMD_REG_SMR` (not implemented).
pub const REG_SMR: u32 = 10;
/// `IB_USER_VERBS_CMD_REREG_MR` (not implemented).
pub const REREG_MR: u32 = 11;
/// `IB_USER_VERBS_CMD_QUERY_MR` (not implemented).
pub const QUERY_MR: u32 = 12;
/// `IB_USER_VERBS_CMD_DEREG_MR`.
pub const DEREG_MR: u32 = 13;
/// `IB_USER_VERBS_CMD_ALLOC_MW`.
pub const ALLOC_MW: u32 = 14;
/// `IB_USER_VERBS_CMD_BIND_MW` (not implemented).
pub const BIND_MW: u32 = 15;
/// `IB_USER_VERBS_CMD_DEALLOC_MW`.
pub const DEALLOC_MW: u32 = 16;
/// `IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL`.
pub const CREATE_COMP_CHANNEL: u32 = 17;
/// `IB_USER_VERBS_CMD_CREATE_CQ` (and the extended one).
pub const CREATE_CQ: u32 = 18;
/// `IB_USER_VERBS_CMD_RESIZE_CQ`.
pub const RESIZE_CQ: u32 = 19;
/// `IB_USER_VERBS_CMD_DESTROY_CQ`.
pub const DESTROY_CQ: u32 = 20;
/// `IB_USER_VERBS_CMD_POLL_CQ` (not implemented: rxe polls its ring).
pub const POLL_CQ: u32 = 21;
/// `IB_USER_VERBS_CMD_PEEK_CQ` (not implemented).
pub const PEEK_CQ: u32 = 22;
/// `IB_USER_VERBS_CMD_REQ_NOTIFY_CQ`.
pub const REQ_NOTIFY_CQ: u32 = 23;
/// `IB_USER_VERBS_CMD_CREATE_QP`.
pub const CREATE_QP: u32 = 24;
/// `IB_USER_VERBS_CMD_QUERY_QP`.
pub const QUERY_QP: u32 = 25;
/// `IB_USER_VERBS_CMD_MODIFY_QP`.
pub const MODIFY_QP: u32 = 26;
/// `IB_USER_VERBS_CMD_DESTROY_QP`.
pub const DESTROY_QP: u32 = 27;
/// `IB_USER_VERBS_CMD_POST_SEND`.
pub const POST_SEND: u32 = 28;
/// `IB_USER_VERBS_CMD_POST_RECV` (not implemented: rxe posts to its ring).
pub const POST_RECV: u32 = 29;
/// `IB_USER_VERBS_CMD_ATTACH_MCAST`.
pub const ATTACH_MCAST: u32 = 30;
/// `IB_USER_VERBS_CMD_DETACH_MCAST`.
pub const DETACH_MCAST: u32 = 31;
/// `IB_USER_VERBS_CMD_CREATE_SRQ`.
pub const CREATE_SRQ: u32 = 32;
/// `IB_USER_VERBS_CMD_MODIFY_SRQ`.
pub const MODIFY_SRQ: u32 = 33;
/// `IB_USER_VERBS_CMD_QUERY_SRQ`.
pub const QUERY_SRQ: u32 = 34;
/// `IB_USER_VERBS_CMD_DESTROY_SRQ`.
pub const DESTROY_SRQ: u32 = 35;
/// `IB_USER_VERBS_CMD_POST_SRQ_RECV` (not implemented).
pub const POST_SRQ_RECV: u32 = 36;
/// `IB_USER_VERBS_CMD_OPEN_XRCD` (not implemented).
pub const OPEN_XRCD: u32 = 37;
/// `IB_USER_VERBS_CMD_CLOSE_XRCD` (not implemented).
pub const CLOSE_XRCD: u32 = 38;
/// `IB_USER_VERBS_CMD_CREATE_XSRQ` (not implemented).
pub const CREATE_XSRQ: u32 = 39;
/// `IB_USER_VERBS_CMD_OPEN_QP` (not implemented).
pub const OPEN_QP: u32 = 40;

/// The commands this ABI implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmd {
    /// [`GET_CONTEXT`].
    GetContext,
    /// [`QUERY_DEVICE`].
    QueryDevice,
    /// [`QUERY_PORT`].
    QueryPort,
    /// [`ALLOC_PD`].
    AllocPd,
    /// [`DEALLOC_PD`].
    DeallocPd,
    /// [`CREATE_AH`].
    CreateAh,
    /// [`DESTROY_AH`].
    DestroyAh,
    /// [`REG_MR`].
    RegMr,
    /// [`DEREG_MR`].
    DeregMr,
    /// [`ALLOC_MW`].
    AllocMw,
    /// [`DEALLOC_MW`].
    DeallocMw,
    /// [`CREATE_COMP_CHANNEL`].
    CreateCompChannel,
    /// [`CREATE_CQ`].
    CreateCq,
    /// [`RESIZE_CQ`].
    ResizeCq,
    /// [`DESTROY_CQ`].
    DestroyCq,
    /// [`REQ_NOTIFY_CQ`].
    ReqNotifyCq,
    /// [`CREATE_QP`].
    CreateQp,
    /// [`QUERY_QP`].
    QueryQp,
    /// [`MODIFY_QP`].
    ModifyQp,
    /// [`DESTROY_QP`].
    DestroyQp,
    /// [`POST_SEND`].
    PostSend,
    /// [`ATTACH_MCAST`].
    AttachMcast,
    /// [`DETACH_MCAST`].
    DetachMcast,
    /// [`CREATE_SRQ`].
    CreateSrq,
    /// [`MODIFY_SRQ`].
    ModifySrq,
    /// [`QUERY_SRQ`].
    QuerySrq,
    /// [`DESTROY_SRQ`].
    DestroySrq,
    /// Extended [`QUERY_DEVICE`].
    ExQueryDevice,
    /// Extended [`CREATE_CQ`].
    ExCreateCq,
    /// Extended [`CREATE_QP`].
    ExCreateQp,
}

/// What the framing checks a command against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CmdSpec {
    /// The command.
    pub cmd: Cmd,
    /// Its number (without [`FLAG_EXTENDED`]).
    pub number: u32,
    /// Whether it is sent with [`FLAG_EXTENDED`].
    pub extended: bool,
    /// The least core request size, in bytes.
    pub req_size: usize,
    /// The least core response size, in bytes (0 without response).
    pub resp_size: usize,
    /// Whether the command has a response: for a legacy command the core
    /// request then starts with the response's user address.
    pub has_resp: bool,
    /// Whether driver data follows the core request and the core response
    /// (legacy commands; extended ones say so in their header).
    pub has_udata: bool,
}

/// A legacy command with a request only.
const fn i<Req: Wire>(cmd: Cmd, number: u32) -> CmdSpec {
    CmdSpec {
        cmd,
        number,
        extended: false,
        req_size: Req::SIZE,
        resp_size: 0,
        has_resp: false,
        has_udata: false,
    }
}

/// A legacy command with a request and a response.
const fn io<Req: Wire, Resp: Wire>(cmd: Cmd, number: u32) -> CmdSpec {
    CmdSpec {
        cmd,
        number,
        extended: false,
        req_size: Req::SIZE,
        resp_size: Resp::SIZE,
        has_resp: true,
        has_udata: false,
    }
}

/// A legacy command with a request, a response and driver data.
const fn udata_io<Req: Wire, Resp: Wire>(cmd: Cmd, number: u32) -> CmdSpec {
    CmdSpec {
        has_udata: true,
        ..io::<Req, Resp>(cmd, number)
    }
}

/// A legacy command with a request and driver data in, nothing out.
const fn udata_i<Req: Wire>(cmd: Cmd, number: u32) -> CmdSpec {
    CmdSpec {
        has_udata: true,
        ..i::<Req>(cmd, number)
    }
}

/// An extended command with the least request and response sizes.
const fn ex_io(cmd: Cmd, number: u32, req_size: usize, resp_size: usize) -> CmdSpec {
    CmdSpec {
        cmd,
        number,
        extended: true,
        req_size,
        resp_size,
        has_resp: true,
        has_udata: false,
    }
}

/// The legacy commands, in number order.
pub const WRITE_CMDS: &[CmdSpec] = &[
    udata_io::<GetContext, GetContextResp>(Cmd::GetContext, GET_CONTEXT),
    io::<QueryDevice, QueryDeviceResp>(Cmd::QueryDevice, QUERY_DEVICE),
    io::<QueryPort, QueryPortResp>(Cmd::QueryPort, QUERY_PORT),
    udata_io::<AllocPd, AllocPdResp>(Cmd::AllocPd, ALLOC_PD),
    i::<DeallocPd>(Cmd::DeallocPd, DEALLOC_PD),
    udata_io::<CreateAh, CreateAhResp>(Cmd::CreateAh, CREATE_AH),
    i::<DestroyAh>(Cmd::DestroyAh, DESTROY_AH),
    udata_io::<RegMr, RegMrResp>(Cmd::RegMr, REG_MR),
    i::<DeregMr>(Cmd::DeregMr, DEREG_MR),
    udata_io::<AllocMw, AllocMwResp>(Cmd::AllocMw, ALLOC_MW),
    i::<DeallocMw>(Cmd::DeallocMw, DEALLOC_MW),
    io::<CreateCompChannel, CreateCompChannelResp>(Cmd::CreateCompChannel, CREATE_COMP_CHANNEL),
    udata_io::<CreateCq, CreateCqResp>(Cmd::CreateCq, CREATE_CQ),
    udata_io::<ResizeCq, ResizeCqResp>(Cmd::ResizeCq, RESIZE_CQ),
    io::<DestroyCq, DestroyCqResp>(Cmd::DestroyCq, DESTROY_CQ),
    i::<ReqNotifyCq>(Cmd::ReqNotifyCq, REQ_NOTIFY_CQ),
    udata_io::<CreateQp, CreateQpResp>(Cmd::CreateQp, CREATE_QP),
    io::<QueryQp, QueryQpResp>(Cmd::QueryQp, QUERY_QP),
    i::<ModifyQp>(Cmd::ModifyQp, MODIFY_QP),
    io::<DestroyQp, DestroyQpResp>(Cmd::DestroyQp, DESTROY_QP),
    io::<PostSend, PostSendResp>(Cmd::PostSend, POST_SEND),
    i::<AttachMcast>(Cmd::AttachMcast, ATTACH_MCAST),
    i::<DetachMcast>(Cmd::DetachMcast, DETACH_MCAST),
    udata_io::<CreateSrq, CreateSrqResp>(Cmd::CreateSrq, CREATE_SRQ),
    udata_i::<ModifySrq>(Cmd::ModifySrq, MODIFY_SRQ),
    io::<QuerySrq, QuerySrqResp>(Cmd::QuerySrq, QUERY_SRQ),
    io::<DestroySrq, DestroySrqResp>(Cmd::DestroySrq, DESTROY_SRQ),
];

/// The extended commands. Their request and response may be longer than
/// these least sizes (newer user space appends fields): up to the end of
/// the field the C core requires (`reserved` of the request,
/// `response_length` of the response).
pub const WRITE_EX_CMDS: &[CmdSpec] = &[
    ex_io(
        Cmd::ExQueryDevice,
        QUERY_DEVICE,
        ExQueryDevice::SIZE,
        EX_QUERY_DEVICE_RESP_MIN,
    ),
    ex_io(
        Cmd::ExCreateCq,
        CREATE_CQ,
        ExCreateCq::SIZE,
        ExCreateCqResp::SIZE,
    ),
    ex_io(
        Cmd::ExCreateQp,
        CREATE_QP,
        EX_CREATE_QP_MIN,
        ExCreateQpResp::SIZE,
    ),
];

/// The entry of a command word: its number and flag checked, as the C
/// uverbs does first (`EINVAL` for stray bits, `EOPNOTSUPP` for a command
/// not implemented).
pub fn lookup(command: u32) -> Result<&'static CmdSpec, AbiError> {
    if command & !(FLAG_EXTENDED | COMMAND_MASK) != 0 {
        return Err(AbiError::BadCommandBits(command));
    }
    let number = command & COMMAND_MASK;
    let extended = command & FLAG_EXTENDED != 0;
    let table = if extended { WRITE_EX_CMDS } else { WRITE_CMDS };
    table
        .iter()
        .find(|s| s.number == number)
        .ok_or(AbiError::UnknownCommand { number, extended })
}
