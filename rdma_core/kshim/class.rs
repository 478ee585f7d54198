// SPDX-License-Identifier: GPL-2.0

//! Sysfs classes of other modules: `/sys/class/<class>/`, holding trees of
//! directories of read/write files, as the kernel's RTRS has
//! `/sys/class/rtrs-client/<session>/paths/<path>/stats/rdma`.
//!
//! C header: [`include/linux/device/class.h`](srctree/include/linux/device/class.h)
//!
//! A module registers a [`SysClass`] (with files of the class's own,
//! `/sys/class/<class>/<file>`, through [`SysClass::with_files`]), makes
//! top-level directories in it
//! with [`SysDir::top`] and directories below those with
//! [`SysDir::child`]. Each directory has a table of [`SysFile`]s, whose
//! text a [`SysFiles`] writes (`show`) and which it may take writes of
//! (`store`). A top-level directory is a device of the class (in
//! `/sys/devices/virtual/<class>/`, linked from `/sys/class/<class>/`), the
//! ones below are plain kobjects. The plumbing is C (`class_glue.c`).
//!
//! Dropping a [`SysDir`] removes its files at once, waiting for any `show`
//! or `store` in progress on them, so its [`SysFiles`] is not called once
//! `drop` returns. The directory itself goes with its last child: every
//! child holds a use of its parent, whatever order the handles are dropped
//! in. Every [`SysDir`] holds a reference on its [`SysClass`], which is
//! unregistered when its last reference goes, after every directory; the
//! class's own files are removed first, waiting for any `show` or `store`
//! in progress on them, so their [`SysFiles`] is not called once the
//! class is gone.
//!
//! Everything here is non-generic, so the other modules that use it reach
//! only exported Rust symbols of this crate, never its C glue.
//!
//! A `store` must not drop the [`SysDir`] its file is in, directly or
//! through a chain of drops: dropping waits for that very `store` to end
//! (lockdep reports it). A `store` that means to remove its directory (a
//! `remove_path` file) defers the drop to a work item. Nor may a directory
//! be dropped under a lock its `show` or `store` takes. The same holds for
//! a class file and the last reference to its [`SysClass`].

use core::ffi::c_void;
use core::ptr::NonNull;

use kernel::error::from_err_ptr;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

use crate::kshim::bindings;

/// The page a [`SysFiles::show`] writes into (`core::fmt::Write`).
pub use crate::kshim::sysfs::Page;

/// The longest name a directory entry may have (`NAME_MAX`).
const NAME_MAX: usize = 255;

/// `EINVAL` unless `name` can name a directory entry: not empty, not `.`
/// or `..`, no `/`, at most [`NAME_MAX`] bytes.
fn check_name(name: &CStr) -> Result {
    let b = name.as_bytes();
    if b.is_empty() || b.len() > NAME_MAX || b == b"." || b == b".." || b.contains(&b'/') {
        return Err(EINVAL);
    }
    Ok(())
}

/// A class of sysfs directories, `/sys/class/<name>`.
///
/// Registered by [`SysClass::new`] or [`SysClass::with_files`];
/// unregistered when the last reference goes, which is after every
/// [`SysDir`] of the class (each holds one).
///
/// # Invariants
///
/// - `raw` came from a successful `rdma_rs_sysclass_add` and is
///   unregistered only in `drop`.
/// - The context the glue hands `rdma_rs_class_show` and
///   `rdma_rs_class_store` for the class's own files is the address of
///   `_ops`' content (if any), freed after `raw` is unregistered (field
///   drop order).
pub struct SysClass {
    raw: NonNull<bindings::rdma_rs_sysclass>,
    /// Handed to C for the class's files; freed after they are removed.
    _ops: Option<KBox<Arc<dyn SysFiles>>>,
}

// SAFETY: the class is only unregistered, once, through this handle, from
// any thread in process context; `_ops` is `Send + Sync`.
unsafe impl Send for SysClass {}
// SAFETY: `&SysClass` only adds directories, which the class's mutex (in
// the glue) serialises.
unsafe impl Sync for SysClass {}

