// SPDX-License-Identifier: GPL-2.0

//! `rdma link add NAME type rxe netdev IF` and `rdma link delete NAME`: the
//! link type "rxe", registered with the core at module init and dropped
//! first at exit (so no call of it runs once the module's state goes).
//!
//! Like `config.rs`, a front end only: the registry makes a *link item*
//! (an item without a configfs directory) and its device the way an
//! enabled configfs item gets one ([`Rxe::new_link`]), and removes it with
//! its device ([`Rxe::del_link`]), by netlink, when its netdev is
//! unregistered, or at module exit. A configfs item's device is refused
//! (`EINVAL`). The core has checked the name and found the netdev (in the
//! initial namespace) before this runs.

use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::types::ARef;

use rdma::provider::{net::NetDevice, Device, LinkOps};

use crate::registry::Rxe;

/// The link type's operations.
pub(crate) struct RxeLink(pub(crate) Arc<Rxe>);

impl LinkOps for RxeLink {
    fn new_link(&self, name: &CStr, netdev: &ARef<NetDevice>) -> Result {
        self.0.new_link(name, netdev)
    }

    fn del_link(&self, dev: &Arc<Device>) -> Result {
        self.0.del_link(dev)
    }
}
