// SPDX-License-Identifier: GPL-2.0

//! Queue pairs and address handles: `CREATE_QP`, `MODIFY_QP`, `QUERY_QP`,
//! `DESTROY_QP`, `POST_SEND` (the doorbell), `CREATE_AH`, `DESTROY_AH`,
//! `ATTACH_MCAST`, `DETACH_MCAST`.
//!
//! A user QP is the core's QP with its queues in rings user space maps
//! (`Qp::create_user`): the driver response of `CREATE_QP` (`struct
//! rxe_create_qp_resp`) gives their offsets and sizes. librxe writes send
//! entries to its ring and writes a `POST_SEND` with no work request as
//! the doorbell; receives it posts with no system call at all. A `POST_SEND`
//! carrying work requests (the generic path, which librxe never takes) is
//! refused with `EINVAL`.
//!
//! Addresses: over RoCE a path needs its GRH (`is_global`, else `EINVAL`,
//! as the C core's `rdma_check_ah_attr`); rxe sends through the IP stack,
//! which finds the next hop's MAC, so none is resolved here. An AH is
//! named in UD send entries by the number `CREATE_AH` returns in its driver
//! response (`rxe_create_ah_resp.ah_num`, never zero), which only finds
//! AHs of the QP's own PD.
//!
//! `CREATE_QP` comes in its legacy and extended forms (`ibv_create_qp_ex`,
//! for the `ibv_wr_*` API: librxe writes the same entries to the ring);
//! the extended one's creation flags and indirection tables are refused
//! (`EOPNOTSUPP`), as rxe refuses them.
//!
//! Memory windows are bound by BIND_MW entries of the send ring
//! (`pd_mr.rs` allocates them).
//!
//! `ATTACH_MCAST`/`DETACH_MCAST` join and leave a multicast group: UD QPs
//! and multicast GIDs only (`EINVAL` otherwise, and for a group the QP is
//! not in), as the core's `attach_mcast` decides; the LID is not used
//! over RoCE.

use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::kshim::errno::eopnotsupp;
use rdma::prelude::{Qp, QpAttr, QpCap, QpInitAttr, QpState, QpType};
use rdma::spec::attr::{Gid, Mtu};
use rdma::spec::opcodes::Access;
use rdma::spec::qp_state::AttrMask;
use rdma::spec::uverbs::cmd::Cmd;
use rdma::spec::uverbs::qp::{
    AttachMcast, CreateQp, CreateQpResp, DestroyQp, DestroyQpResp, ExCreateQp, ExCreateQpResp,
    ModifyQp, PostSend, PostSendResp, QpDest, QueryQp, QueryQpResp, EX_CREATE_QP_CREATE_FLAGS,
    EX_CREATE_QP_IND_TABLE,
};
use rdma::spec::uverbs::rxe::{Mminfo, RxeCreateAhResp, RxeCreateQpResp};
use rdma::spec::uverbs::srq_ah::{AhAttr as UAhAttr, CreateAh, CreateAhResp, DestroyAh};
use rdma::spec::uverbs::{Request, Wire};
use rdma::verbs::ah::{Ah, AhAttr, GlobalRoute};
use rdma::verbs::qp::QpCore;
use rdma::verbs::uring::UserRing;

use super::{core, need_driver_out, respond, respond_driver};
use crate::event_file::EventCount;
use crate::file::{UContext, UFile};
use crate::objects::{Obj, UQp};

fn mminfo(file: &UFile, ring: &Arc<UserRing>) -> Result<Mminfo> {
    Ok(Mminfo {
        offset: file.offer_mmap(ring)?,
        size: ring.map_len() as u32,
        pad: 0,
    })
}

/// `CREATE_QP` in either form, as the legacy request reads.
fn create_request(req: &Request<'_>) -> Result<CreateQp> {
    if req.spec.cmd != Cmd::ExCreateQp {
        return core(req);
    }
    let ex: ExCreateQp = core(req)?;
    if ex.comp_mask & !(EX_CREATE_QP_IND_TABLE | EX_CREATE_QP_CREATE_FLAGS) != 0 {
        return Err(EINVAL);
    }
    // No receive work queues, no creation flags (rxe takes none).
    if ex.comp_mask & EX_CREATE_QP_IND_TABLE != 0 || ex.create_flags != 0 {
        return Err(eopnotsupp());
    }
    Ok(CreateQp {
        response: 0,
        user_handle: ex.user_handle,
        pd_handle: ex.pd_handle,
        send_cq_handle: ex.send_cq_handle,
        recv_cq_handle: ex.recv_cq_handle,
        srq_handle: ex.srq_handle,
        max_send_wr: ex.max_send_wr,
        max_recv_wr: ex.max_recv_wr,
        max_send_sge: ex.max_send_sge,
        max_recv_sge: ex.max_recv_sge,
        max_inline_data: ex.max_inline_data,
        sq_sig_all: ex.sq_sig_all,
        qp_type: ex.qp_type,
        is_srq: ex.is_srq,
        reserved: 0,
    })
}

