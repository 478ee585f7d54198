// SPDX-License-Identifier: GPL-2.0

//! Software RDMA devices for selftests: two RoCE ports, no network.
//!
//! They stay registered while the module is loaded, so tests can look at
//! what the core shows of them (sysfs), run verbs on them, and unload the
//! module in any order. Port 1 is active with the RoCE v2 GID of 10.77.5.1
//! at index 0 and P_Key 0xffff; port 2 is down with empty tables.
//!
//! - `swdev0` moves data between its own QPs in software (`swdev_qp.rs`),
//!   from the core's per-QP work;
//! - `swinl0` is the same device with a bug on purpose: its `post_send`
//!   executes requests in the caller's call chain, so completions are
//!   signalled from within the verb. The core must catch that.

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::device::driver::Driver;
use rdma::device::port::{GidEntry, PortAttr};
use rdma::device::{DeviceAttr, DeviceCaps, DeviceDesc, DeviceOps};
use rdma::spec::attr::{Gid, GidType, LinkLayer, Mtu, NodeType, PhysState, PortState};
use rdma::verbs::qp::{QpInfo, QpOps};

mod swdev_qp;

module! {
    type: SwDev,
    name: "rdma_swdev",
    author: "rdma-rs developers",
    description: "Selftest: a software RDMA device with no network",
    license: "GPL",
}

struct Ops {
    inline: bool,
}

impl DeviceOps for Ops {
    fn query_device(&self) -> Result<DeviceAttr> {
        Ok(DeviceAttr {
            cap_flags: DeviceCaps::MEM_MGT_EXTENSIONS
                | DeviceCaps::SRQ_RESIZE
                | DeviceCaps::RC_RNR_NAK_GEN
                | DeviceCaps::MEM_WINDOW
                | DeviceCaps::SYS_IMAGE_GUID,
            node_guid: 0x5054_00ff_fe12_3456,
            sys_image_guid: 0x5054_00ff_fe12_3456,
            fw_ver: (1 << 32) | (2 << 16) | 3,
            max_mr_size: u64::from(u32::MAX),
            page_size_cap: 0xffff_f000,
            vendor_id: 0xffffff,
            max_qp: 64,
            max_qp_wr: 1024,
            max_send_sge: 8,
            max_recv_sge: 8,
            max_cq: 64,
            max_cqe: 4096,
            max_mr: 256,
            max_pd: 64,
            max_qp_rd_atom: 16,
            max_qp_init_rd_atom: 16,
            max_srq: 16,
            max_srq_wr: 1024,
            max_srq_sge: 8,
            max_ah: 64,
            max_mw: 32,
            max_fast_reg_page_list_len: 64,
            max_mcast_qp_attach: 16,
            ..DeviceAttr::default()
        })
    }

    fn create_qp(&self, _qp: &QpInfo) -> Result<Arc<dyn QpOps>> {
        Ok(swdev_qp::SwQp::new(self.inline)?)
    }

    fn query_port(&self, port: u32) -> Result<PortAttr> {
        Ok(if port == 1 {
            PortAttr {
                state: PortState::Active,
                phys_state: PhysState::LinkUp,
                port_cap_flags: 0x0001_0000,
                max_msg_sz: 1 << 31,
                ..PortAttr::down(Mtu::Mtu4096)
            }
        } else {
            PortAttr::down(Mtu::Mtu1024)
        })
    }
}

struct SwDev {
    _driver: Pin<KBox<Driver>>,
}

impl kernel::Module for SwDev {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let driver = Driver::new(c_str!("swdev"))?;
        let mut desc = DeviceDesc {
            name_template: c_str!("swdev%d"),
            node_type: NodeType::Ca,
            node_guid: 0x5054_00ff_fe12_3456,
            port_count: 2,
            link_layer: LinkLayer::Ethernet,
            gid_tbl_len: 4,
            pkey_tbl_len: 2,
        };
        for inline in [false, true] {
            if inline {
                desc.name_template = c_str!("swinl0");
            }
            let dev = driver.register_device(&desc, Arc::new(Ops { inline }, GFP_KERNEL)?)?;
            let gid = GidEntry {
                gid: Gid::from_ipv4([10, 77, 5, 1]),
                gid_type: GidType::RoceV2,
                ifindex: 0,
            };
            dev.set_gid(1, 0, Some(gid))?;
            dev.set_pkey(1, 0, 0xffff)?;
        }
        Ok(SwDev { _driver: driver })
    }
}
