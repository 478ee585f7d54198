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

pub mod ah;
/// Device and port attribute types: kernel-independent, host-tested in `proto/`.
#[path = "proto/src/attr.rs"]
pub mod attr;
mod bindings;
pub mod client;
pub mod configfs;
pub mod cq;
pub mod cq_pool;
pub mod device;
pub mod driver;
pub mod errno;
pub mod event;
mod gate;
pub mod mem;
pub mod mr;
pub mod mw;
pub mod net;
pub mod pd;
pub mod port;
pub mod qp;
/// The QP state machine: kernel-independent, host-tested in `proto/`.
#[path = "proto/src/qp_state.rs"]
pub mod qp_state;
mod registry;
mod res;
pub mod srq;
pub mod sync;
pub mod sysfs;
pub mod testing;
pub mod udp;
pub mod vec;
mod verb;
/// Work request and completion vocabulary: kernel-independent, host-tested
/// in `proto/`.
#[path = "proto/src/verbs.rs"]
pub mod verbs;
pub mod wc;
pub mod wr;

module! {
    type: RdmaCore,
    name: "rdma_core",
    author: "rdma-rs developers",
    description: "RDMA midlayer (Rust)",
    license: "GPL",
}

/// Annotates a function that may sleep (`might_sleep()`): with
/// `CONFIG_DEBUG_ATOMIC_SLEEP` a call from atomic context is reported.
pub fn might_sleep() {
    // SAFETY: `might_sleep` has no preconditions; it only checks the context.
    unsafe { bindings::rdma_rs_might_sleep() };
}

struct RdmaCore {
    registry: Pin<KBox<registry::Registry>>,
}

impl kernel::Module for RdmaCore {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        sysfs::init()?;
        let registry = match KBox::pin_init(registry::Registry::new(), GFP_KERNEL) {
            Ok(r) => r,
            Err(e) => {
                sysfs::exit();
                return Err(e);
            }
        };
        // SAFETY: the registry is pinned in a box owned by the module struct,
        // which lives until `drop` below unpublishes it.
        unsafe { registry.publish() };
        if let Err(e) = net::init() {
            registry.unpublish();
            sysfs::exit();
            return Err(e);
        }
        pr_info!("loaded\n");
        Ok(RdmaCore { registry })
    }
}

impl Drop for RdmaCore {
    fn drop(&mut self) {
        net::exit();
        self.registry.unpublish();
        sysfs::exit();
        pr_info!("unloaded\n");
    }
}