pub(super) fn create_qp(file: &Arc<UFile>, ctx: &mut UContext, req: &Request<'_>) -> Result {
    let cmd = create_request(req)?;
    need_driver_out::<RxeCreateQpResp>(req)?;
    let qp_type = match cmd.qp_type {
        2 => QpType::Rc,
        3 => QpType::Uc,
        4 => QpType::Ud,
        // Raw packet, XRC and the rest: rxe has no such QPs.
        _ => return Err(eopnotsupp()),
    };
    let objs = &ctx.objects;
    let srq = if cmd.is_srq != 0 {
        Some(objs.srq(cmd.srq_handle).ok_or(EINVAL)?.srq.core())
    } else {
        None
    };
    let pd = objs.pd(cmd.pd_handle).ok_or(EINVAL)?;
    let send_cq = objs.cq(cmd.send_cq_handle).ok_or(EINVAL)?;
    let recv_cq = objs.cq(cmd.recv_cq_handle).ok_or(EINVAL)?;
    let init = QpInitAttr {
        qp_type,
        send_cq: send_cq.cq.core(),
        recv_cq: recv_cq.cq.core(),
        srq,
        cap: QpCap {
            max_send_wr: cmd.max_send_wr,
            max_recv_wr: cmd.max_recv_wr,
            max_send_sge: cmd.max_send_sge,
            max_recv_sge: cmd.max_recv_sge,
            max_inline_data: cmd.max_inline_data,
        },
        sq_sig_all: cmd.sq_sig_all != 0,
        port_num: 0,
    };
    let qp = Qp::create_user(pd.core(), &init)?;
    let rings = qp.user_rings().ok_or(EINVAL)?;
    let cap = qp.cap();
    let qpn = qp.qpn();
    let uqp = UQp {
        qp,
        user_handle: cmd.user_handle,
        async_count: EventCount::new()?,
        sq_ring: rings.sq.clone(),
        rq_ring: rings.rq.clone(),
    };
    let handle = ctx.objects.insert(Obj::Qp(uqp)).map_err(|(_obj, e)| e)?;
    let answered = (|| -> Result {
        let sq_mi = mminfo(file, &rings.sq)?;
        let rq_mi = match &rings.rq {
            Some(r) => mminfo(file, r)?,
            None => Mminfo::default(),
        };
        let base = CreateQpResp {
            qp_handle: handle,
            qpn,
            max_send_wr: cap.max_send_wr,
            max_recv_wr: cap.max_recv_wr,
            max_send_sge: cap.max_send_sge,
            max_recv_sge: cap.max_recv_sge,
            max_inline_data: cap.max_inline_data,
            reserved: 0,
        };
        if req.spec.cmd == Cmd::ExCreateQp {
            let len = req.core_out.map_or(0, |o| o.len.min(ExCreateQpResp::SIZE));
            respond(
                req,
                &ExCreateQpResp {
                    base,
                    comp_mask: 0,
                    response_length: len as u32,
                },
            )?;
        } else {
            respond(req, &base)?;
        }
        respond_driver(req, &RxeCreateQpResp { rq_mi, sq_mi })
    })();
    if let Err(e) = answered {
        file.withdraw_mmap(&rings.sq);
        if let Some(r) = &rings.rq {
            file.withdraw_mmap(r);
        }
        drop(ctx.objects.take_if(handle, |_| true));
        return Err(e);
    }
    Ok(())
}

/// The core's address for a path of `MODIFY_QP` (or an AH): RoCE needs
/// the GRH.
fn path(d: &QpDest) -> Result<AhAttr> {
    if d.is_global == 0 {
        return Err(EINVAL);
    }
    Ok(AhAttr {
        port_num: u32::from(d.port_num),
        sl: d.sl,
        static_rate: d.static_rate,
        grh: GlobalRoute {
            dgid: Gid(d.dgid),
            flow_label: d.flow_label,
            sgid_index: d.sgid_index,
            hop_limit: d.hop_limit,
            traffic_class: d.traffic_class,
        },
        dmac: [0; 6],
    })
}

