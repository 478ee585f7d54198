// SPDX-License-Identifier: GPL-2.0

//! The module's device registry ([`Rxe`]): the driver, the items (a device
//! name, the netdev it names, its device while enabled), the netdevs they
//! claim, the devices bound to a netdev, and the UDP sockets they share.
//!
//! The receive and transmit paths look devices up here ([`Rxe::device_for`],
//! [`Rxe::device_on`], any context); netdev events arrive here
//! ([`NetListener`], atomic context); configfs (`config.rs`) only turns
//! what is written to an item's files into the calls of [`RxeItem`].
//!
//! Items come two ways, and make their devices the same way
//! ([`RxeItem::bind`], [`RxeItem::set_enabled`]): a configfs directory
//! (`mkdir`, [`Rxe::new_item`]), or `rdma link add` ([`Rxe::new_link`],
//! from `link.rs`), which makes an item with no directory, a *link item*.
//! A link item lives as long as its device: `rdma link delete`
//! ([`Rxe::del_link`]), its netdev's unregistration and module exit remove
//! item and device together. A configfs item's device is not a link's:
//! [`Rxe::del_link`] refuses it (`EINVAL`), as configfs owns it (`echo 0 >
//! enable`, `rmdir`).
//!
//! The addresses of the registered devices are kept apart as well
//! (`Rxe::addrs`, written by [`Rxe::set_addrs`] each time a device's GID
//! table is), so that finding the device of a packet's address takes one
//! lock and one scan, not a lock and a GID table per device.
//!
//! Locks, outermost first: the core's `Links::list` (held across
//! [`Rxe::new_link`] and [`Rxe::del_link`]), `Rxe::items` (mutex), an
//! item's `state` (mutex), then `Rxe::bound` and `Rxe::claims` (IRQ-safe,
//! leaves), and `Rxe::addrs` (IRQ-safe), inside which only a device's
//! `RxeDev::dev` is taken.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use kernel::c_str;
use kernel::error::code::{EBUSY, EEXIST, EINVAL, ENODEV};
use kernel::prelude::*;
use kernel::str::{CStr, CString};
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::types::ARef;

use rdma::provider::{
    net::{NetDevice, NetEvent, NetListener},
    work::OwnedQueue,
    Device, DeviceDesc, Driver, Gid, LinkLayer, NodeType, SpinLockIrq, NAME_MAX,
};

use crate::device::{self, RxeDev, RxeOps, GID_TBL_LEN};
use crate::net::sockets::Sockets;
use crate::wire::fault::FaultSpec;

/// The module's state: the driver, the items, the bound devices.
#[pin_data]
pub(crate) struct Rxe {
    driver: Pin<KBox<Driver>>,
    /// Every item (configfs directory).
    #[pin]
    items: Mutex<KVec<Arc<RxeItem>>>,
    /// Devices bound to a netdev, for the netdev listener (atomic context).
    #[pin]
    bound: SpinLockIrq<KVec<Arc<RxeDev>>>,
    /// Netdevs named by an item: (item id, netdev). The claim holds the
    /// item's reference to its netdev; the netdev listener drops it when
    /// the netdev is unregistered, so an item that names a netdev never
    /// keeps it from going.
    #[pin]
    claims: SpinLockIrq<KVec<(usize, ARef<NetDevice>)>>,
    /// The GIDs of the registered devices, each with its device, as their
    /// GID tables were last written; an entry only while its device is
    /// registered. None once an update could not be allocated: then
    /// [`Rxe::device_for`] asks the devices themselves, as before the map.
    #[pin]
    addrs: SpinLockIrq<Option<KVec<(Gid, Arc<RxeDev>)>>>,
    /// The UDP sockets, one per namespace in use.
    #[pin]
    pub(crate) sockets: Sockets,
    next_item: AtomicUsize,
    rx_unclaimed: AtomicU64,
    /// The devices' work (netdev changes): drained at module exit, so none
    /// of it runs once the module is gone.
    pub(crate) wq: OwnedQueue,
}

