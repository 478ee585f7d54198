// SPDX-License-Identifier: GPL-2.0

//! Selftest: the NLDEV server of `netlink_server.rs` on `NETLINK_RDMA`
//! (unit 20), so that the real `rdma` tool of the guest talks to
//! `rdma::spec::netlink` through `rdma::kshim::netlink` (`netlink.sh`).
//! Loading fails with `EBUSY` while the C `ib_core` holds the unit; while
//! this module holds it, `ib_core` cannot load.

#![forbid(unsafe_code)]

use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::kshim::netlink::NlEndpoint;

#[path = "netlink_server.rs"]
mod server;
use server::Server;

module! {
    type: NetlinkRdma,
    name: "rdma_netlink_rdma",
    author: "rdma-rs",
    description: "Selftest: an NLDEV server on NETLINK_RDMA for the rdma tool",
    license: "GPL",
}

/// `NETLINK_RDMA`.
const NETLINK_RDMA: u32 = 20;

struct NetlinkRdma {
    _ep: NlEndpoint<Server>,
}

impl kernel::Module for NetlinkRdma {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let ep = NlEndpoint::register(NETLINK_RDMA, Arc::new(Server, GFP_KERNEL)?, module)?;
        pr_info!("rdma_netlink_rdma: serving NETLINK_RDMA\n");
        Ok(NetlinkRdma { _ep: ep })
    }
}
