// SPDX-License-Identifier: GPL-2.0

//! rdma_rs_rnbd_server.ko: an RNBD server on our RTRS server. It exports
//! block devices to RNBD clients (the kernel's `rnbd_client`, ours): a
//! client opens a device by its name under `dev_search_path`, and its IO
//! goes to the device as bios on the chunk memory the client's data was
//! written into, with no copy.
//!
//! As the kernel's `rnbd_server`: the module parameters `port_nr` and
//! `dev_search_path` (with `%SESSNAME%`), the protocol (SESS_INFO, OPEN,
//! IO, CLOSE; versions 1 and 2), the access modes (`ro`, `rw` once,
//! `migration` beside one `rw`), and the sysfs tree, here under
//! `/sys/class/rdma_rs_rnbd_server/ctl/devices/<device>/` (both servers
//! load in one guest): `block_dev` and `sessions/<session>/` with
//! `read_only`, `access_mode`, `mapping_path` and `force_close`.
//!
//! Where it differs, it refuses more: an IO past the device's end, in
//! part of a block, with an unknown operation or flag, or a write on a
//! read-only mapping gets an errno; an unknown message type `EINVAL`.
//! It listens in the network namespace of the process that loads it (the
//! kernel's listens in the initial one).
//!
//! - [`server`]: the RTRS ULP: sessions, their devices and the messages;
//!   `server/device.rs` the exported devices, `server/session.rs` a
//!   client session's open devices, `server/sysfs.rs` the tree.
//!
//! Lock order: `Srv::sessions`, then a session's `devs`, then
//! `Srv::devices`. No lock is held across a block IO.

#![forbid(unsafe_code)]

use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::kshim::param;
use rdma::kshim::route::NetNs;
use rtrs::srv::Server;

mod server;

use server::Srv;

module! {
    type: RnbdServer,
    name: "rdma_rs_rnbd_server",
    author: "rdma-rs developers",
    description: "RNBD server on the RTRS of rdma-rs: exports block devices",
    license: "GPL",
}

struct RnbdServer {
    server: Option<Server>,
}

impl kernel::Module for RnbdServer {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let port = param::get_int(module, c_str!("port_nr"))?;
        let port = u16::try_from(port).map_err(|_| EINVAL)?;
        let search = param::text(module, c_str!("dev_search_path"))?;
        let srv = Srv::start(search.as_bytes())?;
        let ops: Arc<dyn rtrs::srv::SrvOps> = srv.clone();
        let server = match NetNs::current().and_then(|ns| Server::open(ns, port, ops)) {
            Ok(s) => s,
            Err(e) => {
                pr_err!(
                    "rnbd_server: not loaded: cannot listen on port {} (errno {})\n",
                    port,
                    e.to_errno()
                );
                Srv::stop();
                return Err(e);
            }
        };
        pr_info!(
            "rnbd_server: listening on port {}, devices under \"{}\"\n",
            port,
            core::str::from_utf8(search.as_bytes()).unwrap_or("?")
        );
        Ok(RnbdServer {
            server: Some(server),
        })
    }
}

impl Drop for RnbdServer {
    fn drop(&mut self) {
        // Every path closes (each session's devices with its last), then
        // the sysfs tree goes.
        drop(self.server.take());
        Srv::stop();
    }
}
