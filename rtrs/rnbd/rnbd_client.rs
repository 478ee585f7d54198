// SPDX-License-Identifier: GPL-2.0

//! rdma_rs_rnbd_client.ko: an RNBD client on our RTRS client. It maps
//! block devices that an RNBD server (the kernel's `rnbd_server`, ours)
//! exports as disks of its own, `/dev/rsrnbd<N>`: each request of a disk
//! is one RNBD IO over the session, its data copied through a buffer of
//! the request's tag into the RTRS request.
//!
//! As the kernel's `rnbd_client`: mapping through `map_device` with the
//! same options and texts (`sessname`, `path`, `device_path`,
//! `access_mode`, `dest_port`), sessions shared by name and closed with
//! their last device, the protocol (SESS_INFO, OPEN, IO, CLOSE), the
//! queue limits the server announces, each mapping's `state`, `session`,
//! `mapping_path`, `access_mode` and `unmap_device` (`normal` refuses a
//! disk in use), here under `/sys/class/rdma_rs_rnbd_client/ctl/`. The
//! session is opened in the network namespace of the process that writes
//! `map_device`.
//!
//! Where it differs: when the session loses its last path, IO waits for
//! it (the kernel's fails it) and goes again once the devices are open
//! on the server again; an OPEN answer whose limits the block layer could
//! not take is refused; poll queues are not offered.
//!
//! - [`client`]: the mappings and sessions; `client/session.rs` the
//!   session messages and the link events, `client/device.rs` a disk's
//!   requests, `client/sysfs.rs` the tree.
//!
//! Lock order: `Clt::ops`, `Clt::sessions`, `Clt::maps`, a session's
//! `devs`, a device's `slots` and `waiting` (leaves); `Clt::tree` and
//! `Clt::dead` are leaves. No lock is held across a request or a wait,
//! and no directory is dropped under `Clt::ops`.

#![forbid(unsafe_code)]

use kernel::prelude::*;

mod client;

use client::Clt;

module! {
    type: RnbdClient,
    name: "rdma_rs_rnbd_client",
    author: "rdma-rs developers",
    description: "RNBD client on the RTRS of rdma-rs: maps remote block devices",
    license: "GPL",
}

struct RnbdClient;

impl kernel::Module for RnbdClient {
    fn init(module: &'static ThisModule) -> Result<Self> {
        Clt::start(module)?;
        pr_info!("rnbd_client: loaded\n");
        Ok(RnbdClient)
    }
}

impl Drop for RnbdClient {
    fn drop(&mut self) {
        // Every mapping goes (forced), then the sessions and the tree.
        Clt::stop();
    }
}
