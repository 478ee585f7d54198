// SPDX-License-Identifier: GPL-2.0

//! Network devices.
//!
//! C header: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h)
//!
//! A RoCE provider is bound to a `struct net_device`; this is the safe,
//! reference-counted handle to one. It is the crate's first use of its own
//! bindgen-generated bindings, which the 6.12 kernel crate does not have.
//!
//! The netdev notifiers (`net_glue.c`) call every registered
//! [`NetListener`]; the list of listeners lives here, set up by this
//! module's own [`init`], so the layers above (the device registry,
//! providers) register with it and nothing here depends on them.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};

use kernel::error::code::ENODEV;
use kernel::error::to_result;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use kernel::types::{ARef, AlwaysRefCounted, Opaque};

use crate::kshim::bindings;
use crate::kshim::global::Global;
use crate::kshim::sync::SpinLockIrq;

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

impl NetDevice {
    /// Looks up a network device by name in the calling task's network
    /// namespace (where the configuring process lives). `ENODEV` if none.
    pub fn get_by_name_in_current_ns(name: &CStr) -> Result<ARef<NetDevice>> {
        // SAFETY: `name` is NUL-terminated; the function returns a held
        // device or NULL, and reads the current task's namespace, which
        // cannot change under it.
        let dev = unsafe { bindings::rdma_rs_dev_get_by_name_current(name.as_char_ptr()) };
        let dev = NonNull::new(dev).ok_or(ENODEV)?;
        // SAFETY: as in `get_by_name`.
        Ok(unsafe { ARef::from_raw(dev.cast::<NetDevice>()) })
    }

    /// The device of index `ifindex` in this one's network namespace (a
    /// GID's netdev, next to its port's), if there is one.
    pub fn get_by_index_near(&self, ifindex: i32) -> Option<ARef<NetDevice>> {
        // SAFETY: by the type invariant `self` is live, and its namespace
        // with it; the function returns a held device or NULL.
        let dev = unsafe { bindings::rdma_rs_dev_get_by_index_near(self.0.get(), ifindex) };
        let dev = NonNull::new(dev)?;
        // SAFETY: as in `get_by_name`.
        Some(unsafe { ARef::from_raw(dev.cast::<NetDevice>()) })
    }

