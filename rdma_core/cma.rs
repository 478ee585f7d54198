// SPDX-License-Identifier: GPL-2.0

//! The IP connection manager for ULPs (`rdma_cm`, `cma.c` of the C core),
//! in safe Rust, on the IB CM ([`crate::cm`]).
//!
//! C header: [`include/rdma/rdma_cm.h`](srctree/include/rdma/rdma_cm.h)
//!
//! A ULP makes a [`CmId`] in a network namespace with a [`CmHandler`], and
//! then, as with the C API:
//!
//! - active: [`CmIdCore::resolve_addr`] (event `AddrResolved`: the id has a
//!   device, port and source address), [`CmIdCore::resolve_route`]
//!   (`RouteResolved`), [`CmIdCore::create_qp`] (an RC QP on the id's
//!   device, moved to INIT), [`CmIdCore::connect`] (`Established`, or
//!   `Rejected` / `Unreachable`);
//! - passive: [`CmIdCore::bind_addr`] and [`CmIdCore::listen`]; a REQ for
//!   the port (on the bound address, or any) gives `ConnectRequest` with
//!   a new id in [`CmEvent::new_id`], on which the handler calls
//!   `create_qp` and [`CmIdCore::accept`] or [`CmIdCore::reject`];
//! - both: [`CmIdCore::disconnect`] (`Disconnected` on both sides), then
//!   `TimewaitExit`; `DeviceRemoval` when the device goes.
//!
//! Ids of the UDP and IPoIB port spaces ([`PortSpace`], [`CmId::new_in`])
//! are UD ids: they resolve addresses and join multicast groups
//! ([`CmIdCore::join_multicast`], event `MulticastJoin`); their QPs are
//! their owners' (user space's, through rdma_ucm). Their `connect`,
//! `listen`, `accept` and `reject` resolve services by SIDR: `connect`
//! gives `Established` with the service's QPN, Q_Key and address
//! ([`CmEvent::ud`]), or `Unreachable`.
//!
//! The CM moves the QP through INIT, RTR and RTS with the values of the
//! REQ and REP, as rdma_cm does. Over RoCE without an SA the route is made
//! from the IP route: IPv4-mapped (or IPv6) GIDs, P_Key 0xFFFF, the path
//! MTU from the route's MTU and the port's, packet life time 16, flow
//! label `(sport * 31 + dport) & 0xFFFFF`.
//!
//! # Events and context
//!
//! Each id delivers its events one at a time, in order, from a work item
//! (process context), with no lock of the CM held: the handler may call
//! `connect`, `accept`, `reject`, `disconnect` on the id it is called for,
//! and may return [`Disposition::Destroy`] to have the id destroyed. A
//! `CmId` dropped from its own handler does not wait for itself.
//!
//! # Lock order
//!
//! `IDS` (the live ids) before `CmIdCore::st`; `CmIdCore::st` before a
//! connection's lock before the IB CM's table; the event queue's
//! spinlock is a leaf (the waits for a handler sleep on `CmIdCore::idle`,
//! which releases it).
//!
//! # Files
//!
//! - [`id`]: the id itself, its state, creation and destruction, its QP;
//! - [`addr`]: addresses, `resolve_addr`, `resolve_route`, `bind_addr`;
//! - [`conn`]: `connect`, `accept`, `reject`, `disconnect` and the IB
//!   CM's events of a connection;
//! - [`listen`]: `listen` and the requests that come to a listener;
//! - [`event`]: the events and their delivery to the handler;
//! - [`mcast`]: the Q_Key of UD ids, and multicast over RoCE
//!   (`join_multicast`, `leave_multicast`);
//! - `ud`: UD ids' `connect`, `listen`, `accept` and `reject`, by SIDR;
//! - `user`: ids whose QP is user space's (rdma_ucm): the attributes
//!   for its moves (`init_qp_attr`) and the held RTU (`establish`);
//! - `client`: the internal client (device removal), module init and exit.

pub mod addr;
mod client;
pub mod conn;
pub mod event;
pub mod id;
pub mod listen;
pub mod mcast;
mod ud;
mod user;

pub use addr::{IpAddr, SockAddr};
pub use client::ids_on;
pub use conn::ConnParam;
pub use event::{CmEvent, CmHandler, Disposition, EventKind};
pub use id::{live_ids, CmId, CmIdCore, PortSpace};
pub use mcast::UdParam;

pub(crate) use client::{exit, init};
