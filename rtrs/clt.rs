// SPDX-License-Identifier: GPL-2.0

//! The RTRS client.
//!
//! - [`session`]: a session over several paths: permits, requests and
//!   their completions, the multipath policy, failover, the keeper
//!   (heartbeats, reconnects); the ULP's API.
//! - [`path`]: one path: its connections, the INFO exchange, its
//!   failure and reconnection.
//! - `res`: a connected path's memory (receive buffers, request headers,
//!   data MRs).
//! - [`con`]: one connection: its QP, CQ and receives.
//! - [`sysfs`]: `/sys/class/rdma_rs_rtrs_client`, the layout and texts of
//!   the kernel's `rtrs-client`.
//!
//! The files import one another downwards only: `session` uses `path`,
//! `res`, `con` and `sysfs`; `path` uses `con` and `res`; `sysfs` uses
//! `path`. A path reaches its session through `path::PathOwner`, sysfs
//! through `sysfs::SessCtl`, both traits the session implements.
//!
//! What each step is for, and how it meets the kernel's server, is in
//! Documentation/rtrs.rst.

pub mod con;
pub mod path;
pub(crate) mod res;
pub mod session;
pub mod sysfs;

pub use crate::dir::Dir;
pub use crate::proto::mpath::Policy;
pub use path::{ClPath, PathAddr, Phase};
pub use session::{pages_fit, Attrs, ConType, Config, IoDone, LinkOps, Permit, Session};