impl SysClass {
    /// Registers the class `/sys/class/<name>` (`name` one path component,
    /// copied). `EEXIST` if `/sys/class` has an entry `name` (the kernel's
    /// C stack has its own classes: pick another name). Process context.
    pub fn new(name: &CStr) -> Result<Arc<SysClass>> {
        Self::add(name, &[], None)
    }

    /// Registers the class `/sys/class/<name>` as [`SysClass::new`] does,
    /// with files of its own, `/sys/class/<name>/<file>` (as the C stack's
    /// `/sys/class/infiniband_verbs/abi_version`), shown and stored by
    /// `ops`. They are removed, waiting for any `show` or `store` in
    /// progress, before the class goes. `EINVAL` for a bad name or two
    /// files of one name; a top-level directory named as one of the files
    /// is `EEXIST`. Process context.
    pub fn with_files(
        name: &CStr,
        files: &[SysFile],
        ops: Arc<dyn SysFiles>,
    ) -> Result<Arc<SysClass>> {
        Self::add(name, files, Some(ops))
    }

    fn add(
        name: &CStr,
        files: &[SysFile],
        ops: Option<Arc<dyn SysFiles>>,
    ) -> Result<Arc<SysClass>> {
        check_name(name)?;
        let table = file_table(files)?;
        let ops = match ops {
            Some(ops) => Some(KBox::new(ops, GFP_KERNEL)?),
            None => None,
        };
        let ctx = ops.as_ref().map_or(core::ptr::null(), |o| {
            core::ptr::from_ref::<Arc<dyn SysFiles>>(o).cast::<c_void>()
        });
        // Why the call is sound:
        // - `name` and the names `table` points at (`table.len()` of them,
        //   which fits a `u32`, checked by `file_table`) are
        //   NUL-terminated and copied.
        // - `ctx` is null (no files) or only handed to
        //   `rdma_rs_class_show` and `rdma_rs_class_store`, which run until
        //   the class's files are removed in `drop`, before `ops` is
        //   freed; moving the box does not move its content.
        // SAFETY: as listed above: copied NUL-terminated names, a context
        // that outlives the files.
        let raw = unsafe {
            bindings::rdma_rs_sysclass_add(
                name.as_char_ptr(),
                table.as_ptr(),
                table.len() as u32,
                ctx,
            )
        };
        let raw = from_err_ptr(raw)?;
        let raw = NonNull::new(raw).ok_or(ENOMEM)?;
        // INVARIANT: registered above with `ops`' content as context;
        // should the allocation fail, `drop` unregisters it.
        Ok(Arc::new(SysClass { raw, _ops: ops }, GFP_KERNEL)?)
    }
}

impl SysClass {
    /// The registered class, for the crate's glue (`sysfs.rs` makes
    /// device trees in a class of this module).
    pub(crate) fn as_raw(&self) -> *mut bindings::rdma_rs_sysclass {
        self.raw.as_ptr()
    }
}

/// The glue's table of `files`: `EINVAL` for a bad name, two files of one
/// name, or more than `u32::MAX` files. The names are borrowed.
fn file_table(files: &[SysFile]) -> Result<KVec<bindings::rdma_rs_sysfile>> {
    u32::try_from(files.len()).map_err(|_| EINVAL)?;
    let mut table = KVec::with_capacity(files.len(), GFP_KERNEL)?;
    for (i, f) in files.iter().enumerate() {
        check_name(f.name)?;
        if files[..i]
            .iter()
            .any(|g| g.name.as_bytes() == f.name.as_bytes())
        {
            return Err(EINVAL);
        }
        table.push(
            bindings::rdma_rs_sysfile {
                name: f.name.as_char_ptr(),
                id: f.id,
                writable: f.writable,
            },
            GFP_KERNEL,
        )?;
    }
    Ok(table)
}

impl Drop for SysClass {
    fn drop(&mut self) {
        // No directory is left: each `SysDir` holds this `SysClass`, and
        // the last directory went with the last `SysDir`. The class's files
        // go first, waiting for `show` and `store`; `_ops` is freed after.
        // SAFETY: registered (type invariant), unregistered only here, and
        // empty (above).
        unsafe { bindings::rdma_rs_sysclass_del(self.raw.as_ptr()) }
    }
}

