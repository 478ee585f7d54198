// SPDX-License-Identifier: GPL-2.0

//! configfs subsystems for providers: `mkdir` creates an item, its
//! attribute files show and store through Rust, `rmdir` drops it.
//!
//! The 6.12 kernel crate has no configfs; the plumbing is C
//! (`configfs_glue.c`), the behaviour is the provider's [`Group`] and
//! [`Item`]. configfs pins the owning module while items exist, so a
//! provider cannot be unloaded under its configuration: `rmdir` first, as
//! with every configfs user.

use core::ffi::c_void;
use core::ptr::NonNull;

use kernel::error::{code::EINVAL, from_err_ptr};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::ThisModule;

use crate::kshim::bindings;
use crate::kshim::sysfs::Page;

/// The most attribute files an item has.
pub const MAX_ATTRS: usize = 8;

/// One attribute file of every item of a subsystem.
#[derive(Clone, Copy)]
pub struct Attr {
    /// File name.
    pub name: &'static CStr,
    /// Whether it can be written (mode 0644, else 0444).
    pub writable: bool,
}

/// An item (a directory made by `mkdir`).
pub trait Item: Send + Sync {
    /// Writes the text of attribute `attr` (an index into the subsystem's
    /// attribute list) into `out`. Process context; may sleep.
    fn show(&self, attr: usize, out: &mut Page) -> Result;

    /// Takes what was written to attribute `attr`. Process context; may
    /// sleep. An error is what `write(2)` returns.
    fn store(&self, attr: usize, data: &[u8]) -> Result;
}

/// What `mkdir` and `rmdir` in the subsystem's directory do.
pub trait Group: Send + Sync {
    /// Makes the item for `mkdir <name>`; an error fails the `mkdir`.
    fn make_item(&self, name: &CStr) -> Result<Arc<dyn Item>>;

    /// `rmdir` of an item: undo what it set up. The item itself is dropped
    /// once configfs lets go of it.
    fn drop_item(&self, item: &Arc<dyn Item>);
}

/// A registered subsystem; unregistered on drop (module exit, when no
/// item is left, which configfs guarantees by pinning the module).
///
/// # Invariants
///
/// `raw` is a subsystem registered by the glue and unregistered only in
/// `drop`; the glue's group context is the address of `_group`'s content,
/// which lives until after that unregistration.
pub struct Subsystem {
    raw: NonNull<bindings::rdma_rs_cfs>,
    /// Handed to C as the group context; freed after unregistration.
    _group: KBox<Arc<dyn Group>>,
}

// SAFETY: the subsystem is only registered and unregistered through this
// handle; the C functions may be called from any process context.
unsafe impl Send for Subsystem {}
// SAFETY: `&Subsystem` gives no access to anything.
unsafe impl Sync for Subsystem {}

impl Subsystem {
    /// Registers `/sys/kernel/config/<name>/` (up to 31 bytes) whose items
    /// have the files `attrs`, for module `owner`.
    pub fn register(
        owner: &'static ThisModule,
        name: &'static CStr,
        attrs: &[Attr],
        group: Arc<dyn Group>,
    ) -> Result<Subsystem> {
        if attrs.len() > MAX_ATTRS || name.len() >= 32 {
            return Err(EINVAL);
        }
        let mut names = [core::ptr::null::<u8>(); MAX_ATTRS];
        let mut writable = [false; MAX_ATTRS];
        for (i, a) in attrs.iter().enumerate() {
            names[i] = a.name.as_char_ptr();
            writable[i] = a.writable;
        }
        let group = KBox::new(group, GFP_KERNEL)?;
        let ctx = core::ptr::from_ref::<Arc<dyn Group>>(&group).cast::<c_void>();
        // `ctx` points to a box this handle keeps until after
        // `rdma_rs_cfs_unregister`; `owner`, the module the items belong to,
        // unregisters the subsystem at its exit, so it outlives it.
        // SAFETY: the strings are NUL-terminated and copied by the glue;
        // `ctx` and `owner` stay valid as long as the glue uses them (above).
        let ret = unsafe {
            bindings::rdma_rs_cfs_register(
                owner.as_ptr().cast(),
                name.as_char_ptr(),
                ctx,
                names.as_ptr().cast(),
                writable.as_ptr(),
                attrs.len() as u32,
            )
        };
        let raw = from_err_ptr(ret)?;
        let raw = NonNull::new(raw).ok_or(EINVAL)?;
        // INVARIANT: registered above with `group`'s content as context.
        Ok(Subsystem { raw, _group: group })
    }
}

