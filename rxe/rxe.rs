// SPDX-License-Identifier: GPL-2.0

//! rdma_rs_rxe: a software RoCE v2 provider over an Ethernet netdev.
//!
//! Devices are made and removed through configfs
//! (`/sys/kernel/config/rdma_rs_rxe/<name>/{netdev,enable,ibdev}`, see
//! `config.rs`) or with `rdma link add NAME type rxe netdev IF` and `rdma
//! link delete NAME` (the link type "rxe", `link.rs`), and kept in the
//! module's registry (`registry.rs`); each is
//! bound to one netdev and follows it: port state with the carrier, MTU
//! with the netdev's, the GID table with its IPv4 and IPv6 addresses
//! (`device.rs`), and the device goes away by itself when the netdev is
//! unregistered.
//!
//! - `net/`: the RoCE v2 UDP sockets, the receive path (hostile input in,
//!   packets to their QP), the transmit path (routes, loopback) and the
//!   address and CRC helpers both share.
//! - `transport/`: UD, and RC/UC: the requester, the completer and the
//!   responder of a connected QP.
//! - `wire/`: the packet codec (headers, ICRC, PSNs, opcodes,
//!   segmentation), kernel-independent and host-tested.

#![forbid(unsafe_code)]

// The core is used through its provider API only: every path into the
// crate `rdma` starts with `rdma::provider`.

use kernel::c_str;
use kernel::prelude::*;
use kernel::sync::Arc;

use rdma::provider::{
    configfs::{Attr, Subsystem},
    net::NetListenerRegistration,
    LinkRegistration,
};

mod config;
mod counters;
mod device;
mod link;
mod mcast;
mod net;
mod registry;
mod transport;

/// The wire codec, host-tested as the crate `rxe-wire` (`wire/`, `cargo
/// test`, fuzzed): its files refer to each other as siblings, so they are
/// compiled together here. Its items are `pub` for the host crate, and it
/// covers more of the wire than the transport uses yet: hence the two
/// allowances.
#[allow(dead_code, unreachable_pub)]
mod wire {
    #[path = "src/fault.rs"]
    pub(crate) mod fault;
    #[path = "src/headers.rs"]
    pub(crate) mod headers;
    #[path = "src/icrc.rs"]
    pub(crate) mod icrc;
    #[path = "src/opcode.rs"]
    pub(crate) mod opcode;
    #[path = "src/packet.rs"]
    pub(crate) mod packet;
    #[path = "src/psn.rs"]
    pub(crate) mod psn;
    #[path = "src/segment.rs"]
    pub(crate) mod segment;
}

module! {
    type: RxeModule,
    name: "rdma_rs_rxe",
    author: "rdma-rs developers",
    description: "Software RoCE v2 provider (Rust)",
    license: "GPL",
}

struct RxeModule {
    // Field order is drop order: no new configuration (`rdma link`, whose
    // calls in progress end first, then configfs), no more netdev events,
    // then the link items go, the devices' work drains and the devices go.
    _link: LinkRegistration,
    _cfs: Subsystem,
    _listener: NetListenerRegistration,
    _rxe: Shutdown,
}

/// Shuts the module's state down when dropped, after the fields before it.
struct Shutdown(Arc<registry::Rxe>);

impl Drop for Shutdown {
    fn drop(&mut self) {
        self.0.shutdown();
        pr_info!("unloaded\n");
    }
}

impl kernel::Module for RxeModule {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let rxe = registry::Rxe::new()?;
        let listener = rdma::provider::net::register_listener(rxe.clone())?;
        let attrs = [
            Attr {
                name: c_str!("netdev"),
                writable: true,
            },
            Attr {
                name: c_str!("enable"),
                writable: true,
            },
            Attr {
                name: c_str!("ibdev"),
                writable: false,
            },
            Attr {
                name: c_str!("counters"),
                writable: false,
            },
            Attr {
                name: c_str!("fault"),
                writable: true,
            },
        ];
        let group = Arc::new(config::RxeGroup(rxe.clone()), GFP_KERNEL)?;
        let cfs = Subsystem::register(module, c_str!("rdma_rs_rxe"), &attrs, group)?;
        let ops = Arc::new(link::RxeLink(rxe.clone()), GFP_KERNEL)?;
        let link = LinkRegistration::new(c_str!("rxe"), rxe.driver(), ops)?;
        pr_info!("loaded\n");
        Ok(RxeModule {
            _link: link,
            _cfs: cfs,
            _listener: listener,
            _rxe: Shutdown(rxe),
        })
    }
}
