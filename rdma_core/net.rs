// SPDX-License-Identifier: GPL-2.0

//! Network devices.
//!
//! C header: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h)
//!
//! A RoCE provider is bound to a `struct net_device`; this is the safe,
//! reference-counted handle to one. It is the crate's first use of its own
//! bindgen-generated bindings, which the 6.12 kernel crate does not have.

use core::ptr::NonNull;

use kernel::error::code::ENODEV;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::types::{ARef, AlwaysRefCounted, Opaque};

use crate::bindings;

/// A network device.
///
/// # Invariants
///
/// A `&NetDevice` always points at a live `struct net_device` on which the
/// holder owns a reference (`dev_hold`), so the device is not freed while the
/// `&NetDevice` exists.
#[repr(transparent)]
pub struct NetDevice(Opaque<bindings::net_device>);

// SAFETY: `struct net_device` is designed to be used from any thread; its
// reference count is atomic and the fields read here are read with READ_ONCE.
unsafe impl Send for NetDevice {}
// SAFETY: as for `Send`: every method takes `&self` and is thread safe in C.
unsafe impl Sync for NetDevice {}

// SAFETY: `dev_hold`/`dev_put` manage the net_device's reference count, and
// the device stays alive while that count is non-zero.
unsafe impl AlwaysRefCounted for NetDevice {
    fn inc_ref(&self) {
        // SAFETY: by the type invariant `self` is a live net_device.
        unsafe { bindings::rdma_rs_dev_hold(self.0.get()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: the caller owns a reference (matching an earlier inc_ref or
        // the reference `dev_get_by_name` returned), which this gives back.
        unsafe { bindings::rdma_rs_dev_put(obj.cast::<bindings::net_device>().as_ptr()) };
    }
}

impl NetDevice {
    /// Looks up a network device by name in the initial network namespace.
    ///
    /// Returns `ENODEV` when there is none of that name.
    pub fn get_by_name(name: &CStr) -> Result<ARef<NetDevice>> {
        // `init_net` is a static that lives as long as the kernel; only its
        // address is taken.
        let net = core::ptr::addr_of_mut!(bindings::init_net);
        // SAFETY: `net` is valid and `name` is NUL-terminated; the function
        // returns a held device or NULL.
        let dev = unsafe { bindings::dev_get_by_name(net, name.as_char_ptr()) };
        let dev = NonNull::new(dev).ok_or(ENODEV)?;
        // SAFETY: `dev_get_by_name` took a reference for us, which the ARef
        // now owns; `NetDevice` is a transparent wrapper of net_device.
        Ok(unsafe { ARef::from_raw(dev.cast::<NetDevice>()) })
    }

    /// The interface name (`eth0`).
    pub fn name(&self) -> &CStr {
        // SAFETY: by the type invariant the device is live; its `name` is a
        // NUL-terminated array inside it, which lives as long as `self`.
        unsafe { CStr::from_char_ptr(bindings::rdma_rs_netdev_name(self.0.get())) }
    }

    /// The interface index.
    pub fn ifindex(&self) -> i32 {
        // SAFETY: by the type invariant the device is live.
        unsafe { bindings::rdma_rs_netdev_ifindex(self.0.get()) }
    }

    /// The current MTU in bytes.
    pub fn mtu(&self) -> u32 {
        // SAFETY: by the type invariant the device is live.
        unsafe { bindings::rdma_rs_netdev_mtu(self.0.get()) }
    }
}