/// What the files of a [`SysDir`] show and take.
///
/// Both methods run in process context, may sleep, and may run
/// concurrently for several files or readers. They must not drop the
/// directory the file is in (see the [module docs](self)).
pub trait SysFiles: Send + Sync {
    /// Writes the text of the file with id `id` (the [`SysFile::id`] it
    /// was given) into `out`; an error is returned to the reader. At most
    /// a page less one byte fits: past it, `write!` fails.
    fn show(&self, id: u32, out: &mut Page) -> Result;

    /// A write of `input` (the bytes written, possibly ending in `'\n'`,
    /// at most a page) to the writable file with id `id`. `Err(e)` fails
    /// the write with `e`; `Ok` takes all of it. The default refuses
    /// (`EACCES`).
    fn store(&self, _id: u32, _input: &[u8]) -> Result {
        Err(EACCES)
    }
}

/// A file of a [`SysDir`].
#[derive(Clone, Copy, Debug)]
pub struct SysFile {
    /// The file's name (one path component; copied).
    pub name: &'static CStr,
    /// The number [`SysFiles::show`] and [`SysFiles::store`] are given.
    pub id: u32,
    /// Mode 0644 and stores reach [`SysFiles::store`]; else mode 0444.
    pub writable: bool,
}

/// A directory of a [`SysClass`] with files; its files are removed when it
/// is dropped, and the directory with its last child.
///
/// # Invariants
///
/// - `raw` came from a successful `rdma_rs_sysdir_add` for `class` and is
///   closed only in `drop`.
/// - The context the glue hands `rdma_rs_class_show` and
///   `rdma_rs_class_store` for the files of `raw` is the address of
///   `_ops`' content, freed after `raw` is closed (field drop order).
pub struct SysDir {
    raw: NonNull<bindings::rdma_rs_sysdir>,
    /// Handed to C; freed after the files are removed.
    _ops: KBox<Arc<dyn SysFiles>>,
    /// Outlives the directory, which is deleted under its lock.
    class: Arc<SysClass>,
}

// SAFETY: the directory is only closed through this handle, from any
// thread in process context; `_ops` and `class` are `Send + Sync`.
unsafe impl Send for SysDir {}
// SAFETY: `&SysDir` only adds children, which the class's mutex (in the
// glue) serialises.
unsafe impl Sync for SysDir {}

impl SysDir {
    /// Makes the top-level directory `/sys/class/<class>/<name>` (`name`
    /// one path component, copied) with `files`, shown and stored by
    /// `ops`. `EEXIST` if the class has a directory `name`; `EINVAL` for a
    /// bad name or two files of one name. Process context.
    pub fn top(
        class: &Arc<SysClass>,
        name: &CStr,
        files: &[SysFile],
        ops: Arc<dyn SysFiles>,
    ) -> Result<SysDir> {
        Self::add(class, None, name, files, ops)
    }

    /// Makes the directory `name` in this one (`name` one path component,
    /// copied, e.g. formatted at run time), with `files`, shown and stored
    /// by `ops`. `EEXIST` if this directory has an entry `name`; `EINVAL`
    /// for a bad name or two files of one name. The child holds a use of
    /// this directory, which stays (without its files) until the child is
    /// gone if this handle is dropped first. Process context.
    pub fn child(&self, name: &CStr, files: &[SysFile], ops: Arc<dyn SysFiles>) -> Result<SysDir> {
        Self::add(&self.class, Some(self), name, files, ops)
    }

