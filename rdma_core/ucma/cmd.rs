// SPDX-License-Identifier: GPL-2.0

//! The commands of a `write()` to `/dev/infiniband/rdma_cm`: the whole
//! buffer copied in once, the framing checked by
//! `rdma::spec::uverbs::ucma` (sizes, command number), then one command
//! on an id of the file's (another file's handle is `EINVAL`, a stale or
//! made-up one `ENOENT`, as in C). Success returns the whole length
//! written.
//!
//! The ids are on IPv4 or IPv6 addresses;
//! their QPs are user space's (librdmacm makes them through libibverbs),
//! so `CONNECT` and `ACCEPT` carry the QP's number and `INIT_QP_ATTR`
//! gives the attributes for its moves. UD ids (UDP and IPoIB port
//! spaces) resolve addresses, connect and listen by SIDR, and join
//! multicast groups (`JOIN_IP_MCAST`, `JOIN_MCAST`, `LEAVE_MCAST`). Not
//! implemented (`ENOSYS`, as the C ucma answers a
//! command it lacks): AF_IB (`BIND`, `RESOLVE_ADDR`, `QUERY`).

use kernel::error::code::{EBADF, EINVAL, ENOENT, ENOSPC};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::uaccess::{UserSlice, UserSliceReader};

use rdma::cma::{CmId, ConnParam as KConnParam, IpAddr, PortSpace, SockAddr as KSockAddr};
use rdma::kshim::errno::{eafnosupport, enosys, eopnotsupp};
use rdma::kshim::route::NetNs;
use rdma::spec::qp_state::QpState;
use rdma::spec::uverbs::ucma::{self, *};
use rdma::spec::uverbs::Wire;

use crate::ctx::{routes, Ctx};
use crate::file::UcmaFile;
use crate::handler::Handler;

/// The largest `write()` taken: a header and the largest request.
const MAX_WRITE: usize = HDR_LEN + 512;

/// The most requests a listener keeps waiting (the C ucma's default
/// `max_backlog`).
const MAX_BACKLOG: u32 = 1024;
/// The REJ's private data area.
const REJ_PRIVATE_DATA: usize = 148;
/// `IB_CM_REJ_CONSUMER_DEFINED`.
const REJ_CONSUMER_DEFINED: u8 = 28;
/// `IBV_EVENT_COMM_EST`.
const EVENT_COMM_EST: u32 = 3;

fn ucma_err(e: UcmaError) -> Error {
    match e {
        UcmaError::Framing | UcmaError::ShortRequest => EINVAL,
        UcmaError::Unknown(n) if n < NUM_CMDS => enosys(),
        UcmaError::Unknown(_) => EINVAL,
        UcmaError::ShortResponse => ENOSPC,
        UcmaError::Family(_) => eafnosupport(),
    }
}

/// Writes `v` at the user address `addr`, cut to `len` bytes.
fn respond<T: Wire>(addr: u64, len: usize, v: &T) -> Result {
    let mut bytes = [0u8; 512];
    let area = bytes.get_mut(..T::SIZE).ok_or(EINVAL)?;
    v.write_to(area);
    let n = len.min(T::SIZE);
    UserSlice::new(addr as usize, n)
        .writer()
        .write_slice(&area[..n])?;
    Ok(())
}

/// An address of a command, as the rdma_cm takes it.
fn sockaddr(s: &SockaddrIn6) -> Result<Option<KSockAddr>> {
    Ok(SockAddr::decode(s).map_err(ucma_err)?.map(sockaddr_in))
}

/// A decoded address, as the rdma_cm takes it.
fn sockaddr_in(a: SockAddr) -> KSockAddr {
    KSockAddr {
        ip: match a.ip {
            IpBytes::V4(v) => IpAddr::V4(v),
            IpBytes::V6(v) => IpAddr::from16(v),
        },
        port: a.port,
    }
}

/// An address of the rdma_cm's, for user space.
fn sockaddr_out(a: Option<KSockAddr>) -> SockaddrIn6 {
    a.map_or(SockaddrIn6::default(), |a| {
        SockAddr {
            ip: match a.ip {
                IpAddr::V4(v) => IpBytes::V4(v),
                IpAddr::V6(v) => IpBytes::V6(v),
            },
            port: a.port,
        }
        .encode_in6()
    })
}

