// SPDX-License-Identifier: GPL-2.0

//! `GET_CONTEXT`, `QUERY_DEVICE` (legacy and extended) and `QUERY_PORT`.
//!
//! The answers are the device's attributes as the core has them
//! (`Device::attr`, `query_port`), laid out as the C uverbs lays out those
//! of `ib_device_attr` and `ib_port_attr`: `max_sge` is the smaller of the
//! send and receive limits, GUIDs go in network byte order.

use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::device::port::PortAttr;
use rdma::kshim::pid::Pid;
use rdma::prelude::Device;
use rdma::spec::attr::LinkLayer;
use rdma::spec::uverbs::device::{
    ExQueryDevice, ExQueryDeviceResp, GetContext, GetContextResp, QueryDevice, QueryDeviceResp,
    QueryPort, QueryPortResp,
};
use rdma::spec::uverbs::{Request, Wire};

use super::{core, respond};
use crate::event_file::EventQueue;
use crate::file::{FileState, UContext, UFile};
use crate::objects::Objects;

/// Makes the file's context and its asynchronous event file, whose
/// descriptor the response carries. A second call fails with `EINVAL`.
/// The descriptor is installed only once the response is written: a
/// response that cannot be written leaves no descriptor.
pub(super) fn get_context(file: &Arc<UFile>, st: &mut FileState, req: &Request<'_>) -> Result {
    let _: GetContext = core(req)?;
    if st.ctx.is_some() {
        return Err(EINVAL);
    }
    let events = EventQueue::new_async()?;
    let afile = events.new_file(file.udev.module)?;
    let resp = GetContextResp {
        async_fd: afile.fd() as u32,
        num_comp_vectors: 1,
    };
    respond(req, &resp)?;
    st.ctx = Some(UContext {
        ctxn: file.udev.new_ctxn(),
        creator: Pid::current(),
        async_events: events,
        channels: KVec::new(),
        objects: Objects::new(),
    });
    afile.install();
    Ok(())
}

/// The legacy attributes of `dev`.
fn device_resp(dev: &Device) -> QueryDeviceResp {
    let a = dev.attr();
    QueryDeviceResp {
        fw_ver: a.fw_ver,
        node_guid: dev.node_guid().to_be_bytes(),
        sys_image_guid: a.sys_image_guid.to_be_bytes(),
        max_mr_size: a.max_mr_size,
        page_size_cap: a.page_size_cap,
        vendor_id: a.vendor_id,
        vendor_part_id: a.vendor_part_id,
        hw_ver: a.hw_ver,
        max_qp: a.max_qp,
        max_qp_wr: a.max_qp_wr,
        // The legacy field has 32 bits; the extended response has all.
        device_cap_flags: a.cap_flags.0 as u32,
        max_sge: a.max_send_sge.min(a.max_recv_sge),
        max_sge_rd: a.max_sge_rd,
        max_cq: a.max_cq,
        max_cqe: a.max_cqe,
        max_mr: a.max_mr,
        max_pd: a.max_pd,
        max_qp_rd_atom: a.max_qp_rd_atom,
        max_res_rd_atom: a.max_res_rd_atom,
        max_qp_init_rd_atom: a.max_qp_init_rd_atom,
        atomic_cap: a.atomic_cap,
        max_mw: a.max_mw,
        max_mcast_grp: a.max_mcast_grp,
        max_mcast_qp_attach: a.max_mcast_qp_attach,
        max_total_mcast_qp_attach: a.max_total_mcast_qp_attach,
        max_ah: a.max_ah,
        max_srq: a.max_srq,
        max_srq_wr: a.max_srq_wr,
        max_srq_sge: a.max_srq_sge,
        max_pkeys: dev.pkey_tbl_len().min(u32::from(u16::MAX)) as u16,
        local_ca_ack_delay: a.local_ca_ack_delay,
        phys_port_cnt: dev.port_count().min(255) as u8,
        ..QueryDeviceResp::default()
    }
}

pub(super) fn query_device(dev: &Arc<Device>, req: &Request<'_>) -> Result {
    let _: QueryDevice = core(req)?;
    respond(req, &device_resp(dev))?;
    Ok(())
}

/// The extended query: the legacy attributes, the 64-bit capability
/// flags, and zeros for what a software RoCE device has none of (ODP,
/// RSS, tag matching, CQ moderation, device memory). `response_length`
/// says how much of the structure the caller's area holds.
pub(super) fn ex_query_device(dev: &Arc<Device>, req: &Request<'_>) -> Result {
    let cmd: ExQueryDevice = core(req)?;
    if cmd.comp_mask != 0 || cmd.reserved != 0 {
        return Err(EINVAL);
    }
    let area = req.core_out.map_or(0, |o| o.len);
    let resp = ExQueryDeviceResp {
        base: device_resp(dev),
        response_length: ExQueryDeviceResp::SIZE.min(area) as u32,
        device_cap_flags_ex: dev.attr().cap_flags.0,
        ..ExQueryDeviceResp::default()
    };
    respond(req, &resp)?;
    Ok(())
}

/// Virtual lanes of a RoCE port (there are none beyond the one).
const ROCE_MAX_VL_NUM: u8 = 1;

fn port_resp(a: &PortAttr, link: LinkLayer) -> QueryPortResp {
    QueryPortResp {
        port_cap_flags: a.port_cap_flags,
        max_msg_sz: a.max_msg_sz,
        gid_tbl_len: a.gid_tbl_len,
        pkey_tbl_len: a.pkey_tbl_len.min(u32::from(u16::MAX)) as u16,
        lid: a.lid as u16,
        sm_lid: a.sm_lid as u16,
        state: a.state as u8,
        max_mtu: a.max_mtu as u8,
        active_mtu: a.active_mtu as u8,
        max_vl_num: ROCE_MAX_VL_NUM,
        active_width: a.active_width,
        active_speed: a.active_speed.min(255) as u8,
        phys_state: a.phys_state as u8,
        link_layer: link as u8,
        // `IB_UVERBS_QPF_GRH_REQUIRED` is for InfiniBand ports that need a
        // GRH; libibverbs requires one on RoCE ports by itself, and the C
        // rxe does not set it.
        flags: 0,
        ..QueryPortResp::default()
    }
}

pub(super) fn query_port(dev: &Arc<Device>, req: &Request<'_>) -> Result {
    let cmd: QueryPort = core(req)?;
    let port = u32::from(cmd.port_num);
    let attr = dev.query_port(port)?;
    let link = dev.link_layer(port)?;
    respond(req, &port_resp(&attr, link))?;
    Ok(())
}
