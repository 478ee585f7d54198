// SPDX-License-Identifier: GPL-2.0

//! The kobject side of `/sys/class/rdma_rs`: the class, one tree of files
//! per device, and the page a `show` callback writes.
//!
//! A tree can also be made in a [`SysClass`] (`/sys/class/infiniband`, for
//! the view of `rdma::device::sysfs`): the same files, less `resources`,
//! which the C stack's tree does not have.
//!
//! The kobject plumbing is C (`sysfs_glue.c`, which lays the tree out as
//! `/sys/class/infiniband` is); every file's text comes from a
//! [`SysfsShow`] (the device model's is `rdma::device::sysfs`), called
//! through [`rdma_rs_sysfs_show`]. A port's directory
//! ([`Tree::port_dir`]) takes further directories of files
//! ([`StatsDir`](crate::kshim::kobj::StatsDir)) for the groups other
//! layers register there; they must be dropped before the tree.

use core::ffi::c_void;
use core::fmt::{self, Write};
use core::ptr::NonNull;

use kernel::error::{code::EINVAL, from_err_ptr, to_result};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::types::ARef;

use crate::kshim::bindings;
use crate::kshim::class::SysClass;
use crate::kshim::kobj::KobjDir;
use crate::kshim::net::NetDevice;

pub(crate) use crate::kshim::bindings::rdma_rs_attr_id as attr_id;

/// The size of the buffer sysfs and configfs give a `show` callback.
const PAGE_SIZE: usize = 4096;

/// Registers the class. Module init only.
pub(crate) fn init() -> Result {
    // SAFETY: no preconditions; called once, at module init.
    to_result(unsafe { bindings::rdma_rs_sysfs_init() })
}

/// Unregisters the class. Module exit only, after every tree is gone.
pub(crate) fn exit() {
    // SAFETY: `init` succeeded (the module loaded) and every tree was
    // removed (every device is unregistered once every provider module is
    // gone).
    unsafe { bindings::rdma_rs_sysfs_exit() }
}

/// What a tree's files show.
pub(crate) trait SysfsShow: Send + Sync {
    /// Writes file `attr` (an [`attr_id`]) of port `port`, entry `index`
    /// (for table files), into `out`.
    fn show(&self, attr: u32, port: u32, index: u32, out: &mut Page) -> Result;
}

/// The numbers of ports and table entries a tree has files for, and the
/// netdev of its `device` link.
pub(crate) struct Shape {
    pub(crate) ports: u32,
    pub(crate) gids: u32,
    pub(crate) pkeys: u32,
    /// The names of every port's `hw_counters` files (at most 31 bytes
    /// each; copied).
    pub(crate) counters: &'static [&'static CStr],
    /// A netdev of the device: the tree links to the parent of its device
    /// (`device`, as the C stack's tree of a hardware device does), if it
    /// has one. The link is made once, when the tree is; the device's
    /// netdevs must not change while the tree lives.
    pub(crate) link: Option<ARef<NetDevice>>,
}

/// One device's tree of files; removed when dropped.
///
/// # Invariants
///
/// - `raw` came from a successful `rdma_rs_sysfs_add` and is not freed yet.
/// - The pointer the C side hands back to `show` is that of `source`'s
///   content, alive as long as the tree (it is freed after `raw`).
/// - `raw` is in `class` if that is `Some`, which outlives it.
pub(crate) struct Tree {
    raw: NonNull<bindings::rdma_rs_sysfs>,
    /// Freed after `raw` (field order is drop order; see `drop`).
    _source: KBox<Arc<dyn SysfsShow>>,
    /// The class the tree is in (`None`: `rdma_rs`); dropped after `raw`.
    _class: Option<Arc<SysClass>>,
}

// SAFETY: the tree is only created and removed through this handle, and the
// C functions may be called from any thread in process context; `source`
// is `Send`.
unsafe impl Send for Tree {}

