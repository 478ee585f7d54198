// SPDX-License-Identifier: GPL-2.0

//! The client's sysfs tree, with the kernel `rnbd-client`'s files and
//! texts but under `/sys/class/rdma_rs_rnbd_client` (both clients load in
//! one guest), each mapping's files in its directory in `ctl/devices/`
//! (the kernel's has a link there to the disk, and the files in the
//! disk's `rnbd/`):
//!
//! ```text
//! ctl/map_device                       rw  usage; takes the options
//! ctl/devices/<path@session>/block     -> the disk (/sys/block/rsrnbd<N>)
//! ctl/devices/<path@session>/
//!     state          r   init, open, closed or unmapped
//!     session        r   the session's name
//!     mapping_path   r   the device's name on the server
//!     access_mode    r   ro, rw or migration
//!     nr_poll_queues r   0 (no poll queues)
//!     unmap_device   rw  usage; takes normal or force
//!     resize         rw  usage; takes the disk's new size in sectors
//!     remap_device   rw  usage; takes 1: a closed device opened again
//! ```

use core::fmt::Write;
use core::sync::atomic::Ordering;

use kernel::c_str;
use kernel::prelude::*;
use kernel::str::CString;
use kernel::sync::Arc;

use rdma::kshim::blk::BlkDisk;
use rdma::kshim::class::{Page, SysClass, SysDir, SysFile, SysFiles};
use rtrs::proto::rnbd_clt::parse_sectors;
use rtrs::proto::rnbd_srv::mode_name;

use super::device::DevIo;
use super::Clt;

/// A directory without files.
struct NoFiles;

impl SysFiles for NoFiles {
    fn show(&self, _id: u32, _out: &mut Page) -> Result {
        Err(EINVAL)
    }
}

const MAP_DEVICE: u32 = 0;

const CTL_FILES: &[SysFile] = &[SysFile {
    name: c_str!("map_device"),
    id: MAP_DEVICE,
    writable: true,
}];

/// `ctl/map_device`.
struct CtlFiles;

impl SysFiles for CtlFiles {
    fn show(&self, _id: u32, out: &mut Page) -> Result {
        write!(
            out,
            "Usage: echo \"[dest_port=server port number] sessname=<name of the rtrs session> path=<[srcaddr@]dstaddr> [path=<[srcaddr@]dstaddr>] device_path=<full path on remote side> [access_mode=<ro|rw|migration>] [nr_poll_queues=<number of queues>]\" > map_device\n\naddr ::= [ ip:<ipv4> ]\n"
        )
        .map_err(|_| EINVAL)
    }

    fn store(&self, _id: u32, input: &[u8]) -> Result {
        Clt::get().ok_or(ENODEV)?.map(input)
    }
}

/// The class, `ctl` with `map_device`, and `ctl/devices`.
pub(crate) struct Tree {
    // Dropped in this order: children first.
    devices: SysDir,
    _ctl: SysDir,
    _class: Arc<SysClass>,
}

impl Tree {
    /// Registers the class and makes `ctl/map_device` and `ctl/devices`
    /// (module init). A write before the client is reachable gets
    /// `ENODEV`.
    pub(crate) fn new() -> Result<Tree> {
        let class = SysClass::new(c_str!("rdma_rs_rnbd_client"))?;
        let none: Arc<dyn SysFiles> = Arc::new(NoFiles, GFP_KERNEL)?;
        let ctl_ops: Arc<dyn SysFiles> = Arc::new(CtlFiles, GFP_KERNEL)?;
        let ctl = SysDir::top(&class, c_str!("ctl"), CTL_FILES, ctl_ops)?;
        let devices = ctl.child(c_str!("devices"), &[], none)?;
        Ok(Tree {
            devices,
            _ctl: ctl,
            _class: class,
        })
    }

    /// A mapping's directory `name` with its files and its `block` link.
    pub(crate) fn mapping_dir(
        &self,
        name: &[u8],
        io: Arc<DevIo>,
        disk: &BlkDisk,
    ) -> Result<SysDir> {
        let cname = CString::try_from_fmt(kernel::fmt!(
            "{}",
            core::str::from_utf8(name).map_err(|_| EINVAL)?
        ))?;
        let files: Arc<dyn SysFiles> = Arc::new(DevFiles { io }, GFP_KERNEL)?;
        let dir = self.devices.child(&cname, DEV_FILES, files)?;
        disk.link_from(&dir, c_str!("block"))?;
        Ok(dir)
    }
}

