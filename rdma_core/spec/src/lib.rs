// SPDX-License-Identifier: GPL-2.0

//! The kernel-independent part of the RDMA core: what the specification
//! (IBTA, and the C verbs ABI) fixes, as plain types and state machines.
//!
//! Everything in this crate is pure Rust over `core` only: no allocation, no
//! `kernel` crate, no I/O. Each module is a single self-contained file (siblings
//! refer to each other as `super::`) so that the kernel crate compiles it
//! unchanged as `rdma::spec`, while the host unit-tests it with
//! `cargo test -p rdma-spec`.
//!
//! - [`qp_state`]: the IBTA queue pair state machine and the attributes each
//!   `modify_qp` transition requires or accepts.
//! - [`opcodes`]: work request and completion opcodes, statuses and flags.
//! - [`attr`]: device and port attribute types (node type, link layer,
//!   port state, speeds and widths).
//! - [`mad`]: the management datagram (MAD) common header and the 256-byte
//!   MAD, with the management classes, methods and CM attribute IDs.
//! - [`cm_msg`]: the connection manager messages (REQ, MRA, REJ, REP, RTU,
//!   DREQ, DREP, SIDR REQ and REP), each field at the bit position IBA volume 1 chapter 12
//!   gives it, and the rdma_cm IP header carried in a REQ's private data.
//! - [`mad_send`]: a MAD agent's requests waiting for responses: timeouts,
//!   retries, response matching by transaction ID, transaction IDs.
//! - [`cm_state`]: the connection manager's per-connection state machine
//!   (REQ/REP/RTU, MRA, REJ, DREQ/DREP, retries, timewait), sans-IO.
//! - [`cm_sidr`]: service ID resolution (SIDR) in the connection
//!   manager: our SIDR REQs and the REPs that answer them, received SIDR
//!   REQs waiting for their answer (duplicates), sans-IO.
//! - [`cm_table`]: the connection manager's tables: connections keyed by
//!   communication ID, peer, peer QP and deadline, and the bound on
//!   half-open connections per port and per source, sans-IO.
//! - [`peer_region`]: the life of a memory region on a peer memory
//!   client's memory (Peer-Direct): invalidation, release, which client
//!   callbacks each step calls, sans-IO.
//! - [`netlink`]: the RDMA netlink family's NLDEV client (device
//!   discovery for libibverbs, `rdma dev`/`rdma link`): message and
//!   attribute parsing and building, request decoding, replies. A
//!   directory module, like `uverbs`.
//! - [`tm`]: tag matching in software: the TMH/RVH headers of tagged
//!   messages and a tag-matching SRQ's list (matching, phases), sans-IO. A
//!   directory module.
//! - [`uverbs`]: the legacy `write()` ABI of the uverbs character device
//!   (framing, command table, request and response structures, the rxe
//!   driver data, event records), as libibverbs uses it. A directory
//!   module: its files are siblings under `uverbs/`.

#![no_std]

pub mod attr;
pub mod cm_msg;
pub mod cm_sidr;
pub mod cm_state;
pub mod cm_table;
pub mod mad;
pub mod mad_send;
pub mod netlink;
pub mod opcodes;
pub mod peer_region;
pub mod qp_state;
pub mod tm;
pub mod uverbs;
