// SPDX-License-Identifier: GPL-2.0

//! The RDMA midlayer, in Rust: the crate `rdma` of module `rdma_core`.
//!
//! Providers (such as `rxe`) register devices through a [`driver::Driver`];
//! clients (ULPs such as `rtrs`, and test clients) register with
//! [`client::ClientRegistration`] and are told about every device;
//! [`event`] carries asynchronous events from providers to ULPs. The verbs
//! objects ([`pd`], [`mr`], [`mw`], [`ah`], [`cq`], [`srq`], [`qp`]) live in the
//! core, which owns their queues and checks every request; a provider
//! supplies the transport ([`qp::QpOps`]). Other
//! modules use this crate through the cross-module mechanism described in
//! `Documentation/build.rst`: the crate's Rust symbols are exported and its
//! metadata is emitted for them to link against.
//!
//! All raw FFI stays in this crate ([`bindings`] is private); what it exports
//! is safe.

// `pin_init!` of `Device`, with its many pinned fields, nests deeply.
#![recursion_limit = "256"]

use kernel::prelude::*;
use kernel::sync::Arc;

pub mod kshim;

pub mod device;

pub mod verbs;

/// The kernel-independent part: types and state machines the specification
/// fixes, host-tested as the crate `rdma-spec` (`spec/`, `cargo test`).
pub mod spec {
    #[path = "src/attr.rs"]
    pub mod attr;
    #[path = "src/opcodes.rs"]
    pub mod opcodes;
    #[path = "src/qp_state.rs"]
    pub mod qp_state;
}

module! {
    type: RdmaCore,
    name: "rdma_core",
    author: "rdma-rs developers",
    description: "RDMA midlayer (Rust)",
    license: "GPL",
}

/// A step of the module's init, undone when dropped.
struct Undo(fn());

impl Drop for Undo {
    fn drop(&mut self) {
        (self.0)();
    }
}

/// The module: its init steps, undone in reverse order (field order).
struct RdmaCore {
    _net: Undo,
    _registry: Undo,
    _sysfs: Undo,
    _mem: Undo,
}

impl kernel::Module for RdmaCore {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        kshim::mem::init()?;
        let mem = Undo(kshim::mem::exit);
        device::sysfs::init()?;
        let sysfs = Undo(device::sysfs::exit);
        device::registry::publish(Arc::pin_init(
            device::registry::Registry::new(),
            GFP_KERNEL,
        )?);
        let registry = Undo(device::registry::unpublish);
        kshim::net::init()?;
        let net = Undo(kshim::net::exit);
        pr_info!("loaded\n");
        Ok(RdmaCore {
            _net: net,
            _registry: registry,
            _sysfs: sysfs,
            _mem: mem,
        })
    }
}

impl Drop for RdmaCore {
    fn drop(&mut self) {
        pr_info!("unloading\n");
    }
}
