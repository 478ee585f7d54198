// SPDX-License-Identifier: GPL-2.0

//! Network namespaces and route lookups, for the CM's address resolution
//! (`rdma_resolve_addr` finds the egress device and source address of a
//! destination in the namespace of its id).
//!
//! C header: [`include/net/route.h`](srctree/include/net/route.h)

use core::ptr::NonNull;

use kernel::error::code::ENODEV;
use kernel::error::to_result;
use kernel::prelude::*;

use crate::kshim::bindings;
use crate::kshim::net::NetDevice;

/// A counted reference on a network namespace (`get_net`/`put_net`).
///
/// # Invariants
///
/// `0` points at a `struct net` on which this value owns one reference.
pub struct NetNs(NonNull<bindings::net>);

// SAFETY: a namespace reference may be used and dropped from any thread;
// its count is atomic.
unsafe impl Send for NetNs {}
// SAFETY: every method takes `&self` and only reads or calls thread-safe
// C functions.
unsafe impl Sync for NetNs {}

/// Where a destination is reached from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// The egress device's index (in the namespace of the lookup).
    pub ifindex: i32,
    /// The source address the stack would use (IPv4 in the last 4 bytes
    /// of an IPv4-mapped address for an IPv4 lookup).
    pub src: [u8; 16],
    /// The route's MTU.
    pub mtu: u32,
}

/// The index of the loopback device, the same in every namespace
/// (`LOOPBACK_IFINDEX`).
const LOOPBACK_IFINDEX: i32 = 1;

impl Route {
    /// Whether the route goes through the loopback device: the destination
    /// is an address of this host (in the namespace of the lookup), the
    /// source address is one too.
    pub fn is_loopback(&self) -> bool {
        self.ifindex == LOOPBACK_IFINDEX
    }
}

impl NetNs {
    /// Wraps what a `get_net` returned (never NULL in practice).
    fn from_counted(raw: *mut bindings::net) -> Result<NetNs> {
        // INVARIANT: the helpers return their argument with a reference
        // taken for the caller.
        NonNull::new(raw).map(NetNs).ok_or(ENODEV)
    }

    /// The namespace of the calling task. Process context.
    pub fn current() -> Result<NetNs> {
        // SAFETY: in process context `current->nsproxy` is set; the helper
        // takes a reference.
        Self::from_counted(unsafe { bindings::rdma_rs_net_get_current() })
    }

    /// The namespace `dev` lives in.
    pub fn of(dev: &NetDevice) -> Result<NetNs> {
        // SAFETY: `dev` is live (its type invariant); `dev_net` of a live
        // device is a live namespace, on which the helper takes a reference.
        Self::from_counted(unsafe { bindings::rdma_rs_net_get_of(dev.as_raw()) })
    }

    /// Another reference on the same namespace.
    pub fn try_clone(&self) -> Result<NetNs> {
        // SAFETY: the namespace is live while we hold our reference (type
        // invariant), so taking one more with `get_net` is valid.
        Self::from_counted(unsafe { bindings::rdma_rs_net_get(self.0.as_ptr()) })
    }

    /// An identity of the namespace (its address), as
    /// [`NetDevice::net_id`] gives for a device.
    pub fn id(&self) -> usize {
        // SAFETY: the namespace is live (type invariant).
        unsafe { bindings::rdma_rs_net_id(self.0.as_ptr()) as usize }
    }

    /// The route to IPv4 `dst`, from `src` if it is not 0.0.0.0
    /// (`EHOSTUNREACH`, `ENETUNREACH`... as the routing table says).
    pub fn route_v4(&self, dst: [u8; 4], src: [u8; 4]) -> Result<Route> {
        let mut s = src;
        let (mut ifindex, mut mtu) = (0i32, 0u32);
        // SAFETY: the namespace is live; the helper reads 4 bytes at `dst`
        // and reads and writes 4 at `s`, and writes the two integers.
        to_result(unsafe {
            bindings::rdma_rs_route4(
                self.0.as_ptr(),
                dst.as_ptr(),
                s.as_mut_ptr(),
                &mut ifindex,
                &mut mtu,
            )
        })?;
        if ifindex == 0 {
            return Err(ENODEV);
        }
        let mut mapped = [0u8; 16];
        mapped[10] = 0xff;
        mapped[11] = 0xff;
        mapped[12..].copy_from_slice(&s);
        Ok(Route {
            ifindex,
            src: mapped,
            mtu,
        })
    }

    /// The route to IPv6 `dst`, from `src` if it is not `::`.
    pub fn route_v6(&self, dst: [u8; 16], src: [u8; 16]) -> Result<Route> {
        let mut s = src;
        let (mut ifindex, mut mtu) = (0i32, 0u32);
        // SAFETY: as in `route_v4`, with 16 bytes each.
        to_result(unsafe {
            bindings::rdma_rs_route6(
                self.0.as_ptr(),
                dst.as_ptr(),
                s.as_mut_ptr(),
                &mut ifindex,
                &mut mtu,
            )
        })?;
        if ifindex == 0 {
            return Err(ENODEV);
        }
        Ok(Route {
            ifindex,
            src: s,
            mtu,
        })
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        // SAFETY: this value owns one reference (type invariant).
        unsafe { bindings::rdma_rs_net_put(self.0.as_ptr()) };
    }
}