    /// The raw pointer, for the crate's glue.
    pub(crate) fn as_raw(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// An identity of the device's network namespace (its address).
    pub fn net_id(&self) -> usize {
        // SAFETY: by the type invariant the device is live.
        unsafe { bindings::rdma_rs_netdev_net(self.0.get()) as usize }
    }

    /// Whether two handles name the same device.
    pub fn same(&self, other: &NetDevice) -> bool {
        core::ptr::eq(self, other)
    }

    /// Whether the interface is administratively up (`netif_running`).
    pub fn is_running(&self) -> bool {
        // SAFETY: by the type invariant the device is live.
        unsafe { bindings::rdma_rs_netdev_running(self.0.get()) }
    }

    /// The link's ethtool speed in Mb/s and its lane count (0 if the
    /// driver does not say), or `None` if the speed is unknown or the
    /// device is going. Takes RTNL: process context, and never from code
    /// that holds RTNL or that an RTNL holder waits for (a netdev
    /// notifier, work that a notifier flushes).
    pub fn eth_speed(&self) -> Option<(u32, u32)> {
        let (mut speed, mut lanes) = (0u32, 0u32);
        // SAFETY: by the type invariant the device is live; the outputs
        // are writable locals.
        let rc =
            unsafe { bindings::rdma_rs_netdev_eth_speed(self.0.get(), &mut speed, &mut lanes) };
        (rc == 0).then_some((speed, lanes))
    }

    /// Whether the link has carrier (`netif_carrier_ok`).
    pub fn has_carrier(&self) -> bool {
        // SAFETY: by the type invariant the device is live.
        unsafe { bindings::rdma_rs_netdev_carrier(self.0.get()) }
    }

    /// Joins (`join`) or leaves the IP multicast group whose address is
    /// `gid` (an IPv4-mapped GID is an IPv4 group, any other an IPv6 one)
    /// on this device: the host then takes the group's datagrams in. Joins
    /// are counted, as the IP stack counts them. Process context (may
    /// sleep).
    pub fn multicast(&self, gid: &[u8; 16], join: bool) -> Result {
        // SAFETY: by the type invariant the device is live; `gid` is 16
        // readable bytes for the duration of the call, which copies them;
        // the C side takes RTNL itself and may sleep, which the caller's
        // context allows (documented above).
        let ret = unsafe { bindings::rdma_rs_netdev_mc(self.0.get(), gid.as_ptr(), join) };
        to_result(ret)
    }

    /// Whether it is a VLAN device.
    pub fn is_vlan(&self) -> bool {
        // SAFETY: by the type invariant the device is live.
        unsafe { bindings::rdma_rs_netdev_is_vlan(self.0.get()) }
    }

    /// Whether it is a loopback device.
    pub fn is_loopback(&self) -> bool {
        // SAFETY: by the type invariant the device is live.
        unsafe { bindings::rdma_rs_netdev_is_loopback(self.0.get()) }
    }

    /// Whether it is an Ethernet device with a 6-byte address.
    pub fn is_ether(&self) -> bool {
        // SAFETY: by the type invariant the device is live.
        unsafe { bindings::rdma_rs_netdev_is_ether(self.0.get()) }
    }

    /// The MAC address (meaningful when [`NetDevice::is_ether`]).
    pub fn mac(&self) -> [u8; 6] {
        let mut mac = [0u8; 6];
        // SAFETY: the device is live and `mac` has room for ETH_ALEN bytes.
        unsafe { bindings::rdma_rs_netdev_mac(self.0.get(), mac.as_mut_ptr()) };
        mac
    }

    /// Copies up to `out.len()` IPv4 addresses of the device into `out`,
    /// in network byte order; returns how many.
    pub fn ipv4_addrs(&self, out: &mut [[u8; 4]]) -> usize {
        // The C side stores `__be32`s: collect them as `u32`s, whose bytes
        // in memory are the address in network order.
        let mut raw = [0u32; 16];
        let max = core::cmp::min(out.len(), raw.len());
        // SAFETY: the device is live and `raw` has room for `max` values.
        let n = unsafe {
            bindings::rdma_rs_netdev_ipv4_addrs(self.0.get(), raw.as_mut_ptr(), max as u32)
        } as usize;
        for (o, r) in out.iter_mut().zip(raw.iter()).take(n) {
            *o = r.to_ne_bytes();
        }
        n
    }

    /// Copies up to `out.len()` IPv6 addresses (not tentative ones) into
    /// `out`; returns how many.
    pub fn ipv6_addrs(&self, out: &mut [[u8; 16]]) -> usize {
        let mut raw: [bindings::in6_addr; 16] = Default::default();
        let max = core::cmp::min(out.len(), raw.len());
        // SAFETY: the device is live and `raw` has room for `max` addresses.
        let n = unsafe {
            bindings::rdma_rs_netdev_ipv6_addrs(self.0.get(), raw.as_mut_ptr(), max as u32)
        } as usize;
        for (o, r) in out.iter_mut().zip(raw.iter()).take(n) {
            // SAFETY: `in6_addr` is 16 bytes of address in any view of its
            // union.
            *o = unsafe { r.in6_u.u6_addr8 };
        }
        n
    }
}

/// What happened to a network device (`enum netdev_cmd`, and address
/// changes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetEvent {
    /// Brought up.
    Up,
    /// Brought down.
    Down,
    /// State changed (carrier, among others).
    Change,
    /// Being unregistered: drop every reference to it.
    Unregister,
    /// MTU changed.
    ChangeMtu,
    /// MAC address changed.
    ChangeAddr,
    /// An IPv4 or IPv6 address was added or removed.
    AddrChange,
}

