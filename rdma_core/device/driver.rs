// SPDX-License-Identifier: GPL-2.0

//! Providers' handle on the core: device registration and the unload fence.
//!
//! A provider module creates one [`Driver`] (usually in its module struct)
//! and registers its devices through it. Dropping the `Driver` is the
//! "unregister all my devices" fence of module unload
//! (`ib_unregister_driver`): every device the driver registered is
//! unregistered, queued unregistrations included, before it returns, so no
//! code of the provider can run after its module is gone.

use core::ptr;

use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::workqueue;

use crate::device::registry;
use crate::device::{Device, DeviceDesc, DeviceOps, ProviderDevice};

/// A provider's registration with the core.
#[pin_data(PinnedDrop)]
pub struct Driver {
    name: &'static CStr,
    /// Every device registered through this driver that may still be
    /// registered or have a queued unregistration.
    #[pin]
    devices: Mutex<KVec<Arc<Device>>>,
}

impl Driver {
    /// Creates a driver handle named after the provider (`rxe`).
    pub fn new(name: &'static CStr) -> Result<Pin<KBox<Driver>>> {
        KBox::pin_init(
            pin_init!(Driver { name, devices <- new_mutex!(KVec::new(), "Driver::devices") }),
            GFP_KERNEL,
        )
    }

    /// The driver's name.
    pub fn name(&self) -> &'static CStr {
        self.name
    }

    pub(crate) fn id(&self) -> usize {
        ptr::from_ref(self) as usize
    }

    /// Registers a device (`ib_register_device`) as `desc` describes it
    /// (`EINVAL` for a bad description; `EEXIST` when a fixed name is taken).
    /// Every client's `add` runs before this returns; the device is fully
    /// usable then. Process context only.
    pub fn register_device(
        &self,
        desc: &DeviceDesc<'_>,
        ops: Arc<dyn DeviceOps>,
    ) -> Result<ProviderDevice> {
        crate::kshim::verb::might_sleep();
        let mut devices = self.devices.lock();
        devices.reserve(1, GFP_KERNEL)?;
        let dev = registry::get().register_device(desc, self.id(), ops)?;
        // Cannot fail: room was reserved above.
        let _ = devices.push(dev.clone(), GFP_KERNEL);
        Ok(ProviderDevice::new(dev))
    }

    /// Unregisters a device (`ib_unregister_device`): every client's
    /// `remove`, then waits for the last usage reference; the provider's
    /// `DeviceOps` is dropped before this returns. Process context, and not
    /// with a lock held that a client's `remove` might take (RTNL: use
    /// [`Driver::unregister_device_queued`]).
    pub fn unregister_device(&self, dev: &ProviderDevice) {
        let dev = dev.arc();
        registry::get().unregister_device(dev);
        crate::kshim::vec::remove_first(&mut self.devices.lock(), |d| Arc::ptr_eq(d, dev));
    }

    /// Unregisters a device later, from a workqueue
    /// (`ib_unregister_device_queued`). Callable with RTNL held.
    pub fn unregister_device_queued(&self, dev: &ProviderDevice) {
        // Already queued is fine: one unregistration is enough.
        let _ = workqueue::system_unbound().enqueue::<Arc<Device>, 1>(dev.arc().clone());
    }
}

#[pinned_drop]
impl PinnedDrop for Driver {
    fn drop(self: Pin<&mut Self>) {
        let devices = core::mem::take(&mut *self.devices.lock());
        for dev in devices.iter() {
            registry::get().unregister_device(dev);
            crate::kshim::work::flush(&dev.unreg_work);
        }
        if let Ok(left) = registry::get().devices_of(self.id()) {
            for dev in left.iter() {
                pr_warn!(
                    "{:?}: device {:?} outlived its driver\n",
                    self.name,
                    dev.name()
                );
                registry::get().unregister_device(dev);
            }
        }
    }
}
