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
//!   answers requests through [`srv::SrvOps`].
//!
//! - [`clt`]: the client: sessions over several paths, permits,
//!   requests, the multipath policies, failover, heartbeats and
//!   reconnects.
//! - `qp`, `ticker`: what both sides share (a connection's QP; the pace
//!   of a keeper).
//!
//! Not built yet: the server's sysfs (Documentation/rtrs.rst).

#![forbid(unsafe_code)]
// `pin_init!` of the client session's many fields needs more than 128.
#![recursion_limit = "256"]

use kernel::prelude::*;

/// The RTRS and RNBD wire codec.
#[path = "proto/kernel_mod.rs"]
pub mod proto;

pub mod clt;
mod qp;
pub mod srv;
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
    fn init(_module: &'static ThisModule) -> Result<Self> {
        clt::sysfs::init()?;
        Ok(Rtrs)
    }
}

impl Drop for Rtrs {
    fn drop(&mut self) {
        // Every session is gone: their modules hold ours.
        clt::sysfs::exit();
    }
}