/// Runs one `write()` on `file`.
pub(crate) fn write(file: &Arc<UcmaFile>, data: UserSliceReader, nonblock: bool) -> Result<usize> {
    let count = data.len();
    if count > MAX_WRITE {
        return Err(EINVAL);
    }
    let mut buf = KVec::new();
    data.read_all(&mut buf, GFP_KERNEL)?;
    let req = ucma::parse(&buf).map_err(ucma_err)?;
    let input = req.input;
    match req.spec.cmd {
        CREATE_ID => create_id(file, &decode(input), req.out_len)?,
        DESTROY_ID => destroy_id(file, &decode(input), req.out_len)?,
        BIND_IP => {
            let c: BindIp = decode(input);
            let addr = sockaddr(&c.addr)?.ok_or_else(eafnosupport)?;
            file.get(c.id)?.id.bind_addr(addr)?;
        }
        RESOLVE_IP => {
            let c: ResolveIp = decode(input);
            let dst = sockaddr(&c.dst_addr)?.ok_or_else(eafnosupport)?;
            let src = sockaddr(&c.src_addr)?;
            file.get(c.id)?.id.resolve_addr(src, dst)?;
        }
        RESOLVE_ROUTE => {
            let c: ResolveRoute = decode(input);
            file.get(c.id)?.id.resolve_route()?;
        }
        QUERY_ROUTE => query_route(file, &decode(input), req.out_len)?,
        CONNECT => {
            let c: Connect = decode(input);
            let p = conn_param(&c.conn_param)?;
            file.get(c.id)?.id.connect(&p)?;
        }
        LISTEN => {
            let c: Listen = decode(input);
            let ctx = file.get(c.id)?;
            let backlog = if c.backlog > 0 && c.backlog < MAX_BACKLOG {
                c.backlog
            } else {
                MAX_BACKLOG
            };
            ctx.backlog
                .store(backlog, core::sync::atomic::Ordering::Relaxed);
            ctx.id.listen()?;
        }
        ACCEPT => {
            let c: Accept = decode(input);
            let ctx = file.get(c.id)?;
            if c.conn_param.valid != 0 {
                let p = conn_param(&c.conn_param)?;
                ctx.set_uid(c.uid);
                ctx.id.accept(&p)?;
            } else {
                // The active side after CONNECT_RESPONSE: its QP is in
                // RTS, the RTU goes.
                ctx.id.establish()?;
            }
        }
        REJECT => {
            let c: Reject = decode(input);
            if c.reason != 0 && c.reason != REJ_CONSUMER_DEFINED {
                return Err(EINVAL);
            }
            if c.data().len() > REJ_PRIVATE_DATA {
                return Err(EINVAL);
            }
            file.get(c.id)?.id.reject(c.data())?;
        }
        DISCONNECT => {
            let c: Disconnect = decode(input);
            file.get(c.id)?.id.disconnect()?;
        }
        INIT_QP_ATTR => init_qp_attr(file, &decode(input), req.out_len)?,
        GET_EVENT => {
            let c: GetEvent = decode(input);
            file.get_event(c.response, req.out_len, nonblock)?;
        }
        SET_OPTION => set_option(file, &decode(input))?,
        NOTIFY => {
            let c: Notify = decode(input);
            let ctx = file.get(c.id)?;
            if c.event != EVENT_COMM_EST {
                return Err(EINVAL);
            }
            ctx.id.notify_established()?;
        }
        JOIN_IP_MCAST => {
            let c: JoinIpMcast = decode(input);
            // Another family than IPv4 or IPv6 has no size: EINVAL.
            let group = sockaddr(&c.addr).map_err(|_| EINVAL)?.ok_or(EINVAL)?;
            join(
                file,
                c.id,
                c.uid,
                group,
                join_flags::FULLMEMBER,
                c.response,
                req.out_len,
            )?
        }
        JOIN_MCAST => {
            let c: JoinMcast = decode(input);
            let group = SockAddr::decode_sized(&c.addr.0, c.addr_size)
                .map_err(|_| EINVAL)?
                .ok_or(EINVAL)?;
            let group = sockaddr_in(group);
            join(
                file,
                c.id,
                c.uid,
                group,
                c.join_flags,
                c.response,
                req.out_len,
            )?
        }
        LEAVE_MCAST => leave(file, &decode(input), req.out_len)?,
        MIGRATE_ID => migrate_id(file, &decode(input), req.out_len)?,
        _ => return Err(enosys()),
    }
    Ok(count)
}

