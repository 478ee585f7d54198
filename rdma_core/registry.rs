// SPDX-License-Identifier: GPL-2.0

//! The core's registry of devices and clients, and who was added to whom.
//!
//! One mutex guards it and serialises registration: `add` and `remove` run
//! in registration order (FIFO for `add`, LIFO for `remove`) and never twice
//! for a pair.

use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};

use kernel::error::code::{EEXIST, ENFILE};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::{new_mutex, Arc, Mutex};

use crate::client::Client;
use crate::device::{self, Device, DeviceOps};
use crate::vec;

/// The largest number a `%d` device name template is given.
const MAX_NAME_INDEX: u32 = 1 << 16;

/// Registered devices and clients.
#[pin_data]
pub(crate) struct Registry {
    #[pin]
    state: Mutex<State>,
}

struct State {
    /// Registered devices, in registration order.
    devices: KVec<Arc<Device>>,
    /// Registered clients, in registration order.
    clients: KVec<Arc<dyn Client>>,
    /// The (device, client) pairs whose `add` succeeded.
    links: KVec<(Arc<Device>, Arc<dyn Client>)>,
}

/// The registry of the loaded module; set while `rdma_core` is loaded.
static REGISTRY: AtomicPtr<Registry> = AtomicPtr::new(ptr::null_mut());

/// Returns the registry.
///
/// Only code of this crate runs it, on behalf of a caller in this module or in
/// a module that links against it; such a module can only run between this
/// module's init (which publishes the registry) and its exit (which waits for
/// every dependent module to be unloaded before it clears it).
pub(crate) fn get() -> &'static Registry {
    let p = REGISTRY.load(Ordering::Acquire);
    debug_assert!(!p.is_null());
    // SAFETY: per the above, `p` points at the pinned registry owned by the
    // module struct, which outlives every caller.
    unsafe { &*p }
}

/// Compares clients by the address of their data (trait-object vtables of one
/// type may differ between codegen units, so fat-pointer equality is wrong).
fn same_client(a: &Arc<dyn Client>, b: &Arc<dyn Client>) -> bool {
    ptr::eq(
        &**a as *const dyn Client as *const u8,
        &**b as *const dyn Client as *const u8,
    )
}

impl Registry {
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Registry {
            state <- new_mutex!(State {
                devices: KVec::new(),
                clients: KVec::new(),
                links: KVec::new(),
            }),
        })
    }

    /// Makes `self` the registry that [`get`] returns.
    ///
    /// # Safety
    ///
    /// `self` must stay pinned and alive until [`Registry::unpublish`].
    pub(crate) unsafe fn publish(&self) {
        REGISTRY.store(ptr::from_ref(self).cast_mut(), Ordering::Release);
    }

    /// Undoes [`Registry::publish`].
    pub(crate) fn unpublish(&self) {
        REGISTRY.store(ptr::null_mut(), Ordering::Release);
    }

    fn name_taken(state: &State, name: &CStr) -> bool {
        state
            .devices
            .iter()
            .any(|d| d.name().as_bytes() == name.as_bytes())
    }

    pub(crate) fn register_device(
        &self,
        template: &CStr,
        ops: Arc<dyn DeviceOps>,
    ) -> Result<Arc<Device>> {
        let mut state = self.state.lock();
        let mut n = 0;
        let name = loop {
            let name = device::name_from_template(template, n)?;
            if !Self::name_taken(&state, &name) {
                break name;
            }
            if name.as_bytes() == template.as_bytes() {
                return Err(EEXIST);
            }
            n += 1;
            if n >= MAX_NAME_INDEX {
                return Err(ENFILE);
            }
        };
        let dev = Arc::new(Device::new(name, ops), GFP_KERNEL)?;
        state.devices.push(dev.clone(), GFP_KERNEL)?;
        let n = state.clients.len();
        state.links.reserve(n, GFP_KERNEL)?;
        for i in 0..state.clients.len() {
            let client = state.clients[i].clone();
            if client.add(&dev).is_ok() {
                // Cannot fail: capacity was reserved above.
                state.links.push((dev.clone(), client), GFP_KERNEL)?;
            }
        }
        Ok(dev)
    }

    pub(crate) fn unregister_device(&self, dev: &Arc<Device>) {
        let mut state = self.state.lock();
        for i in (0..state.clients.len()).rev() {
            let client = state.clients[i].clone();
            let link = vec::remove_first(&mut state.links, |(d, c)| {
                Arc::ptr_eq(d, dev) && same_client(c, &client)
            });
            if link.is_some() {
                client.remove(dev);
            }
        }
        vec::remove_first(&mut state.devices, |d| Arc::ptr_eq(d, dev));
    }

    pub(crate) fn register_client(&self, client: Arc<dyn Client>) -> Result {
        let mut state = self.state.lock();
        state.clients.push(client.clone(), GFP_KERNEL)?;
        let n = state.devices.len();
        state.links.reserve(n, GFP_KERNEL)?;
        for i in 0..state.devices.len() {
            let dev = state.devices[i].clone();
            if client.add(&dev).is_ok() {
                // Cannot fail: capacity was reserved above.
                state.links.push((dev, client.clone()), GFP_KERNEL)?;
            }
        }
        Ok(())
    }

    pub(crate) fn unregister_client(&self, client: &Arc<dyn Client>) {
        let mut state = self.state.lock();
        for i in (0..state.devices.len()).rev() {
            let dev = state.devices[i].clone();
            let link = vec::remove_first(&mut state.links, |(d, c)| {
                Arc::ptr_eq(d, &dev) && same_client(c, client)
            });
            if link.is_some() {
                client.remove(&dev);
            }
        }
        vec::remove_first(&mut state.clients, |c| same_client(c, client));
    }
}
