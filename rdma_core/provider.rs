// SPDX-License-Identifier: GPL-2.0

//! What a provider (a device driver such as `rxe`) uses of the core, in one
//! place: `use rdma::provider::...` is a provider's only way into the crate
//! (the lint holds `rxe/` to it), as [`crate::prelude`] is a ULP's.
//!
//! A provider gets:
//!
//! - its [`Driver`], which registers devices ([`Driver::register_device`])
//!   described by a [`DeviceDesc`] and served by its [`DeviceOps`], and
//!   unregisters them;
//! - a link type for `rdma link add`/`delete` ([`LinkRegistration`], its
//!   [`LinkOps`]), if it makes software devices on netdevs;
//! - its handles, which only a provider holds: [`ProviderDevice`] (GID and
//!   P_Key tables, events, its QPs by number through
//!   [`ProviderQp::by_qpn`] and its CQs through [`ProviderCq::of`]),
//!   [`ProviderQp`] (taking and completing work-queue entries, memory
//!   access, the error state, scheduling) and [`ProviderCq`];
//! - the QP callbacks it implements ([`QpOps`]) and the work-queue entries
//!   it executes ([`SendWqe`], [`WqeOp`], [`RecvWqe`]) and completes
//!   ([`Wc`]);
//! - the spec types of its attributes and packets (GIDs, MTUs, opcodes,
//!   completion status, QP states);
//! - the kernel facilities 6.12 lacks, as the core's `kshim` modules:
//!   [`net`] (netdevs and their events), [`udp`] (sockets, routes,
//!   transmit, CRC32), [`configfs`], [`sysfs`] pages, [`sync`]
//!   ([`SpinLockIrq`], [`new_spinlock_irq!`](crate::new_spinlock_irq)),
//!   [`work`] queues, [`timer`]s, [`mem`] buffers and SGEs, [`vec`]
//!   helpers and [`errno`] codes.
//!
//! To start: make a [`Driver`] at module init, implement [`DeviceOps`]
//! (with [`DeviceOps::create_qp`] returning your [`QpOps`]), register a
//! device, and in [`QpOps::run`] take send entries with
//! [`ProviderQp::sq_take_with`] (or [`ProviderQp::sq_with`] for one already
//! taken), then complete them in order with [`ProviderQp::sq_complete`].
//! `Documentation/rdma_core.rst` ("Provider side of a QP") has the rules;
//! `rxe/` and the selftests' software device
//! (`selftests/core/modules/rdma_swdev.rs`, `swdev_qp.rs`) are two
//! providers.

pub use crate::device::driver::Driver;
pub use crate::device::event::{Element, Event, EventKind};
pub use crate::device::link::{LinkOps, LinkRegistration};
pub use crate::device::port::{GidEntry, PortAttr};
pub use crate::device::{
    Device, DeviceAttr, DeviceCaps, DeviceDesc, DeviceOps, ProviderDevice, NAME_MAX,
};
/// The tag-matching headers a TM SRQ's messages start with.
pub use crate::spec::tm::header as tm_header;
pub use crate::verbs::ah::AhAttr;
pub use crate::verbs::cq::{CqCore, ProviderCq};
pub use crate::verbs::mr::{check_sges, AccessError};
pub use crate::verbs::qp::{ProviderQp, QpAttr, QpCore, QpInfo, QpOps, RqTake};
pub use crate::verbs::srq::tm::{Delivery as TmDelivery, TaggedRecv, TmCaps, TM_CAP_RC};
pub use crate::verbs::wc::Wc;
pub use crate::verbs::wr::{RecvWqe, SendWqe, TmJob, UdWqe, WqeOp, MAX_INLINE, MAX_SGE};

pub use crate::spec::attr::{
    Gid, GidType, LinkLayer, Mtu, NodeType, PhysState, PortRate, PortState,
};
pub use crate::spec::opcodes::{Access, SendFlags, WcFlags, WcOpcode, WcStatus, WrOpcode};
pub use crate::spec::qp_state::{AttrMask, QpState, QpType};

pub use crate::kshim::sync::SpinLockIrq;
pub use crate::kshim::{configfs, errno, mem, net, ratelimit, sync, sysfs, timer, udp, vec, work};
pub use crate::new_spinlock_irq;