impl Drop for Subsystem {
    fn drop(&mut self) {
        // SAFETY: `raw` came from a successful registration and this is its
        // only unregistration.
        unsafe { bindings::rdma_rs_cfs_unregister(self.raw.as_ptr()) }
    }
}

/// Item contexts as C holds them: a thin pointer to a boxed `Arc`.
type ItemBox = KBox<Arc<dyn Item>>;

/// # Safety
///
/// `group` must be the context of a registered subsystem and `name` a
/// NUL-terminated string; `err` must be writable.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_cfs_make(
    group: *const c_void,
    name: *const u8,
    err: *mut i32,
) -> *const c_void {
    // SAFETY: per the contract, `group` points at the `Arc<dyn Group>` the
    // subsystem keeps alive while it is registered.
    let group = unsafe { &*group.cast::<Arc<dyn Group>>() };
    // SAFETY: `name` is NUL-terminated (configfs' item name).
    let name = unsafe { CStr::from_char_ptr(name.cast()) };
    let made = group
        .make_item(name)
        .and_then(|item| Ok(KBox::new(item, GFP_KERNEL)?));
    match made {
        Ok(b) => KBox::into_raw(b).cast_const().cast(),
        Err(e) => {
            // SAFETY: `err` is writable per the contract.
            unsafe { *err = e.to_errno() };
            core::ptr::null()
        }
    }
}

/// # Safety
///
/// `group` as for [`rdma_rs_cfs_make`]; `item` a context it returned and
/// not yet released.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_cfs_drop(group: *const c_void, item: *const c_void) {
    // SAFETY: per the contract.
    let (group, item) = unsafe {
        (
            &*group.cast::<Arc<dyn Group>>(),
            &*item.cast::<Arc<dyn Item>>(),
        )
    };
    group.drop_item(item);
}

/// # Safety
///
/// `item` must be a context [`rdma_rs_cfs_make`] returned, released once.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_cfs_release(item: *const c_void) {
    // SAFETY: it came from `KBox::into_raw` in `rdma_rs_cfs_make` and is
    // released only here, once.
    drop(unsafe { ItemBox::from_raw(item.cast_mut().cast()) });
}

/// # Safety
///
/// `item` must be a live item context and `page` a PAGE_SIZE buffer.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_cfs_show(
    item: *const c_void,
    attr: u32,
    page: *mut u8,
) -> isize {
    // SAFETY: per the contract.
    let item = unsafe { &*item.cast::<Arc<dyn Item>>() };
    // SAFETY: `page` is a PAGE_SIZE buffer per the contract.
    let mut out = unsafe { Page::new(page) };
    match item.show(attr as usize, &mut out) {
        Ok(()) => out.len() as isize,
        Err(e) => e.to_errno() as isize,
    }
}

/// # Safety
///
/// `item` must be a live item context and `buf` valid for `len` bytes.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_cfs_store(
    item: *const c_void,
    attr: u32,
    buf: *const u8,
    len: usize,
) -> isize {
    // SAFETY: per the contract.
    let item = unsafe { &*item.cast::<Arc<dyn Item>>() };
    // SAFETY: `buf` is valid for `len` bytes per the contract (configfs'
    // copy of what user space wrote).
    let data = unsafe { core::slice::from_raw_parts(buf, len) };
    match item.store(attr as usize, data) {
        Ok(()) => len as isize,
        Err(e) => e.to_errno() as isize,
    }
}