const STATE: u32 = 0;
const SESSION: u32 = 1;
const MAPPING_PATH: u32 = 2;
const ACCESS_MODE: u32 = 3;
const NR_POLL_QUEUES: u32 = 4;
const UNMAP_DEVICE: u32 = 5;
const RESIZE: u32 = 6;
const REMAP_DEVICE: u32 = 7;
/// Ours alone: reads and writes sent from their own pages and through a
/// buffer.
const COPIES: u32 = 8;

const DEV_FILES: &[SysFile] = &[
    SysFile {
        name: c_str!("state"),
        id: STATE,
        writable: false,
    },
    SysFile {
        name: c_str!("session"),
        id: SESSION,
        writable: false,
    },
    SysFile {
        name: c_str!("mapping_path"),
        id: MAPPING_PATH,
        writable: false,
    },
    SysFile {
        name: c_str!("access_mode"),
        id: ACCESS_MODE,
        writable: false,
    },
    SysFile {
        name: c_str!("nr_poll_queues"),
        id: NR_POLL_QUEUES,
        writable: false,
    },
    SysFile {
        name: c_str!("unmap_device"),
        id: UNMAP_DEVICE,
        writable: true,
    },
    SysFile {
        name: c_str!("resize"),
        id: RESIZE,
        writable: true,
    },
    SysFile {
        name: c_str!("remap_device"),
        id: REMAP_DEVICE,
        writable: true,
    },
    SysFile {
        name: c_str!("copies"),
        id: COPIES,
        writable: false,
    },
];

/// A mapping's files.
struct DevFiles {
    io: Arc<DevIo>,
}

impl SysFiles for DevFiles {
    fn show(&self, id: u32, out: &mut Page) -> Result {
        let io = &self.io;
        match id {
            STATE => writeln!(out, "{}", io.state().text()),
            SESSION => writeln!(out, "{}", io.sess.name_str()),
            MAPPING_PATH => writeln!(out, "{}", io.path_str()),
            ACCESS_MODE => writeln!(out, "{}", mode_name(io.mode)),
            NR_POLL_QUEUES => writeln!(out, "0"),
            RESIZE => writeln!(out, "Usage: echo <new size in sectors> > resize"),
            REMAP_DEVICE => writeln!(out, "Usage: echo <1> > remap_device"),
            COPIES => writeln!(
                out,
                "zero_copy {}\nbounced {}",
                io.zero_copy.load(Ordering::Relaxed),
                io.bounced.load(Ordering::Relaxed)
            ),
            _ => writeln!(out, "Usage: echo <normal|force> > unmap_device"),
        }
        .map_err(|_| EINVAL)
    }

    fn store(&self, id: u32, input: &[u8]) -> Result {
        let v = input.strip_suffix(b"\n").unwrap_or(input);
        match id {
            UNMAP_DEVICE => {}
            RESIZE => {
                let Some(n) = parse_sectors(v) else {
                    pr_err!(
                        "rnbd_client: {}: resize: invalid value\n",
                        self.io.path_str()
                    );
                    return Err(EINVAL);
                };
                return Clt::get().ok_or(ENODEV)?.resize(&self.io, n);
            }
            REMAP_DEVICE => {
                if v != b"1" {
                    pr_err!(
                        "rnbd_client: {}: remap_device: invalid value\n",
                        self.io.path_str()
                    );
                    return Err(EINVAL);
                }
                return self.io.remap().inspect_err(|e| {
                    pr_err!(
                        "rnbd_client: {}: remap_device: {}\n",
                        self.io.path_str(),
                        e.to_errno()
                    )
                });
            }
            _ => return Err(EACCES),
        }
        let force = match v {
            b"normal" => false,
            b"force" => true,
            _ => {
                pr_err!(
                    "rnbd_client: {}: unmap_device: invalid value\n",
                    self.io.path_str()
                );
                return Err(EINVAL);
            }
        };
        Clt::get().ok_or(ENODEV)?.unmap(&self.io, force)
    }
}