impl Rxe {
    pub(crate) fn new() -> Result<Arc<Rxe>> {
        let driver = Driver::new(c_str!("rdma_rs_rxe"))?;
        let wq = OwnedQueue::new(c_str!("rdma_rs_rxe"))?;
        Arc::pin_init(
            pin_init!(Rxe {
                driver,
                items <- new_mutex!(KVec::new(), "Rxe::items"),
                bound <- rdma::provider::new_spinlock_irq!(KVec::new(), "Rxe::bound"),
                claims <- rdma::provider::new_spinlock_irq!(KVec::new(), "Rxe::claims"),
                addrs <- rdma::provider::new_spinlock_irq!(Some(KVec::new()), "Rxe::addrs"),
                sockets <- Sockets::new(),
                next_item: AtomicUsize::new(1),
                rx_unclaimed: AtomicU64::new(0),
                wq,
            }),
            GFP_KERNEL,
        )
    }

    /// The driver the devices are registered with.
    pub(crate) fn driver(&self) -> &Driver {
        &self.driver
    }

    /// Module exit: `rdma link` and configfs are gone (so only link items
    /// are left) and netdev events stopped. The link items go with their
    /// devices, then the devices' queued work runs to its end.
    pub(crate) fn shutdown(&self) {
        let left = core::mem::take(&mut *self.items.lock());
        for it in left.iter() {
            self.drop_item(it);
        }
        drop(left);
        self.wq.drain();
        let bound = core::mem::take(&mut *self.bound.lock());
        for rd in bound.iter() {
            if let Some(dev) = rd.take_device() {
                self.set_addrs(rd, &[]);
                self.driver.unregister_device(&dev);
            }
        }
        self.sockets.close_all();
    }

    /// The registered device of namespace `net` whose GID table holds
    /// `gid` (the destination of a packet). Any context.
    pub(crate) fn device_for(&self, net: usize, gid: &Gid) -> Option<Arc<RxeDev>> {
        {
            let addrs = self.addrs.lock();
            if let Some(addrs) = addrs.as_ref() {
                return addrs
                    .iter()
                    .find(|(g, rd)| g == gid && rd.netdev.net_id() == net)
                    .map(|(_, rd)| rd.clone());
            }
        }
        self.device_for_by_tables(net, gid)
    }

    /// [`Rxe::device_for`] without the map: each bound device's GID table.
    fn device_for_by_tables(&self, net: usize, gid: &Gid) -> Option<Arc<RxeDev>> {
        let bound = self.bound.lock();
        bound
            .iter()
            .find(|rd| {
                rd.netdev.net_id() == net
                    && rd
                        .device()
                        .is_some_and(|d| d.find_gid_on_port(1, gid).is_some())
            })
            .cloned()
    }

    /// `rd`'s GID table now holds `gids`: its entries in the map become
    /// these, or none if it is not registered (so an unregistered device
    /// leaves the map, whichever of this and its unregistration comes
    /// first). Process context.
    pub(crate) fn set_addrs(&self, rd: &Arc<RxeDev>, gids: &[Gid]) {
        let old = {
            let mut addrs = self.addrs.lock();
            let Some(now) = addrs.as_ref() else {
                return;
            };
            let keep = rd.device().is_some();
            let others = now.iter().filter(|(_, r)| !Arc::ptr_eq(r, rd));
            let n = others.clone().count() + if keep { gids.len() } else { 0 };
            let mut next = KVec::new();
            if next.reserve(n, GFP_ATOMIC).is_err() {
                pr_warn!("rdma_rs_rxe: no memory for the address map; devices are found by their GID tables from now on\n");
                addrs.take()
            } else {
                // Within the capacity reserved: no push fails.
                for (g, r) in others {
                    let _ = next.push((*g, r.clone()), GFP_ATOMIC);
                }
                for g in gids.iter().filter(|_| keep) {
                    let _ = next.push((*g, rd.clone()), GFP_ATOMIC);
                }
                addrs.replace(next)
            }
        };
        // The old map's references go with no lock held.
        drop(old);
    }

