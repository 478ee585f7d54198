// SPDX-License-Identifier: GPL-2.0

//! Plain sysfs directories under `/sys/kernel`, and directories of
//! read-only statistics files in them (or in a port's directory of
//! `/sys/class/rdma_rs`, [`crate::kshim::sysfs::Tree::port_dir`]: the port
//! groups of the device model).
//!
//! C header: [`include/linux/kobject.h`](srctree/include/linux/kobject.h)
//!
//! A [`KobjDir`] is an empty directory (`/sys/kernel/mm/memory_peers`); a
//! [`StatsDir`] is a directory of files (mode 0444) whose text a
//! [`KobjShow`] writes, as C code does with a `kobj_type` and
//! `kobj_attribute`s. Every directory holds a reference on its parent, so
//! a parent stays (in sysfs too) until its last child is gone, whatever
//! order the handles are dropped in. The plumbing is C (`kobj_glue.c`).

use core::ffi::c_void;
use core::ptr::NonNull;

use kernel::error::from_err_ptr;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

use crate::kshim::bindings;
use crate::kshim::sysfs::Page;

/// Where a top-level directory goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SysRoot {
    /// `/sys/kernel` (`kernel_kobj`).
    Kernel,
    /// `/sys/kernel/mm` (`mm_kobj`).
    Mm,
}

/// `EINVAL` unless `name` can name a directory entry.
fn check_name(name: &CStr) -> Result {
    if name.is_empty() || name.as_bytes().contains(&b'/') {
        return Err(EINVAL);
    }
    Ok(())
}

/// A sysfs directory; dropping it drops its reference (the directory goes
/// with its last child).
///
/// # Invariants
///
/// `raw` is a kobject in sysfs on which this handle owns one reference,
/// dropped in `drop`.
pub struct KobjDir {
    raw: NonNull<bindings::kobject>,
}

// SAFETY: kobject reference counts are atomic, and the handle only drops
// its reference (process context, any thread) or adds children.
unsafe impl Send for KobjDir {}
// SAFETY: `&KobjDir` only adds children, which the kobject core serialises.
unsafe impl Sync for KobjDir {}

impl KobjDir {
    /// Makes `/sys/kernel/<name>` or `/sys/kernel/mm/<name>` (`name` one
    /// path component); `EEXIST` if there is one. Process context.
    pub fn new_root(root: SysRoot, name: &CStr) -> Result<KobjDir> {
        check_name(name)?;
        let root = match root {
            SysRoot::Kernel => bindings::RDMA_RS_KOBJ_ROOT_KERNEL,
            SysRoot::Mm => bindings::RDMA_RS_KOBJ_ROOT_MM,
        };
        // SAFETY: `name` is NUL-terminated and copied; the glue returns a
        // new directory with a reference, or an error pointer.
        let raw = unsafe { bindings::rdma_rs_kobj_dir_add_root(root, name.as_char_ptr()) };
        Self::adopt(raw)
    }

    /// Makes the empty subdirectory `name`; `EEXIST` if there is an entry
    /// of that name. Process context.
    pub fn child(&self, name: &CStr) -> Result<KobjDir> {
        check_name(name)?;
        // SAFETY: `self.raw` is a live kobject in sysfs (type invariant);
        // `name` is NUL-terminated and copied; the glue returns a new
        // directory with a reference, or an error pointer.
        let raw = unsafe { bindings::rdma_rs_kobj_dir_add(self.raw.as_ptr(), name.as_char_ptr()) };
        Self::adopt(raw)
    }

    /// Takes over a reference to a directory another part of the shim
    /// made (a port's directory in `/sys/class/rdma_rs`, `sysfs.rs`).
    ///
    /// # Safety
    ///
    /// `raw` must be an error pointer, or a kobject in sysfs on which the
    /// caller owns one reference, which the handle takes over.
    pub(crate) unsafe fn from_raw(raw: *mut bindings::kobject) -> Result<KobjDir> {
        Self::adopt(raw)
    }

    /// Takes over the reference the glue returned with a new directory.
    fn adopt(raw: *mut bindings::kobject) -> Result<KobjDir> {
        let raw = from_err_ptr(raw)?;
        let raw = NonNull::new(raw).ok_or(ENOMEM)?;
        // INVARIANT: a directory the glue made, with its reference.
        Ok(KobjDir { raw })
    }
}

