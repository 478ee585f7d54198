// SPDX-License-Identifier: GPL-2.0

//! RTRS, the RDMA transport of the kernel's RNBD, in Rust: the crate `rtrs`
//! of module `rdma_rs_rtrs`.
//!
//! - [`proto`]: the wire codec (connection messages, admin messages, IO
//!   messages, immediates, chunk geometry, RNBD's messages), host-tested
//!   as the crate `rtrs-proto` and compiled here unchanged.
//! - [`srv`]: the server: a listener on our rdma_cm, paths of one RC
//!   connection per client CPU plus the service connection, the chunk
//!   memory clients write their requests into, and the responses; a ULP
//!   answers requests through [`srv::SrvOps`]. Its sysfs is
//!   `/sys/class/rdma_rs_rtrs_server`; its settings are the module's
//!   parameters `sess_queue_depth`, `max_chunk_size` and
//!   `always_invalidate` (declared in C, `params.c`: 6.12's Rust modules
//!   have none), checked at load as the kernel's server checks its own.
//! - [`clt`]: the client: sessions over several paths, permits,
//!   requests, the multipath policies, failover, heartbeats and
//!   reconnects; its sysfs is `/sys/class/rdma_rs_rtrs_client`.
//! - `dir`, `qp`, `ticker`, `sysfs`: what both sides share (a request's
//!   direction, [`srv::Dir`] and [`clt::Dir`]; a connection's QP and the
//!   posting of its work requests; the pace of a keeper; the class, the
//!   session and path directories, the files every path has, addresses
//!   and writes in sysfs). The server and the client never import each
//!   other.
//!
//! Not built yet: see `Not done` in Documentation/rtrs.rst.

#![forbid(unsafe_code)]
// `pin_init!` of the client session's many fields needs more than 128.
#![recursion_limit = "256"]

use kernel::prelude::*;
use kernel::types::ScopeGuard;

/// The RTRS and RNBD wire codec.
#[path = "proto/kernel_mod.rs"]
pub mod proto;

pub mod clt;
mod dir;
mod qp;
pub mod srv;
mod sysfs;
mod ticker;

module! {
    type: Rtrs,
    name: "rdma_rs_rtrs",
    author: "rdma-rs developers",
    description: "RTRS, the RDMA transport of RNBD (Rust)",
    license: "GPL",
}

struct Rtrs;

impl kernel::Module for Rtrs {
    fn init(module: &'static ThisModule) -> Result<Self> {
        srv::init(module)?;
        let srv = ScopeGuard::new(srv::exit);
        clt::sysfs::CLASS.init()?;
        srv.dismiss();
        Ok(Rtrs)
    }
}

impl Drop for Rtrs {
    fn drop(&mut self) {
        // Every session and server is gone: their modules hold ours.
        clt::sysfs::CLASS.exit();
        srv::exit();
    }
}
