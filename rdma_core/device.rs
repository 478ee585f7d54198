// SPDX-License-Identifier: GPL-2.0

//! RDMA devices: what providers register and clients use.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)
//!
//! A provider implements [`DeviceOps`] and registers devices through its
//! [`Driver`](crate::driver::Driver). A [`Device`] is reference counted twice
//! over:
//!
//! - `Arc<Device>` keeps the memory alive, nothing more;
//! - a [`DeviceRef`] (from [`Device::try_get`] or [`get_by_name`]) is a
//!   *usage* reference, the `ib_device_try_get` of the C core: it can only be
//!   taken while the device is registered, and unregistration waits, after
//!   every client's `remove`, until the last one is dropped.

use core::ops::Deref;

use kernel::error::code::EINVAL;
use kernel::error::code::ENODEV;
use kernel::prelude::*;
use kernel::str::{CStr, CString};
use kernel::sync::{new_condvar, new_mutex, new_spinlock, Arc, CondVar, Mutex, SpinLock};
use kernel::workqueue::{impl_has_work, new_work, Work, WorkItem};

use crate::event::{self, EventQueue, Handlers};
use crate::registry::DevClients;
use crate::sync::SpinLockIrq;

/// The longest device name, terminator included (`IB_DEVICE_NAME_MAX`).
pub const NAME_MAX: usize = 64;

/// Device attributes (`struct ib_device_attr`); grows with the verbs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceAttr {
    /// Node GUID in network byte order, as a number.
    pub node_guid: u64,
    /// Firmware version.
    pub fw_ver: u64,
    /// The largest number of QPs the device supports.
    pub max_qp: u32,
}

/// The operations a provider implements for its devices.
///
/// Called by the core in process context; they may sleep unless the verb's
/// documentation says otherwise.
pub trait DeviceOps: Send + Sync {
    /// Returns the device's attributes (`query_device`).
    fn query_device(&self) -> Result<DeviceAttr>;
}

/// The usage count of a device and whether new usage is still allowed.
struct Usage {
    /// References: the registration's own plus every [`DeviceRef`].
    count: usize,
    /// Set when unregistration starts: `try_get` fails from then on.
    closed: bool,
}

/// A registered RDMA device.
#[pin_data]
pub struct Device {
    name: CString,
    driver_id: usize,
    /// The provider's operations; taken away once unregistration is done,
    /// so no provider code is reachable from a device that outlives it.
    #[pin]
    ops: SpinLock<Option<Arc<dyn DeviceOps>>>,
    #[pin]
    usage: SpinLockIrq<Usage>,
    #[pin]
    usage_released: CondVar,
    /// The clients added to this device and their data.
    #[pin]
    pub(crate) clients: Mutex<DevClients>,
    /// Signalled when a client's `remove` on this device returns.
    #[pin]
    pub(crate) client_removed: CondVar,
    /// Async events waiting for delivery; taken from any context.
    #[pin]
    pub(crate) events: SpinLockIrq<EventQueue>,
    /// Registered event handlers; held while they run.
    #[pin]
    pub(crate) handlers: Mutex<Handlers>,
    #[pin]
    pub(crate) event_work: Work<Device>,
    /// Runs a queued unregistration (`ib_unregister_device_queued`).
    #[pin]
    pub(crate) unreg_work: Work<Device, 1>,
}

impl_has_work! {
    impl HasWork<Self> for Device { self.event_work }
    impl HasWork<Self, 1> for Device { self.unreg_work }
}

impl WorkItem<1> for Device {
    type Pointer = Arc<Device>;

    fn run(this: Arc<Device>) {
        crate::registry::get().unregister_device(&this);
    }
}

impl WorkItem for Device {
    type Pointer = Arc<Device>;

    fn run(this: Arc<Device>) {
        event::deliver(&this);
    }
}

impl Device {
    pub(crate) fn new(
        name: CString,
        driver_id: usize,
        ops: Arc<dyn DeviceOps>,
    ) -> Result<Arc<Device>> {
        Arc::pin_init(
            pin_init!(Device {
                name,
                driver_id,
                ops <- new_spinlock!(Some(ops), "Device::ops"),
                usage <- crate::new_spinlock_irq!(Usage { count: 1, closed: false }, "Device::usage"),
                usage_released <- new_condvar!("Device::usage_released"),
                clients <- new_mutex!(DevClients::new(), "Device::clients"),
                client_removed <- new_condvar!("Device::client_removed"),
                events <- crate::new_spinlock_irq!(EventQueue::new(), "Device::events"),
                handlers <- new_mutex!(Handlers::new(), "Device::handlers"),
                event_work <- new_work!("Device::event_work"),
                unreg_work <- new_work!("Device::unreg_work"),
            }),
            GFP_KERNEL,
        )
    }