/// `CREATE_ID`: an id of the TCP (RC), UDP or IPoIB (UD) port space in
/// the caller's network namespace.
fn create_id(file: &Arc<UcmaFile>, c: &CreateId, out_len: usize) -> Result {
    // The port space decides the QP type, as in C (which reads `qp_type`
    // only for PS_IB).
    let ps = match c.ps {
        PS_TCP => PortSpace::Tcp,
        PS_UDP => PortSpace::Udp,
        PS_IPOIB => PortSpace::Ipoib,
        // AF_IB's port space is not implemented.
        PS_IB => return Err(eopnotsupp()),
        _ => return Err(EINVAL),
    };
    let handler: Arc<dyn rdma::cma::CmHandler> = Arc::new(Handler, GFP_KERNEL)?;
    let id = CmId::new_in(NetNs::current()?, handler, ps)?;
    let ctx = Ctx::new(id, file.clone(), c.uid)?;
    routes::add(&ctx)?;
    let resp = CreateIdResp { id: ctx.handle };
    if let Err(e) = respond(c.response, out_len, &resp).and_then(|()| file.insert(&ctx)) {
        ctx.destroy();
        return Err(e);
    }
    Ok(())
}

/// `DESTROY_ID`: the id ends, its unread events go (the new ids of
/// requests among them are rejected), and the events read are returned.
fn destroy_id(file: &Arc<UcmaFile>, c: &DestroyId, out_len: usize) -> Result {
    let ctx = file.take(c.id)?;
    ctx.destroy();
    for orphan in ctx.file().forget(&ctx) {
        orphan.destroy();
    }
    let resp = DestroyIdResp {
        events_reported: ctx.events_reported(),
    };
    respond(c.response, out_len, &resp)
}

/// The rdma_cm's parameters of a `CONNECT` or `ACCEPT`.
fn conn_param(p: &ucma::ConnParam) -> Result<KConnParam> {
    if p.valid == 0 {
        return Err(EINVAL);
    }
    let mut data = KVec::new();
    data.extend_from_slice(p.data(), GFP_KERNEL)?;
    Ok(KConnParam {
        private_data: data,
        responder_resources: p.responder_resources,
        initiator_depth: p.initiator_depth,
        flow_control: p.flow_control != 0,
        retry_count: p.retry_count,
        rnr_retry_count: p.rnr_retry_count,
        qp_num: Some(p.qp_num),
        srq: p.srq != 0,
        ..KConnParam::default()
    })
}

/// `QUERY_ROUTE`: the id's addresses, device and port, and its route
/// (one path once resolved) with the GIDs of both ends. The device index
/// is "unknown" (`u32::MAX`): RDMA netlink numbers devices in another
/// module (rdma_rs_uverbs); librdmacm then matches the node GUID alone.
fn query_route(file: &Arc<UcmaFile>, c: &Query, out_len: usize) -> Result {
    let ctx = file.get(c.id)?;
    let (src, dst) = (ctx.id.src_addr(), ctx.id.dst_addr());
    let mut resp = QueryRouteResp {
        src_addr: sockaddr_out(src),
        dst_addr: sockaddr_out(dst),
        ibdev_index: u32::MAX,
        ..QueryRouteResp::default()
    };
    if let Some((dev, port)) = ctx.id.bound_device() {
        resp.node_guid = dev.node_guid().to_be_bytes();
        resp.port_num = port as u8;
        let path = &mut resp.ib_route[0];
        path.sgid = src.map_or([0; 16], |a| a.ip.to16());
        path.dgid = dst.map_or([0; 16], |a| a.ip.to16());
        path.pkey = 0xffffu16.to_be_bytes();
        if let Some(mtu) = ctx.id.route_mtu() {
            resp.num_paths = 1;
            path.mtu = mtu as u32;
            path.hop_limit = 64;
            path.numb_path = 1;
            path.reversible = 1;
            path.mtu_selector = 2;
            path.rate_selector = 2;
            path.packet_life_time_selector = 2;
            path.packet_life_time = 16;
        }
    }
    respond(c.response, out_len, &resp)
}

/// `INIT_QP_ATTR`: what moves the id's QP to the state asked for.
fn init_qp_attr(file: &Arc<UcmaFile>, c: &InitQpAttr, out_len: usize) -> Result {
    let ctx = file.get(c.id)?;
    let state = match c.qp_state {
        1 => QpState::Init,
        2 => QpState::Rtr,
        3 => QpState::Rts,
        _ => return Err(EINVAL),
    };
    let (a, mask) = ctx.id.init_qp_attr(state)?;
    let resp = QpAttr {
        qp_attr_mask: mask.0,
        qp_state: a.qp_state as u32,
        cur_qp_state: a.cur_qp_state as u32,
        path_mtu: a.path_mtu as u32,
        qkey: a.qkey,
        rq_psn: a.rq_psn,
        sq_psn: a.sq_psn,
        dest_qp_num: a.dest_qp_num,
        qp_access_flags: a.qp_access_flags.0,
        ah_attr: crate::handler::user_ah(&a.ah_attr),
        pkey_index: a.pkey_index,
        max_rd_atomic: a.max_rd_atomic,
        max_dest_rd_atomic: a.max_dest_rd_atomic,
        min_rnr_timer: a.min_rnr_timer,
        port_num: a.port_num as u8,
        timeout: a.timeout,
        retry_cnt: a.retry_cnt,
        rnr_retry: a.rnr_retry,
        ..QpAttr::default()
    };
    respond(c.response, out_len, &resp)
}