/// The `IB_QP_*` bits of `MODIFY_QP` (through `IB_QP_DEST_QPN`); others
/// are refused with `EINVAL`, as are the alternate path and path
/// migration, which RoCE rxe has no use for.
const KNOWN_MASK: u32 = (1 << 21) - 1;

pub(super) fn modify_qp(ctx: &mut UContext, req: &Request<'_>) -> Result {
    let cmd: ModifyQp = core(req)?;
    if cmd.attr_mask & !KNOWN_MASK != 0 {
        return Err(EINVAL);
    }
    let uqp = ctx.objects.qp(cmd.qp_handle).ok_or(EINVAL)?;
    let mask = AttrMask(cmd.attr_mask);
    let state = |raw: u8| QpState::from_raw(u32::from(raw)).ok_or(EINVAL);
    let mut attr = QpAttr::default();
    if mask.contains(AttrMask::STATE) {
        attr.qp_state = state(cmd.qp_state)?;
    }
    if mask.contains(AttrMask::CUR_STATE) {
        attr.cur_qp_state = state(cmd.cur_qp_state)?;
    }
    if mask.contains(AttrMask::PATH_MTU) {
        attr.path_mtu = Mtu::from_raw(u32::from(cmd.path_mtu)).ok_or(EINVAL)?;
    }
    if mask.contains(AttrMask::AV) {
        attr.ah_attr = path(&cmd.dest)?;
    }
    if mask.contains(AttrMask::ALT_PATH) || mask.contains(AttrMask::PATH_MIG_STATE) {
        return Err(EINVAL);
    }
    attr.qkey = cmd.qkey;
    attr.rq_psn = cmd.rq_psn;
    attr.sq_psn = cmd.sq_psn;
    attr.dest_qp_num = cmd.dest_qp_num;
    attr.qp_access_flags = Access(cmd.qp_access_flags);
    attr.pkey_index = cmd.pkey_index;
    attr.en_sqd_async_notify = cmd.en_sqd_async_notify != 0;
    attr.max_rd_atomic = cmd.max_rd_atomic;
    attr.max_dest_rd_atomic = cmd.max_dest_rd_atomic;
    attr.min_rnr_timer = cmd.min_rnr_timer;
    attr.port_num = u32::from(cmd.port_num);
    attr.timeout = cmd.timeout;
    attr.retry_cnt = cmd.retry_cnt;
    attr.rnr_retry = cmd.rnr_retry;
    uqp.qp.modify(&attr, mask)
}

fn dest(a: &AhAttr) -> QpDest {
    let g = &a.grh;
    QpDest {
        dgid: g.dgid.0,
        flow_label: g.flow_label,
        dlid: 0,
        reserved: 0,
        sgid_index: g.sgid_index,
        hop_limit: g.hop_limit,
        traffic_class: g.traffic_class,
        sl: a.sl,
        src_path_bits: 0,
        static_rate: a.static_rate,
        is_global: u8::from(g.dgid.0 != [0; 16]),
        port_num: a.port_num as u8,
    }
}

pub(super) fn query_qp(ctx: &UContext, req: &Request<'_>) -> Result {
    let cmd: QueryQp = core(req)?;
    let uqp = ctx.objects.qp(cmd.qp_handle).ok_or(EINVAL)?;
    let a = uqp.qp.query()?;
    let cap = uqp.qp.cap();
    let resp = QueryQpResp {
        dest: dest(&a.ah_attr),
        alt_dest: QpDest::default(),
        max_send_wr: cap.max_send_wr,
        max_recv_wr: cap.max_recv_wr,
        max_send_sge: cap.max_send_sge,
        max_recv_sge: cap.max_recv_sge,
        max_inline_data: cap.max_inline_data,
        qkey: a.qkey,
        rq_psn: a.rq_psn,
        sq_psn: a.sq_psn,
        dest_qp_num: a.dest_qp_num,
        qp_access_flags: a.qp_access_flags.0,
        pkey_index: a.pkey_index,
        alt_pkey_index: 0,
        qp_state: a.qp_state as u8,
        cur_qp_state: a.cur_qp_state as u8,
        path_mtu: a.path_mtu as u8,
        path_mig_state: 0,
        sq_draining: u8::from(a.sq_draining),
        max_rd_atomic: a.max_rd_atomic,
        max_dest_rd_atomic: a.max_dest_rd_atomic,
        min_rnr_timer: a.min_rnr_timer,
        port_num: a.port_num as u8,
        timeout: a.timeout,
        retry_cnt: a.retry_cnt,
        rnr_retry: a.rnr_retry,
        alt_port_num: 0,
        alt_timeout: 0,
        sq_sig_all: 0,
        reserved: [0; 5],
    };
    respond(req, &resp)?;
    Ok(())
}

