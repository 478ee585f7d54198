// SPDX-License-Identifier: GPL-2.0

//! The wire protocol of RTRS, the RDMA transport of the kernel's RNBD, as
//! a sans-IO codec, and the RNBD messages it carries.
//!
//! Everything in this crate is pure Rust over `core` only: no allocation, no
//! `kernel` crate, no I/O, and no panics on any input. Each module is a
//! single file that the kernel module compiles unchanged as a `#[path]`
//! module, while the host tests it with `cargo test -p rtrs-proto`.
//! Modules refer to each other only as `super::name`, so they must be
//! compiled as siblings:
//!
//! - [`error`]: the error type of every codec (no dependencies);
//! - [`consts`]: version, magic, message types, flags, immediate types
//!   and widths, limits and defaults (no dependencies);
//! - `le`: little-endian field access (uses `error`; crate-private);
//! - [`conn`]: `rtrs_msg_conn_req` and `rtrs_msg_conn_rsp`, the private
//!   data of the rdma_cm connect, accept and reject, and where `conn_req`
//!   sits behind the rdma_cm header (uses `consts`, `error`, `le`);
//! - [`imm`]: the 32-bit immediate data: type, IO request and response
//!   payloads, `mem_bits` (uses `consts`, `error`);
//! - [`msg`]: INFO_REQ, INFO_RSP, RKEY_RSP and the read and write
//!   requests, with their descriptor arrays borrowed, not copied (uses
//!   `consts`, `error`, `imm`, `le`);
//! - [`chunk`]: where a request lies in a server chunk, for the client
//!   that writes it and the server that finds it, with every bound checked
//!   (uses `consts`, `conn`, `error`, `imm`, `msg`);
//! - [`rnbd`]: the RNBD messages carried as RTRS user messages (uses
//!   `error`, `le`).
//! - [`rnbd_srv`]: what an RNBD server decides from them: the block
//!   operation of an IO, the path of an OPEN's device, the access modes
//!   a device admits (uses `error`, `rnbd`).
//! - [`rnbd_clt`]: what an RNBD client decides: the `map_device`
//!   options, a mapping's directory name, the disk limits an OPEN answer
//!   may give, the `rw` word of an IO (uses `error`, `rnbd`, `rnbd_srv`).
//! - [`pieces`]: whether a request's pieces of pages make one region a
//!   fast registration maps without a copy (no dependencies).
//! - [`mpath`]: the decisions of a multipath client session: the
//!   multipath policy and the choice of a path for each IO, the reconnect
//!   schedule, the heartbeat miss counter and round trip, and the permit
//!   bitmap (uses `consts`, `error`).
//!
//! The reference for every value and layout is Linux 6.12:
//! drivers/infiniband/ulp/rtrs/rtrs-pri.h (and rtrs-clt.c, rtrs-srv.c for
//! what each side checks, rtrs.c and rtrs-clt-sysfs.c for the heartbeat
//! and the client's settings) and drivers/block/rnbd/rnbd-proto.h, with which
//! the modules built on this crate must interoperate.

#![no_std]

pub mod chunk;
pub mod conn;
pub mod consts;
pub mod error;
pub mod imm;
mod le;
pub mod mpath;
pub mod msg;
pub mod pieces;
pub mod rnbd;
pub mod rnbd_clt;
pub mod rnbd_srv;

pub use error::Error;
