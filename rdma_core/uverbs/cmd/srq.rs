// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues: `CREATE_SRQ`, `MODIFY_SRQ`, `QUERY_SRQ`,
//! `DESTROY_SRQ`.
//!
//! A user SRQ is the core's SRQ with its WQEs in a ring user space maps
//! (`Srq::create_user`), at the offset the driver response gives (`struct
//! rxe_create_srq_resp`). `MODIFY_SRQ` arms the limit and resizes: a
//! new ring, whose offset and size go where the driver data (`struct
//! rxe_modify_srq_cmd`) points, with the posted WQEs moved into it.

use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::spec::uverbs::rxe::{Mminfo, RxeCreateSrqResp, RxeModifySrqCmd};
use rdma::spec::uverbs::srq_ah::{
    CreateSrq, CreateSrqResp, DestroySrq, DestroySrqResp, ModifySrq, QuerySrq, QuerySrqResp,
};
use rdma::spec::uverbs::{Request, WireStruct};
use rdma::verbs::srq::{Srq, SrqAttr};
use rdma::verbs::uring::UserRing;

use super::{core, need_driver_out, respond, respond_driver, write_user};
use crate::event_file::EventCount;
use crate::file::{UContext, UFile};
use crate::objects::{Obj, USrq};

/// `IB_SRQ_MAX_WR`.
const SRQ_MAX_WR: u32 = 1 << 0;
/// `IB_SRQ_LIMIT`.
const SRQ_LIMIT: u32 = 1 << 1;

pub(super) fn create_srq(file: &Arc<UFile>, ctx: &mut UContext, req: &Request<'_>) -> Result {
    let cmd: CreateSrq = core(req)?;
    need_driver_out::<RxeCreateSrqResp>(req)?;
    let pd = ctx.objects.pd(cmd.pd_handle).ok_or(EINVAL)?;
    let srq = Srq::create_user(
        pd.core(),
        &SrqAttr {
            max_wr: cmd.max_wr,
            max_sge: cmd.max_sge,
            srq_limit: cmd.srq_limit,
        },
    )?;
    let ring = srq.user_ring().ok_or(EINVAL)?;
    let attr = srq.query();
    let srqn = srq.num();
    let usrq = USrq {
        srq,
        user_handle: cmd.user_handle,
        async_count: EventCount::new()?,
        ring: ring.clone(),
    };
    let handle = ctx.objects.insert(Obj::Srq(usrq)).map_err(|(_obj, e)| e)?;
    let answered = (|| -> Result {
        let mi = Mminfo {
            offset: file.offer_mmap(&ring)?,
            size: ring.map_len() as u32,
            pad: 0,
        };
        respond(
            req,
            &CreateSrqResp {
                srq_handle: handle,
                max_wr: attr.max_wr,
                max_sge: attr.max_sge,
                srqn,
            },
        )?;
        respond_driver(
            req,
            &RxeCreateSrqResp {
                mi,
                srq_num: srqn,
                reserved: 0,
            },
        )
    })();
    if let Err(e) = answered {
        file.withdraw_mmap(&ring);
        drop(ctx.objects.take_if(handle, |_| true));
        return Err(e);
    }
    Ok(())
}

pub(super) fn modify_srq(file: &Arc<UFile>, ctx: &mut UContext, req: &Request<'_>) -> Result {
    let cmd: ModifySrq = core(req)?;
    let usrq = ctx.objects.srq_mut(cmd.srq_handle).ok_or(EINVAL)?;
    if cmd.attr_mask & !(SRQ_MAX_WR | SRQ_LIMIT) != 0 {
        return Err(EINVAL);
    }
    if cmd.attr_mask & SRQ_MAX_WR != 0 {
        resize_srq(file, usrq, &cmd, req)?;
    }
    if cmd.attr_mask & SRQ_LIMIT != 0 {
        usrq.srq.modify(None, Some(cmd.srq_limit))?;
    }
    Ok(())
}

/// `MODIFY_SRQ` of `max_wr`: a new ring, its offset and size written
/// where the driver data's `mmap_info_addr` points (before the swap, as
/// rxe does: a fault leaves the SRQ as it was), then the swap.
fn resize_srq(file: &Arc<UFile>, usrq: &mut USrq, cmd: &ModifySrq, req: &Request<'_>) -> Result {
    let drv = RxeModifySrqCmd::decode(req.driver_in).map_err(|_| EINVAL)?;
    let resize = usrq.srq.new_user_ring(cmd.max_wr)?;
    let ring = resize.ring().clone();
    let swapped = (|| -> Result<Arc<UserRing>> {
        let mi = Mminfo {
            offset: file.offer_mmap(&ring)?,
            size: ring.map_len() as u32,
            pad: 0,
        };
        write_user(drv.mmap_info_addr, &mi)?;
        usrq.srq.resize_user(resize)
    })();
    file.replace_ring(&mut usrq.ring, ring, swapped)
}

pub(super) fn query_srq(ctx: &UContext, req: &Request<'_>) -> Result {
    let cmd: QuerySrq = core(req)?;
    let usrq = ctx.objects.srq(cmd.srq_handle).ok_or(EINVAL)?;
    let a = usrq.srq.query();
    respond(
        req,
        &QuerySrqResp {
            max_wr: a.max_wr,
            max_sge: a.max_sge,
            srq_limit: a.srq_limit,
            reserved: 0,
        },
    )?;
    Ok(())
}

pub(super) fn destroy_srq(file: &Arc<UFile>, ctx: &mut UContext, req: &Request<'_>) -> Result {
    let cmd: DestroySrq = core(req)?;
    let Some(Obj::Srq(usrq)) = ctx
        .objects
        .take_if(cmd.srq_handle, |o| matches!(o, Obj::Srq(_)))
    else {
        return Err(EINVAL);
    };
    let USrq {
        srq,
        user_handle,
        async_count,
        ring,
    } = usrq;
    if let Err((srq, e)) = srq.destroy() {
        ctx.objects.put_back(
            cmd.srq_handle,
            Obj::Srq(USrq {
                srq,
                user_handle,
                async_count,
                ring,
            }),
        );
        return Err(e);
    }
    file.withdraw_mmap(&ring);
    ctx.async_events.forget(&async_count);
    respond(
        req,
        &DestroySrqResp {
            events_reported: async_count.get(),
        },
    )?;
    Ok(())
}
