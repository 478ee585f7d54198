// SPDX-License-Identifier: GPL-2.0

//! The MAD layer: management datagrams on QP1 (`ib_mad.c` of the C core).
//!
//! C header: [`include/rdma/ib_mad.h`](srctree/include/rdma/ib_mad.h)
//!
//! The core owns the GSI QP (QP1) of every port that takes MADs
//! ([`DeviceOps::has_mad`](crate::device::DeviceOps::has_mad)): an internal
//! client of the core ([`port::MadClient`], registered before any ULP can
//! register) opens it when the device is added, with 512 receive buffers
//! of 40 + 256 bytes and 128 send slots of 256 bytes, as the C layer, and
//! closes it when the device goes. ULPs (the connection manager first)
//! talk through [`Agent`]s:
//!
//! - [`Agent::register`] for a management class and class version on one
//!   port; a request (method without the response bit) of that class and
//!   version arriving on the port goes to the agent's
//!   [`MadHandler::recv`], with the [`MadAddr`] that answers its sender;
//! - [`Agent::send`] sends one MAD to an address; with a [`Retry`] it waits
//!   for the response (same transaction ID, same class, method with the
//!   response bit), sends again after each timeout and gives up after the
//!   last retry ([`SendStatus::TimedOut`]); a response is matched to its
//!   agent by the high half of the transaction ID ([`Agent::new_tid`]) and
//!   delivered to `recv` with the request's cookie;
//! - every send ends with one [`MadHandler::send_done`];
//! - a GET or SET that no agent takes is answered with a GET_RESP of
//!   status "unsupported method/attribute", as the C layer does.
//!
//! The protocol logic (header codec, outstanding requests, transaction IDs)
//! is the host-tested `crate::spec::mad` and `crate::spec::mad_send`; this
//! module is the kernel glue around them.
//!
//! # Context and locking
//!
//! Handlers run in process context, from the port's CQ work (receives, send
//! completions) or its timer work (timeouts); never under a lock of this
//! layer. Lock order: `MadPort::agents` (mutex) before `AgentCore::state`
//! (mutex) before `MadPort::slots` (IRQ-safe spinlock). `MadPort::recv_gen`
//! (IRQ-safe spinlock) is taken with none of these, around the posting of a
//! receive (the QP's queue lock inside it). Dropping an
//! [`Agent`] waits until none of its handler calls runs: do not drop an
//! agent from its own handler.

pub mod agent;
pub mod port;

pub use crate::spec::mad_send::Retry;
pub use agent::{Agent, MadAddr, MadHandler, RecvMad, SendOpts, SendStatus};
pub use port::MadCounters;

pub(crate) use port::{exit, init};
