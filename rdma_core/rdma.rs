// SPDX-License-Identifier: GPL-2.0

//! The RDMA midlayer, in Rust: the crate `rdma` of module `rdma_core`.
//!
//! Layers, bottom first; a module imports its own layer and the ones below
//! it, never one above (`scripts/layers.conf` is the map, `make lint`
//! checks it, `Documentation/rdma_core.rst` explains it):
//!
//! 0. [`spec`]: what the specification fixes (QP states, opcodes, MAD and
//!    CM codecs, attribute types), kernel-independent and host-tested.
//! 1. [`kshim`]: what the 6.12 kernel crate lacks (netdevs and UDP sockets,
//!    timers, `irq_poll`, configfs, sysfs, an IRQ-safe lock, a revocable
//!    gate, DMA-able buffers): the only module with `unsafe`.
//! 2. The object model, two folders that import each other (a device owns
//!    the tables of its objects):
//!    [`device`]: devices, the providers' [`device::driver::Driver`], the
//!    ULPs' [`device::client::Client`]s and their hot-plug protocol, ports,
//!    asynchronous events, sysfs; [`verbs`]: the verbs objects (PD, CQ,
//!    SRQ, MR, MW, AH, QP), which the core owns and checks; providers
//!    supply the transport ([`verbs::qp::QpOps`]) and see the queues
//!    through their own handles ([`device::ProviderDevice`],
//!    [`verbs::qp::ProviderQp`]).
//! 3. [`mad`]: management datagrams on QP1, which the core owns on every
//!    port that takes them; agents per management class.
//! 4. [`cm`]: the InfiniBand connection manager, on the MAD layer.
//! 5. [`cma`]: the IP connection manager for ULPs (rdma_cm), on the CM.
//! 6. The entry points, below.
//!
//! Two entry points, one per audience: [`prelude`] for ULPs, [`provider`]
//! for providers (the driver, device and QP handles, work-queue entries and
//! the kernel facilities a provider needs).
//!
//! A ULP's path through the API, as `selftests/rxe/modules/rdma_rxe_demo.rs`
//! and `selftests/lib/rc.rs` (both built with every `make modules`) take it:
//!
//! ```ignore
//! use rdma::prelude::*;
//!
//! let dev = device::get_by_name(c_str!("rxa"))?;        // or a Client's add()
//! let pd = Pd::alloc(dev.arc())?;
//! let cq = Cq::create(dev.arc(), 256, None)?;
//! let qp = Qp::create(pd.core(), &QpInitAttr { qp_type: QpType::Rc, .. })?;
//! let buf = Buffer::new(4096)?;
//! let mr = Mr::reg_buffer(pd.core(), &buf, 0, 4096, Access::LOCAL_WRITE)?;
//! qp.modify(&attr, AttrMask::STATE | ...)?;             // RESET -> INIT -> RTR -> RTS
//! let sg = [buf.sge(0, 4096, mr.lkey())?];
//! qp.post_send(&[SendWr::new(1, SendOp::Write { remote_addr, rkey }, &sg)])
//!     .map_err(|(_, e)| e)?;
//! let n = cq.poll(&mut wcs);
//! ```
//!
//! Other modules use this crate through the cross-module mechanism of
//! `Documentation/build.rst` (`scripts/kbuild/rust-crate.mk`): its Rust
//! symbols are exported and its metadata emitted for them to link against.

// `pin_init!` of `Device`, with its many pinned fields, nests deeply.
#![recursion_limit = "256"]

use kernel::prelude::*;
use kernel::sync::Arc;

pub mod kshim;

pub mod device;

pub mod verbs;

pub mod mad;

pub mod cm;

pub mod cma;

pub mod provider;

/// What a ULP usually needs, in one `use rdma::prelude::*;`.
pub mod prelude {
    pub use crate::device::client::{Client, ClientRegistration};
    pub use crate::device::{self, Device, DeviceRef};
    pub use crate::kshim::mem::{Buffer, Sge};
    pub use crate::spec::attr::{Gid, Mtu};
    pub use crate::spec::opcodes::{Access, SendFlags, WcOpcode, WcStatus};
    pub use crate::spec::qp_state::{AttrMask, QpState, QpType};
    pub use crate::verbs::cq::{Cq, PollCtx};
    pub use crate::verbs::mr::Mr;
    pub use crate::verbs::pd::{Pd, PdFlags};
    pub use crate::verbs::qp::{Qp, QpAttr, QpCap, QpInitAttr};
    pub use crate::verbs::wc::Wc;
    pub use crate::verbs::wr::{RecvWr, SendOp, SendWr};
}

/// The kernel-independent part: types and state machines the specification
/// fixes, host-tested as the crate `rdma-spec` (`spec/`, `cargo test`).
pub mod spec {
    #[path = "src/attr.rs"]
    pub mod attr;
    #[path = "src/cm_msg.rs"]
    pub mod cm_msg;
    #[path = "src/cm_sidr.rs"]
    pub mod cm_sidr;
    #[path = "src/cm_state.rs"]
    pub mod cm_state;
    #[path = "src/cm_table.rs"]
    pub mod cm_table;
    #[path = "src/mad.rs"]
    pub mod mad;
    #[path = "src/mad_send.rs"]
    pub mod mad_send;
    #[path = "src/netlink/mod.rs"]
    pub mod netlink;
    #[path = "src/opcodes.rs"]
    pub mod opcodes;
    #[path = "src/peer_region.rs"]
    pub mod peer_region;
    #[path = "src/qp_state.rs"]
    pub mod qp_state;
    #[path = "src/tm/mod.rs"]
    pub mod tm;
    #[path = "src/uverbs/mod.rs"]
    pub mod uverbs;
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
///
/// Bottom layer first: the shim's own state (the buffer registry, the
/// netdev notifiers and their listener list) needs nothing above it; then
/// the device model (the sysfs class and its port groups, the registry of
/// devices and clients), then the management layers, each an internal
/// client of the one below (MAD, CM, rdma_cm).
struct RdmaCore {
    _cma: Undo,
    _cm: Undo,
    _mad: Undo,
    _chardevs: Undo,
    _links: Undo,
    _registry: Undo,
    _sysfs: Undo,
    _net: Undo,
    _mem: Undo,
}

impl kernel::Module for RdmaCore {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        kshim::mem::init()?;
        let mem = Undo(kshim::mem::exit);
        kshim::net::init()?;
        let net = Undo(kshim::net::exit);
        device::sysfs::init()?;
        let sysfs = Undo(device::sysfs::exit);
        device::registry::publish(Arc::pin_init(
            device::registry::Registry::new(),
            GFP_KERNEL,
        )?);
        let registry = Undo(device::registry::unpublish);
        device::link::init()?;
        let links = Undo(device::link::exit);
        device::chardevs::init()?;
        let chardevs = Undo(device::chardevs::exit);
        mad::init()?;
        let mad = Undo(mad::exit);
        cm::init()?;
        let cm = Undo(cm::exit);
        cma::init()?;
        let cma = Undo(cma::exit);
        pr_info!("loaded\n");
        Ok(RdmaCore {
            _cma: cma,
            _cm: cm,
            _mad: mad,
            _chardevs: chardevs,
            _links: links,
            _registry: registry,
            _sysfs: sysfs,
            _net: net,
            _mem: mem,
        })
    }
}

impl Drop for RdmaCore {
    fn drop(&mut self) {
        pr_info!("unloading\n");
    }
}