    /// The bound device of namespace `net` on the netdev of index
    /// `ifindex` (where a multicast datagram came in). Any context.
    pub(crate) fn device_on(&self, net: usize, ifindex: i32) -> Option<Arc<RxeDev>> {
        let bound = self.bound.lock();
        bound
            .iter()
            .find(|rd| rd.netdev.net_id() == net && rd.netdev.ifindex() == ifindex)
            .cloned()
    }

    /// Counts a received packet that no device of ours took (malformed,
    /// bad ICRC, not for one of our addresses).
    pub(crate) fn count_unclaimed(&self) {
        self.rx_unclaimed.fetch_add(1, Ordering::Relaxed);
    }

    /// A new configfs item named `name` (the name its device will have):
    /// `EINVAL` for a name no device can have.
    pub(crate) fn new_item(self: &Arc<Self>, name: &CStr) -> Result<Arc<RxeItem>> {
        self.new_item_of(name, false)
    }

    fn new_item_of(self: &Arc<Self>, name: &CStr, link: bool) -> Result<Arc<RxeItem>> {
        if name.len() >= NAME_MAX || name.as_bytes().contains(&b'%') {
            return Err(EINVAL);
        }
        let text = name.to_str().map_err(|_| EINVAL)?;
        let owned = CString::try_from_fmt(kernel::fmt!("{}", text))?;
        let item = Arc::pin_init(
            pin_init!(RxeItem {
                rxe: self.clone(),
                id: self.next_item.fetch_add(1, Ordering::Relaxed),
                name: owned,
                link,
                state <- new_mutex!(ItemState { rd: None }, "RxeItem::state"),
            }),
            GFP_KERNEL,
        )?;
        self.items.lock().push(item.clone(), GFP_KERNEL)?;
        Ok(item)
    }

    /// Removes the item at address `target` (configfs `rmdir`): its claim
    /// goes, and its device if it has one.
    pub(crate) fn remove_item(&self, target: *const u8) {
        let mine = {
            let mut items = self.items.lock();
            let pos = items.iter().position(|i| {
                core::ptr::eq(core::ptr::from_ref::<RxeItem>(&**i).cast::<u8>(), target)
            });
            pos.and_then(|p| rdma::provider::vec::remove(&mut items, p))
        };
        if let Some(it) = mine {
            self.drop_item(&it);
        }
    }

    /// An item taken out of `items`: its claim and its device go. Process
    /// context, not from the devices' work.
    fn drop_item(&self, it: &Arc<RxeItem>) {
        let rd = {
            let mut st = it.state.lock();
            st.rd.take()
        };
        self.unclaim(it.id);
        if let Some(rd) = rd {
            self.disable(&rd);
            // The device is gone: none of its work may be left behind.
            rd.flush_work();
        }
    }

    /// Claims `netdev` for item `id`: `EBUSY` if another item has it.
    fn claim(&self, id: usize, netdev: ARef<NetDevice>) -> Result {
        let mut c = self.claims.lock();
        if c.iter().any(|(i, n)| n.same(&netdev) && *i != id) {
            return Err(EBUSY);
        }
        c.reserve(1, GFP_ATOMIC)?;
        let old = rdma::provider::vec::remove_first(&mut c, |(i, _)| *i == id);
        let _ = c.push((id, netdev), GFP_ATOMIC);
        drop(c);
        drop(old);
        Ok(())
    }

    /// The netdev item `id` names, if it still exists.
    fn claimed(&self, id: usize) -> Option<ARef<NetDevice>> {
        let c = self.claims.lock();
        c.iter().find(|(i, _)| *i == id).map(|(_, n)| n.clone())
    }

    fn unclaim(&self, id: usize) {
        let old = rdma::provider::vec::remove_first(&mut self.claims.lock(), |(i, _)| *i == id);
        drop(old);
    }

    /// Registers a device for `item` on `netdev`.
    fn enable(self: &Arc<Self>, name: &CStr, netdev: &ARef<NetDevice>) -> Result<Arc<RxeDev>> {
        self.sockets.get(self, netdev)?;
        let rd = match RxeDev::new(self.clone(), netdev.clone()) {
            Ok(rd) => rd,
            Err(e) => {
                self.sockets.put(netdev);
                return Err(e);
            }
        };
        let r = self.register(name, netdev, &rd);
        if r.is_err() {
            self.sockets.put(netdev);
        }
        r.map(|()| rd)
    }

