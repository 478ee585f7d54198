// SPDX-License-Identifier: GPL-2.0

//! Selftest: `rdma::kshim::netlink` endpoints and the NLDEV codec of
//! `rdma::spec::netlink` in the kernel (`netlink.sh`, with the user
//! program `netlink_user`).
//!
//! The module serves netlink unit [`UNIT`] (31, `MAX_LINKS - 1`, which no
//! kernel protocol uses) with the NLDEV server of `netlink_server.rs`
//! (made-up devices `nltest0`...): GET (one device, or a dump spread over
//! several datagrams), PORT_GET, GET_CHARDEV of "uverbs", SYS_GET, and
//! NEWLINK/DELLINK acknowledged when the sender has `CAP_NET_ADMIN` and
//! refused with `EPERM` otherwise.
//!
//! At load it also checks registration failures and fails to load if one
//! differs: the unit again (`EBUSY`: ours), unit 0 (`EBUSY`: rtnetlink's)
//! and unit 32 (`EINVAL`).

#![forbid(unsafe_code)]

use kernel::error::code::{EBUSY, EINVAL};
use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::kshim::netlink::NlEndpoint;

#[path = "netlink_server.rs"]
mod server;
use server::Server;

module! {
    type: NetlinkTest,
    name: "rdma_netlink_test",
    author: "rdma-rs",
    description: "Selftest: rdma::kshim::netlink endpoints and the NLDEV codec",
    license: "GPL",
}

/// The netlink unit served.
const UNIT: u32 = 31;

struct NetlinkTest {
    _ep: NlEndpoint<Server>,
}

fn expect_err(unit: u32, want: Error, module: &'static ThisModule) -> Result {
    match NlEndpoint::register(unit, Arc::new(Server, GFP_KERNEL)?, module) {
        Err(e) if e == want => Ok(()),
        Err(e) => {
            pr_err!("rdma_netlink_test: unit {unit}: error {e:?}, expected {want:?}\n");
            Err(EINVAL)
        }
        Ok(_) => {
            pr_err!("rdma_netlink_test: unit {unit} registered twice\n");
            Err(EINVAL)
        }
    }
}

impl kernel::Module for NetlinkTest {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let ep = NlEndpoint::register(UNIT, Arc::new(Server, GFP_KERNEL)?, module)?;
        expect_err(UNIT, EBUSY, module)?;
        expect_err(0, EBUSY, module)?;
        expect_err(32, EINVAL, module)?;
        pr_info!("rdma_netlink_test: serving netlink unit {UNIT}\n");
        Ok(NetlinkTest { _ep: ep })
    }
}
