// SPDX-License-Identifier: GPL-2.0

//! The RTRS client.
//!
//! - [`session`]: a session over several paths: permits, requests and
//!   their completions, the multipath policy, failover, the keeper
//!   (heartbeats, reconnects); the ULP's API.
//! - [`path`]: one path: its connections, the INFO exchange, its memory,
//!   its failure and reconnection.
//! - [`con`]: one connection: its QP, CQ and receives.
//! - [`sysfs`]: `/sys/class/rdma_rs_rtrs_client`, the layout and texts of
//!   the kernel's `rtrs-client`.
//!
//! What each step is for, and how it meets the kernel's server, is in
//! Documentation/rtrs.rst.

pub mod con;
pub mod path;
pub mod session;
pub mod sysfs;

pub use crate::proto::mpath::Policy;
pub use path::{ClPath, Phase};
pub use session::{Attrs, ConType, Config, Dir, IoDone, LinkOps, PathAddr, Permit, Session};