    fn register(&self, name: &CStr, netdev: &ARef<NetDevice>, rd: &Arc<RxeDev>) -> Result {
        let desc = DeviceDesc {
            name_template: name,
            node_type: NodeType::Ca,
            node_guid: device::node_guid(&netdev.mac()),
            port_count: 1,
            link_layer: LinkLayer::Ethernet,
            gid_tbl_len: GID_TBL_LEN,
            pkey_tbl_len: 1,
        };
        {
            let mut b = self.bound.lock();
            b.reserve(1, GFP_ATOMIC)?;
        }
        let ops = Arc::new(RxeOps { rd: rd.clone() }, GFP_KERNEL)?;
        let dev = self.driver.register_device(&desc, ops)?;
        dev.set_pkey(1, 0, 0xffff)?;
        rd.set_device(dev);
        rd.sync_port();
        let _ = self.bound.lock().push(rd.clone(), GFP_ATOMIC);
        Ok(())
    }

    /// Unregisters the device of `rd`.
    fn disable(&self, rd: &Arc<RxeDev>) {
        rdma::provider::vec::remove_first(&mut self.bound.lock(), |b| Arc::ptr_eq(b, rd));
        if let Some(dev) = rd.take_device() {
            self.set_addrs(rd, &[]);
            self.driver.unregister_device(&dev);
            // Its QPs left their groups as they went; whatever is left goes.
            rd.mcast.leave_all(&rd.netdev);
            self.sockets.put(&rd.netdev);
        }
    }

    /// `rdma link add NAME type rxe netdev IF`: a link item named `name`
    /// on `netdev`, enabled. `EINVAL` for a loopback or non-Ethernet
    /// netdev, `EEXIST` if an item has the netdev already (as the C rxe
    /// answers for a netdev with a device) or a device has the name.
    /// Nothing is left behind on failure.
    pub(crate) fn new_link(self: &Arc<Self>, name: &CStr, netdev: &ARef<NetDevice>) -> Result {
        let item = self.new_item_of(name, true)?;
        let r = item
            .bind(netdev.clone())
            .map_err(|e| if e == EBUSY { EEXIST } else { e })
            .and_then(|()| item.set_enabled(true));
        if r.is_err() {
            self.remove_item(core::ptr::from_ref::<RxeItem>(&*item).cast::<u8>());
        }
        r
    }

    /// `rdma link delete`: removes the link item whose device is `dev`,
    /// and the device. `EINVAL` if `dev` is a configfs item's, or none of
    /// ours any more.
    pub(crate) fn del_link(&self, dev: &Arc<Device>) -> Result {
        let mine = {
            let mut items = self.items.lock();
            let pos = items.iter().position(|i| {
                i.device()
                    .and_then(|rd| rd.device())
                    .is_some_and(|d| Arc::ptr_eq(d.arc(), dev))
            });
            let pos = pos.ok_or(EINVAL)?;
            if !items[pos].link {
                return Err(EINVAL);
            }
            rdma::provider::vec::remove(&mut items, pos)
        };
        if let Some(it) = mine {
            self.drop_item(&it);
        }
        Ok(())
    }

    /// The netdev of `rd` is being unregistered (from its work item): the
    /// configfs items that have it go back to unbound, the link items go.
    pub(crate) fn netdev_gone(&self, rd: &Arc<RxeDev>) {
        let mut items = self.items.lock();
        // The items of `rd` let go of it and of their claim; a link item
        // then goes too (no other link item is touched: one being made has
        // no device yet). `retain` may ask again about an item it kept:
        // the second time it has no `rd` and is kept.
        rdma::provider::vec::retain(&mut items, |item| {
            let mut st = item.state.lock();
            if st.rd.as_ref().is_some_and(|r| Arc::ptr_eq(r, rd)) {
                st.rd = None;
                self.unclaim(item.id);
                !item.link
            } else {
                true
            }
        });
        drop(items);
        self.disable(rd);
        pr_info!(
            "{:?}: netdev {:?} is gone; device removed\n",
            rd.netdev.name(),
            rd.netdev.name()
        );
    }
}

