// SPDX-License-Identifier: GPL-2.0

//! `ALLOC_PD`, `DEALLOC_PD`, `REG_MR`, `DEREG_MR`, `ALLOC_MW`,
//! `DEALLOC_MW`.
//!
//! An object is made, stored under a new handle, and the response
//! written; if the response cannot be written the object is destroyed
//! again, so user space never holds a handle it was not told of.
//! Destroying takes the object out of the table and gives it back if the
//! core refuses (`EBUSY`: a PD with users; `EINVAL`: an MR with windows
//! bound).
//!
//! A memory window is allocated unbound (type 1 or 2, anything else
//! `EINVAL` as in C); user space binds it with a `BIND_MW` entry on a send
//! ring (`ibv_bind_mw` for type 1, `IBV_WR_BIND_MW` for type 2), which
//! names it by its rkey. Deallocating a bound window unbinds it: the
//! memory it opened is no longer reachable through its key.

use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::prelude::{Device, Mr, Pd};
use rdma::spec::opcodes::Access;
use rdma::spec::uverbs::pd_mr::{
    AllocMw, AllocMwResp, AllocPd, AllocPdResp, DeallocMw, DeallocPd, DeregMr, RegMr, RegMrResp,
};
use rdma::spec::uverbs::Request;
use rdma::verbs::mw::{Mw, MwType};
use rdma::verbs::umem::UserMrFlags;

use super::{core, respond};
use crate::objects::{Obj, Objects};

/// `IB_ACCESS_OPTIONAL`: access bits a device may ignore (relaxed
/// ordering and its kin); none of them means anything to this stack.
const ACCESS_OPTIONAL: u32 = 0x3ff0_0000;

/// Stores `obj`, answers with its handle through `resp`, and undoes the
/// store if the answer cannot be written.
fn store_and_answer(objs: &mut Objects, obj: Obj, answer: impl FnOnce(u32) -> Result) -> Result {
    let handle = objs.insert(obj).map_err(|(_obj, e)| e)?;
    if let Err(e) = answer(handle) {
        // The object goes with its handle: dropping the owner handle
        // destroys it.
        drop(objs.take_if(handle, |_| true));
        return Err(e);
    }
    Ok(())
}

pub(super) fn alloc_pd(dev: &Arc<Device>, objs: &mut Objects, req: &Request<'_>) -> Result {
    let _: AllocPd = core(req)?;
    let pd = Pd::alloc(dev)?;
    store_and_answer(objs, Obj::Pd(pd), |h| {
        respond(req, &AllocPdResp { pd_handle: h }).map(|_| ())
    })
}

pub(super) fn dealloc_pd(objs: &mut Objects, req: &Request<'_>) -> Result {
    let cmd: DeallocPd = core(req)?;
    let Some(Obj::Pd(pd)) = objs.take_if(cmd.pd_handle, |o| matches!(o, Obj::Pd(_))) else {
        return Err(EINVAL);
    };
    pd.destroy().map_err(|(pd, e)| {
        objs.put_back(cmd.pd_handle, Obj::Pd(pd));
        e
    })
}

pub(super) fn reg_mr(objs: &mut Objects, req: &Request<'_>) -> Result {
    let cmd: RegMr = core(req)?;
    let access = Access(cmd.access_flags & !ACCESS_OPTIONAL);
    let pd = objs.pd(cmd.pd_handle).ok_or(EINVAL)?;
    // `hca_va` is the region's I/O address (`ibv_reg_mr_iova`; plain
    // `ibv_reg_mr` gives the buffer's own).
    let mr = Mr::reg_user_at(
        pd.core(),
        cmd.start,
        cmd.length,
        cmd.hca_va,
        access,
        UserMrFlags::ALLOW_PEER,
    )?;
    let (lkey, rkey) = (mr.lkey(), mr.rkey());
    store_and_answer(objs, Obj::Mr(mr), |h| {
        respond(
            req,
            &RegMrResp {
                mr_handle: h,
                lkey,
                rkey,
            },
        )
        .map(|_| ())
    })
}

pub(super) fn dereg_mr(objs: &mut Objects, req: &Request<'_>) -> Result {
    let cmd: DeregMr = core(req)?;
    let Some(Obj::Mr(mr)) = objs.take_if(cmd.mr_handle, |o| matches!(o, Obj::Mr(_))) else {
        return Err(EINVAL);
    };
    mr.dereg().map_err(|(mr, e)| {
        objs.put_back(cmd.mr_handle, Obj::Mr(mr));
        e
    })
}

pub(super) fn alloc_mw(objs: &mut Objects, req: &Request<'_>) -> Result {
    let cmd: AllocMw = core(req)?;
    let mw_type = match cmd.mw_type {
        1 => MwType::Type1,
        2 => MwType::Type2,
        _ => return Err(EINVAL),
    };
    let pd = objs.pd(cmd.pd_handle).ok_or(EINVAL)?;
    let mw = Mw::alloc(pd.core(), mw_type)?;
    let rkey = mw.rkey();
    store_and_answer(objs, Obj::Mw(mw), |h| {
        respond(req, &AllocMwResp { mw_handle: h, rkey }).map(|_| ())
    })
}

pub(super) fn dealloc_mw(objs: &mut Objects, req: &Request<'_>) -> Result {
    let cmd: DeallocMw = core(req)?;
    let Some(Obj::Mw(mw)) = objs.take_if(cmd.mw_handle, |o| matches!(o, Obj::Mw(_))) else {
        return Err(EINVAL);
    };
    mw.dealloc();
    Ok(())
}
