// SPDX-License-Identifier: GPL-2.0

//! The RTRS server.
//!
//! - [`server`]: the listener, the table of paths, the ULP's callbacks.
//! - [`path`]: one client path: its connections, its chunk memory, the
//!   INFO exchange.
//! - [`con`]: one connection: its QP, its receives, the requests that
//!   arrive on it and the responses.
//!
//! What the kernel's client needs of a server, and why each step is where
//! it is, is in Documentation/rtrs.rst.

pub mod con;
pub mod path;
pub mod server;

pub use server::{Dir, Params, Server, SrvOps, SrvRequest};