impl Drop for KobjDir {
    fn drop(&mut self) {
        // SAFETY: the handle owns one reference (type invariant), dropped
        // once, here.
        unsafe { bindings::rdma_rs_kobj_dir_put(self.raw.as_ptr()) }
    }
}

/// What the files of a [`StatsDir`] show.
pub trait KobjShow: Send + Sync {
    /// Writes the text of file `attr` (an index into the directory's
    /// `names`) into `out`. Process context; may sleep; may run
    /// concurrently for several files.
    fn show(&self, attr: usize, out: &mut Page) -> Result;
}

/// A directory of read-only files; removed when dropped.
///
/// Dropping it removes the files and waits for any `show` in progress, so
/// `source` is not called once `drop` returns.
///
/// # Invariants
///
/// - `raw` came from a successful `rdma_rs_stats_add` and is removed only
///   in `drop`.
/// - The context the glue hands `rdma_rs_kobj_show` is the address of
///   `source`'s content, freed after that removal (field drop order).
pub struct StatsDir {
    raw: NonNull<bindings::rdma_rs_stats>,
    /// Handed to C; freed after `raw` is removed.
    _source: KBox<Arc<dyn KobjShow>>,
}

// SAFETY: the directory is only removed through this handle, from any
// thread in process context; `source` is `Send + Sync`.
unsafe impl Send for StatsDir {}
// SAFETY: `&StatsDir` gives access to nothing.
unsafe impl Sync for StatsDir {}

impl StatsDir {
    /// Makes the directory `name` in `parent`, with one file (mode 0444)
    /// per entry of `names` (copied), shown by `source` given the entry's
    /// index. `EEXIST` if `parent` has an entry `name`. The directory
    /// holds a reference on `parent`, which may be dropped first. Process
    /// context.
    pub fn new(
        parent: &KobjDir,
        name: &CStr,
        names: &'static [&'static CStr],
        source: Arc<dyn KobjShow>,
    ) -> Result<StatsDir> {
        check_name(name)?;
        let n = u32::try_from(names.len()).map_err(|_| EINVAL)?;
        let mut ptrs = KVec::with_capacity(names.len(), GFP_KERNEL)?;
        for f in names {
            check_name(f)?;
            ptrs.push(f.as_char_ptr(), GFP_KERNEL)?;
        }
        let source = KBox::new(source, GFP_KERNEL)?;
        let ctx = core::ptr::from_ref::<Arc<dyn KobjShow>>(&source).cast::<c_void>();
        // SAFETY:
        // - `parent.raw` is a live kobject in sysfs (type invariant of
        //   `KobjDir`); the directory takes its own reference on it.
        // - `name` and the `n` strings `ptrs` points at are NUL-terminated
        //   and copied.
        // - `ctx` is only handed to `rdma_rs_kobj_show`, which runs until
        //   the directory is removed in `drop`, before `source` is freed;
        //   moving the box does not move its content.
        let raw = unsafe {
            bindings::rdma_rs_stats_add(
                parent.raw.as_ptr(),
                name.as_char_ptr(),
                ptrs.as_ptr(),
                n,
                ctx,
            )
        };
        let raw = from_err_ptr(raw)?;
        let raw = NonNull::new(raw).ok_or(ENOMEM)?;
        // INVARIANT: made above with `source`'s content as context.
        Ok(StatsDir {
            raw,
            _source: source,
        })
    }
}

impl Drop for StatsDir {
    fn drop(&mut self) {
        // SAFETY: the directory is live (type invariant) and this is its
        // only removal; it returns once no `show` runs, so `_source` is
        // unused when it is freed after this.
        unsafe { bindings::rdma_rs_stats_del(self.raw.as_ptr()) }
    }
}

/// The `show` of every file of every [`StatsDir`], from `kobj_glue.c`.
///
/// # Safety
///
/// `ctx` must be the context of a [`StatsDir`] not removed yet, and `buf`
/// a PAGE_SIZE buffer.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_kobj_show(
    ctx: *const c_void,
    attr: u32,
    buf: *mut u8,
) -> isize {
    // SAFETY: per the function's contract `ctx` points at the live `source`
    // of a directory (type invariant of `StatsDir`).
    let source = unsafe { &*ctx.cast::<Arc<dyn KobjShow>>() };
    // SAFETY: `buf` is a PAGE_SIZE buffer (the function's contract).
    let mut out = unsafe { Page::new(buf) };
    match source.show(attr as usize, &mut out) {
        Ok(()) => out.len() as isize,
        Err(e) => e.to_errno() as isize,
    }
}
