// SPDX-License-Identifier: GPL-2.0

//! The server's sysfs tree, laid out as the kernel's `rnbd-server` class
//! but under `/sys/class/rdma_rs_rnbd_server` (both servers load in one
//! guest):
//!
//! ```text
//! ctl/devices/<device>/block_dev              -> the block device
//! ctl/devices/<device>/sessions/<session>/
//!     read_only      r   1 for a read-only mapping
//!     access_mode    r   ro, rw or migration
//!     mapping_path   r   the name the client opened the device by
//!     force_close    rw  1: closes the device on the server's side; the
//!                        client's IO gets ENOTCONN until it unmaps
//! ```

use core::fmt::Write;

use kernel::c_str;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

use rdma::kshim::block::BlockDev;
use rdma::kshim::class::{Page, SysClass, SysDir, SysFile, SysFiles};
use rtrs::proto::rnbd::AccessMode;
use rtrs::proto::rnbd_srv::mode_name;

use super::device::Exported;
use super::session::Session;

/// The class's name.
const CLASS: &CStr = c_str!("rdma_rs_rnbd_server");

/// A directory without files.
struct NoFiles;

impl SysFiles for NoFiles {
    fn show(&self, _id: u32, _out: &mut Page) -> Result {
        Err(EINVAL)
    }
}

/// The class, `ctl` and `ctl/devices`.
pub(crate) struct Tree {
    // Dropped in this order: children first.
    devices: SysDir,
    _ctl: SysDir,
    _class: Arc<SysClass>,
}

impl Tree {
    /// Registers the class and makes `ctl/devices` (module init).
    pub(crate) fn new() -> Result<Tree> {
        let class = SysClass::new(CLASS)?;
        let none: Arc<dyn SysFiles> = Arc::new(NoFiles, GFP_KERNEL)?;
        let ctl = SysDir::top(&class, c_str!("ctl"), &[], none.clone())?;
        let devices = ctl.child(c_str!("devices"), &[], none)?;
        Ok(Tree {
            devices,
            _ctl: ctl,
            _class: class,
        })
    }

    /// A device's directory, its `block_dev` link and its `sessions/`
    /// (returned; it holds the device's directory).
    pub(crate) fn device_dirs(&self, name: &CStr, bdev: &BlockDev) -> Result<SysDir> {
        let none: Arc<dyn SysFiles> = Arc::new(NoFiles, GFP_KERNEL)?;
        let dir = self.devices.child(name, &[], none.clone())?;
        bdev.link_from(&dir, c_str!("block_dev"))?;
        dir.child(c_str!("sessions"), &[], none)
    }
}

const READ_ONLY: u32 = 0;
const ACCESS_MODE: u32 = 1;
const MAPPING_PATH: u32 = 2;
const FORCE_CLOSE: u32 = 3;

const SESS_DEV_FILES: &[SysFile] = &[
    SysFile {
        name: c_str!("read_only"),
        id: READ_ONLY,
        writable: false,
    },
    SysFile {
        name: c_str!("access_mode"),
        id: ACCESS_MODE,
        writable: false,
    },
    SysFile {
        name: c_str!("mapping_path"),
        id: MAPPING_PATH,
        writable: false,
    },
    SysFile {
        name: c_str!("force_close"),
        id: FORCE_CLOSE,
        writable: true,
    },
];

/// The files of a session's open of a device.
pub(crate) struct SessDevFiles {
    sess: Arc<Session>,
    id: u32,
    serial: u64,
    mode: AccessMode,
    mapping_path: KVec<u8>,
}

impl SessDevFiles {
    pub(crate) fn new(
        sess: Arc<Session>,
        id: u32,
        serial: u64,
        mode: AccessMode,
        mapping_path: &[u8],
    ) -> Result<SessDevFiles> {
        let mut p = KVec::with_capacity(mapping_path.len(), GFP_KERNEL)?;
        p.extend_from_slice(mapping_path, GFP_KERNEL)?;
        Ok(SessDevFiles {
            sess,
            id,
            serial,
            mode,
            mapping_path: p,
        })
    }
}

impl SysFiles for SessDevFiles {
    fn show(&self, id: u32, out: &mut Page) -> Result {
        let r = match id {
            READ_ONLY => writeln!(out, "{}", u8::from(self.mode == AccessMode::Ro)),
            ACCESS_MODE => writeln!(out, "{}", mode_name(self.mode)),
            MAPPING_PATH => writeln!(
                out,
                "{}",
                core::str::from_utf8(&self.mapping_path).unwrap_or("?")
            ),
            FORCE_CLOSE => writeln!(out, "Usage: echo 1 > force_close"),
            _ => return Err(EINVAL),
        };
        r.map_err(|_| EINVAL)
    }

    fn store(&self, id: u32, input: &[u8]) -> Result {
        if id != FORCE_CLOSE {
            return Err(EACCES);
        }
        let v = input.strip_suffix(b"\n").unwrap_or(input);
        if v != b"1" {
            return Err(EINVAL);
        }
        self.sess.force_close(self.id, self.serial)
    }
}

/// A session's directory in a device's `sessions/`.
pub(crate) fn session_dir(d: &Exported, sess: &CStr, files: Arc<SessDevFiles>) -> Result<SysDir> {
    d.sessions.child(sess, SESS_DEV_FILES, files)
}
