// SPDX-License-Identifier: GPL-2.0

//! Sans-IO RDMA protocol cores.
//!
//! Everything in this crate is pure Rust over `core` only: no allocation, no
//! `kernel` crate, no I/O. Each module is a single self-contained file so
//! that the kernel modules can compile it unchanged with
//! `#[path = "..."] mod name;`, while the host unit-tests it with
//! `cargo test -p rdma-proto`.
//!
//! - [`qp_state`]: the IBTA queue pair state machine and the attributes each
//!   `modify_qp` transition requires or accepts.
//! - [`verbs`]: work request and completion opcodes, statuses and flags.

#![no_std]

pub mod attr;
pub mod qp_state;
pub mod verbs;