impl Tree {
    /// Creates the tree `name` whose files `source` shows, in `class` or,
    /// if `None`, in `rdma_rs`. The tree holds a reference to `source` and
    /// to `class` until it is dropped. `EEXIST` if the class has a
    /// directory `name`. Process context.
    pub(crate) fn add(
        class: Option<&Arc<SysClass>>,
        name: &CStr,
        source: Arc<dyn SysfsShow>,
        shape: Shape,
    ) -> Result<Tree> {
        let source = KBox::new(source, GFP_KERNEL)?;
        let cookie = core::ptr::from_ref::<Arc<dyn SysfsShow>>(&source).cast::<c_void>();
        let mut names = KVec::with_capacity(shape.counters.len(), GFP_KERNEL)?;
        for n in shape.counters {
            if n.len() >= 32 {
                return Err(EINVAL);
            }
            names.push(n.as_char_ptr(), GFP_KERNEL)?;
        }
        let cls = class.map_or(core::ptr::null_mut(), |c| c.as_raw());
        let link = shape
            .link
            .as_ref()
            .map_or(core::ptr::null_mut(), |nd| nd.as_raw());
        // SAFETY: `cls` is null or a registered class (type invariant of
        // `SysClass`), which the tree keeps until it is removed; the name
        // and the counter names (`names.len()` pointers to NUL-terminated
        // strings, alive during the call) are copied; `cookie` is only
        // handed back to `rdma_rs_sysfs_show`, which runs until the tree is
        // removed in `drop`, before `source` is freed; `link` is null or a
        // net_device on which `shape.link` holds a reference during the
        // call (the glue keeps no pointer to it, only the link to its
        // parent's sysfs directory, which holds that directory's node).
        let raw = unsafe {
            bindings::rdma_rs_sysfs_add(
                cls,
                name.as_char_ptr(),
                cookie,
                shape.ports,
                shape.gids,
                shape.pkeys,
                names.as_ptr(),
                names.len() as u32,
                link,
            )
        };
        let raw = from_err_ptr(raw)?;
        // INVARIANT: not an error pointer, hence a valid tree showing
        // `source`, in `class` if given.
        let raw = NonNull::new(raw).ok_or(EINVAL)?;
        Ok(Tree {
            raw,
            _source: source,
            _class: class.cloned(),
        })
    }

    /// The directory of port `port` (from 1), to add directories to.
    /// `EINVAL` for a port the tree does not have. Whatever is added must
    /// be removed before the tree is dropped: the tree's removal takes
    /// the whole device directory out of sysfs. Process context.
    pub(crate) fn port_dir(&self, port: u32) -> Result<KobjDir> {
        // SAFETY: by the type invariant the tree is live; the glue checks
        // the port and returns its directory with a new reference, or an
        // error pointer.
        let raw = unsafe { bindings::rdma_rs_sysfs_port_dir(self.raw.as_ptr(), port) };
        // SAFETY: an error pointer or a kobject in sysfs (the port's
        // directory) on which we own the reference the glue took.
        unsafe { KobjDir::from_raw(raw) }
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        // SAFETY: by the type invariant the tree is live; this is its only
        // removal. It waits for `show` calls in progress, so `_source` is no
        // longer used when it is freed after this.
        unsafe { bindings::rdma_rs_sysfs_del(self.raw.as_ptr()) }
    }
}

/// Writes into the page sysfs or configfs gave a `show` callback.
///
/// # Invariants
///
/// `buf` is valid for writes of `PAGE_SIZE` bytes while the `Page` lives,
/// and `len < PAGE_SIZE`.
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
        // INVARIANT: the caller's guarantee; nothing written yet.
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
        // SAFETY: `buf` is valid for PAGE_SIZE bytes (type invariant) and
        // the bounds were checked above.
        unsafe { core::ptr::copy_nonoverlapping(s.as_ptr(), self.buf.add(self.len), n) };
        self.len += n;
        Ok(())
    }
}

/// The `show` of every file of every tree, called by `sysfs_glue.c`.
///
/// # Safety
///
/// `cookie` must be the pointer a [`Tree`] gave `rdma_rs_sysfs_add`, for a
/// tree that is not removed yet, and `buf` a PAGE_SIZE buffer.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_sysfs_show(
    cookie: *const c_void,
    attr: u32,
    port: u32,
    index: u32,
    buf: *mut u8,
) -> isize {
    // SAFETY: per the function's contract `cookie` points at the live
    // `source` of a tree (type invariant of `Tree`).
    let source = unsafe { &*cookie.cast::<Arc<dyn SysfsShow>>() };
    // SAFETY: `buf` is a PAGE_SIZE buffer (the function's contract).
    let mut out = unsafe { Page::new(buf) };
    match source.show(attr, port, index, &mut out) {
        Ok(()) => out.len as isize,
        Err(e) => e.to_errno() as isize,
    }
}
