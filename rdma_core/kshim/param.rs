// SPDX-License-Identifier: GPL-2.0

//! A module's own parameters, read by name.
//!
//! C header: [`include/linux/moduleparam.h`](srctree/include/linux/moduleparam.h)
//!
//! 6.12's `module!` macro declares no parameters. A Rust module that needs
//! some declares them in a small C file linked into its `.ko`
//! (`module_param(name, type, 0444)`): the loader parses them from the
//! command line before the module's init runs, and they show in
//! `/sys/module/<module>/parameters/`. The init reads them back here, by
//! name, as that sysfs file shows them: [`text`], or parsed by [`get_bool`]
//! and [`get_int`]. The plumbing is C (`param_glue.c`): the module's table
//! of parameters and each parameter's own `get` operation.

use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::ThisModule;

use crate::kshim::bindings;

/// A parameter's text, without its trailing newline.
pub struct ParamText {
    buf: KVec<u8>,
    len: usize,
}

impl ParamText {
    /// The text's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        let t = &self.buf[..self.len];
        t.strip_suffix(b"\n").unwrap_or(t)
    }
}

/// The text of parameter `name` of `module` (the caller's own), as
/// `/sys/module/<module>/parameters/<name>` shows it. `ENOENT` if the
/// module has no parameter of that name, `EPERM` if it cannot be read.
/// Process context (takes the module's parameter lock).
pub fn text(module: &'static ThisModule, name: &CStr) -> Result<ParamText> {
    let mut buf = KVec::from_elem(0u8, PAGE_SIZE, GFP_KERNEL)?;
    let m = module.as_ptr().cast::<bindings::module>();
    // Why the call is sound:
    // - `m` is the caller's own module (a `ThisModule` lives in its
    //   module's data), loaded while its code runs; its table of
    //   parameters lives as long as it does. NULL (the kernel proper) is
    //   refused by the glue.
    // - `name` is NUL-terminated and only read during the call.
    // - `buf` is a page of writable bytes, what a parameter's `get`
    //   operation may fill, and nothing else uses it during the call.
    // SAFETY: as listed above: a loaded module or NULL, a NUL-terminated
    // name, a page-sized buffer.
    let ret = unsafe {
        bindings::rdma_rs_module_param_get(m, name.as_char_ptr(), buf.as_mut_ptr().cast())
    };
    let len = usize::try_from(ret).map_err(|_| Error::from_errno(ret))?;
    if len > buf.len() {
        return Err(EINVAL);
    }
    Ok(ParamText { buf, len })
}

/// Parameter `name` of `module`, a `bool` (`Y` or `N`, as the kernel shows
/// one; `EINVAL` for other text). As [`text`] otherwise.
pub fn get_bool(module: &'static ThisModule, name: &CStr) -> Result<bool> {
    match text(module, name)?.as_bytes() {
        b"Y" | b"y" | b"1" => Ok(true),
        b"N" | b"n" | b"0" => Ok(false),
        _ => Err(EINVAL),
    }
}

/// Parameter `name` of `module`, an integer (`int`, `uint`, `long`,
/// `short`, ...: decimal, as the kernel shows one; `EINVAL` for other text
/// or a value beyond `i64`). As [`text`] otherwise.
pub fn get_int(module: &'static ThisModule, name: &CStr) -> Result<i64> {
    let t = text(module, name)?;
    core::str::from_utf8(t.as_bytes())
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .ok_or(EINVAL)
}
