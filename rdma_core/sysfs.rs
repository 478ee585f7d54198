// SPDX-License-Identifier: GPL-2.0

//! Introspection in sysfs: `/sys/class/rdma_rs`, laid out as
//! `/sys/class/infiniband` is (see `sysfs_glue.c` for the tree).
//!
//! The class has its own name so that it never collides with the C stack's.
//! The kobject plumbing is C (`sysfs_glue.c`); every file's text is made
//! here, by [`rdma_rs_sysfs_show`], from the same verbs a client would call.

use core::ffi::c_void;
use core::fmt::{self, Write};
use core::ptr::NonNull;

use kernel::error::{code::EINVAL, from_err_ptr, to_result};
use kernel::prelude::*;

use crate::bindings;
use crate::bindings::rdma_rs_attr_id as id;
use crate::device::Device;

/// The size of the buffer sysfs gives a `show` callback.
const PAGE_SIZE: usize = 4096;

/// Registers the class. Module init only.
pub(crate) fn init() -> Result {
    // SAFETY: no preconditions; called once, at module init.
    to_result(unsafe { bindings::rdma_rs_sysfs_init() })
}

/// Unregisters the class. Module exit only, after every device is gone.
pub(crate) fn exit() {
    // SAFETY: `init` succeeded (the module loaded) and every device's tree
    // was removed (every provider module is gone).
    unsafe { bindings::rdma_rs_sysfs_exit() }
}

/// A device's sysfs tree; removed when dropped.
///
/// # Invariants
///
/// `raw` came from a successful `rdma_rs_sysfs_add` and is not freed yet.
pub(crate) struct Sysfs(NonNull<bindings::rdma_rs_sysfs>);

// SAFETY: the tree is only created and removed through this handle, and the
// C functions may be called from any thread in process context.
unsafe impl Send for Sysfs {}

impl Sysfs {
    /// Creates the tree of a registered device.
    ///
    /// The tree points at `dev` without owning a reference: it must be
    /// dropped while `dev` is alive (the registry does so in unregistration).
    pub(crate) fn add(dev: &Device) -> Result<Sysfs> {
        let dev_ptr = core::ptr::from_ref(dev).cast::<c_void>();
        // SAFETY: the name is NUL-terminated and copied; `dev_ptr` is only
        // handed back to `rdma_rs_sysfs_show`, which runs until the tree is
        // removed, before `dev` can go (per this function's contract).
        let raw = from_err_ptr(unsafe {
            bindings::rdma_rs_sysfs_add(
                dev.name().as_char_ptr(),
                dev_ptr,
                dev.port_count(),
                dev.gid_tbl_len(),
                dev.pkey_tbl_len(),
            )
        })?;
        // INVARIANT: not an error pointer, hence a valid tree.
        NonNull::new(raw).map(Sysfs).ok_or(EINVAL)
    }
}

impl Drop for Sysfs {
    fn drop(&mut self) {
        // SAFETY: by the type invariant the tree is live; this is its only
        // removal. It waits for `show` calls in progress.
        unsafe { bindings::rdma_rs_sysfs_del(self.0.as_ptr()) }
    }
}

/// Writes into the page sysfs or configfs gave a `show` callback.
pub struct Page {
    buf: *mut u8,
    len: usize,
}

impl Page {
    /// Wraps a page buffer.
    ///
    /// # Safety
    ///
    /// `buf` must be valid for writes of PAGE_SIZE bytes while the `Page`
    /// lives.
    pub(crate) unsafe fn new(buf: *mut u8) -> Page {
        Page { buf, len: 0 }
    }

    /// The bytes written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Write for Page {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let n = s.len();
        if self.len + n >= PAGE_SIZE {
            return Err(fmt::Error);
        }
        // SAFETY: `buf` is a PAGE_SIZE buffer (sysfs' contract) and the
        // bounds were checked above.
        unsafe { core::ptr::copy_nonoverlapping(s.as_ptr(), self.buf.add(self.len), n) };
        self.len += n;
        Ok(())
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
        _ => Err(EINVAL),
    }
}

/// The `show` of every file of the tree, called by `sysfs_glue.c`.
///
/// # Safety
///
/// `dev` must be the device pointer given to `rdma_rs_sysfs_add` for a tree
/// that is not removed yet, and `buf` a PAGE_SIZE buffer.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_sysfs_show(
    dev: *const c_void,
    attr: u32,
    port: u32,
    index: u32,
    buf: *mut u8,
) -> isize {
    // SAFETY: per the function's contract `dev` points at a live `Device`
    // (`Sysfs::add` keeps it alive until the tree is gone).
    let dev = unsafe { &*dev.cast::<Device>() };
    let mut out = Page { buf, len: 0 };
    match show(dev, attr, port, index, &mut out) {
        Ok(()) => out.len as isize,
        Err(e) => e.to_errno() as isize,
    }
}
