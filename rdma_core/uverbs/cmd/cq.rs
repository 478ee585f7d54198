// SPDX-License-Identifier: GPL-2.0

//! Completion queues and their channels: `CREATE_COMP_CHANNEL`,
//! `CREATE_CQ` (legacy and extended), `REQ_NOTIFY_CQ`, `RESIZE_CQ`,
//! `DESTROY_CQ`.
//!
//! A user CQ is the core's CQ with its completions written to a ring user
//! space maps (`rdma::verbs::uring`), at the offset the driver response
//! gives (`struct rxe_create_cq_resp`): librxe polls it with no system
//! call. Armed with `REQ_NOTIFY_CQ`, the CQ's next (or next solicited)
//! completion queues one event on the CQ's channel.
//!
//! `RESIZE_CQ` makes a new ring, offers it for mapping (`struct
//! rxe_resize_cq_resp`), writes both responses, and only then has the core
//! swap it in with the completions not consumed yet: librxe unmaps the old
//! ring and maps the new one. A failure at any step (`EINVAL` when the
//! waiting completions do not fit, `EFAULT` for a response) withdraws the
//! new ring and leaves the CQ with its old one; a success withdraws the
//! old ring's offer, if it was never mapped. Locks: the file's state
//! lock (held by the caller), then its mmap table's or the CQ's ring
//! lock, one at a time.
//!
//! Not built: the extended creation flags, which rxe refuses too.

use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::sync::Arc;
use rdma::kshim::errno::eopnotsupp;

use rdma::prelude::Cq;
use rdma::spec::opcodes::NotifyFlags;
use rdma::spec::uverbs::cmd::Cmd;
use rdma::spec::uverbs::cq::{
    CreateCompChannel, CreateCompChannelResp, CreateCq, CreateCqResp, DestroyCq, DestroyCqResp,
    ExCreateCq, ExCreateCqResp, ReqNotifyCq, ResizeCq, ResizeCqResp,
};
use rdma::spec::uverbs::rxe::{Mminfo, RxeCreateCqResp, RxeResizeCqResp};
use rdma::spec::uverbs::{Request, Wire};
use rdma::verbs::cq::{CompHandler, CqCore};

use super::{core, need_driver_out, respond, respond_driver};
use crate::event_file::{EventCount, EventQueue};
use crate::file::{UContext, UFile};
use crate::objects::{Obj, Objects, UCq};

/// Makes a completion channel: an event file of 8-byte records, whose
/// descriptor is installed once the response is written. The context
/// keeps the channel (to close it with the context) until its file is
/// released.
pub(super) fn create_comp_channel(
    file: &Arc<UFile>,
    channels: &mut KVec<(i32, Arc<EventQueue>)>,
    req: &Request<'_>,
) -> Result {
    let _: CreateCompChannel = core(req)?;
    rdma::kshim::vec::retain(channels, |(_, ch)| !ch.is_released());
    channels.reserve(1, GFP_KERNEL)?;
    let queue = EventQueue::new_comp()?;
    let afile = queue.new_file(file.udev.module)?;
    let fd = afile.fd();
    respond(req, &CreateCompChannelResp { fd: fd as u32 })?;
    channels.push((fd, queue), GFP_KERNEL)?;
    afile.install();
    Ok(())
}

/// The channel a create command names by its descriptor: one made in this
/// context and not released. (Matched by number: a channel's descriptor
/// duplicated elsewhere and closed here is not found.)
fn channel(ctx: &UContext, fd: i32) -> Result<Option<Arc<EventQueue>>> {
    if fd < 0 {
        return Ok(None);
    }
    ctx.channels
        .iter()
        .find(|(n, ch)| *n == fd && !ch.is_released())
        .map(|(_, ch)| Some(ch.clone()))
        .ok_or(EINVAL)
}

/// Queues a completion event on the CQ's channel when the armed CQ
/// completes.
struct ChannelHandler {
    channel: Arc<EventQueue>,
    user_handle: u64,
    count: Arc<EventCount>,
}

impl CompHandler for ChannelHandler {
    fn completion(&self, _cq: &CqCore) {
        self.channel.push_comp(self.user_handle, &self.count);
    }
}

/// The request of either form of `CREATE_CQ`.
struct CqRequest {
    user_handle: u64,
    cqe: u32,
    comp_vector: u32,
    comp_channel: i32,
}

