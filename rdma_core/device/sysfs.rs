// SPDX-License-Identifier: GPL-2.0

//! Introspection in sysfs: `/sys/class/rdma_rs`, laid out as
//! `/sys/class/infiniband` is (see `sysfs_glue.c` for the tree).
//!
//! The class has its own name so that it never collides with the C stack's.
//! The kobject plumbing is the bottom layer's (`kshim/sysfs.rs` and
//! `sysfs_glue.c`); every file's text is made here, from the same verbs a
//! client would call.

use core::fmt::{self, Write};

use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::sync::Arc;

use crate::device::Device;
use crate::kshim::sysfs::{attr_id as id, Page, Shape, SysfsShow, Tree};

pub(crate) use crate::kshim::sysfs::{exit, init};

/// A registered device's tree; removed when dropped. It holds a reference
/// to the device, given back when unregistration drops the tree.
pub(crate) struct Sysfs {
    _tree: Tree,
}

impl Sysfs {
    /// Creates the tree of a registered device.
    pub(crate) fn add(dev: &Arc<Device>) -> Result<Sysfs> {
        let shape = Shape {
            ports: dev.port_count(),
            gids: dev.gid_tbl_len(),
            pkeys: dev.pkey_tbl_len(),
            counters: dev.ops()?.hw_counter_names(),
            cm: (1..=dev.port_count()).all(|p| dev.has_mad(p)),
        };
        let source: Arc<dyn SysfsShow> = dev.clone();
        Ok(Sysfs {
            _tree: Tree::add(dev.name(), source, shape)?,
        })
    }
}

impl SysfsShow for Device {
    fn show(&self, attr: u32, port: u32, index: u32, out: &mut Page) -> Result {
        show(self, attr, port, index, out)
    }
}

fn write_guid(out: &mut Page, guid: u64) -> fmt::Result {
    writeln!(
        out,
        "{:04x}:{:04x}:{:04x}:{:04x}",
        (guid >> 48) & 0xffff,
        (guid >> 32) & 0xffff,
        (guid >> 16) & 0xffff,
        guid & 0xffff
    )
}

/// Formats one file.
fn show(dev: &Device, attr: u32, port: u32, index: u32, out: &mut Page) -> Result {
    let w = |r: fmt::Result| r.map_err(|_| EINVAL);
    match attr {
        id::RDMA_RS_ATTR_NODE_GUID => w(write_guid(out, dev.node_guid())),
        id::RDMA_RS_ATTR_SYS_IMAGE_GUID => w(write_guid(out, dev.query_device()?.sys_image_guid)),
        id::RDMA_RS_ATTR_RESOURCES => w(dev.res.write_counts(out)),
        id::RDMA_RS_ATTR_NODE_TYPE => w(writeln!(out, "{}", dev.node_type().sysfs_name())),
        id::RDMA_RS_ATTR_FW_VER => {
            let v = dev.query_device()?.fw_ver;
            w(writeln!(
                out,
                "{}.{}.{}",
                (v >> 32) & 0xffff,
                (v >> 16) & 0xffff,
                v & 0xffff
            ))
        }
        id::RDMA_RS_ATTR_PORT_STATE => w(writeln!(
            out,
            "{}",
            dev.query_port(port)?.state.sysfs_name()
        )),
        id::RDMA_RS_ATTR_PORT_PHYS_STATE => w(writeln!(
            out,
            "{}",
            dev.query_port(port)?.phys_state.sysfs_name()
        )),
        id::RDMA_RS_ATTR_PORT_LINK_LAYER => {
            w(writeln!(out, "{}", dev.link_layer(port)?.sysfs_name()))
        }
        id::RDMA_RS_ATTR_PORT_LID => w(writeln!(out, "0x{:x}", dev.query_port(port)?.lid)),
        id::RDMA_RS_ATTR_PORT_SM_LID => w(writeln!(out, "0x{:x}", dev.query_port(port)?.sm_lid)),
        id::RDMA_RS_ATTR_PORT_CAP_MASK => w(writeln!(
            out,
            "0x{:08x}",
            dev.query_port(port)?.port_cap_flags
        )),
        id::RDMA_RS_ATTR_GID => {
            // An empty entry reads as the zero GID, as in the C stack.
            let gid = dev
                .query_gid(port, index)
                .map(|e| e.gid)
                .unwrap_or_default();
            w(gid.write_sysfs(out).and_then(|()| out.write_char('\n')))
        }
        id::RDMA_RS_ATTR_GID_TYPE => w(writeln!(
            out,
            "{}",
            dev.query_gid(port, index)?.gid_type.sysfs_name()
        )),
        id::RDMA_RS_ATTR_PKEY => w(writeln!(out, "0x{:04x}", dev.query_pkey(port, index)?)),
        id::RDMA_RS_ATTR_CM_COUNTER => {
            // Zero until the CM runs on the port (its client adds it after
            // the tree exists) and after it stopped.
            let v = crate::cm::port::counters(dev, port).map_or(0, |c| {
                c.get_at((index / 16) as usize, (index % 16) as usize)
            });
            w(writeln!(out, "{}", v))
        }
        id::RDMA_RS_ATTR_HW_COUNTER => w(writeln!(
            out,
            "{}",
            dev.ops()?.hw_counter(port, index as usize)
        )),
        _ => Err(EINVAL),
    }
}
