// SPDX-License-Identifier: GPL-2.0

//! The peer memory broker (Peer-Direct): the crate `peer_memory` of module
//! `peer_mem`.
//!
//! A driver that owns memory of its own (a GPU, an accelerator, a storage
//! device) registers as a peer memory client, in C through
//! `include/rdma/peer_mem.h` (`c_api.c`, [`c_client`]) or in Rust through
//! [`client::PeerClient`]. When a memory region is registered on a range
//! of a process's memory that pinning cannot take, or first if asked
//! (`rdma::verbs::umem`), the core asks this broker, which asks the
//! clients in registration order ([`registry`]); the first that claims the
//! range gives the pages. The client may invalidate the memory at any time;
//! the core then stops every access before the invalidation returns.
//! Each client's statistics are in sysfs ([`stats`]).
//!
//! Documentation/peer_mem.rst is the guide for client writers.

#![forbid(unsafe_code)]

use kernel::prelude::*;
use kernel::sync::Arc;

pub mod c_client;
pub mod client;
pub mod registry;
pub mod stats;

pub use client::{CoreContext, PeerClient, Registration};

module! {
    type: PeerMem,
    name: "peer_mem",
    author: "rdma-rs",
    description: "Peer-Direct: RDMA memory regions on peer device memory",
    license: "GPL",
}

struct PeerMem;

impl kernel::Module for PeerMem {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        registry::init()?;
        let c = Arc::pin_init(c_client::CClients::new(), GFP_KERNEL);
        let c = match c {
            Ok(c) => c,
            Err(e) => {
                registry::exit();
                return Err(e);
            }
        };
        let src: Arc<dyn rdma::verbs::umem::PeerSource> =
            match Arc::new(registry::Source, GFP_KERNEL) {
                Ok(s) => s,
                Err(e) => {
                    registry::exit();
                    return Err(e.into());
                }
            };
        let reg: Arc<dyn rdma::kshim::peer_abi::CRegistrar> = c;
        let installed = rdma::kshim::peer_abi::set_registrar(Some(reg))
            .and_then(|()| rdma::verbs::umem::set_peer_source(Some(src)));
        if let Err(e) = installed {
            let _ = rdma::kshim::peer_abi::set_registrar(None);
            registry::exit();
            return Err(e);
        }
        pr_info!("peer_mem: loaded\n");
        Ok(PeerMem)
    }
}

impl Drop for PeerMem {
    fn drop(&mut self) {
        // No client is left (each holds a reference on this module); the
        // core stops asking, waiting for a request in progress.
        let _ = rdma::verbs::umem::set_peer_source(None);
        let _ = rdma::kshim::peer_abi::set_registrar(None);
        registry::exit();
    }
}