/// `MIGRATE_ID`, written to the file the id moves to: the id of handle
/// `id` on the file of descriptor `fd` moves here with its unread events,
/// and the events read so far are returned. `ENOENT` for a descriptor not
/// open, `EINVAL` for one that is not an rdma_cm file or an id not on it.
fn migrate_id(to: &Arc<UcmaFile>, c: &MigrateId, out_len: usize) -> Result {
    let ops = crate::file::OPS.get().ok_or(EINVAL)?;
    // A descriptor not open is ENOENT, as in C.
    let from = rdma::kshim::chardev::file_of_fd(c.fd as i32, &ops).map_err(|e| {
        if e == EBADF {
            ENOENT
        } else {
            e
        }
    })?;
    let ctx = from.get(c.id)?;
    if !Arc::ptr_eq(&from, to) {
        for lost in ctx.migrate(&from, to)? {
            lost.destroy();
        }
    }
    let resp = MigrateResp {
        events_reported: ctx.events_reported(),
    };
    respond(c.response, out_len, &resp)
}

/// `SET_OPTION`: of the id level, `REUSEADDR` and `AFONLY` are taken (an
/// `int` each; this rdma_cm neither reserves ports nor binds both
/// families, so neither changes anything), and `ACK_TIMEOUT` (a `u8`, the
/// QP's local ACK timeout); the type of service and IB paths are not
/// implemented (`ENOSYS`, as the C ucma answers an option it lacks).
fn set_option(file: &Arc<UcmaFile>, c: &SetOption) -> Result {
    let ctx = file.get(c.id)?;
    match (c.level, c.optname) {
        (OPTION_ID, OPTION_ID_ACK_TIMEOUT) => {
            if c.optlen != 1 {
                return Err(EINVAL);
            }
            let mut v = [0u8; 1];
            UserSlice::new(c.optval as usize, 1)
                .reader()
                .read_slice(&mut v)?;
            ctx.id.set_ack_timeout(v[0]);
            Ok(())
        }
        (OPTION_ID, OPTION_ID_REUSEADDR) | (OPTION_ID, OPTION_ID_AFONLY) => {
            if c.optlen != 4 {
                return Err(EINVAL);
            }
            let mut v = [0u8; 4];
            UserSlice::new(c.optval as usize, 4)
                .reader()
                .read_slice(&mut v)?;
            Ok(())
        }
        _ => Err(enosys()),
    }
}

/// `JOIN_IP_MCAST` and `JOIN_MCAST`: the id of handle `id` (a UD id with
/// a device: `EINVAL` otherwise) joins `group`, as a full member or a
/// send-only one (`join_flags`; another value is `EINVAL`); the join's
/// handle is the response, and its event (`MULTICAST_JOIN`) carries
/// `uid`. A response that cannot be written undoes the join.
fn join(
    file: &Arc<UcmaFile>,
    id: u32,
    uid: u64,
    group: KSockAddr,
    flags: u16,
    response: u64,
    out_len: usize,
) -> Result {
    let send_only = match flags {
        join_flags::FULLMEMBER => false,
        join_flags::SENDONLY_FULLMEMBER => true,
        _ => return Err(EINVAL),
    };
    let ctx = file.get(id)?;
    if ctx.id.bound_device().is_none() {
        return Err(EINVAL);
    }
    let mc = ctx.join(group.ip, send_only, uid)?;
    let resp = CreateIdResp { id: mc.handle };
    if let Err(e) = respond(response, out_len, &resp) {
        let _ = ctx.leave(mc.handle);
        return Err(e);
    }
    Ok(())
}

/// `LEAVE_MCAST`: the join of handle `c.id` ends (`ENOENT` if no join
/// has it, `EINVAL` if it is another file's, as in C); its unread events
/// go, and the count of those read is returned.
fn leave(file: &Arc<UcmaFile>, c: &DestroyId, out_len: usize) -> Result {
    let owner = crate::ctx::routes::mc_owner(c.id).ok_or(ENOENT)?;
    let ctx = file.get(owner)?;
    let mc = ctx.leave(c.id)?;
    let resp = DestroyIdResp {
        events_reported: mc.events_reported(),
    };
    respond(c.response, out_len, &resp)
}