    /// The device's name (`rxe0`).
    pub fn name(&self) -> &CStr {
        &self.name
    }

    pub(crate) fn driver_id(&self) -> usize {
        self.driver_id
    }

    /// The provider's operations, or `ENODEV` once unregistration is done.
    fn ops(&self) -> Result<Arc<dyn DeviceOps>> {
        self.ops.lock().clone().ok_or(ENODEV)
    }

    /// Queries the device's attributes from its provider. May sleep.
    pub fn query_device(&self) -> Result<DeviceAttr> {
        crate::might_sleep();
        self.ops()?.query_device()
    }

    /// Takes a usage reference, unless the device is being unregistered
    /// (`ib_device_try_get`). Callable from any context.
    pub fn try_get(self: &Arc<Self>) -> Option<DeviceRef> {
        let mut usage = self.usage.lock();
        if usage.closed || usage.count == 0 {
            return None;
        }
        usage.count += 1;
        drop(usage);
        Some(DeviceRef { dev: self.clone() })
    }

    /// Drops one usage reference and wakes the unregistering thread on the
    /// last one.
    fn put(&self) {
        let mut usage = self.usage.lock();
        usage.count -= 1;
        if usage.count == 0 {
            self.usage_released.notify_all();
        }
    }

    /// Forbids new usage references, drops the registration's own, waits
    /// until every other one is dropped, then lets go of the provider.
    pub(crate) fn close_and_wait(&self) {
        let mut usage = self.usage.lock();
        usage.closed = true;
        usage.count -= 1;
        while usage.count > 0 {
            self.usage_released.wait(&mut usage);
        }
        // Under `usage`, so `wait_gone` cannot miss the wake-up.
        let ops = self.ops.lock().take();
        self.usage_released.notify_all();
        drop(usage);
        // The provider's drop code runs with no lock held.
        drop(ops);
    }

    /// Waits until an unregistration that another thread started is done.
    pub(crate) fn wait_gone(&self) {
        let mut usage = self.usage.lock();
        while usage.count > 0 || self.ops.lock().is_some() {
            self.usage_released.wait(&mut usage);
        }
    }

    /// Whether the device is registered and not being unregistered.
    pub fn is_registered(&self) -> bool {
        let usage = self.usage.lock();
        !usage.closed && usage.count > 0
    }
}

/// A usage reference to a registered device (`ib_device_try_get` /
/// `ib_device_put`): while it lives, unregistration of the device cannot
/// complete. Drop it promptly; it can be dropped from any context.
pub struct DeviceRef {
    dev: Arc<Device>,
}

impl DeviceRef {
    /// The device as an `Arc`, to keep its memory past this reference.
    pub fn arc(&self) -> &Arc<Device> {
        &self.dev
    }
}

impl Deref for DeviceRef {
    type Target = Device;

    fn deref(&self) -> &Device {
        &self.dev
    }
}

impl Drop for DeviceRef {
    fn drop(&mut self) {
        self.dev.put();
    }
}

/// Looks a registered device up by name and takes a usage reference.
pub fn get_by_name(name: &CStr) -> Option<DeviceRef> {
    crate::registry::get().find(|d| d.name().as_bytes() == name.as_bytes())
}

/// Usage references to every registered device, in registration order.
pub fn devices() -> Result<KVec<DeviceRef>> {
    crate::registry::get().snapshot()
}

/// Formats the name for index `n` of a template such as `rxe%d`.
///
/// A template without `%d` is a fixed name.
pub(crate) fn name_from_template(template: &CStr, n: u32) -> Result<CString> {
    let t = template.to_str().map_err(|_| EINVAL)?;
    let name = match t.find("%d") {
        Some(at) => CString::try_from_fmt(kernel::fmt!("{}{}{}", &t[..at], n, &t[at + 2..]))?,
        None => CString::try_from_fmt(kernel::fmt!("{}", t))?,
    };
    if name.is_empty()
        || name.len() >= NAME_MAX
        || name
            .to_str()
            .map_or(true, |s| s.contains('%') || s.contains('/'))
    {
        return Err(EINVAL);
    }
    Ok(name)
}
