// SPDX-License-Identifier: GPL-2.0

//! A reference on a module (`try_module_get`): an object whose code lives
//! in a module (a trait object's vtable) and that other modules hold keeps
//! that module loaded while it exists.

use kernel::ThisModule;

use crate::kshim::bindings;

/// A reference on a module, dropped with the value.
///
/// # Invariants
///
/// `module` is a loaded module on which this value holds one reference
/// (or NULL, the kernel proper, which needs none).
pub struct ModuleRef {
    module: *mut bindings::module,
}

// SAFETY: a module reference may be dropped on any thread.
unsafe impl Send for ModuleRef {}
// SAFETY: a shared reference gives nothing.
unsafe impl Sync for ModuleRef {}

impl ModuleRef {
    /// A reference on `module`; `None` if it is being unloaded. Any
    /// context.
    pub fn get(module: &'static ThisModule) -> Option<ModuleRef> {
        let m = module.as_ptr().cast::<bindings::module>();
        // SAFETY: `module` is the caller's own module (a `ThisModule`
        // lives in its module's data), loaded while its code runs.
        if unsafe { bindings::rdma_rs_module_get(m) } {
            // INVARIANT: the reference just taken.
            Some(ModuleRef { module: m })
        } else {
            None
        }
    }
}

impl Drop for ModuleRef {
    fn drop(&mut self) {
        // SAFETY: the reference this value holds (type invariant).
        unsafe { bindings::rdma_rs_module_put(self.module) };
    }
}
