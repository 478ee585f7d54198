// SPDX-License-Identifier: GPL-2.0

//! A device some session has open ([`Exported`]): how many opens it has
//! and how many of them write, and its sysfs directory
//! (`devices/<name>/`, with `block_dev` and `sessions/`), which goes
//! with its last open. The list of them is `Srv::devices`.

use kernel::fmt;
use kernel::prelude::*;
use kernel::str::CString;

use rdma::kshim::block::BlockDev;
use rdma::kshim::class::SysDir;

use super::sysfs::Tree;

/// A device with at least one open.
pub(crate) struct Exported {
    /// `%pg` of the device (`ram0`).
    name: CString,
    /// Opens by sessions.
    pub(crate) users: u32,
    /// Those of them that write (`rw`, `migration`).
    pub(crate) writers: u32,
    /// `sessions/` (a child holds its parent).
    pub(crate) sessions: SysDir,
}

impl Exported {
    /// A device first opened as `bdev`, with no open counted yet, and
    /// its directories.
    pub(crate) fn new(tree: &Tree, bdev: &BlockDev) -> Result<Exported> {
        let name = CString::try_from_fmt(fmt!(
            "{}",
            core::str::from_utf8(bdev.name()).map_err(|_| EINVAL)?
        ))?;
        let sessions = tree.device_dirs(&name, bdev)?;
        Ok(Exported {
            name,
            users: 0,
            writers: 0,
            sessions,
        })
    }

    /// The device's name.
    pub(crate) fn name(&self) -> &[u8] {
        self.name.as_bytes()
    }

    /// The name for log lines.
    pub(crate) fn name_str(&self) -> &str {
        self.name.to_str().unwrap_or("?")
    }
}