    /// Adds a directory of `class`: on top without a `parent`, else in it.
    fn add(
        class: &Arc<SysClass>,
        parent: Option<&SysDir>,
        name: &CStr,
        files: &[SysFile],
        ops: Arc<dyn SysFiles>,
    ) -> Result<SysDir> {
        check_name(name)?;
        let table = file_table(files)?;
        // `file_table` checked that the length fits.
        let n = table.len() as u32;
        let parent = parent.map_or(core::ptr::null_mut(), |p| p.raw.as_ptr());
        let ops = KBox::new(ops, GFP_KERNEL)?;
        let ctx = core::ptr::from_ref::<Arc<dyn SysFiles>>(&ops).cast::<c_void>();
        // Why the call is sound:
        // - `class.raw` is a registered class (type invariant of
        //   `SysClass`), alive during the call.
        // - `parent` is null or a directory of that class whose handle is
        //   open (type invariant of `SysDir`, borrowed for the call); the
        //   child takes its own use of it.
        // - `name` and the `n` names `table` points at are NUL-terminated
        //   and copied.
        // - `ctx` is only handed to `rdma_rs_class_show` and
        //   `rdma_rs_class_store`, which run until the directory's files
        //   are removed when it is closed in `drop`, before `ops` is freed;
        //   moving the box does not move its content.
        // SAFETY: as listed above: a live class, an open parent or null,
        // copied NUL-terminated names, a context that outlives the files.
        let raw = unsafe {
            bindings::rdma_rs_sysdir_add(
                class.raw.as_ptr(),
                parent,
                name.as_char_ptr(),
                table.as_ptr(),
                n,
                ctx,
            )
        };
        let raw = from_err_ptr(raw)?;
        let raw = NonNull::new(raw).ok_or(ENOMEM)?;
        // INVARIANT: made above for `class`, with `ops`' content as
        // context.
        Ok(SysDir {
            raw,
            _ops: ops,
            class: class.clone(),
        })
    }
}

impl SysDir {
    /// The C directory, for links into it (`kshim::block`).
    pub(crate) fn raw(&self) -> *mut bindings::rdma_rs_sysdir {
        self.raw.as_ptr()
    }
}

impl Drop for SysDir {
    fn drop(&mut self) {
        // The close removes the files and returns once no `show` or `store`
        // runs on them, so `_ops`, freed after it, is unused by then; the
        // class outlives the call (`class` is dropped after it).
        // SAFETY: the handle is open (type invariant), closed only here.
        unsafe { bindings::rdma_rs_sysdir_close(self.raw.as_ptr()) }
    }
}

/// The `show` of every file of every [`SysDir`], from `class_glue.c`.
///
/// # Safety
///
/// `ctx` must be the context of a [`SysDir`] or [`SysClass`] whose files
/// are not removed yet, and `buf` a PAGE_SIZE buffer.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_class_show(
    ctx: *const c_void,
    id: u32,
    buf: *mut u8,
) -> isize {
    // SAFETY: per the function's contract `ctx` points at the live `ops`
    // of a directory or class (type invariants of `SysDir`, `SysClass`).
    let ops = unsafe { &*ctx.cast::<Arc<dyn SysFiles>>() };
    // SAFETY: `buf` is a PAGE_SIZE buffer (the function's contract).
    let mut out = unsafe { Page::new(buf) };
    match ops.show(id, &mut out) {
        // A `Page` holds less than a page, which fits.
        Ok(()) => out.len() as isize,
        Err(e) => e.to_errno() as isize,
    }
}

/// The `store` of every writable file of every [`SysDir`], from
/// `class_glue.c`.
///
/// # Safety
///
/// `ctx` must be the context of a [`SysDir`] or [`SysClass`] whose files
/// are not removed yet, and `buf` non-null and valid for reads of `len` bytes during the
/// call.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_class_store(
    ctx: *const c_void,
    id: u32,
    buf: *const u8,
    len: usize,
) -> isize {
    // SAFETY: per the function's contract `ctx` points at the live `ops`
    // of a directory or class (type invariants of `SysDir`, `SysClass`).
    let ops = unsafe { &*ctx.cast::<Arc<dyn SysFiles>>() };
    // SAFETY: `buf` is non-null and valid for reads of `len` bytes during
    // the call (the function's contract; sysfs does not write it
    // meanwhile).
    let input = unsafe { core::slice::from_raw_parts(buf, len) };
    match ops.store(id, input) {
        // sysfs hands over at most a page, so `len` fits.
        Ok(()) => isize::try_from(len).unwrap_or(isize::MAX),
        Err(e) => e.to_errno() as isize,
    }
}
