// SPDX-License-Identifier: GPL-2.0

//! `rdma_rs_uverbs`: user space on our stack, the way unchanged
//! libibverbs (rdma-core 44) reaches the kernel's C stack.
//!
//! - [`device`]: for every device of ours, `/dev/infiniband/uverbsN`
//!   (mode 0666) and `/sys/class/infiniband_verbs/uverbsN/{ibdev,dev,
//!   abi_version}`, made and removed with the device (an RDMA client);
//!   the device's asynchronous events fanned out to its open files.
//! - [`file`]: an open `uverbsN`: its context and its objects, torn down
//!   when the file is released or the device goes, in any order.
//! - [`objects`]: the per-file table of handles user space names objects
//!   by.
//! - [`dispatch`]: a `write()` of the legacy ABI: framing checked by
//!   `rdma::spec::uverbs`, then one command; the ioctl ABI answers
//!   `ENOTTY`, which makes libibverbs use `write()` for everything.
//! - [`cmd`]: the commands, a file per kind of object.
//! - [`event_file`]: the asynchronous event file `GET_CONTEXT` returns.
//!
//! It also holds the core's `/sys/class/infiniband` view of our devices
//! (`rdma::device::sysfs::register_ib_view`), where libibverbs reads node
//! types, GUIDs and GID tables.
//!
//! The module refuses to load while the kernel's `ib_uverbs` or `ib_core`
//! is loaded (they own `/sys/class/infiniband_verbs` and
//! `/sys/class/infiniband`), and while it is loaded they cannot load (see
//! Documentation/uverbs.rst).
//!
//! Locks, outermost first: `UverbsDev::files` (the open files of a device)
//! → `UFile::state` (one file's context and objects) → `EventQueue::q`.
//! A command holds its file's `state` for its whole run, so the commands of
//! one file are serialised.

#![forbid(unsafe_code)]

use kernel::error::code::{EBUSY, EEXIST};
use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::device::sysfs::{register_ib_view, IbView};
use rdma::kshim::class::SysClass;
use rdma::kshim::netlink::NlEndpoint;
use rdma::prelude::ClientRegistration;

mod cmd;
mod device;
mod dispatch;
mod event_file;
mod file;
mod netlink;
mod objects;

module! {
    type: Uverbs,
    name: "rdma_rs_uverbs",
    author: "rdma-rs developers",
    description: "User-space verbs (uverbs write() ABI) on the Rust RDMA stack",
    license: "GPL",
}

struct Uverbs {
    /// `NETLINK_RDMA`, unless the C ib_core holds it; dropped first.
    _netlink: Option<NlEndpoint<netlink::NlServer>>,
    _client: ClientRegistration<device::UverbsClient>,
    /// `/sys/class/infiniband`, which libibverbs reads; after the client
    /// (field order), as in C the core's class outlives uverbs.
    _view: IbView,
}

impl kernel::Module for Uverbs {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let class = match device::new_class() {
            Ok(c) => c,
            Err(e) if e == EEXIST => {
                pr_err!(
                    "/sys/class/infiniband_verbs exists: the kernel's ib_uverbs is loaded; \
                     unload it to reach our devices from user space\n"
                );
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        // `EEXIST` (logged by the core) if the C ib_core holds the name:
        // libibverbs would then ask ib_core's netlink and never see ours.
        let view = register_ib_view()?;
        let client: Arc<SysClass> = class;
        let table = device::DevTable::new()?;
        let reg =
            ClientRegistration::new(device::UverbsClient::new(client, table.clone(), module)?)?;
        let server = Arc::new(netlink::NlServer::new(table), GFP_KERNEL)?;
        let nl = match NlEndpoint::register(netlink::NETLINK_RDMA, server, module) {
            Ok(ep) => Some(ep),
            Err(e) if e == EBUSY => {
                pr_info!("NETLINK_RDMA is the C ib_core's: our devices are not in it\n");
                None
            }
            Err(e) => return Err(e),
        };
        pr_info!("loaded: /dev/infiniband/uverbsN for our devices\n");
        Ok(Uverbs {
            _netlink: nl,
            _client: reg,
            _view: view,
        })
    }
}
