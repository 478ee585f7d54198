// SPDX-License-Identifier: GPL-2.0

//! The rdma_cm's events of user space's ids, turned into the records
//! `GET_EVENT` gives ([`Handler`]): the event's number, its status (an
//! errno, or a REJ's reason), and the connection parameters as the C
//! rdma_cm reports them, from the receiver's side (a request's responder
//! resources are the initiator depth it offered, and the reverse). A
//! connection request makes the new id's [`Ctx`] and queues it with the
//! event on the listener's file, or rejects it if the listener's backlog
//! is full or the listener is gone.

use core::sync::atomic::Ordering;

use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::cma::{CmEvent, CmHandler, CmIdCore, Disposition, EventKind, PortSpace};
use rdma::spec::uverbs::srq_ah::{AhAttr, GlobalRoute};
use rdma::spec::uverbs::ucma::{event, ConnParam, EventResp, UdParam};

use crate::ctx::{routes, Ctx};
use crate::file::UEvent;

/// The handler of every id of user space's.
pub(crate) struct Handler;

/// The number user space knows an event by.
fn number(kind: EventKind) -> u32 {
    match kind {
        EventKind::AddrResolved => event::ADDR_RESOLVED,
        EventKind::AddrError => event::ADDR_ERROR,
        EventKind::RouteResolved => event::ROUTE_RESOLVED,
        EventKind::RouteError => event::ROUTE_ERROR,
        EventKind::ConnectRequest => event::CONNECT_REQUEST,
        EventKind::ConnectResponse => event::CONNECT_RESPONSE,
        EventKind::Unreachable => event::UNREACHABLE,
        EventKind::Rejected => event::REJECTED,
        EventKind::Established => event::ESTABLISHED,
        EventKind::Disconnected => event::DISCONNECTED,
        EventKind::DeviceRemoval => event::DEVICE_REMOVAL,
        EventKind::TimewaitExit => event::TIMEWAIT_EXIT,
        EventKind::MulticastJoin => event::MULTICAST_JOIN,
        EventKind::MulticastError => event::MULTICAST_ERROR,
    }
}

/// An address of the rdma_cm's, as user space's `ib_uverbs_ah_attr`
/// (always global: RoCE).
pub(crate) fn user_ah(a: &rdma::verbs::ah::AhAttr) -> AhAttr {
    let g = &a.grh;
    AhAttr {
        grh: GlobalRoute {
            dgid: g.dgid.0,
            flow_label: g.flow_label,
            sgid_index: g.sgid_index,
            hop_limit: g.hop_limit,
            traffic_class: g.traffic_class,
            reserved: 0,
        },
        sl: a.sl,
        static_rate: a.static_rate,
        is_global: 1,
        port_num: a.port_num as u8,
        ..AhAttr::default()
    }
}

/// The event's UD parameters, as user space's `ib_uverbs_ah_attr`, and
/// its private data (a SIDR REQ's or REP's).
fn ud_param(ev: &CmEvent) -> UdParam {
    let mut p = UdParam::default();
    if let Some(ud) = ev.ud.as_ref() {
        p.qp_num = ud.qp_num;
        p.qkey = ud.qkey;
        p.ah_attr = user_ah(&ud.ah);
    }
    let n = ev.private_data.len().min(p.private_data.0.len());
    p.private_data.0[..n].copy_from_slice(&ev.private_data[..n]);
    p.private_data_len = n as u8;
    p
}

/// The event's connection parameters, from the receiver's side.
fn conn_param(ev: &CmEvent) -> ConnParam {
    let mut p = ConnParam::with_data(&ev.private_data);
    p.qp_num = ev.param.qp_num.unwrap_or(0);
    p.srq = u8::from(ev.param.srq);
    p.responder_resources = ev.param.initiator_depth;
    p.initiator_depth = ev.param.responder_resources;
    p.flow_control = u8::from(ev.param.flow_control);
    p.retry_count = ev.param.retry_count;
    p.rnr_retry_count = ev.param.rnr_retry_count;
    p
}

impl CmHandler for Handler {
    fn event(&self, id: &Arc<CmIdCore>, mut ev: CmEvent) -> Disposition {
        if ev.kind == EventKind::ConnectRequest {
            request(id, &mut ev);
            return Disposition::Keep;
        }
        // An id destroyed meanwhile is no longer routed: its event goes.
        let Some(ctx) = routes::find(id) else {
            return Disposition::Keep;
        };
        if matches!(
            ev.kind,
            EventKind::MulticastJoin | EventKind::MulticastError
        ) {
            multicast(&ctx, &ev);
            return Disposition::Keep;
        }
        let resp = if id.port_space() == PortSpace::Tcp {
            EventResp::with_conn(
                ctx.uid(),
                ctx.handle,
                number(ev.kind),
                ev.status,
                &conn_param(&ev),
            )
        } else {
            EventResp::with_ud(
                ctx.uid(),
                ctx.handle,
                number(ev.kind),
                ev.status,
                &ud_param(&ev),
            )
        };
        let holder = ctx.clone();
        holder.push_event(UEvent {
            resp,
            ctx,
            child: None,
            mc: None,
        });
        Disposition::Keep
    }
}

/// A multicast join's event: the join's cookie and handle (not the
/// id's), queued only while the join is live (under the id's joins'
/// lock, which `LEAVE_MCAST` takes to clear its events).
fn multicast(ctx: &Arc<Ctx>, ev: &CmEvent) {
    let Ok(h) = u32::try_from(ev.mc) else { return };
    let mcs = ctx.mcs.lock();
    let Some(mc) = mcs.get(&h).cloned() else {
        return;
    };
    let resp = EventResp::with_ud(mc.uid, mc.handle, number(ev.kind), ev.status, &ud_param(ev));
    ctx.push_event(UEvent {
        resp,
        ctx: ctx.clone(),
        child: None,
        mc: Some(mc),
    });
    drop(mcs);
}

/// A connection request to a listener of user space's: its new id, and
/// the event with it. Dropping the new id rejects the request.
fn request(child: &Arc<CmIdCore>, ev: &mut CmEvent) {
    let Some(new_id) = ev.new_id.take() else {
        return;
    };
    let Some(listener) = child.listener().and_then(|l| routes::find(&l)) else {
        return;
    };
    let backlog = listener.backlog.load(Ordering::Relaxed);
    if listener.pending.fetch_add(1, Ordering::Relaxed) >= backlog {
        listener.pending.fetch_sub(1, Ordering::Relaxed);
        if rdma::kshim::ratelimit::log_allowed() {
            pr_info!("rdma_cm: a listener's backlog is full, request rejected\n");
        }
        return;
    }
    let made = Ctx::new(new_id, listener.file(), 0).and_then(|c| routes::add(&c).map(|()| c));
    let Ok(ctx) = made else {
        listener.pending.fetch_sub(1, Ordering::Relaxed);
        return;
    };
    let resp = if child.port_space() == PortSpace::Tcp {
        EventResp::with_conn(
            listener.uid(),
            ctx.handle,
            event::CONNECT_REQUEST,
            0,
            &conn_param(ev),
        )
    } else {
        EventResp::with_ud(
            listener.uid(),
            ctx.handle,
            event::CONNECT_REQUEST,
            0,
            &ud_param(ev),
        )
    };
    let queued = listener.push_event(UEvent {
        resp,
        ctx: listener.clone(),
        child: Some(ctx.clone()),
        mc: None,
    });
    if !queued {
        listener.pending.fetch_sub(1, Ordering::Relaxed);
        ctx.destroy();
    }
}