impl NetListener for Rxe {
    fn event(&self, dev: &NetDevice, event: NetEvent) {
        if event == NetEvent::Unregister {
            // Items that only name it let go at once (a bound device lets
            // go from its work, below).
            let gone =
                rdma::provider::vec::remove_first(&mut self.claims.lock(), |(_, n)| n.same(dev));
            drop(gone);
        }
        let bound = self.bound.lock();
        for rd in bound.iter().filter(|rd| rd.netdev.same(dev)) {
            match event {
                NetEvent::Unregister => rd.netdev_unregistering(),
                _ => rd.changed(),
            }
        }
    }
}

struct ItemState {
    rd: Option<Arc<RxeDev>>,
}

/// An item: a device name, the netdev it names (its claim) and its device
/// while enabled. Configfs shows each as a directory (`config.rs`), except
/// link items (made by `rdma link add`).
#[pin_data]
pub(crate) struct RxeItem {
    rxe: Arc<Rxe>,
    id: usize,
    name: CString,
    /// Made by `rdma link add`: no configfs directory; goes with its device.
    link: bool,
    #[pin]
    state: Mutex<ItemState>,
}

impl RxeItem {
    /// The netdev the item names, if it still exists.
    pub(crate) fn netdev(&self) -> Option<ARef<NetDevice>> {
        self.rxe.claimed(self.id)
    }

    /// The item's device while it is enabled.
    pub(crate) fn device(&self) -> Option<Arc<RxeDev>> {
        self.state.lock().rd.clone()
    }

    /// Names the netdev called `name` in the caller's namespace: `EINVAL`
    /// for a name no netdev can have or a loopback or non-Ethernet device,
    /// `EBUSY` while enabled or if another item has it, `ENODEV` if there
    /// is none.
    pub(crate) fn set_netdev(&self, name: &[u8]) -> Result {
        if name.is_empty() || name.len() >= 16 {
            return Err(EINVAL);
        }
        let st = self.state.lock();
        if st.rd.is_some() {
            return Err(EBUSY);
        }
        let mut buf = [0u8; 17];
        buf[..name.len()].copy_from_slice(name);
        let name = CStr::from_bytes_with_nul(&buf[..=name.len()]).map_err(|_| EINVAL)?;
        let netdev = NetDevice::get_by_name_in_current_ns(name)?;
        drop(st);
        self.bind(netdev)
    }

    /// Names `netdev`: `EINVAL` for a loopback or non-Ethernet device,
    /// `EBUSY` while enabled or if another item has it.
    pub(crate) fn bind(&self, netdev: ARef<NetDevice>) -> Result {
        if netdev.is_loopback() || !netdev.is_ether() {
            return Err(EINVAL);
        }
        let st = self.state.lock();
        if st.rd.is_some() {
            return Err(EBUSY);
        }
        self.rxe.claim(self.id, netdev)
    }

    /// Registers (`on`) or unregisters the item's device: `EINVAL` to
    /// enable without a netdev.
    pub(crate) fn set_enabled(&self, on: bool) -> Result {
        let mut st = self.state.lock();
        match (on, st.rd.take()) {
            (true, Some(rd)) => {
                st.rd = Some(rd);
                Ok(())
            }
            (true, None) => {
                let netdev = self.rxe.claimed(self.id).ok_or(EINVAL)?;
                st.rd = Some(self.rxe.enable(&self.name, &netdev)?);
                Ok(())
            }
            (false, Some(rd)) => {
                drop(st);
                self.rxe.disable(&rd);
                Ok(())
            }
            (false, None) => Ok(()),
        }
    }

    /// Sets fault injection on the device's packets: `ENODEV` unless
    /// enabled.
    pub(crate) fn set_fault(&self, spec: FaultSpec) -> Result {
        let st = self.state.lock();
        let rd = st.rd.as_ref().ok_or(ENODEV)?;
        rd.faults.set(spec);
        Ok(())
    }
}
