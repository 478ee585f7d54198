// SPDX-License-Identifier: GPL-2.0

//! The RTRS server.
//!
//! - [`server`]: the listener, the table of paths, the ULP's callbacks.
//! - [`path`]: one client path: its connections, its chunk memory, the
//!   INFO exchange.
//! - [`con`]: one connection: its QP, its receives, the requests that
//!   arrive on it and the responses.
//! - `sysfs`: `/sys/class/rdma_rs_rtrs_server`, the layout and texts of
//!   the kernel's `rtrs-server`.
//!
//! The module's parameters (`sess_queue_depth`, `max_chunk_size`,
//! `always_invalidate`) are the [`Params`] that [`Server::open`] uses.
//!
//! What the kernel's client needs of a server, and why each step is where
//! it is, is in Documentation/rtrs.rst.

pub mod con;
pub mod path;
pub mod server;
pub(crate) mod sysfs;

pub use server::{Dir, Params, ParamsFault, Server, SrvOps, SrvRequest};

use kernel::prelude::*;
use kernel::types::ScopeGuard;

/// Module init: reads and checks the module's parameters (`EINVAL`,
/// logged, refuses the load), then registers the server's sysfs class.
pub(crate) fn init(module: &'static ThisModule) -> Result {
    let p = Params::from_module(module).inspect_err(|e| {
        pr_err!(
            "rtrs: not loaded: invalid module parameters (errno {})\n",
            e.to_errno()
        );
    })?;
    Params::set_module_default(Some(p))?;
    let undo = ScopeGuard::new(|| {
        let _ = Params::set_module_default(None);
    });
    sysfs::init()?;
    undo.dismiss();
    Ok(())
}

/// Module exit, after every server.
pub(crate) fn exit() {
    sysfs::exit();
    let _ = Params::set_module_default(None);
}