impl NetEvent {
    fn from_raw(raw: u32) -> Option<NetEvent> {
        Some(match raw {
            1 => NetEvent::Up,
            2 => NetEvent::Down,
            4 => NetEvent::Change,
            6 => NetEvent::Unregister,
            7 => NetEvent::ChangeMtu,
            8 => NetEvent::ChangeAddr,
            bindings::RDMA_RS_NET_ADDR_CHANGE => NetEvent::AddrChange,
            _ => return None,
        })
    }
}

/// Told about every network device event of every namespace.
pub trait NetListener: Send + Sync {
    /// One event. Called with a spinlock held and possibly in atomic
    /// context (IPv6 address changes): must not sleep; queue work instead.
    /// `dev` is valid for the call; take an `ARef` to keep it.
    fn event(&self, dev: &NetDevice, event: NetEvent);
}

/// The registered listeners, called under `list` from the notifiers.
#[pin_data]
struct Listeners {
    #[pin]
    list: SpinLockIrq<KVec<(u64, Arc<dyn NetListener>)>>,
    next_id: AtomicU64,
}

/// The listeners while the module is loaded (set by [`init`] before the
/// notifiers are registered, cleared by [`exit`] after they are gone).
static LISTENERS: Global<Listeners> = Global::new();

/// A registered [`NetListener`]; unregistered when dropped.
pub struct NetListenerRegistration {
    id: u64,
    listeners: Arc<Listeners>,
}

/// Registers a listener. Process context, between the module's init and
/// exit (any caller links against this module, so it is loaded).
pub fn register_listener(listener: Arc<dyn NetListener>) -> Result<NetListenerRegistration> {
    crate::kshim::verb::might_sleep();
    let listeners = LISTENERS.get().ok_or(ENODEV)?;
    let mut l = listeners.list.lock();
    l.reserve(1, GFP_ATOMIC)?;
    let id = listeners.next_id.fetch_add(1, Ordering::Relaxed);
    l.push((id, listener), GFP_ATOMIC)?;
    drop(l);
    Ok(NetListenerRegistration { id, listeners })
}

impl Drop for NetListenerRegistration {
    fn drop(&mut self) {
        let old = {
            let mut l = self.listeners.list.lock();
            crate::kshim::vec::remove_first(&mut l, |(id, _)| *id == self.id)
        };
        // After removal under the lock no call of this listener runs.
        drop(old);
    }
}

/// The notifiers' entry point, from `net_glue.c`.
///
/// # Safety
///
/// `dev` must be a live net_device for the duration of the call.
#[no_mangle]
pub(crate) unsafe extern "C" fn rdma_rs_net_event(event: u32, dev: *mut bindings::net_device) {
    let Some(ev) = NetEvent::from_raw(event) else {
        return;
    };
    // SAFETY: per the contract the device is live during the call;
    // `NetDevice` is a transparent wrapper.
    let dev = unsafe { &*dev.cast::<NetDevice>() };
    let Some(listeners) = LISTENERS.get() else {
        return;
    };
    let l = listeners.list.lock();
    for (_, listener) in l.iter() {
        listener.event(dev, ev);
    }
}

/// Sets up the listener list and registers the notifiers. Module init.
pub(crate) fn init() -> Result {
    let listeners = Arc::pin_init(
        pin_init!(Listeners {
            list <- crate::new_spinlock_irq!(KVec::new(), "net::Listeners::list"),
            next_id: AtomicU64::new(0),
        }),
        GFP_KERNEL,
    )?;
    drop(LISTENERS.replace(Some(listeners)));
    // SAFETY: no preconditions; paired with `exit`.
    let ret = kernel::error::to_result(unsafe { bindings::rdma_rs_net_notifiers_register() });
    if ret.is_err() {
        drop(LISTENERS.replace(None));
    }
    ret
}

/// Unregisters the notifiers, then drops the listener list. Module exit
/// (every listener's module is gone by then).
pub(crate) fn exit() {
    // SAFETY: `init` succeeded.
    unsafe { bindings::rdma_rs_net_notifiers_unregister() }
    drop(LISTENERS.replace(None));
}
