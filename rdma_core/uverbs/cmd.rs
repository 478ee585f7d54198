// SPDX-License-Identifier: GPL-2.0

//! The commands, one file per kind of object, and the response writing
//! they share.
//!
//! - [`device`]: `GET_CONTEXT`, `QUERY_DEVICE` (legacy and extended),
//!   `QUERY_PORT`.
//! - [`pd_mr`]: `ALLOC_PD`, `DEALLOC_PD`, `REG_MR`, `DEREG_MR`,
//!   `ALLOC_MW`, `DEALLOC_MW`.
//! - [`cq`]: `CREATE_COMP_CHANNEL`, `CREATE_CQ` (legacy and extended),
//!   `REQ_NOTIFY_CQ`, `DESTROY_CQ`.
//! - [`qp`]: `CREATE_QP`, `MODIFY_QP`, `QUERY_QP`, `DESTROY_QP`,
//!   `POST_SEND` (the doorbell), `CREATE_AH`, `DESTROY_AH`,
//!   `ATTACH_MCAST`, `DETACH_MCAST`.
//! - [`srq`]: `CREATE_SRQ`, `MODIFY_SRQ`, `QUERY_SRQ`, `DESTROY_SRQ`.
//!
//! Every other command of the table fails with `EOPNOTSUPP` (not built
//! yet: Documentation/uverbs.rst). Every command but `GET_CONTEXT` needs a
//! context (`EINVAL` without, as in C).

use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::uaccess::UserSlice;
use rdma::kshim::errno::eopnotsupp;

use rdma::spec::uverbs::cmd::Cmd;
use rdma::spec::uverbs::framing::UserOut;
use rdma::spec::uverbs::{Request, WireStruct};

use rdma::verbs::qp::QpCore;

use crate::file::{FileState, UFile};

mod cq;
mod device;
mod pd_mr;
mod qp;
mod srq;

/// What is left of a command once the file's lock is released.
pub(crate) enum Then {
    /// Nothing.
    Done,
    /// `POST_SEND`: wait for the QP's send run (`QpCore::wait_doorbell`).
    /// Not under the file's lock: the run raises events that take it.
    WaitSends(Arc<QpCore>),
}

/// Runs the command of `req` on `file`, whose lock the caller holds.
pub(crate) fn run(file: &Arc<UFile>, st: &mut FileState, req: &Request<'_>) -> Result<Then> {
    if req.spec.cmd == Cmd::GetContext {
        return device::get_context(file, st, req).map(|()| Then::Done);
    }
    let ctx = st.ctx.as_mut().ok_or(EINVAL)?;
    if req.spec.cmd == Cmd::PostSend {
        return qp::post_send(ctx, req).map(Then::WaitSends);
    }
    let dev = &file.udev.dev;
    let done = match req.spec.cmd {
        Cmd::QueryDevice => device::query_device(dev, req),
        Cmd::ExQueryDevice => device::ex_query_device(dev, req),
        Cmd::QueryPort => device::query_port(dev, req),
        Cmd::CreateCompChannel => cq::create_comp_channel(file, &mut ctx.channels, req),
        Cmd::CreateCq | Cmd::ExCreateCq => cq::create_cq(file, ctx, req),
        Cmd::ReqNotifyCq => cq::req_notify_cq(&ctx.objects, req),
        Cmd::ResizeCq => cq::resize_cq(file, &mut ctx.objects, req),
        Cmd::DestroyCq => cq::destroy_cq(file, ctx, req),
        Cmd::CreateQp | Cmd::ExCreateQp => qp::create_qp(file, ctx, req),
        Cmd::ModifyQp => qp::modify_qp(ctx, req),
        Cmd::QueryQp => qp::query_qp(ctx, req),
        Cmd::DestroyQp => qp::destroy_qp(file, ctx, req),
        Cmd::CreateAh => qp::create_ah(ctx, req),
        Cmd::DestroyAh => qp::destroy_ah(ctx, req),
        Cmd::AttachMcast => qp::mcast(ctx, req, true),
        Cmd::DetachMcast => qp::mcast(ctx, req, false),
        Cmd::CreateSrq => srq::create_srq(file, ctx, req),
        Cmd::ModifySrq => srq::modify_srq(file, ctx, req),
        Cmd::QuerySrq => srq::query_srq(ctx, req),
        Cmd::DestroySrq => srq::destroy_srq(file, ctx, req),
        Cmd::AllocPd => pd_mr::alloc_pd(dev, &mut ctx.objects, req),
        Cmd::DeallocPd => pd_mr::dealloc_pd(&mut ctx.objects, req),
        Cmd::RegMr => pd_mr::reg_mr(&mut ctx.objects, req),
        Cmd::DeregMr => pd_mr::dereg_mr(&mut ctx.objects, req),
        Cmd::AllocMw => pd_mr::alloc_mw(&mut ctx.objects, req),
        Cmd::DeallocMw => pd_mr::dealloc_mw(&mut ctx.objects, req),
        _ => Err(eopnotsupp()),
    };
    done.map(|()| Then::Done)
}

/// Decodes the core request as `T` (errors as the C uverbs gives them).
fn core<T: WireStruct>(req: &Request<'_>) -> Result<T> {
    req.core::<T>().map_err(crate::dispatch::abi_err)
}

/// Fails with `EINVAL` unless the command gave room for a driver
/// response `T` (checked before anything is made, as rxe checks).
fn need_driver_out<T: WireStruct>(req: &Request<'_>) -> Result<UserOut> {
    match req.driver_out {
        Some(out) if out.len >= T::SIZE => Ok(out),
        _ => Err(EINVAL),
    }
}

/// Writes the driver response `resp` (room checked by
/// [`need_driver_out`]).
fn respond_driver<T: WireStruct>(req: &Request<'_>, resp: &T) -> Result {
    let out = need_driver_out::<T>(req)?;
    write_user(out.addr, resp)
}

/// Writes the driver structure `v` (at most 64 bytes) at the user address
/// `addr`.
fn write_user<T: WireStruct>(addr: u64, v: &T) -> Result {
    let mut bytes = [0u8; 64];
    let area = bytes.get_mut(..T::SIZE).ok_or(EINVAL)?;
    v.encode(area).map_err(crate::dispatch::abi_err)?;
    UserSlice::new(addr as usize, T::SIZE)
        .writer()
        .write_slice(area)?;
    Ok(())
}

/// Writes `resp` to the command's response area: for a legacy command
/// the structure, cut to the area; for an extended one the structure then
/// zeros to the area's end. Returns the bytes of the structure written.
fn respond<T: WireStruct>(req: &Request<'_>, resp: &T) -> Result<usize> {
    let Some(UserOut { addr, len }) = req.core_out else {
        return Ok(0);
    };
    let mut bytes = [0u8; 512];
    let n = T::SIZE.min(len);
    let Some(area) = bytes.get_mut(..T::SIZE) else {
        // Not reached: every response of the ABI is shorter.
        return Err(EINVAL);
    };
    resp.encode(area).map_err(crate::dispatch::abi_err)?;
    let mut w = UserSlice::new(addr as usize, len).writer();
    w.write_slice(&bytes[..n])?;
    if req.spec.extended {
        let zeros = [0u8; 512];
        let mut left = len - n;
        while left > 0 {
            let k = left.min(zeros.len());
            w.write_slice(&zeros[..k])?;
            left -= k;
        }
    }
    Ok(n)
}