pub(super) fn destroy_qp(file: &Arc<UFile>, ctx: &mut UContext, req: &Request<'_>) -> Result {
    let cmd: DestroyQp = core(req)?;
    let Some(Obj::Qp(uqp)) = ctx
        .objects
        .take_if(cmd.qp_handle, |o| matches!(o, Obj::Qp(_)))
    else {
        return Err(EINVAL);
    };
    let UQp {
        qp,
        user_handle,
        async_count,
        sq_ring,
        rq_ring,
    } = uqp;
    if let Err((qp, e)) = qp.destroy() {
        ctx.objects.put_back(
            cmd.qp_handle,
            Obj::Qp(UQp {
                qp,
                user_handle,
                async_count,
                sq_ring,
                rq_ring,
            }),
        );
        return Err(e);
    }
    file.withdraw_mmap(&sq_ring);
    if let Some(r) = &rq_ring {
        file.withdraw_mmap(r);
    }
    ctx.async_events.forget(&async_count);
    respond(
        req,
        &DestroyQpResp {
            events_reported: async_count.get(),
        },
    )?;
    Ok(())
}

/// `POST_SEND`: with no work request, the doorbell of a user QP.
/// The doorbell; returns the QP, whose send run the dispatcher waits for
/// once the file's lock is released.
pub(super) fn post_send(ctx: &UContext, req: &Request<'_>) -> Result<Arc<QpCore>> {
    let cmd: PostSend = req.core_head().map_err(crate::dispatch::abi_err)?;
    if cmd.wr_count != 0 || cmd.sge_count != 0 {
        return Err(EINVAL);
    }
    let uqp = ctx.objects.qp(cmd.qp_handle).ok_or(EINVAL)?;
    uqp.qp.doorbell()?;
    respond(req, &PostSendResp { bad_wr: 0 })?;
    Ok((*uqp.qp).clone())
}

fn ah_attr(a: &UAhAttr) -> Result<AhAttr> {
    if a.is_global == 0 {
        return Err(EINVAL);
    }
    Ok(AhAttr {
        port_num: u32::from(a.port_num),
        sl: a.sl,
        static_rate: a.static_rate,
        grh: GlobalRoute {
            dgid: Gid(a.grh.dgid),
            flow_label: a.grh.flow_label,
            sgid_index: a.grh.sgid_index,
            hop_limit: a.grh.hop_limit,
            traffic_class: a.grh.traffic_class,
        },
        dmac: [0; 6],
    })
}

pub(super) fn create_ah(ctx: &mut UContext, req: &Request<'_>) -> Result {
    let cmd: CreateAh = core(req)?;
    need_driver_out::<RxeCreateAhResp>(req)?;
    let pd = ctx.objects.pd(cmd.pd_handle).ok_or(EINVAL)?;
    let ah = Ah::create(pd.core(), &ah_attr(&cmd.attr)?)?;
    // Never zero: librxe takes 0 for "no AH number".
    let ah_num = ah.num() + 1;
    let handle = ctx.objects.insert(Obj::Ah(ah)).map_err(|(_obj, e)| e)?;
    let answered = respond(req, &CreateAhResp { ah_handle: handle }).and_then(|_| {
        respond_driver(
            req,
            &RxeCreateAhResp {
                ah_num,
                reserved: 0,
            },
        )
    });
    if let Err(e) = answered {
        drop(ctx.objects.take_if(handle, |_| true));
        return Err(e);
    }
    Ok(())
}

pub(super) fn destroy_ah(ctx: &mut UContext, req: &Request<'_>) -> Result {
    let cmd: DestroyAh = core(req)?;
    let Some(Obj::Ah(ah)) = ctx
        .objects
        .take_if(cmd.ah_handle, |o| matches!(o, Obj::Ah(_)))
    else {
        return Err(EINVAL);
    };
    ah.destroy().map_err(|(ah, e)| {
        ctx.objects.put_back(cmd.ah_handle, Obj::Ah(ah));
        e
    })
}

/// `ATTACH_MCAST` (`attach`) or `DETACH_MCAST`.
pub(super) fn mcast(ctx: &UContext, req: &Request<'_>, attach: bool) -> Result {
    let cmd: AttachMcast = core(req)?;
    let uqp = ctx.objects.qp(cmd.qp_handle).ok_or(EINVAL)?;
    let gid = Gid(cmd.gid);
    if attach {
        uqp.qp.core().attach_mcast(&gid)
    } else {
        uqp.qp.core().detach_mcast(&gid)
    }
}
