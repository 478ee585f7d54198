// SPDX-License-Identifier: GPL-2.0

//! RDMA devices, as providers register them.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)
//!
//! A provider implements [`DeviceOps`] and registers a device with
//! [`Registration::new`]; the device is unregistered when the registration is
//! dropped. Clients ([`crate::client`]) see every registered device through
//! their `add` and `remove` callbacks.

use kernel::error::code::EINVAL;
use kernel::prelude::*;
use kernel::str::{CStr, CString};
use kernel::sync::Arc;

use crate::registry;

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
/// Called by the core in process context; they may sleep.
pub trait DeviceOps: Send + Sync {
    /// Returns the device's attributes (`query_device`).
    fn query_device(&self) -> Result<DeviceAttr>;
}

/// A registered RDMA device.
///
/// Shared by the core, its provider and every client that was added to it.
pub struct Device {
    name: CString,
    ops: Arc<dyn DeviceOps>,
}

impl Device {
    pub(crate) fn new(name: CString, ops: Arc<dyn DeviceOps>) -> Self {
        Device { name, ops }
    }

    /// The device's name (`rxe0`).
    pub fn name(&self) -> &CStr {
        &self.name
    }

    /// Queries the device's attributes from its provider. May sleep.
    pub fn query_device(&self) -> Result<DeviceAttr> {
        crate::might_sleep();
        self.ops.query_device()
    }
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
    if name.is_empty() || name.len() >= NAME_MAX || name.to_str().map_or(true, |s| s.contains('%'))
    {
        return Err(EINVAL);
    }
    Ok(name)
}

/// A device registration: the device is registered while this lives.
///
/// Dropping it unregisters the device: every client's `remove` runs first.
pub struct Registration {
    dev: Arc<Device>,
}

impl Registration {
    /// Registers a device named from `name_template` (`rxe%d` takes the lowest
    /// free number). Process context only; the device is usable on return.
    pub fn new(name_template: &CStr, ops: Arc<dyn DeviceOps>) -> Result<Self> {
        crate::might_sleep();
        let dev = registry::get().register_device(name_template, ops)?;
        Ok(Registration { dev })
    }

    /// The registered device.
    pub fn device(&self) -> &Arc<Device> {
        &self.dev
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        registry::get().unregister_device(&self.dev);
    }
}