pub(super) fn create_cq(file: &Arc<UFile>, ctx: &mut UContext, req: &Request<'_>) -> Result {
    let r = if req.spec.cmd == Cmd::ExCreateCq {
        let cmd: ExCreateCq = core(req)?;
        if cmd.comp_mask != 0 {
            return Err(EINVAL);
        }
        if cmd.flags != 0 {
            return Err(eopnotsupp());
        }
        CqRequest {
            user_handle: cmd.user_handle,
            cqe: cmd.cqe,
            comp_vector: cmd.comp_vector,
            comp_channel: cmd.comp_channel,
        }
    } else {
        let cmd: CreateCq = core(req)?;
        CqRequest {
            user_handle: cmd.user_handle,
            cqe: cmd.cqe,
            comp_vector: cmd.comp_vector,
            comp_channel: cmd.comp_channel,
        }
    };
    // One completion vector (GET_CONTEXT says so).
    if r.comp_vector != 0 {
        return Err(EINVAL);
    }
    need_driver_out::<RxeCreateCqResp>(req)?;
    let channel = channel(ctx, r.comp_channel)?;
    let comp_count = EventCount::new()?;
    let handler: Option<Arc<dyn CompHandler>> = match &channel {
        Some(ch) => Some(Arc::new(
            ChannelHandler {
                channel: ch.clone(),
                user_handle: r.user_handle,
                count: comp_count.clone(),
            },
            GFP_KERNEL,
        )?),
        None => None,
    };
    let cq = Cq::create_user(&file.udev.dev, r.cqe, handler)?;
    let ring = cq.user_ring().ok_or(EINVAL)?;
    let offset = file.offer_mmap(&ring)?;
    let ucq = UCq {
        cq,
        user_handle: r.user_handle,
        ring: ring.clone(),
        channel,
        comp_count,
        async_count: EventCount::new()?,
    };
    let handle = match ctx.objects.insert(Obj::Cq(ucq)) {
        Ok(h) => h,
        Err((obj, e)) => {
            file.withdraw_mmap(&ring);
            drop(obj);
            return Err(e);
        }
    };
    let answered = answer_create(req, handle, r.cqe).and_then(|()| {
        respond_driver(
            req,
            &RxeCreateCqResp {
                mi: Mminfo {
                    offset,
                    size: ring.map_len() as u32,
                    pad: 0,
                },
            },
        )
    });
    if let Err(e) = answered {
        file.withdraw_mmap(&ring);
        drop(ctx.objects.take_if(handle, |_| true));
        return Err(e);
    }
    Ok(())
}

/// The core response of either form.
fn answer_create(req: &Request<'_>, cq_handle: u32, cqe: u32) -> Result {
    let base = CreateCqResp { cq_handle, cqe };
    if req.spec.cmd == Cmd::ExCreateCq {
        let len = req.core_out.map_or(0, |o| o.len.min(ExCreateCqResp::SIZE));
        respond(
            req,
            &ExCreateCqResp {
                base,
                comp_mask: 0,
                response_length: len as u32,
            },
        )?;
    } else {
        respond(req, &base)?;
    }
    Ok(())
}

pub(super) fn req_notify_cq(objs: &Objects, req: &Request<'_>) -> Result {
    let cmd: ReqNotifyCq = core(req)?;
    let ucq = objs.cq(cmd.cq_handle).ok_or(EINVAL)?;
    let flags = if cmd.solicited_only != 0 {
        NotifyFlags::SOLICITED
    } else {
        NotifyFlags::NEXT_COMP
    };
    ucq.cq.req_notify(flags).map(|_| ())
}

/// Resizes a user CQ (see the module doc): the response's `cqe` is the
/// new ring's capacity.
pub(super) fn resize_cq(file: &Arc<UFile>, objs: &mut Objects, req: &Request<'_>) -> Result {
    let cmd: ResizeCq = core(req)?;
    let ucq = objs.cq_mut(cmd.cq_handle).ok_or(EINVAL)?;
    need_driver_out::<RxeResizeCqResp>(req)?;
    let resize = ucq.cq.new_user_ring(cmd.cqe)?;
    let ring = resize.ring().clone();
    let offset = file.offer_mmap(&ring)?;
    let resp = ResizeCqResp {
        cqe: resize.capacity(),
        reserved: 0,
    };
    let mi = Mminfo {
        offset,
        size: ring.map_len() as u32,
        pad: 0,
    };
    let swapped = respond(req, &resp)
        .and_then(|_| respond_driver(req, &RxeResizeCqResp { mi }))
        .and_then(|()| ucq.cq.resize_user(resize));
    file.replace_ring(&mut ucq.ring, ring, swapped)
}

pub(super) fn destroy_cq(file: &Arc<UFile>, ctx: &mut UContext, req: &Request<'_>) -> Result {
    let cmd: DestroyCq = core(req)?;
    let Some(Obj::Cq(ucq)) = ctx
        .objects
        .take_if(cmd.cq_handle, |o| matches!(o, Obj::Cq(_)))
    else {
        return Err(EINVAL);
    };
    let UCq {
        cq,
        user_handle,
        ring,
        channel,
        comp_count,
        async_count,
    } = ucq;
    if let Err((cq, e)) = cq.destroy() {
        ctx.objects.put_back(
            cmd.cq_handle,
            Obj::Cq(UCq {
                cq,
                user_handle,
                ring,
                channel,
                comp_count,
                async_count,
            }),
        );
        return Err(e);
    }
    file.withdraw_mmap(&ring);
    // The CQ is gone: no event of it comes any more; the unread ones go.
    if let Some(ch) = &channel {
        ch.forget(&comp_count);
    }
    ctx.async_events.forget(&async_count);
    respond(
        req,
        &DestroyCqResp {
            comp_events_reported: comp_count.get(),
            async_events_reported: async_count.get(),
        },
    )?;
    Ok(())
}
