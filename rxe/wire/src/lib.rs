// SPDX-License-Identifier: GPL-2.0

//! The RoCE v2 wire format of the `rxe` software RoCE provider.
//!
//! Everything in this crate is pure Rust over `core` only: no allocation, no
//! `kernel` crate, no I/O, no floating point, and no panics on any input.
//! Each module is a single file that the kernel module can compile
//! unchanged with `#[path = "..."] mod name;`, while the host tests it
//! with `cargo test -p rxe-wire`. Modules refer to each other only as
//! `super::name`, so they must be compiled as siblings:
//!
//! - [`fault`]: fault injection decisions for tests (no dependencies);
//! - [`opcode`]: the BTH opcode table (no dependencies);
//! - [`psn`]: 24-bit PSN arithmetic (no dependencies);
//! - [`headers`]: BTH and extension headers (uses `opcode`);
//! - [`icrc`]: the invariant CRC, with a pluggable CRC-32 (uses `opcode`);
//! - [`segment`]: cutting messages into packets, per-packet opcodes and
//!   the ACK timeout (uses `opcode`);
//! - [`packet`]: parsing and building whole IPv4/IPv6 + UDP packets (uses
//!   `opcode`, `headers` and `icrc`).
//!
//! The reference for every value and layout is the Linux 6.12 `rdma_rxe`
//! driver, with which packets built here must interoperate; see
//! Documentation/rxe.rst.

#![cfg_attr(not(test), no_std)]

pub mod fault;
pub mod headers;
pub mod icrc;
pub mod opcode;
pub mod packet;
pub mod psn;
pub mod segment;

pub use headers::{
    Aeth, AtomicAckEth, AtomicEth, Bth, Deth, ExtHeaders, Feth, Ieth, ImmDt, NakCode, Rdeth, Reth,
    Syndrome, Truncated,
};
pub use icrc::{crc32_le, Crc32};
pub use opcode::{Class, ExtHeader, HeaderSet, Opcode, OpcodeInfo, Operation, Position, Transport};
pub use packet::{
    build, parse, BuildError, Headers, IpHeader, Ipv4, Ipv6, Packet, ParseError, Udp,
};
pub use psn::Psn;
