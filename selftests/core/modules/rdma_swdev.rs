// SPDX-License-Identifier: GPL-2.0

//! A software RDMA device for selftests: `swdev0`, two RoCE ports, no network.
//!
//! It stays registered while the module is loaded, so shell tests can look at
//! what the core shows of it (sysfs) and unload it in any order. Port 1 is
//! active with the RoCE v2 GID of 10.77.5.1 at index 0 and P_Key 0xffff;
//! port 2 is down with empty tables.

use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::attr::{Gid, GidType, LinkLayer, Mtu, NodeType, PhysState, PortState};
use rdma::device::{DeviceAttr, DeviceDesc, DeviceOps};
use rdma::driver::Driver;
use rdma::port::{GidEntry, PortAttr};

module! {
    type: SwDev,
    name: "rdma_swdev",
    author: "rdma-rs developers",
    description: "Selftest: a software RDMA device with no network",
    license: "GPL",
}

struct Ops;

impl DeviceOps for Ops {
    fn query_device(&self) -> Result<DeviceAttr> {
        Ok(DeviceAttr {
            node_guid: 0x5054_00ff_fe12_3456,
            sys_image_guid: 0x5054_00ff_fe12_3456,
            fw_ver: (1 << 32) | (2 << 16) | 3,
            max_qp: 64,
            ..DeviceAttr::default()
        })
    }

    fn query_port(&self, port: u32) -> Result<PortAttr> {
        Ok(if port == 1 {
            PortAttr {
                state: PortState::Active,
                phys_state: PhysState::LinkUp,
                port_cap_flags: 0x0001_0000,
                ..PortAttr::down(Mtu::Mtu1024)
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
        let desc = DeviceDesc {
            name_template: c_str!("swdev%d"),
            node_type: NodeType::Ca,
            node_guid: 0x5054_00ff_fe12_3456,
            port_count: 2,
            link_layer: LinkLayer::Ethernet,
            gid_tbl_len: 4,
            pkey_tbl_len: 2,
        };
        let dev = driver.register_device(&desc, Arc::new(Ops, GFP_KERNEL)?)?;
        let gid = GidEntry {
            gid: Gid::from_ipv4([10, 77, 5, 1]),
            gid_type: GidType::RoceV2,
            ifindex: 0,
        };
        dev.set_gid(1, 0, Some(gid))?;
        dev.set_pkey(1, 0, 0xffff)?;
        Ok(SwDev { _driver: driver })
    }
}
